#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# man/check.sh LIB [TOOL...] - every exported function has a man3 page (a
# page of its own or a symlink alias), libknitting(7) exists, no page renders
# wider than 80 columns, mandoc -Tlint finds nothing at warning level or
# above in any page, every page's .TH footer names the version in
# include/knitting.h ("libknitting MAJOR.MINOR.PATCH"; `make man-version`
# writes it), and each TOOL's `--version` prints "NAME MAJOR.MINOR.PATCH".
# Fails when its input is missing or empty: no library, a library without
# exported functions, no pages, no version in the header, a TOOL that is
# not an executable.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 LIB [TOOL...]" >&2; exit 1; }
# Resolve LIB and the tools before changing directory: a relative path is
# relative to the caller's directory, not to man/.
[ -f "$1" ] || { echo "FAIL: no library $1"; exit 1; }
lib=$(readlink -f "$1")
shift
tools=()
for t in "$@"; do
	[ -x "$t" ] || { echo "FAIL: no tool $t"; exit 1; }
	tools+=("$(readlink -f "$t")")
done
cd "$(dirname "$0")"
fail=0
hdr=../include/knitting.h
ver=""
for part in MAJOR MINOR PATCH; do
	n=$(sed -n "s/^#define KNIT_VERSION_$part \([0-9][0-9]*\)\$/\1/p" "$hdr" 2>/dev/null || true)
	[ -n "$n" ] || { echo "FAIL: no KNIT_VERSION_$part in $hdr"; exit 1; }
	ver=${ver:+$ver.}$n
done
syms=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort -u)
[ -n "$syms" ] || { echo "FAIL: $lib exports no function (nothing to check)"; exit 1; }
nsyms=0
for sym in $syms; do
	nsyms=$((nsyms + 1))
	if [ ! -f "man3/$sym.3" ]; then echo "FAIL: no man page man3/$sym.3"; fail=1; fi
done
[ -f man7/libknitting.7 ] || { echo "FAIL: no man7/libknitting.7"; fail=1; }
shopt -s nullglob
pages=(man1/*.1 man3/*.3 man7/*.7 man8/*.8)
[ ${#pages[@]} -gt 0 ] || { echo "FAIL: no man pages in $(pwd)"; exit 1; }
for p in "${pages[@]}"; do
	# Aliases are symlinks in the same directory, so `man -l man/man3/X.3`
	# works from any directory (a .so request resolves against the reader's
	# working directory, which fails from the repository root).
	if [ -L "$p" ]; then
		target=$(readlink "$p")
		case $target in */*) echo "FAIL: $p links outside its directory ($target)"; fail=1 ;; esac
		[ -f "$p" ] || { echo "FAIL: $p aliases missing $target"; fail=1; }
		continue
	fi
	if grep -q '^\.so ' "$p"; then
		echo "FAIL: $p uses .so (make it a symlink: man -l fails on .so from elsewhere)"; fail=1
		continue
	fi
	# The footer: .TH TITLE SECTION DATE "libknitting VERSION" "libknitting Manual".
	th=$(grep -m1 '^\.TH ' "$p" || true)
	foot=$(printf '%s\n' "$th" | sed -n 's/^\.TH [^ ]* [^ ]* [^ ]* "\([^"]*\)".*/\1/p')
	if [ "$foot" != "libknitting $ver" ]; then
		echo "FAIL: $p footer says \"${foot:-(no .TH footer)}\", the header says libknitting $ver (make man-version)"
		fail=1
	fi
	out=$(mandoc -Tlint -Wwarning "$p" 2>&1 || true)
	if [ -n "$out" ]; then echo "FAIL: mandoc -Tlint $p:"; echo "$out"; fail=1; fi
	# An 80-column terminal shows every line whole (examples included:
	# mandoc does not wrap .EX blocks, so a long code line spills over).
	wide=$(mandoc -Tascii -Owidth=80 "$p" | col -bx | awk 'length > 80' || true)
	if [ -n "$wide" ]; then echo "FAIL: $p renders lines wider than 80 columns:"; echo "$wide"; fail=1; fi
done
for t in "${tools[@]}"; do
	want="$(basename "$t") $ver"
	got=$("$t" --version 2>&1 | head -n1 || true)
	if [ "$got" != "$want" ]; then echo "FAIL: $t --version prints \"$got\", not \"$want\""; fail=1; fi
done
echo "checked ${#pages[@]} pages against $nsyms exported functions and version $ver; ${#tools[@]} tool versions"
exit $fail
