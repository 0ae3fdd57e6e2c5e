#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install/check.sh LIB   install into a stage and build consumers from it
#
# `make install DESTDIR=stage prefix=/usr`, then, using only the stage:
# a C program built with pkg-config (shared), the same with the static library,
# and a CMake project using find_package(knitting) (shared and static targets).
# Each makes one real knit_call and checks the answer. Then `make uninstall`
# must leave no file or symlink in the stage. LIB is the built shared library:
# without it there is nothing to test, which is a failure, not a skip.
# MAKE (default make) runs install/uninstall.
set -eu
lib=$1
here=$(cd "$(dirname "$0")" && pwd)
make=${MAKE:-make}
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$lib" ] || fail "no library built at $lib"
command -v pkg-config >/dev/null || fail "pkg-config is missing (tools/deps.sh installs it)"
command -v cmake >/dev/null || fail "cmake is missing (tools/deps.sh installs it)"

# The version's one source, the header: the names it gives the library.
hdr=$here/../../include/knitting.h
ver() { sed -n "s/^#define KNIT_VERSION_$1 \([0-9][0-9]*\)$/\1/p" "$hdr"; }
major=$(ver MAJOR) minor=$(ver MINOR) patch=$(ver PATCH)
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || fail "no KNIT_VERSION_* in $hdr"
so=libknitting.so.$major real=libknitting.so.$major.$minor.$patch

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
mkdir -p "$stage"

$make --no-print-directory install DESTDIR="$stage" prefix=/usr >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "make install"; }

# What a packager expects to find; a missing one is a failure on its own.
for f in usr/lib/$real usr/lib/$so usr/lib/libknitting.so \
	usr/lib/libknitting.a usr/include/knitting.h usr/lib/pkgconfig/knitting.pc \
	usr/lib/cmake/knitting/knittingConfig.cmake usr/lib/cmake/knitting/knittingConfigVersion.cmake \
	usr/share/man/man3/knit_call.3 usr/share/man/man7/libknitting.7 usr/share/man/man8/knit-trace.8 \
	usr/libexec/knitting/knit-worker usr/share/man/man8/knit-worker.8; do
	[ -e "$stage/$f" ] || fail "make install did not install /$f"
done
[ "$(readlink "$stage/usr/lib/$so")" = "$real" ] || fail "$so link"
[ "$(readlink "$stage/usr/lib/libknitting.so")" = "$so" ] || fail "libknitting.so link"
soname=$(readelf -d "$stage/usr/lib/$real" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "$so" ] || fail "SONAME is '$soname'"

export PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_LIBDIR=$stage/usr/lib/pkgconfig
unset PKG_CONFIG_PATH
export LD_LIBRARY_PATH=$stage/usr/lib

echo "== pkg-config, shared"
flags=$(pkg-config --cflags --libs knitting)
echo "cc consumer.c $flags"
cc -std=gnu11 -Wall -Werror "$here/consumer.c" $flags -o "$tmp/pc_shared"
readelf -d "$tmp/pc_shared" | grep -q "NEEDED.*\\[$so\\]" || fail "pc_shared does not load $so"
"$tmp/pc_shared"

echo "== process pool: the installed library finds the installed knit-worker"
cc -std=gnu11 -Wall -Werror -shared -fPIC "$here/../api/tasklib/proc_tasks.c" $flags -o "$tmp/libtasks.so"
cc -std=gnu11 -Wall -Werror "$here/proc_consumer.c" $flags -o "$tmp/pc_proc"
env -u KNIT_WORKER_PATH "$tmp/pc_proc" "$tmp/libtasks.so"

echo "== pkg-config, static"
# -l:libknitting.a: the .so sits next to the .a and -lknitting would pick it.
sflags=$(pkg-config --static --cflags --libs knitting | sed 's/-lknitting\b/-l:libknitting.a/')
echo "cc consumer.c $sflags"
cc -std=gnu11 -Wall -Werror "$here/consumer.c" $sflags -o "$tmp/pc_static"
! readelf -d "$tmp/pc_static" | grep -q 'NEEDED.*libknitting' || fail "pc_static still needs libknitting.so"
LD_LIBRARY_PATH= "$tmp/pc_static"

echo "== cmake find_package(knitting)"
cmake -S "$here" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$stage/usr" -DCMAKE_BUILD_TYPE=Release \
	>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake configure"; }
cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake build"; }
readelf -d "$tmp/cmake/consumer_shared" | grep -q "NEEDED.*\\[$so\\]" ||
	fail "consumer_shared does not load $so"
! readelf -d "$tmp/cmake/consumer_static" | grep -q 'NEEDED.*libknitting' ||
	fail "consumer_static still needs libknitting.so"
"$tmp/cmake/consumer_shared"
LD_LIBRARY_PATH= "$tmp/cmake/consumer_static"

# C++: knitting.hpp is installed beside knitting.h; a consumer builds with
# only pkg-config's flags, and with find_package(knitting).
check_cxx() {
	[ -f "$stage/usr/include/knitting.hpp" ] || fail "make install did not install /usr/include/knitting.hpp"
	echo "== C++ (knitting.hpp), pkg-config"
	echo "c++ consumer.cpp $flags"
	c++ -std=c++17 -Wall -Wextra -Werror -pedantic "$here/cxx/consumer.cpp" $flags -o "$tmp/pc_cxx"
	readelf -d "$tmp/pc_cxx" | grep -q "NEEDED.*\\[$so\\]" || fail "pc_cxx does not load $so"
	"$tmp/pc_cxx"
	echo "== C++ (knitting.hpp), cmake find_package(knitting)"
	cmake -S "$here/cxx" -B "$tmp/cmake-cxx" -DCMAKE_PREFIX_PATH="$stage/usr" -DCMAKE_BUILD_TYPE=Release \
		>"$tmp/cmake-cxx.log" 2>&1 || { cat "$tmp/cmake-cxx.log"; fail "cmake configure (C++)"; }
	cmake --build "$tmp/cmake-cxx" >>"$tmp/cmake-cxx.log" 2>&1 || { cat "$tmp/cmake-cxx.log"; fail "cmake build (C++)"; }
	"$tmp/cmake-cxx/cxx_consumer"
}
check_cxx

echo "== uninstall"
$make --no-print-directory uninstall DESTDIR="$stage" prefix=/usr >"$tmp/uninstall.log" 2>&1 ||
	{ cat "$tmp/uninstall.log"; fail "make uninstall"; }
left=$(cd "$stage" && find . ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
[ ! -d "$stage/usr/lib/cmake/knitting" ] || fail "make uninstall left lib/cmake/knitting"
echo "install, 4 consumers, uninstall: ok"
