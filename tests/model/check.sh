#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/model/check.sh MODEL.pml OUTDIR
#
# Check one Promela model exhaustively with spin and fail unless every run of
# it gives the expected verdict. Exit 0 = all runs as expected, 1 = not.
#
# A model lists its runs in comment lines of this form (one run per line):
#
#   /* check: LABEL | spin: ARGS | cc: ARGS | pan: ARGS | expect: pass|fail */
#
#   LABEL   [A-Za-z0-9_.-]+, names the run (and its directory OUTDIR/NAME/LABEL)
#   spin:   extra arguments for `spin -a` (e.g. -DN=3 -DMUTANT_X), also used for
#           the `spin -t -p` trail replay
#   cc:     extra gcc flags for pan.c (-DSAFETY, -DNOREDUCE, -DCOLLAPSE,
#           -DMEMLIM=N, -DNP, -DVECTORSZ=N ...); -DMEMLIM=2048 is added unless
#           given. -DBITSTATE / -DHC* / -DMA are refused (not exhaustive).
#           pan.c is built with gcc -O0 -w (fast to compile); an -O2 here
#           overrides that for a big model.
#   pan:    arguments for ./pan (-mDEPTH, -a, -l, -f, -N LTLNAME ...). If the
#           model has ltl formulas and no -N is given, -DNOCLAIM is added so a
#           safety run never silently checks the first ltl claim instead.
#   expect: pass (default): pan must finish the full search with 0 errors.
#           fail: a mutant. pan must compile, run, and report errors > 0 with
#           a trail (proves the model can catch that bug). A mutant that
#           "passes" fails the check.
#   Every field but LABEL is optional. A model without check lines gets one
#   run "default" with no extra flags.
#
# Failure (for expect: pass) = spin/gcc error, "errors: N" with N > 0
# (assertion violation, invalid end state, acceptance or non-progress cycle),
# "Search not completed", "max search depth too small", out of memory /
# MEMLIM reached, or no "errors:" line at all. The error trail is printed with
# `spin -t -p`. Each run prints states stored, transitions, depth, time and the
# verdict; the last lines of the output are the verdict summary (the test
# harness shows the tail of the log on failure).
set -u
if [ $# -ne 2 ]; then
	echo "usage: $0 MODEL.pml OUTDIR" >&2
	exit 2
fi
# A missing model, or one without a process to run, checks nothing: fail.
if [ ! -s "$1" ]; then
	echo "FAIL: model $1 is missing or empty"
	exit 1
fi
incs=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1")
if ! (cd "$(dirname "$1")" && cat "$(basename "$1")" $incs) |
	grep -Eq '^[[:space:]]*(active[[:space:]]+(\[[^]]*\][[:space:]]*)?proctype|init)'; then
	echo "FAIL: model $1 has no active proctype or init: nothing would run"
	exit 1
fi
model=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
name=$(basename "$model" .pml)
mkdir -p "$2" || exit 1
out=$(cd "$2" && pwd)/$name
SPIN=${SPIN:-spin}
CC_PAN=${CC_PAN:-gcc}
RUN_LIMIT=${KNIT_MODEL_RUN_TIMEOUT:-300} # seconds per pan run (a hang guard, not a check)

if ! command -v "$SPIN" >/dev/null 2>&1; then
	echo "SKIP: spin not installed"
	exit 77
fi

# Collect the check lines: LABEL US SPIN US CC US PAN US EXPECT (US = 0x1f, not
# whitespace, so empty fields survive `read`)
US=$'\x1f'
trim() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//'; }
runs=()
while IFS= read -r line; do
	body=${line#*check:}
	body=${body%%\*/*}
	label='' sflags='' cflags='' pflags='' expect=pass
	IFS='|' read -r -a fields <<<"$body"
	label=$(printf '%s' "${fields[0]}" | trim)
	for f in "${fields[@]:1}"; do
		key=$(printf '%s' "${f%%:*}" | trim)
		val=$(printf '%s' "${f#*:}" | trim)
		case $key in
		spin) sflags=$val ;;
		cc) cflags=$val ;;
		pan) pflags=$val ;;
		expect) expect=$val ;;
		*) echo "$name: bad field '$key' in: $line"; exit 1 ;;
		esac
	done
	if ! [[ $label =~ ^[A-Za-z0-9_.-]+$ ]]; then
		echo "$name: bad label '$label' in: $line"
		exit 1
	fi
	case $expect in pass | fail) ;; *) echo "$name: bad expect '$expect'"; exit 1 ;; esac
	runs+=("$label$US$sflags$US$cflags$US$pflags$US$expect")
done < <(grep -E '^[[:space:]]*/\*[[:space:]]*check:' "$model")
[ ${#runs[@]} -gt 0 ] || runs=("default$US$US$US${US}pass")

has_ltl=0
grep -Eq '^[[:space:]]*ltl[[:space:]]' "$model" && has_ltl=1

rm -rf "$out"
mkdir -p "$out"
nfail=0
summary=()

for r in "${runs[@]}"; do
	IFS=$US read -r label sflags cflags pflags expect <<<"$r"
	dir=$out/$label
	mkdir -p "$dir"
	cp "$model" "$dir/$name.pml"
	# files the model #includes (same directory)
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$model"); do
		cp "$(dirname "$model")/$inc" "$dir/" || { echo "$name: cannot copy include $inc"; exit 1; }
	done
	case " $cflags " in
	*" -DBITSTATE"* | *" -DHC"* | *" -DMA="*)
		echo "=== $name/$label: $cflags is not an exhaustive search; refused"
		nfail=$((nfail + 1)); summary+=("FAIL  $name/$label (non-exhaustive flags)"); continue ;;
	esac
	case " $cflags " in *" -DMEMLIM="*) ;; *) cflags="$cflags -DMEMLIM=2048" ;; esac
	if [ $has_ltl = 1 ]; then
		case " $pflags " in *" -N"*) ;; *) cflags="$cflags -DNOCLAIM" ;; esac
	fi
	echo "=== $name/$label (expect $expect)"
	echo "    spin -a $sflags; gcc $cflags; ./pan $pflags"
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086 # flag lists are meant to split
	if ! (cd "$dir" && "$SPIN" -a $sflags "$name.pml" >spin.log 2>&1); then
		cat "$dir/spin.log"
		echo "    RESULT: FAIL (spin -a failed)"
		nfail=$((nfail + 1)); summary+=("FAIL  $name/$label (spin -a failed)"); continue
	fi
	# shellcheck disable=SC2086
	if ! (cd "$dir" && $CC_PAN -O0 -w $cflags -o pan pan.c >cc.log 2>&1); then
		cat "$dir/cc.log"
		echo "    RESULT: FAIL (pan.c did not compile)"
		nfail=$((nfail + 1)); summary+=("FAIL  $name/$label (pan.c did not compile)"); continue
	fi
	# shellcheck disable=SC2086
	(cd "$dir" && timeout -k 5 "$RUN_LIMIT" ./pan $pflags >pan.log 2>&1)
	prc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	log=$dir/pan.log
	errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
	states=$(sed -n 's/^[[:space:]]*\([0-9.e+]*\) states, stored.*/\1/p' "$log" | tail -n 1)
	trans=$(sed -n 's/^[[:space:]]*\([0-9.e+]*\) transitions (=.*/\1/p' "$log" | tail -n 1)
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$log" | tail -n 1)
	incomplete=
	grep -q 'Search not completed' "$log" && incomplete="search not completed"
	grep -q 'max search depth too small' "$log" && incomplete="max search depth too small (raise -m)"
	grep -Eq 'out of memory|MEMLIM|pan: reached' "$log" && incomplete="out of memory"
	[ $prc -eq 124 ] || [ $prc -eq 137 ] && incomplete="timed out after ${RUN_LIMIT}s"
	[ -n "$errors" ] || incomplete="${incomplete:-no result line from pan (exit $prc)}"
	grep -E '^(pan:|pan[0-9]*:|error:|Warning:)|violated|acceptance cycle|non-progress cycle' "$log" |
		grep -Ev '^Warning: Search not completed|elapsed time|wrote .*trail' | sort -u | head -n 5 | sed 's/^/    /'
	grep -E 'Search not completed|max search depth too small' "$log" | sort -u | sed 's/^/    /'
	printf '    states stored %s, transitions %s, depth %s, errors %s, %ss\n' \
		"${states:-?}" "${trans:-?}" "${depth:-?}" "${errors:-?}" "$secs"
	trail=$(find "$dir" -maxdepth 1 -name "*.trail" | head -n 1)
	show_trail() { # LINES [extra spin flags]
		echo "    --- error trail (spin -t -p ${2:-}), last $1 lines ---"
		# shellcheck disable=SC2086
		(cd "$dir" && "$SPIN" $sflags -t -p ${2:-} "$name.pml" 2>&1) | grep -v '^[[:space:]]*$' |
			if [ -z "${2:-}" ]; then grep -E '^[[:space:]]*[0-9]+:|Error|violated|CYCLE|timeout'; else cat; fi |
			tail -n "$1" | sed 's/^/    | /'
	}
	verdict=
	if [ "$expect" = pass ]; then
		if [ -n "$incomplete" ]; then
			verdict="FAIL ($incomplete)"
		elif [ "$errors" != 0 ]; then
			verdict="FAIL ($errors error(s))"
			[ -n "$trail" ] && show_trail 250 "-g -l"
		else
			verdict=PASS
		fi
	else
		if [ -z "$errors" ]; then
			verdict="FAIL (mutant: pan produced no result)"
		elif [ "$errors" = 0 ] || [ -z "$trail" ]; then
			verdict="FAIL (mutant NOT caught: the model cannot see this bug)"
		else
			verdict="PASS (mutant caught)"
			show_trail 10
		fi
	fi
	echo "    RESULT: $verdict"
	case $verdict in PASS*) ;; *) nfail=$((nfail + 1)) ;; esac
	summary+=("$(printf '%-5s %-40s states %-10s transitions %-10s %6ss' \
		"${verdict%% *}" "$name/$label" "${states:-?}" "${trans:-?}" "$secs")$([ "${verdict%% *}" = PASS ] || echo "  $verdict")")
done

echo "=== summary $name"
printf '%s\n' "${summary[@]}"
if [ $nfail -gt 0 ]; then
	echo "$name: $nfail run(s) not as expected"
	exit 1
fi
echo "$name: all ${#runs[@]} run(s) as expected"
exit 0
