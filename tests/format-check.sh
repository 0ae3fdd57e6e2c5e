#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/format-check.sh FILE... - every FILE is as clang-format (with the
# tree's .clang-format) would write it. Prints the files that are not, with
# the first lines of the change, and fails; `make format` rewrites them.
# Fails as well when no file is given or clang-format is missing: a check
# with nothing to check has not passed.
set -eu
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
command -v "$CLANG_FORMAT" >/dev/null 2>&1 || { echo "format-check: $CLANG_FORMAT not found" >&2; exit 1; }
[ $# -gt 0 ] || { echo "format-check: no files given" >&2; exit 1; }
[ -s .clang-format ] || { echo "format-check: no .clang-format in $(pwd)" >&2; exit 1; }
bad=0
for f in "$@"; do
	[ -f "$f" ] || { echo "format-check: $f: no such file" >&2; bad=1; continue; }
	if ! "$CLANG_FORMAT" --style=file "$f" | cmp -s - "$f"; then
		echo "format-check: $f is not formatted:" >&2
		"$CLANG_FORMAT" --style=file "$f" | diff -u "$f" - | sed -n '3,14p' >&2
		bad=1
	fi
done
[ $bad -eq 0 ] && echo "format-check: $# files formatted"
exit $bad
