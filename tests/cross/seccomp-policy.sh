#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cross/seccomp-policy.sh CC - the sandbox's seccomp policy
# (tools/knit-worker/seccomp.c) compiles for CC's architecture. The policy
# names every syscall (libseccomp resolves the names on the machine it runs
# on), so the check is that it builds against the target's own kernel
# headers: the host's libseccomp headers are architecture-neutral and are
# taken after the target's (-idirafter). Exit 77 (skipped) without a cross
# compiler or libseccomp's headers, saying which.
set -eu
cc=$1
command -v "$cc" >/dev/null || { echo "SKIP: no $cc (make deps installs it)"; exit 77; }
[ -f /usr/include/seccomp.h ] || { echo "SKIP: no seccomp.h (make deps installs libseccomp-dev)"; exit 77; }
inc=$(mktemp -d)
trap 'rm -rf "$inc"' EXIT
cp /usr/include/seccomp.h /usr/include/seccomp-syscalls.h "$inc/"
"$cc" -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -Iinclude -idirafter "$inc" \
	tools/knit-worker/seccomp.c
echo "ok: tools/knit-worker/seccomp.c builds for $("$cc" -dumpmachine)"
