#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/knit-bench/check.sh KNIT_BENCH - knit-bench as a tool (check-bench):
# --help and usage errors, the --quick smoke run (its counts) with --json
# (the run's metadata) and --plot (drawn through a pipe: no scratch
# directory beside the PNG, nothing of gnuplot's on the terminal), and
# --plot-from redrawing from the JSON. Exit 0 when every check holds.
set -u
kb=${1:?usage: check.sh KNIT_BENCH}
[ -x "$kb" ] || { echo "FAIL: $kb was not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok:   $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$kb" --help >"$tmp/help" 2>&1
rc=$?
[ $rc = 0 ] && ok "--help exits 0" || bad "--help exits $rc, not 0"
for opt in --passes --case --json --plot --plot-from --quick --list --version; do
	grep -q -- "$opt" "$tmp/help" && ok "--help describes $opt" || bad "--help does not describe $opt"
done

# With --list after it: a knit-bench that took the bad value would list the
# cases and exit 0, not run the whole bench.
for args in "--passes abc" "--passes 0" "--passes 3x" "--passes -1" "--bogus" "stray" "--passes"; do
	# shellcheck disable=SC2086 # word splitting wanted
	"$kb" $args --list >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 2 ] && grep -q '^knit-bench: ' "$tmp/err" && [ ! -s "$tmp/out" ]; then
		ok "'$args' is a usage error (2): $(head -1 "$tmp/err")"
	else
		bad "'$args' exits $rc (want 2 and a knit-bench: message on stderr, nothing run)"
	fi
done

plot=
if command -v gnuplot >/dev/null 2>&1; then
	plot="$tmp/q.png"
else
	echo "skip: the --plot checks: gnuplot is not installed (make deps-bench installs it)"
fi
"$kb" --quick --json "$tmp/q.json" ${plot:+--plot "$plot"} >"$tmp/run" 2>&1
rc=$?
cat "$tmp/run"
[ $rc = 0 ] && ok "--quick: every count checked out" || bad "--quick exits $rc"
if python3 - "$tmp/q.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
bad = []
for k in ("library_version", "commit", "compiler", "date"):
    if not isinstance(d.get(k), str) or not d[k]:
        bad.append(k)
if not re.fullmatch(r"\d+\.\d+\.\d+", d.get("library_version", "")):
    bad.append("library_version (not N.N.N)")
if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d.get("date", "")):
    bad.append("date (not ISO 8601 UTC)")
m = d.get("machine", {})
for k in ("model", "cpus", "kernel", "mode_probe_ns"):
    if k not in m:
        bad.append("machine." + k)
if not d.get("results"):
    bad.append("results")
print("json: " + ", ".join(f"{k}={d.get(k)!r}" for k in ("library_version", "commit", "compiler", "date")))
if bad:
    print("missing or malformed: " + ", ".join(bad))
    sys.exit(1)
PY
then ok "--json has the run's metadata"; else bad "--json lacks metadata"; fi
if [ -n "$plot" ]; then
	[ -s "$plot" ] && [ "$(head -c 4 "$plot" | od -An -c | tr -d ' ')" = '211PNG' ] &&
		ok "--plot wrote a PNG" || bad "--plot wrote no PNG"
	[ -e "$plot.d" ] && bad "--plot left $plot.d behind" || ok "--plot left no scratch directory"
	[ "$(ls "$tmp" | sort | tr '\n' ' ')" = "err help out q.json q.png run " ] &&
		ok "--plot wrote nothing else" || bad "--plot left files: $(ls "$tmp")"
	grep -qi 'warning' "$tmp/run" && bad "gnuplot's messages reached the terminal" ||
		ok "nothing of gnuplot's on the terminal"
	"$kb" --plot-from "$tmp/q.json" --plot "$tmp/again.png" >"$tmp/out" 2>&1 && [ -s "$tmp/again.png" ] &&
		ok "--plot-from redrew it from the JSON" || bad "--plot-from failed: $(cat "$tmp/out")"
	echo '{"results": 3}' >"$tmp/bad.json"
	"$kb" --plot-from "$tmp/bad.json" --plot "$tmp/bad.png" >"$tmp/out" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q 'not a knit-bench --json file' "$tmp/out" &&
		ok "--plot-from a foreign JSON fails clearly: $(cat "$tmp/out")" || bad "--plot-from a foreign JSON: exit $rc, $(cat "$tmp/out")"
fi
echo "$fails failed checks"
[ $fails = 0 ]
