#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi/check-exports.sh LIB MAP
# The shared library exports exactly the functions the version script lists,
# all knit_*, none C++ (no _Z symbol defined or needed), and does not need
# libstdc++ at run time.
# Fails when an input is missing or empty (no library, no map, no export,
# nothing listed): comparing two empty lists would prove nothing.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 LIB MAP" >&2; exit 1; }
lib=$1 map=$2
[ -f "$lib" ] || { echo "FAIL: no library $lib"; exit 1; }
[ -s "$map" ] || { echo "FAIL: no version script $map (missing or empty)"; exit 1; }
fail=0
needed=$(readelf -d "$lib" | awk '/NEEDED/ { gsub(/[\[\]]/, "", $5); print $5 }')
echo "NEEDED: $(echo $needed)"
if echo "$needed" | grep -q 'libstdc++'; then
	echo "FAIL: $lib needs libstdc++"; fail=1
fi
if ldd "$lib" | grep -q 'libstdc++'; then
	echo "FAIL: ldd shows libstdc++"; fail=1
fi
# The runtime links libc and liburcu only (libseccomp is knit-worker's,
# for the process pools' sandbox, never the library's).
for n in $needed; do
	case $n in
	libc.so.* | ld-linux*.so.* | liburcu*.so.*) ;;
	*) echo "FAIL: $lib needs $n (only libc and liburcu are allowed)"; fail=1 ;;
	esac
done
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' | sed 's/@.*//' | sort -u)
listed=$(sed -n '/global:/,/local:/p' "$map" | grep -oE '^[[:space:]]*knit_[a-z0-9_]+' | sed 's/^[[:space:]]*//' | sort -u)
[ -n "$exported" ] || { echo "FAIL: $lib exports nothing"; exit 1; }
[ -n "$listed" ] || { echo "FAIL: $map lists no knit_ function under global:"; exit 1; }
extra=$(comm -23 <(echo "$exported") <(echo "$listed"))
missing=$(comm -13 <(echo "$exported") <(echo "$listed"))
if [ -n "$extra" ]; then echo "FAIL: exported but not in $map:"; echo "$extra"; fail=1; fi
if [ -n "$missing" ]; then echo "FAIL: in $map but not exported:"; echo "$missing"; fail=1; fi
if echo "$exported" | grep -qv '^knit_'; then echo "FAIL: non-knit_ export"; fail=1; fi
# Private entries (knit__*, e.g. the knit-worker executable's) live in the
# KNITTING_PRIVATE nodes only; everything else in a public LIBKNITTING_ node.
while read -r sym; do
	case $sym in
	knit__*@@KNITTING_PRIVATE | knit__*@@KNITTING_PRIVATE_* | knit_[a-z]*@@LIBKNITTING_*) ;;
	*) echo "FAIL: $sym is in the wrong version node"; fail=1 ;;
	esac
done < <(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ && $3 ~ /^knit_/ { print $3 }')
cxx=$(nm -D "$lib" | awk '{ print $NF }' | grep '^_Z' || true)
if [ -n "$cxx" ]; then echo "FAIL: C++ symbols cross the ABI:"; echo "$cxx"; fail=1; fi
echo "exports: $(echo $exported)"
exit $fail
