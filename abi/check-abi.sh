#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi/check-abi.sh BASELINE LIB HEADERS_DIR [SUPPRESSIONS]
# Compare the library's ABI (its exported functions and every public type
# they reach, from the library's DWARF) with the committed abidw baseline.
# Any difference abidiff reports fails: a removed or changed symbol, a
# public struct whose size or layout changed. Types not declared in
# HEADERS_DIR (the opaque knit_pool, the runtime's internals) are private and
# ignored. SUPPRESSIONS lists the changes allowed (abi/knitting.abignore:
# size-prefixed structs growing at the end). Added symbols fail too: a
# release that adds functions regenerates the baseline on purpose
# (`make abi-baseline`) together with a new version node in the map.
# Fails when an input is missing or empty.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 BASELINE LIB HEADERS_DIR [SUPPRESSIONS]" >&2; exit 1; }
base=$1 lib=$2 hdrs=$3 supp=${4:-}
[ -s "$base" ] || { echo "FAIL: no baseline $base (missing or empty; make abi-baseline writes it)"; exit 1; }
grep -q "<elf-symbol name='knit_pool_create'" "$base" || { echo "FAIL: $base is not an abidw corpus of libknitting"; exit 1; }
[ -s "$lib" ] || { echo "FAIL: no library $lib"; exit 1; }
[ -s "$hdrs/knitting.h" ] || { echo "FAIL: no $hdrs/knitting.h"; exit 1; }
command -v abidiff >/dev/null || { echo "FAIL: abidiff not installed (make deps installs abigail-tools)"; exit 1; }
args=(--headers-dir1 "$hdrs" --headers-dir2 "$hdrs" --no-added-syms)
if [ -n "$supp" ]; then
	[ -s "$supp" ] || { echo "FAIL: suppression file $supp missing or empty"; exit 1; }
	args+=(--suppressions "$supp")
fi
rc=0
out=$(abidiff "${args[@]}" "$base" "$lib") || rc=$?
# abidiff's exit status is a bit field: 1 error, 2 usage, 4 ABI change,
# 8 incompatible change. Anything but 0 fails.
if [ $rc -ne 0 ]; then
	echo "$out"
	echo "FAIL: $lib differs from $base (abidiff status $rc)"
	exit 1
fi
# Added symbols: abidiff was told not to count them above (--no-added-syms)
# so that its report stays about changes; count them here instead.
now=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort -u)
was=$(grep -o "<elf-symbol name='knit_[a-z0-9_]*' version='[A-Z0-9_.]*'" "$base" |
	sed -E "s/<elf-symbol name='([^']*)' version='([^']*)'/\\1@@\\2/" | sort -u)
added=$(comm -23 <(echo "$now") <(echo "$was"))
if [ -n "$added" ]; then
	echo "FAIL: exported but not in the baseline $base:"; echo "$added"
	echo "  (a release that adds them: new version node in abi/libknitting.map, then make abi-baseline)"
	exit 1
fi
echo "abi ok: $(echo "$was" | wc -l) symbols and their types match $base"
