#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi/check-layout.sh - compile abi/layout.c (the static_asserts of every
# public struct's size and member offsets) for each LP64 target we ship on:
# x86-64 (gcc, and clang when present), aarch64 and riscv64 (the cross
# compilers `make deps` installs). Also checks that layout.c covers every
# public struct and every member of it. Fails when an input is missing.
set -eu
cd "$(dirname "$0")/.."
hdr=include/knitting.h lay=abi/layout.c
[ -s "$hdr" ] || { echo "FAIL: $hdr missing or empty"; exit 1; }
[ -s "$lay" ] || { echo "FAIL: $lay missing or empty"; exit 1; }
fail=0
# Coverage: every member of every public struct has a KNIT_AT line, every
# struct a KNIT_SIZE line (a member added without one fails here, even when
# it happens to fit in padding and leaves the size alone).
missing=$(python3 - "$hdr" "$lay" <<'PY'
import re, sys
hdr, lay = open(sys.argv[1]).read(), open(sys.argv[2]).read()
structs = re.findall(r'typedef struct \w+ \{(.*?)\} (\w+);', hdr, re.S)
if not structs:
    print("no struct found in the header")
for body, td in structs:
    if f'KNIT_SIZE({td},' not in lay:
        print(f'{td}: no KNIT_SIZE')
    body = re.sub(r'/\*.*?\*/', '', body, flags=re.S)
    for decl in body.split(';'):
        decl = ' '.join(decl.split())
        if not decl or '(' in decl:
            continue
        m = re.match(r'^((?:const\s+)?(?:volatile\s+)?(?:struct\s+)?\w+(?:\s*\*)*)\s+(.*)$', decl)
        for d in m.group(2).split(','):
            n = re.match(r'\s*(?:\*\s*(?:const\b\s*)?)*(\w+)', d).group(1)
            if f'KNIT_AT({td}, {n},' not in lay:
                print(f'{td}.{n}: no KNIT_AT')
PY
)
if [ -n "$missing" ]; then echo "FAIL: $lay does not cover:"; echo "$missing"; fail=1; fi
n=0
for cc in gcc clang aarch64-linux-gnu-gcc riscv64-linux-gnu-gcc; do
	if ! command -v $cc >/dev/null 2>&1; then
		[ $cc = clang ] && continue # optional second x86-64 compiler
		echo "FAIL: $cc not installed (make deps installs it)"; fail=1; continue
	fi
	if $cc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude "$lay"; then
		n=$((n + 1))
	else
		echo "FAIL: $lay with $cc"; fail=1
	fi
done
[ $fail -eq 0 ] && echo "layout ok: $(grep -c '^KNIT_AT' "$lay") offsets, $(grep -c '^KNIT_SIZE' "$lay") sizes, $n compilers"
exit $fail
