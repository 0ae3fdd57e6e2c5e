#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/layering.sh [SRC_DIR] - the floors of src/ are true.
#
# A module is a stem of src/ (x.h and x.cpp together). Its floor is written
# once, in the "Floors" table of SRC_DIR/README.md (rows "| floor | module |
# ..."). This check fails when
#   - the table is missing or empty, or a file of src/ belongs to no row, or a
#     row names a module that has no file;
#   - a module includes a module on a higher floor ("an include runs up"),
#     or the module include graph has a loop (tsort), except by an edge listed
#     in the "Loops" table of the same README ("| from | to | why |"), each with its
#     reason; a listed edge that no longer exists fails too, so the list
#     cannot go stale.
# Includes of arch/ and include/ lie below every floor and are not checked.
set -eu
export LC_ALL=C
src=${1:-src}
readme=$src/README.md
fail() { echo "layering: $*" >&2; exit 1; }
[ -s "$readme" ] || fail "$readme is missing or empty: it holds the floor table"
ls "$src"/*.h "$src"/*.cpp >/dev/null 2>&1 || fail "no sources in $src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The floor table: the rows between "## Floors" and the next heading.
awk '/^## /{f=($0 ~ /^## Floors/)} f && /^\| *[0-9]+ *\| *`?[a-z0-9_]+`? *\|/ {
	gsub(/`/,""); split($0,c,"|"); fl=c[2]; m=c[3]; gsub(/ /,"",fl); gsub(/ /,"",m); print m, fl }' \
	"$readme" | sort > "$tmp/floors"
[ -s "$tmp/floors" ] || fail "no rows in the Floors table of $readme"
dups=$(awk '{print $1}' "$tmp/floors" | uniq -d)
[ -z "$dups" ] || fail "modules in the Floors table twice: $dups"

awk '/^## /{f=($0 ~ /^## Loops/)} f && /^\| *`?[a-z0-9_]+`? *\| *`?[a-z0-9_]+`? *\|/ {
	gsub(/`/,""); split($0,c,"|"); a=c[2]; b=c[3]; gsub(/ /,"",a); gsub(/ /,"",b);
	if (a != "from") print a, b }' "$readme" | sort -u > "$tmp/loops"

# Every file belongs to a row, every row to a file.
for f in "$src"/*.h "$src"/*.cpp; do
	b=$(basename "$f"); echo "${b%.*}"
done | sort -u > "$tmp/modules"
missing=$(join -v1 "$tmp/modules" "$tmp/floors" | tr '\n' ' ')
[ -z "$missing" ] || fail "modules with no row in the Floors table of $readme: $missing"
stale=$(join -v2 "$tmp/modules" "$tmp/floors" | awk '{print $1}' | tr '\n' ' ')
[ -z "$stale" ] || fail "rows of the Floors table with no file in $src: $stale"

# The module include graph: "from to" for every #include "src/to.h" in from.*.
for f in "$src"/*.h "$src"/*.cpp; do
	b=$(basename "$f"); m=${b%.*}
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"src\/\([a-z0-9_]*\)\.h".*/\1/p' "$f" |
		while read -r to; do [ "$to" = "$m" ] || echo "$m $to"; done
done | sort -u > "$tmp/edges"
[ -s "$tmp/edges" ] || fail "no includes between modules found in $src: is the pattern still right?"

# The listed loop edges are the only ones allowed to point up or close a loop.
for e in $(awk '{print $1":"$2}' "$tmp/loops"); do
	grep -qx "${e%%:*} ${e#*:}" "$tmp/edges" ||
		fail "the Loops table lists ${e%%:*} -> ${e#*:}, which no include makes any more"
done
grep -vxFf "$tmp/loops" "$tmp/edges" > "$tmp/dag" || true
# Up a floor: floor(to) > floor(from).
bad=$(sort -k1,1 "$tmp/dag" | join - "$tmp/floors" | sort -k2,2 |
	join -1 2 -2 1 - "$tmp/floors" |
	awk '$4 > $3 { printf "  %s (floor %s) includes %s (floor %s)\n", $2, $3, $1, $4 }')
[ -z "$bad" ] || fail "includes that run up a floor:
$bad"

# Loops: tsort over the rest.
if ! tsort "$tmp/dag" > /dev/null 2> "$tmp/tsort"; then
	fail "the module include graph has a loop (tsort: $(tr '\n' ' ' < "$tmp/tsort"))"
fi
n=$(wc -l < "$tmp/floors"); e=$(wc -l < "$tmp/edges")
echo "layering: $n modules on $(awk '{print $2}' "$tmp/floors" | sort -u | wc -l) floors, $e include edges, none up a floor, no loop$( [ -s "$tmp/loops" ] && echo " but the $(wc -l < "$tmp/loops") listed")"
