// SPDX-License-Identifier: MIT
// tests/install/cxx_static.cpp - a C++ program linked with the installed
// libknitting.a must keep its own C++ runtime: `new` of an impossible size
// throws std::bad_alloc (the C++ runtime's operator new, not one from the
// archive), and with CXX_STATIC_OWN_NEW the program's own global operator
// new/delete link (no duplicate from the archive) and serve its `new`. One
// real knit_call pulls the library in. Exit 0 only if all of that holds.
#include <knitting.h>

#include <cstdio>
#include <cstdlib>
#include <new>

#ifdef CXX_STATIC_OWN_NEW
static unsigned long own_news; // calls of the operator new below

void *operator new(std::size_t n)
{
	own_news++;
	if (void *p = std::malloc(n ? n : 1))
		return p;
	throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
#endif

static int add_one(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	ret->type = KNIT_VALUE_I64;
	ret->i64 = arg->i64 + 1;
	return 0;
}

int main()
{
	knit_task_t task = {};
	task.name = "add_one";
	task.fn = add_one;
	knit_pool_t *pool;
	int rc = knit_pool_create(nullptr, &task, 1, &pool);
	if (rc != 0) {
		std::fprintf(stderr, "knit_pool_create: %s\n", knit_strerror(rc));
		return 1;
	}
	knit_value_t arg = {};
	arg.type = KNIT_VALUE_I64;
	arg.i64 = 41;
	knit_completion_t done;
	rc = knit_call(pool, 0, &arg, &done, -1);
	knit_pool_destroy(pool);
	if (rc != 0 || done.status != 0 || done.result.i64 != 42) {
		std::fprintf(stderr, "knit_call: rc %d status %d i64 %lld (want 0 0 42)\n", rc,
			     (int)done.status, (long long)done.result.i64);
		return 1;
	}

	int bad = 0;
	volatile std::size_t huge = 1ull << 62;
	try {
		char *p = new char[huge];
		std::fprintf(stderr,
			     "new char[1 << 62] returned %p instead of throwing std::bad_alloc\n",
			     (void *)p);
		bad = 1;
	} catch (const std::bad_alloc &) {
		std::puts("new char[1 << 62] threw std::bad_alloc");
	}
#ifdef CXX_STATIC_OWN_NEW
	const unsigned long before = own_news;
	int *one = new int(7);
	const bool used = own_news == before + 1 && *one == 7;
	delete one;
	if (!used) {
		std::fprintf(stderr, "new int: the program's operator new ran %lu times, want 1\n",
			     own_news - before);
		bad = 1;
	} else {
		std::puts("new int went to the program's own operator new");
	}
#endif
	return bad;
}
