#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cross/build-and-run.sh CC MARCH CPU ARCH SRC OUT
#
# Build one plain-C test program SRC statically with the cross compiler CC
# (adding the MARCH flags when non-empty) into OUT, then run it under
# qemu-ARCH (with -cpu CPU when non-empty). Called by `make check-cross`.
# A missing cross compiler or qemu is a failure (exit 1, said loudly), never a
# skip: the cross runs are how the aarch64 and riscv64 code gets tested at all.
# Exit status: the program's (0 pass, 1 fail), or 1 if it could not be built.
set -u
if [ $# -ne 6 ]; then
	echo "usage: $0 CC MARCH CPU ARCH SRC OUT" >&2
	exit 1
fi
cc=$1 march=$2 cpu=$3 arch=$4 src=$5 out=$6
qemu=qemu-$arch
if [ ! -s "$src" ]; then
	echo "FAIL: test source $src is missing or empty" >&2
	exit 1
fi

missing=
command -v "$cc" >/dev/null 2>&1 || missing="$missing $cc"
command -v "$qemu" >/dev/null 2>&1 || missing="$missing $qemu"
if [ -n "$missing" ]; then
	echo "FAIL: cross toolchain missing:$missing" >&2
	echo "      install it (Debian: gcc-$arch-linux-gnu qemu-user; 'make deps' does it)" >&2
	exit 1
fi

mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2086 # MARCH is a list of flags
cmd=("$cc" -static -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-missing-field-initializers
	-D_GNU_SOURCE $march -I. -Iinclude -Itests "$src" -o "$out" -pthread)
echo "+ ${cmd[*]}"
if ! "${cmd[@]}"; then
	echo "FAIL: cross build of $src with $cc failed" >&2
	exit 1
fi

run=("$qemu")
[ -n "$cpu" ] && run+=(-cpu "$cpu")
run+=("$out")
echo "+ ${run[*]}"
"${run[@]}"
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: $out exited $rc under $qemu" >&2
	[ $rc -eq 77 ] && exit 1 # a cross run never skips as a whole
fi
exit $rc
