#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages libknitting builds and tests with (with
# --bench: the ones `make bench` needs), only when something is missing. Idempotent; on a machine that has everything it runs
# one dpkg-query and exits (well under a second).
set -eu

PKGS="g++ make pkg-config liburcu-dev libcmocka-dev libcriterion-dev
libbpf-dev bpftool clang llvm lld libelf-dev zlib1g-dev systemtap-sdt-dev
python3 cmake qemu-user g++-aarch64-linux-gnu g++-riscv64-linux-gnu mandoc
abigail-tools dpkg-dev spin gnuplot-nox"

# `make bench` only (tools/deps.sh --bench): the peers knit-bench measures
# libknitting against. knit-bench builds without them and says which it left out.
BENCH_PKGS="libtbb-dev libboost-dev libconcurrentqueue-dev libatomic-queue-dev gnuplot-nox"
if [ "${1:-}" = "--bench" ]; then
	PKGS=$BENCH_PKGS
fi

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = "installed" ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "deps: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
		echo "deps: need root (or sudo) to install:$missing" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
