// SPDX-License-Identifier: MIT
// A C++ application built only from what `make install` put in a stage:
// knitting.hpp beside knitting.h, one lambda task, one call, checked.
// Exit 0 only if the answer is right.
#include <knitting.hpp>

#include <cstdio>

int main()
{
	const int offset = 1; // captured state
	knit::result<knit::pool> pool = knit::pool::create(
		knit::task("add", [offset](knit::value v) { return v.i64() + offset; }));
	if (!pool) {
		std::fprintf(stderr, "knit::pool::create: %s\n", pool.message());
		return 1;
	}
	knit::result<long> r = pool->call<long>(0, 41);
	if (!r || *r != 42) {
		std::fprintf(stderr, "call(add, 41): %s, %ld (want 42)\n", r.message(),
			     r.value_or(-1));
		return 1;
	}
	std::printf("knit::pool::call(add, 41) = %ld, library version %#x\n", *r,
		    (unsigned)knit_version());
	return 0;
}
