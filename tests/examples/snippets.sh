#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/examples/snippets.sh OUTDIR PKG_CONFIG_DIR SOURCE - the C examples a
# reader copies are real programs: extract each fenced ```c block of a
# Markdown SOURCE (README.md), or each .EX/.EE block of the EXAMPLES section
# of a man page SOURCE, into OUTDIR/NAME.c, compile it with the flags the
# README gives (pkg-config against PKG_CONFIG_DIR, the uninstalled
# knitting.pc), and run it in OUTDIR; every program must exit 0.
#
# A block whose first line is a comment naming a file ("/* tasks.c ...")
# is that file; the others are SOURCE-N.c. C++ blocks (```cpp in Markdown;
# in a man page, a block that includes <knitting.hpp>) become NAME.cpp and
# are compiled as C++17 with c++. A block without a main() is a
# task library: it is built first, as libNAME.so in OUTDIR, so that the
# programs of the same SOURCE load it as "./libNAME.so".
# Fails when SOURCE is missing or yields no block, when a block does not
# compile (warnings are errors) or when a program fails or runs past 60 s.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 OUTDIR PKG_CONFIG_DIR SOURCE" >&2; exit 2; }
out=$1 pcdir=$2 src=$3
[ -f "$src" ] || { echo "FAIL: no source $src"; exit 1; }
[ -f "$pcdir/knitting.pc" ] || { echo "FAIL: no $pcdir/knitting.pc"; exit 1; }
base=$(basename "$src")
dir=$out/${base//./-}
rm -rf "$dir" && mkdir -p "$dir"

# Extraction: one file per block, named as above; prints the names.
case $src in
*.md)
	awk -v dir="$dir" -v stem="${base%.*}" '
		/^```c[ \t]*$/ { inb = 1; n++; f = sprintf("%s/%s-%d.c", dir, stem, n); first = 1; next }
		/^```cpp[ \t]*$/ { inb = 1; n++; f = sprintf("%s/%s-%d.cpp", dir, stem, n); first = 1; next }
		/^```/ && inb { inb = 0; close(f); print f; next }
		inb {
			if (first && match($0, /^\/\* [A-Za-z0-9_-]+\.c/)) {
				g = substr($0, 4, RLENGTH - 3); f = dir "/" g
			}
			first = 0; print > f
		}
		END { if (inb) { print "FAIL: unclosed ```c block" > "/dev/stderr"; exit 1 } }
	' "$src" >"$dir/blocks"
	;;
*.[1-8])
	# roff to C: \e is a backslash, \- a minus, \(aq a quote, \& nothing.
	awk -v dir="$dir" -v stem="${base%.*}" '
		/^\.SH / { ex = ($0 ~ /^\.SH EXAMPLES?$/); next }
		ex && /^\.EX$/ { inb = 1; n++; f = sprintf("%s/%s%s.c", dir, stem, n > 1 ? "-" n : ""); first = 1; next }
		ex && /^\.EE$/ && inb { inb = 0; close(f); print f; next }
		inb {
			gsub(/\\e/, "\001"); gsub(/\\-/, "-"); gsub(/\\\(aq/, "\047")
			gsub(/\\\(dq/, "\""); gsub(/\\&/, ""); gsub(/\001/, "\\")
			if (first && match($0, /^\/\* [A-Za-z0-9_-]+\.c/)) {
				g = substr($0, 4, RLENGTH - 3); f = dir "/" g
			}
			first = 0; print > f
		}
	' "$src" >"$dir/blocks"
	;;
*) echo "FAIL: $src is neither Markdown nor a man page"; exit 1 ;;
esac
# A man page block that includes knitting.hpp is C++.
while read -r f; do
	case $f in *.c) if grep -q '^#include <knitting.hpp>' "$f"; then mv "$f" "${f%.c}.cpp"; f=${f%.c}.cpp; fi ;; esac
	echo "$f"
done <"$dir/blocks" >"$dir/blocks.lang"
mv "$dir/blocks.lang" "$dir/blocks"
mapfile -t blocks <"$dir/blocks"
[ ${#blocks[@]} -gt 0 ] || { echo "FAIL: $src has no C example block"; exit 1; }

# shellcheck disable=SC2046
pc() { PKG_CONFIG_PATH=$pcdir pkg-config "$@" knitting; }
cflags="-std=gnu11 -Wall -Wextra -Werror -pthread"
cxxflags="-std=c++17 -Wall -Wextra -Werror -pthread"
# cc or c++ and its flags for a block, by its name.
compile() {
	case $1 in
	*.cpp) c++ $cxxflags "$@" ;;
	*) cc $cflags "$@" ;;
	esac
}
fail=0
progs=()
for f in "${blocks[@]}"; do
	n=$(basename "${f%.c*}")
	if grep -q '^int main(' "$f"; then progs+=("$f"); continue; fi
	# shellcheck disable=SC2086
	if ! compile "$f" -shared -fPIC -o "$dir/lib$n.so" $(pc --cflags --libs) 2>"$dir/$n.err"; then
		echo "FAIL: $src: task library $(basename "$f") does not compile:"; cat "$dir/$n.err"; fail=1
	fi
done
for f in "${progs[@]}"; do
	n=$(basename "${f%.c*}")
	# shellcheck disable=SC2086
	if ! compile "$f" -o "$dir/$n" $(pc --cflags --libs) 2>"$dir/$n.err"; then
		echo "FAIL: $src: $(basename "$f") does not compile:"; cat "$dir/$n.err"; fail=1; continue
	fi
	st=0
	(cd "$dir" && timeout 60 "./$n") >"$dir/$n.out" 2>&1 || st=$?
	if [ $st -ne 0 ]; then
		echo "FAIL: $src: $n exited $st:"; cat "$dir/$n.out"; fail=1
	else
		echo "ok: $n: $(head -n1 "$dir/$n.out")"
	fi
done
[ ${#progs[@]} -gt 0 ] || { echo "FAIL: $src has no program (a block with main)"; fail=1; }
echo "$src: ${#blocks[@]} blocks, ${#progs[@]} programs"
exit $fail
