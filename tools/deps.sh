#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/deps.sh [--demo | --bench] - install the Debian packages one make
# target needs, only when something is missing:
#   --demo   `make demo` and a plain `make` of the library: a C/C++ compiler,
#            make, pkg-config, liburcu, the USDT probe header and libseccomp
#            (knit-worker's sandbox filter)
#   (none)   `make check`: the above and every test suite's tools (cmocka,
#            Criterion, clang/bpftool for knit-trace, qemu-user and cross
#            compilers, spin, abigail-tools, mandoc, cmake, python3 with pytest
#            and venv (the Python package's suite), gnuplot)
#   --bench  `make bench`: the --demo set and the peers knit-bench measures
#            libknitting against (knit-bench builds without them and says
#            which it left out), and gnuplot for its plot
# Idempotent; on a machine that has everything it runs one dpkg-query and
# exits (well under a second), and so needs no root then.
set -eu

DEMO_PKGS="g++ make pkg-config liburcu-dev systemtap-sdt-dev libseccomp-dev"
CHECK_PKGS="$DEMO_PKGS libcmocka-dev libcriterion-dev
libbpf-dev bpftool clang llvm lld libelf-dev zlib1g-dev
python3 python3-pytest python3-venv cmake qemu-user g++-aarch64-linux-gnu g++-riscv64-linux-gnu mandoc
abigail-tools dpkg-dev spin gnuplot-nox"
BENCH_PKGS="$DEMO_PKGS libtbb-dev libboost-dev libconcurrentqueue-dev libatomic-queue-dev gnuplot-nox"

case "${1:-}" in
"") PKGS=$CHECK_PKGS ;;
--demo) PKGS=$DEMO_PKGS ;;
--bench) PKGS=$BENCH_PKGS ;;
*) echo "usage: $0 [--demo | --bench]" >&2; exit 2 ;;
esac

# One dpkg-query for the whole list; a package it does not know is missing.
# shellcheck disable=SC2086
installed=" $(dpkg-query -W -f='${db:Status-Status}:${Package} ' $PKGS 2>/dev/null || true) "
missing=""
for p in $PKGS; do
	case $installed in *" installed:$p "*) ;; *) missing="$missing $p" ;; esac
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
