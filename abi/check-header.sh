#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi/check-header.sh - the public header compiles on its own as every C and
# C++ dialect a user might pick, with every warning an error.
set -eu
cd "$(dirname "$0")/.."
hdr=include/knitting.h
# A missing or empty header would "compile" as nothing: fail instead.
[ -s "$hdr" ] || { echo "FAIL: $hdr is missing or empty"; exit 1; }
grep -q 'knit_pool_create' "$hdr" || { echo "FAIL: $hdr declares no knit_pool_create"; exit 1; }
fail=0
for std in c99 c11 c17 gnu11; do
	if ! gcc -std=$std -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -x c "$hdr"; then
		echo "FAIL: $hdr as C ($std)"; fail=1
	fi
done
for std in c++11 c++17 c++20; do
	if ! g++ -std=$std -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -x c++ "$hdr"; then
		echo "FAIL: $hdr as C++ ($std)"; fail=1
	fi
done
# Under C++ every function is noexcept (tasks must not throw through the
# library; knit_pool_create(3)): each KNIT_API declaration ends in
# KNIT_NOEXCEPT, and the compiler agrees.
decls=$(tr '\n' ' ' <"$hdr" | grep -oE 'KNIT_API [^;{#]*;' || true)
ndecl=$(printf '%s\n' "$decls" | grep -c 'KNIT_API' || true)
nne=$(printf '%s\n' "$decls" | grep -c 'KNIT_NOEXCEPT;' || true)
if [ "$ndecl" -eq 0 ] || [ "$ndecl" != "$nne" ]; then
	echo "FAIL: $nne of $ndecl KNIT_API declarations end in KNIT_NOEXCEPT"; fail=1
fi
if ! printf '#include "knitting.h"\nstatic_assert(noexcept(knit_version()) && noexcept(knit_complete(nullptr, nullptr, 0, 0)), "noexcept");\n' |
	g++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -Iinclude -x c++ -; then
	echo "FAIL: $hdr functions are not noexcept under C++"; fail=1
fi
if command -v clang >/dev/null 2>&1; then
	clang -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -x c "$hdr" || { echo "FAIL: clang C99"; fail=1; }
	clang++ -std=c++11 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -x c++ "$hdr" || { echo "FAIL: clang C++11"; fail=1; }
fi
# knitting.hpp, the C++ binding: on its own, C++17 and C++20, with and
# without exceptions, g++ and (when there) clang++, every warning an error.
hpp=include/knitting.hpp
[ -s "$hpp" ] || { echo "FAIL: $hpp is missing or empty"; exit 1; }
grep -q 'class pool' "$hpp" || { echo "FAIL: $hpp declares no knit::pool"; exit 1; }
hppcc="g++"
command -v clang++ >/dev/null 2>&1 && hppcc="g++ clang++"
nhpp=0
for cxx in $hppcc; do
	for std in c++17 c++20; do
		for exc in -fexceptions -fno-exceptions; do
			nhpp=$((nhpp + 1))
			if ! $cxx -std=$std $exc -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -x c++ "$hpp"; then
				echo "FAIL: $hpp as $std $exc ($cxx)"; fail=1
			fi
		done
	done
done
[ $fail -eq 0 ] && echo "knitting.hpp ok: $nhpp builds ($hppcc; C++17/20; with and without exceptions)"
[ $fail -eq 0 ] && echo "header ok: C99/C11/C17/gnu11, C++11/17/20 (gcc, clang); $ndecl functions noexcept under C++"
exit $fail
