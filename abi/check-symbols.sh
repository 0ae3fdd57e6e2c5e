#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi/check-symbols.sh LIB SYMBOLS
# The dpkg symbols file beside the version script lists exactly what the
# library exports, each with its version node (dpkg-gensymbols -c4: any
# symbol added, removed or moved to another node fails). Fails when an input
# is missing or empty.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 LIB SYMBOLS" >&2; exit 1; }
lib=$(readlink -f "$1") sym=$(readlink -f "$2")
[ -s "$lib" ] || { echo "FAIL: no library $1"; exit 1; }
[ -s "$sym" ] || { echo "FAIL: no symbols file $2 (missing or empty)"; exit 1; }
grep -q '^ knit_pool_create@' "$sym" || { echo "FAIL: $2 lists no knit_pool_create"; exit 1; }
command -v dpkg-gensymbols >/dev/null || { echo "FAIL: dpkg-gensymbols not installed (make deps installs dpkg-dev)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian"
# dpkg-gensymbols wants a package to attribute the file to; a minimal
# control file is enough (nothing is built or installed).
# The package is the one the file's header line names (libknittingMAJOR).
pkg=$(sed -n '/^libknitting\.so\./{s/^[^ ]* \([^ ]*\) .*/\1/p;q}' "$sym")
[ -n "$pkg" ] || { echo "FAIL: $2 has no 'libknitting.so.N PACKAGE' header line"; exit 1; }
printf 'Source: knitting\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$work/debian/control"
ver=$(sed -n '/^ knit_/{s/.* //p;q}' "$sym")
if ! (cd "$work" && dpkg-gensymbols -c4 -p"$pkg" -v"$ver" -e"$lib" -I"$sym" -O"$work/out" >"$work/diff" 2>&1); then
	cat "$work/diff"
	echo "FAIL: $2 does not match what $1 exports"
	exit 1
fi
echo "symbols ok: $(grep -c '^ knit_' "$sym") functions in $(grep -c '^ LIBKNITTING_' "$sym") version node(s)"
