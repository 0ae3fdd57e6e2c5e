#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# man/check.sh LIB - every exported function has a man3 page (a page of its
# own or a .so alias), libknitting(7) exists, and mandoc -Tlint finds nothing
# at warning level or above in any page.
set -eu
lib=$1
cd "$(dirname "$0")"
fail=0
for sym in $(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort -u); do
	if [ ! -f "man3/$sym.3" ]; then echo "FAIL: no man page man3/$sym.3"; fail=1; fi
done
[ -f man7/libknitting.7 ] || { echo "FAIL: no man7/libknitting.7"; fail=1; }
shopt -s nullglob
pages=(man3/*.3 man7/*.7 man8/*.8)
for p in "${pages[@]}"; do
	if head -n 1 "$p" | grep -q '^\.so '; then
		target=$(head -n 1 "$p" | awk '{ print $2 }')
		[ -f "$target" ] || { echo "FAIL: $p aliases missing $target"; fail=1; }
		continue
	fi
	out=$(mandoc -Tlint -Wwarning "$p" 2>&1 || true)
	if [ -n "$out" ]; then echo "FAIL: mandoc -Tlint $p:"; echo "$out"; fail=1; fi
done
echo "checked ${#pages[@]} pages"
exit $fail
