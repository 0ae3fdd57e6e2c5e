#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install/check.sh LIB   install into a stage and build consumers from it
#
# `make install DESTDIR=stage prefix=/usr`, then, using only the stage:
# a C program built with pkg-config (shared), the same with the static library,
# a process pool whose library finds the installed knit-worker by itself,
# C++ programs linked with the static library (their own C++ runtime and
# operator new stay theirs), and a CMake project using find_package(knitting)
# (shared and static targets). Each makes one real knit_call and checks the
# answer. The files' modes, the .pc's fields and the static archive's global
# symbols (the map's exports only) are checked. Then the same install with a
# multiarch libdir (prefix=/usr libdir=/usr/lib/<triplet>, as Debian does):
# the files in their arch-qualified places and a process pool from there.
# And a real install into a scratch prefix (no DESTDIR, so `make install`
# prints its ldconfig hint) from which a program linked with libknitting.a
# runs a process pool through the worker path compiled into the archive.
# After each, `make uninstall` must leave no file or symlink behind.
# LIB is the built shared library: without it there is nothing to test, which
# is a failure, not a skip. MAKE (default make) runs install/uninstall.
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
# files_ok STAGE LIBDIR: what a packager expects to find, and their modes.
files_ok() {
	local st=$1 ld=$2 f m
	for f in $ld/$real $ld/$so $ld/libknitting.so \
		$ld/libknitting.a usr/include/knitting.h $ld/pkgconfig/knitting.pc \
		$ld/cmake/knitting/knittingConfig.cmake $ld/cmake/knitting/knittingConfigVersion.cmake \
		usr/share/man/man3/knit_call.3 usr/share/man/man7/libknitting.7 usr/share/man/man8/knit-trace.8 \
		$ld/knitting/knit-worker usr/share/man/man8/knit-worker.8; do
		[ -e "$st/$f" ] || fail "make install did not install /$f"
	done
	[ "$(readlink "$st/$ld/$so")" = "$real" ] || fail "$so link"
	[ "$(readlink "$st/$ld/libknitting.so")" = "$so" ] || fail "libknitting.so link"
	soname=$(readelf -d "$st/$ld/$real" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
	[ "$soname" = "$so" ] || fail "SONAME is '$soname'"
	# A shared library is not a program (lintian: shlib-with-executable-bit).
	for f in $ld/$real:644 $ld/libknitting.a:644 usr/include/knitting.h:644 \
		$ld/pkgconfig/knitting.pc:644 $ld/knitting/knit-worker:755; do
		m=$(stat -c %a "$st/${f%:*}")
		[ "$m" = "${f##*:}" ] || fail "/${f%:*} is mode $m, want ${f##*:}"
	done
	# The worker path a program linked with libknitting.a uses, compiled in.
	grep -qaF "/$ld/knitting/knit-worker" "$st/$ld/libknitting.a" ||
		fail "libknitting.a does not carry the install path /$ld/knitting/knit-worker"
}
files_ok "$stage" usr/lib

export PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_LIBDIR=$stage/usr/lib/pkgconfig
unset PKG_CONFIG_PATH
export LD_LIBRARY_PATH=$stage/usr/lib

echo "== knitting.pc"
pkg-config --validate knitting || fail "pkg-config --validate knitting"
for v in Name Description URL Version Libs Libs.private Cflags; do
	grep -Eq "^$v: *[^ ]" "$stage/usr/lib/pkgconfig/knitting.pc" || fail "knitting.pc has no $v: field"
done
[ "$(pkg-config --modversion knitting)" = "$major.$minor.$patch" ] || fail "knitting.pc Version"

echo "== libknitting.a: only the map's exports are global"
map=$here/../../abi/libknitting.map
want=$(sed -n 's/^[[:space:]]*\(knit_[A-Za-z0-9_]*\);.*/\1/p' "$map" | sort)
[ -n "$want" ] || fail "no exports read from $map"
have=$(nm -g --defined-only "$stage/usr/lib/libknitting.a" | awk 'NF == 3 { print $3 }' | sort)
[ -n "$have" ] || fail "nm found no global symbols in libknitting.a"
if [ "$have" != "$want" ]; then
	diff <(echo "$want") <(echo "$have") | head -20 >&2
	fail "libknitting.a's global symbols are not the map's exports ($(echo "$have" | wc -l) global, $(echo "$want" | wc -l) exports)"
fi

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

echo "== C++ programs and the static library"
for v in plain own-new; do
	d=; [ $v = own-new ] && d=-DCXX_STATIC_OWN_NEW
	echo "c++ $d cxx_static.cpp $sflags"
	c++ -std=c++17 -Wall -Werror $d "$here/cxx_static.cpp" $sflags -o "$tmp/cxx_static-$v" ||
		fail "cxx_static.cpp ($v) does not build with libknitting.a"
	LD_LIBRARY_PATH= "$tmp/cxx_static-$v" || fail "cxx_static ($v)"
done

echo "== cmake find_package(knitting)"
cmake -S "$here" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$stage/usr" -DCMAKE_BUILD_TYPE=Release \
	>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake configure"; }
cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake build"; }
readelf -d "$tmp/cmake/consumer_shared" | grep -q "NEEDED.*\\[$so\\]" ||
	fail "consumer_shared does not load $so"
for t in consumer_static cxx_static_own_new; do
	! readelf -d "$tmp/cmake/$t" | grep -q 'NEEDED.*libknitting' || fail "$t still needs libknitting.so"
done
"$tmp/cmake/consumer_shared"
LD_LIBRARY_PATH= "$tmp/cmake/consumer_static"
LD_LIBRARY_PATH= "$tmp/cmake/cxx_static_own_new"

# uninstall_ok STAGE ARGS...: make uninstall leaves nothing of ours.
uninstall_ok() {
	local st=$1
	shift
	$make --no-print-directory uninstall DESTDIR="$st" "$@" >"$tmp/uninstall.log" 2>&1 ||
		{ cat "$tmp/uninstall.log"; fail "make uninstall $*"; }
	left=$(cd "$st" && find . ! -type d)
	[ -z "$left" ] || fail "make uninstall $* left: $left"
	left=$(cd "$st" && find . -type d -name knitting)
	[ -z "$left" ] || fail "make uninstall $* left: $left"
}

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
uninstall_ok "$stage" prefix=/usr

# A multiarch libdir, as a Debian package installs: knit-worker in the
# arch-qualified $(libdir)/knitting, found there by the library.
triplet=$(cc -dumpmachine)
[ -n "$triplet" ] || fail "cc -dumpmachine printed nothing"
ma=usr/lib/$triplet
stage=$tmp/stage-multiarch
mkdir -p "$stage"
echo "== multiarch: make install prefix=/usr libdir=/$ma"
$make --no-print-directory install DESTDIR="$stage" prefix=/usr libdir=/$ma >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "make install libdir=/$ma"; }
files_ok "$stage" "$ma"
[ ! -e "$stage/usr/libexec" ] || fail "make install libdir=/$ma wrote /usr/libexec"
export PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_LIBDIR=$stage/$ma/pkgconfig LD_LIBRARY_PATH=$stage/$ma
flags=$(pkg-config --cflags --libs knitting)
echo "== multiarch: process pool, the library finds /$ma/knitting/knit-worker"
cc -std=gnu11 -Wall -Werror -shared -fPIC "$here/../api/tasklib/proc_tasks.c" $flags -o "$tmp/libtasks-ma.so"
cc -std=gnu11 -Wall -Werror "$here/proc_consumer.c" $flags -o "$tmp/pc_proc-ma"
env -u KNIT_WORKER_PATH "$tmp/pc_proc-ma" "$tmp/libtasks-ma.so" || fail "process pool from /$ma"
echo "== multiarch: uninstall"
uninstall_ok "$stage" prefix=/usr libdir=/$ma
# A real install (no DESTDIR) into a scratch prefix: a program linked with
# libknitting.a has no library file to find knit-worker from, so it runs the
# worker at the absolute path compiled into the archive.
pfx=$tmp/prefix
echo "== make install prefix=$pfx (no DESTDIR)"
$make --no-print-directory install prefix="$pfx" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "make install prefix=$pfx"; }
grep -q 'run ldconfig' "$tmp/install.log" || fail "make install without DESTDIR gave no ldconfig hint"
[ -x "$pfx/lib/knitting/knit-worker" ] || fail "no $pfx/lib/knitting/knit-worker"
unset PKG_CONFIG_SYSROOT_DIR LD_LIBRARY_PATH
export PKG_CONFIG_LIBDIR=$pfx/lib/pkgconfig
sflags=$(pkg-config --static --cflags --libs knitting | sed 's/-lknitting\b/-l:libknitting.a/')
echo "== process pool from libknitting.a: $pfx/lib/knitting/knit-worker"
# The task library is a plugin of the shared library (knit_ctx_*): the rpath
# finds it in the prefix, as ld.so.conf would in a system libdir.
cc -std=gnu11 -Wall -Werror -shared -fPIC "$here/../api/tasklib/proc_tasks.c" \
	$(pkg-config --cflags --libs knitting) -Wl,-rpath,"$pfx/lib" -o "$tmp/libtasks-pfx.so"
cc -std=gnu11 -Wall -Werror "$here/proc_consumer.c" $sflags -o "$tmp/pc_proc-static"
! readelf -d "$tmp/pc_proc-static" | grep -q 'NEEDED.*libknitting' || fail "pc_proc-static needs libknitting.so"
env -u KNIT_WORKER_PATH -u LD_LIBRARY_PATH "$tmp/pc_proc-static" "$tmp/libtasks-pfx.so" ||
	fail "process pool from libknitting.a"
$make --no-print-directory uninstall prefix="$pfx" >"$tmp/uninstall.log" 2>&1 ||
	{ cat "$tmp/uninstall.log"; fail "make uninstall prefix=$pfx"; }
left=$(cd "$pfx" && find . ! -type d)
[ -z "$left" ] || fail "make uninstall prefix=$pfx left: $left"
echo "install (/usr/lib, /$ma, $pfx), 10 consumers, uninstall: ok"
