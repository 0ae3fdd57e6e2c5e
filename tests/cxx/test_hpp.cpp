// SPDX-License-Identifier: MIT
/*
 * tests/cxx/test_hpp.cpp - knitting.hpp against the shared library: pool
 * create/destroy and moves, lambda and function-object tasks with captured
 * state (stored once: no copy, move or allocation per call), call values and
 * errors, enqueue and the range reap (each completion exactly once), cancel,
 * the completion fd, stats, stop, and a process pool over the task library
 * of the API tests. Built by g++ and clang++, as C++17 and C++20, with and
 * without exceptions (the Makefile's check-cxx); without exceptions it uses
 * only the result<T> API, with them it also checks what is thrown.
 *
 * Every CHECK that fails prints its line and expression; the program exits 1
 * if any failed. KT_BUILD_DIR is the build tree (task library, knit-worker).
 */
#include "knitting.hpp"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#ifndef KT_BUILD_DIR
#error "KT_BUILD_DIR must name the build tree"
#endif

static int failures;
static int checks;
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
		}                                                                                  \
	} while (0)
// A result that must hold a value: report its error when it does not.
#define CHECK_OK(r)                                                                                \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(r)) {                                                                        \
			failures++;                                                                \
			std::fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #r,       \
				     (r).message());                                               \
		}                                                                                  \
	} while (0)

// Allocations made by this program's C++ code (the library has its own
// allocator and is not counted).
static std::atomic<long> allocations{0};
[[gnu::noinline]] void *operator new(std::size_t n)
{
	allocations.fetch_add(1, std::memory_order_relaxed);
	if (void *p = std::malloc(n ? n : 1))
		return p;
	std::abort();
}
[[gnu::noinline]] void *operator new(std::size_t n, const std::nothrow_t &) noexcept
{
	allocations.fetch_add(1, std::memory_order_relaxed);
	return std::malloc(n ? n : 1);
}
[[gnu::noinline]] void operator delete(void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void *p, std::size_t) noexcept { std::free(p); }

using namespace std::chrono_literals;

// Without exceptions nothing throws, so the throwing members are absent.
template <class R, class = void> struct has_value_member : std::false_type {};
template <class R>
struct has_value_member<R, std::void_t<decltype(std::declval<R &>().value())>> : std::true_type {};
static_assert(has_value_member<knit::result<int>>::value == (KNIT_HPP_EXCEPTIONS == 1),
	      "result::value()");
static_assert(has_value_member<knit::result<void>>::value == (KNIT_HPP_EXCEPTIONS == 1),
	      "result<void>::value()");
static_assert(std::is_constructible_v<knit::pool, const knit_pool_options_t &> ==
		      (KNIT_HPP_EXCEPTIONS == 1),
	      "the throwing pool constructor");
static_assert(!std::is_copy_constructible_v<knit::pool> &&
		      std::is_nothrow_move_constructible_v<knit::pool> &&
		      std::is_nothrow_move_assignable_v<knit::pool>,
	      "pool: movable, not copyable");
static_assert(!std::is_copy_constructible_v<knit::completion> &&
		      std::is_nothrow_move_constructible_v<knit::completion>,
	      "completion: movable, not copyable");

// A function object that counts its copies, moves and destructions.
struct counted {
	static std::atomic<int> copies, moves, live;
	std::atomic<int> *runs;
	explicit counted(std::atomic<int> *r) : runs(r) { live++; }
	counted(const counted &o) : runs(o.runs) { copies++, live++; }
	counted(counted &&o) noexcept : runs(o.runs) { moves++, live++; }
	~counted() { live--; }
	std::int64_t operator()(knit::value arg) const
	{
		(*runs)++;
		return arg.i64() + 1;
	}
};
std::atomic<int> counted::copies{0}, counted::moves{0}, counted::live{0};

static std::uint32_t id(const knit::pool &p, const char *name)
{
	knit::result<std::uint32_t> r = p.task_id(name);
	CHECK_OK(r);
	return r ? *r : UINT32_MAX;
}

static void test_create_destroy()
{
	std::atomic<int> runs{0};
	{
		knit::result<knit::pool> r = knit::pool::create(knit::thread_options(2),
								knit::task("inc", counted(&runs)));
		CHECK_OK(r);
		knit::pool p = std::move(*r);
		CHECK(p);
		CHECK(p.get() != nullptr);
		CHECK(counted::live.load() >= 1);
		CHECK_OK(p.destroy());
		CHECK(!p);
		CHECK_OK(p.destroy()); // an empty pool: nothing to do
	}
	CHECK(counted::live.load() == 0); // the callable was destroyed with its pool, once

	// Defaults (no options), and every failure is a result, not a crash.
	knit::result<knit::pool> d =
		knit::pool::create(knit::task("one", [](knit::value) { return 1; }));
	CHECK_OK(d);
	knit::result<knit::pool> dup = knit::pool::create(knit::task("same", [](knit::value) {}),
							  knit::task("same", [](knit::value) {}));
	CHECK(!dup && dup.error() == knit::error::invalid_argument);
	knit_pool_options_t bad = knit::thread_options(KNIT_MAX_WORKERS + 1);
	knit::result<knit::pool> many =
		knit::pool::create(bad, knit::task("t", [](knit::value) {}));
	CHECK(!many && many.error() == knit::error::invalid_argument);
	knit_pool_options_t badsize = knit::thread_options();
	badsize.size = 0;
	knit::result<knit::pool> ver =
		knit::pool::create(badsize, knit::task("t", [](knit::value) {}));
	CHECK(!ver && ver.error() == knit::error::version);
	CHECK(std::string(ver.message()) == knit_strerror(-KNIT_EVERSION));
	knit::result<knit::pool> noname =
		knit::pool::create(knit::task(nullptr, [](knit::value) {}));
	CHECK(!noname && noname.error() == knit::error::invalid_argument);
}

static void test_move()
{
	std::atomic<int> runs{0};
	knit::result<knit::pool> r =
		knit::pool::create(knit::thread_options(1), knit::task("inc", counted(&runs)));
	CHECK_OK(r);
	const int copies = counted::copies, moves = counted::moves;
	knit::pool a = std::move(*r);
	knit_pool_t *raw = a.get();
	CHECK(!*r); // moved from: empty
	knit::pool b(std::move(a));
	CHECK(!a && b.get() == raw);
	const std::uint32_t inc = id(b, "inc");
	CHECK(b.call<std::int64_t>(inc, 41).value_or(0) == 42);

	knit::pool c;
	CHECK(!c);
	c = std::move(b); // into an empty pool
	CHECK(!b && c.get() == raw);
	CHECK(c.call<std::int64_t>(inc, 1).value_or(0) == 2);

	// Moving the pool object moves no callable: they stay where the tasks'
	// data points.
	CHECK(counted::copies == copies && counted::moves == moves);

	// Assigning over a live pool destroys it (and its callable) first.
	std::atomic<int> runs2{0};
	knit::result<knit::pool> r2 = knit::pool::create(knit::task("inc", counted(&runs2)));
	CHECK_OK(r2);
	const int live = counted::live;
	c = std::move(*r2);
	CHECK(counted::live == live - 1);
	CHECK(c.call<std::int64_t>(id(c, "inc"), 5).value_or(0) == 6);
	CHECK(runs2 == 1 && runs == 2);
	c = knit::pool(); // self-contained reset through move assignment
	CHECK(!c);
}

static void test_lambdas()
{
	std::atomic<int> seen{0};
	std::int64_t base = 1000;
	std::vector<int> table{3, 1, 4, 1, 5};
	auto add = [&seen, base](knit::value v) {
		seen++;
		return base + v.i64();
	};
	auto lookup = [table](knit::task_context &ctx, knit::value v) -> knit::reply {
		if (ctx.lane() < 0)
			return knit::task_error{99, "no lane"};
		if (v.kind() != knit::kind::i64 || v.i64() < 0 ||
		    v.i64() >= static_cast<std::int64_t>(table.size()))
			return knit::task_error{7, "index " + std::to_string(v.i64()) +
							   " out of range"};
		return table[static_cast<std::size_t>(v.i64())];
	};
	int (*c_style)(knit_ctx_t *, const knit_value_t *, knit_value_t *) =
		[](knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret) {
			ret->type = KNIT_VALUE_I64;
			ret->i64 = -arg->i64;
			return arg->i64 == 13 ? 13 : 0;
		};
	knit::result<knit::pool> r =
		knit::pool::create(knit::thread_options(2), knit::task("add", add),
				   knit::task("lookup", lookup), knit::task("raw", c_style));
	CHECK_OK(r);
	knit::pool &p = *r;
	const std::uint32_t t_add = id(p, "add"), t_lookup = id(p, "lookup"), t_raw = id(p, "raw");
	CHECK(t_add == 0 && t_lookup == 1 && t_raw == 2); // name order

	// Captured state, and no allocation by the binding per call.
	const long before = allocations;
	std::int64_t sum = 0;
	for (int i = 0; i < 200; i++) {
		knit::result<std::int64_t> v = p.call<std::int64_t>(t_add, i);
		CHECK(v && *v == 1000 + i);
		sum += v.value_or(0);
	}
	CHECK(allocations == before);
	CHECK(seen == 200 && sum == 200 * 1000 + 199 * 200 / 2);

	CHECK(p.call<int>(t_lookup, 2).value_or(-1) == 4);
	knit::result<knit::completion> e = p.call(t_lookup, 9);
	CHECK_OK(e);
	if (e) {
		CHECK(!e->ok() && e->error() == knit::error::task && e->status() == -KNIT_ETASK);
		CHECK(e->task_code() == 7 && e->message() == "index 9 out of range");
		CHECK(e->get().kind() == knit::kind::error);
		CHECK(e->task() == t_lookup);
	}
	knit::result<int> ev = p.call<int>(t_lookup, 9);
	CHECK(!ev && ev.error() == knit::error::task && ev.task_code() == 7);

	CHECK(p.call<std::int64_t>(t_raw, 5).value_or(0) == -5);
	knit::result<std::int64_t> rc13 = p.call<std::int64_t>(t_raw, 13);
	CHECK(!rc13 && rc13.error() == knit::error::task && rc13.task_code() == 13);

	// Could not be made at all: no such task.
	knit::result<knit::completion> none = p.call(77);
	CHECK(!none && none.error() == knit::error::no_task);
	knit::result<std::uint32_t> nid = p.task_id("nope");
	CHECK(!nid && nid.error() == knit::error::no_task);
}

static void test_values()
{
	static const char stat[] = "static bytes";
	knit::result<knit::pool> r = knit::pool::create(
		knit::task("echo",
			   [](knit::value v) {
				   return v;
			   }), // a view of the argument: valid until return
		knit::task("upper",
			   [](knit::value v) {
				   std::string s(v.str());
				   for (char &c : s)
					   c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
				   return s; // owned: copied into knit_ctx_alloc memory
			   }),
		knit::task("bytes",
			   [](knit::value v) {
				   std::vector<unsigned char> b(static_cast<std::size_t>(v.i64()));
				   for (std::size_t i = 0; i < b.size(); i++)
					   b[i] = static_cast<unsigned char>(i * 7);
				   return b;
			   }),
		knit::task("half", [](knit::value v) { return v.f64() / 2; }),
		knit::task("not", [](knit::value v) { return !v.boolean(); }),
		knit::task("static", [](knit::value) { return std::string_view(stat); }),
		knit::task("nothing", [](knit::value) {}),
		knit::task("zerocopy", [](knit::task_context &ctx, knit::value) -> knit::reply {
			char *m = static_cast<char *>(ctx.alloc(5));
			if (m == nullptr)
				return knit::task_error{1, "alloc"};
			std::memcpy(m, "abcde", 5);
			return knit::bytes(m, 5);
		}));
	CHECK_OK(r);
	knit::pool &p = *r;
	const std::uint32_t echo = id(p, "echo");

	CHECK(p.call<std::string>(echo, "hello").value_or("") == "hello");
	std::string big(100000, 'x'); // past the inline area: the payload arena
	big[500] = 'y';
	CHECK(p.call<std::string>(echo, big).value_or("") == big);
	CHECK(p.call<std::string>(id(p, "upper"), std::string_view("mixed Case")).value_or("") ==
	      "MIXED CASE");
	CHECK(p.call<std::string>(id(p, "upper"), "").value_or("x").empty());
	knit::result<std::vector<unsigned char>> b =
		p.call<std::vector<unsigned char>>(id(p, "bytes"), 300);
	CHECK(b && b->size() == 300 && (*b)[299] == static_cast<unsigned char>(299 * 7));
	CHECK(p.call<double>(id(p, "half"), 5.0).value_or(0) == 2.5);
	CHECK(p.call<bool>(id(p, "not"), false).value_or(false) == true);
	CHECK(p.call<std::string>(id(p, "static")).value_or("") == stat);

	knit::result<knit::completion> n = p.call(id(p, "nothing"));
	CHECK(n && n->ok() && n->get().is_none());

	knit::result<knit::completion> zc = p.call(id(p, "zerocopy"));
	CHECK(zc && zc->ok() && zc->get().kind() == knit::kind::bytes &&
	      zc->get().str() == "abcde");

	// A completion's view lives as long as the completion.
	const unsigned char raw_bytes[4] = {0, 1, 2, 255};
	knit::result<knit::completion> rb = p.call(echo, knit::bytes(raw_bytes, 4));
	CHECK(rb && rb->get().kind() == knit::kind::bytes);
	if (rb) {
		knit::bytes v = rb->get().data();
		CHECK(v.size() == 4 && v[3] == 255 && v.data() != raw_bytes);
		knit::result<knit::bytes> asb = rb->as<knit::bytes>();
		CHECK(asb && asb->size() == 4);
		knit::result<std::string_view> notstr = rb->as<std::string_view>();
		CHECK(!notstr && notstr.error() == knit::error::invalid_argument);
	}

	// Conversions that do not fit are errors.
	knit::result<std::int8_t> narrow = p.call<std::int8_t>(echo, 300);
	CHECK(!narrow && narrow.error() == knit::error::invalid_argument);
	knit::result<unsigned> neg = p.call<unsigned>(echo, -1);
	CHECK(!neg && neg.error() == knit::error::invalid_argument);
	knit::result<double> notf = p.call<double>(echo, 1);
	CHECK(!notf && notf.error() == knit::error::invalid_argument);
	CHECK(p.call<std::int64_t>(echo, INT64_MIN).value_or(0) == INT64_MIN);

	// knit::value on the host side.
	knit::value v;
	CHECK(v.is_none());
	CHECK(knit::value(true).kind() == knit::kind::boolean &&
	      knit::value(2.5f).kind() == knit::kind::f64);
	CHECK(knit::value('a').kind() == knit::kind::i64 && knit::value("s").str() == "s");
	CHECK(knit::value(static_cast<const char *>(nullptr)).str().empty());
	CHECK(knit::value(7).as<std::int64_t>().value_or(0) == 7);
	CHECK(knit::value(7).as<knit::value>()->i64() == 7);
}

#if KNIT_HPP_EXCEPTIONS
static void test_exceptions()
{
	knit::pool p(knit::thread_options(1),
		     knit::task("throw",
				[](knit::value v) -> std::int64_t {
					if (v.i64() == 1)
						throw std::runtime_error("thrown by the task");
					if (v.i64() == 2)
						throw 42;
					return v.i64();
				}),
		     knit::task("fail", [](knit::value) {
			     return knit::task_error{5, "five"};
		     }));
	CHECK(p);
	const std::uint32_t t = p.task_id("throw").value();
	CHECK(p.call<std::int64_t>(t, 3).value() == 3);

	knit::result<knit::completion> c = p.call(t, 1);
	CHECK(c && c->error() == knit::error::task && c->task_code() == knit::exception_code);
	CHECK(c->message() == "thrown by the task");
	knit::result<knit::completion> c2 = p.call(t, 2);
	CHECK(c2 && c2->error() == knit::error::task && c2->task_code() == knit::exception_code);

	bool threw = false;
	try {
		(void)p.call<std::int64_t>(p.task_id("fail").value()).value();
	} catch (const knit::exception &e) {
		threw = true;
		CHECK(e.error() == knit::error::task && e.task_code() == 5);
		CHECK(e.code() == knit::error::task); // std::error_code against the enum
		CHECK(e.code().category() == knit::category());
		CHECK(std::string(e.what()).find("task code 5") != std::string::npos);
	}
	CHECK(threw);

	threw = false;
	try {
		knit::pool bad(knit::thread_options(KNIT_MAX_WORKERS + 1),
			       knit::task("t", [](knit::value) {}));
	} catch (const std::system_error &e) {
		threw = e.code() == knit::error::invalid_argument;
	}
	CHECK(threw);

	threw = false;
	try {
		(void)p.task_id("nope").value();
	} catch (const knit::exception &e) {
		threw = e.error() == knit::error::no_task;
	}
	CHECK(threw);
}
#endif

static void test_error_code()
{
	std::error_code ec = knit::error::timed_out; // is_error_code_enum
	CHECK(ec.value() == KNIT_ETIMEDOUT && std::string(ec.category().name()) == "knitting");
	CHECK(ec.message() == knit_strerror(-KNIT_ETIMEDOUT));
	CHECK(ec == knit::error::timed_out && ec != knit::error::closed);
	CHECK(std::string(knit::message(knit::error::closed)) == knit_strerror(KNIT_ECLOSED));
	CHECK(knit::error_of(-KNIT_ECANCELED) == knit::error::canceled);
	knit::result<int> r(knit::error::busy);
	CHECK(!r && r.error_code() == knit::error::busy && r.value_or(3) == 3);
	knit::result<void> ok;
	CHECK(ok && !ok.error_code());
	CHECK(knit::library_compatible());
}

static void test_enqueue_reap()
{
	std::atomic<int> runs{0};
	knit::result<knit::pool> r = knit::pool::create(knit::thread_options(3),
							knit::task("sq", [&runs](knit::value v) {
								runs++;
								return v.i64() * v.i64();
							}));
	CHECK_OK(r);
	knit::pool &p = *r;
	constexpr int n = 500;
	int seen[n] = {};
	std::set<knit::ticket> tickets;
	for (int i = 0; i < n; i++) {
		knit::result<knit::ticket> t = p.enqueue(0, i, &seen[i]);
		CHECK_OK(t);
		if (t) {
			CHECK(*t != 0);
			tickets.insert(*t);
		}
	}
	CHECK(tickets.size() == n);
	int got = 0, rounds = 0;
	std::set<knit::ticket> reaped;
	while (got < n && rounds++ < 10000) {
		knit::completion_range range = p.completions(10s);
		for (knit::completion &c : range) {
			CHECK(c.ok());
			int *slot = static_cast<int *>(c.user_data());
			const std::int64_t i = slot - seen;
			CHECK(i >= 0 && i < n);
			if (i >= 0 && i < n) {
				(*slot)++;
				CHECK(c.as<std::int64_t>().value_or(-1) == i * i);
			}
			CHECK(reaped.insert(c.ticket()).second);
			got++;
		}
		CHECK(!range.last_error());
		CHECK(static_cast<int>(range.count()) >= 1);
	}
	CHECK(got == n && reaped == tickets && runs == n);
	bool once = true;
	for (int i = 0; i < n; i++)
		once = once && seen[i] == 1;
	CHECK(once);

	// Nothing left: a poll yields nothing and no error; complete() says
	// timed_out.
	knit::completion_range empty = p.completions(knit::poll);
	int extra = 0;
	for (knit::completion &c : empty) {
		(void)c;
		extra++;
	}
	CHECK(extra == 0 && empty.count() == 0 && !empty.last_error());
	knit::result<knit::completion> c0 = p.complete(knit::poll);
	CHECK(!c0 && c0.error() == knit::error::timed_out);

	// complete() for one, and a completion moved out of the range outlives
	// the loop.
	CHECK_OK(p.enqueue(0, 9));
	knit::result<knit::completion> one = p.complete(10s);
	CHECK(one && one->as<int>().value_or(0) == 81);
	CHECK_OK(p.enqueue(0, 4));
	CHECK_OK(p.enqueue(0, 5));
	std::vector<knit::completion> kept;
	for (int tries = 0; kept.size() < 2 && tries < 100; tries++)
		for (knit::completion &c : p.completions(10s))
			kept.push_back(std::move(c));
	CHECK(kept.size() == 2);
	std::int64_t s = 0;
	for (const knit::completion &c : kept)
		s += c.as<std::int64_t>().value_or(0);
	CHECK(s == 16 + 25);

	// complete(ticket) takes that call's completion only (1.2), the others
	// stay; a ticket reaped already is not_found; wait_idle once all are.
	knit::result<knit::ticket> ta = p.enqueue(0, 6), tb = p.enqueue(0, 7);
	CHECK_OK(ta);
	CHECK_OK(tb);
	if (ta && tb) {
		knit::result<knit::completion> cb = p.complete(*tb, 10s);
		CHECK(cb && cb->ticket() == *tb && cb->as<int>().value_or(0) == 49);
		knit::result<knit::completion> again = p.complete(*tb, knit::poll);
		CHECK(!again && again.error() == knit::error::not_found);
		knit::result<void> busy = p.wait_idle(knit::poll);
		CHECK(!busy && busy.error() == knit::error::timed_out);
		knit::result<knit::completion> ca = p.complete(10s);
		CHECK(ca && ca->ticket() == *ta && ca->as<int>().value_or(0) == 36);
		CHECK_OK(p.wait_idle(knit::poll));
	}

	// A range abandoned half way releases what it did not hand out: every
	// call still ends in exactly one completion.
	for (int i = 0; i < 40; i++)
		CHECK_OK(p.enqueue(0, i));
	int handed = 0;
	for (int tries = 0; tries < 1000; tries++) {
		for (knit::completion &c : p.completions(10s)) {
			(void)c;
			handed++;
			break; // the rest of this batch is released by the range
		}
		knit::result<knit_pool_stats_t> now = p.stats();
		if (!now || now->completed == now->enqueued)
			break;
	}
	CHECK(handed >= 1 && handed <= 40);
	knit::result<knit_pool_stats_t> st = p.stats();
	CHECK(st && st->pending == 0 && st->completed == st->enqueued);
}

// completion::info() (1.2): not_found on an untimed pool; on a timed one
// the lane, and a timing no longer than the call's wall time.
static void test_info()
{
	knit::result<knit::pool> plain = knit::pool::create(
		knit::thread_options(1), knit::task("id", [](knit::value v) { return v.i64(); }));
	CHECK_OK(plain);
	CHECK_OK(plain->enqueue(0, 1));
	knit::result<knit::completion> c = plain->complete(10s);
	CHECK(c && c->ok());
	if (c) {
		knit::result<knit_completion_info_t> none = c->info();
		CHECK(!none && none.error() == knit::error::not_found);
	}
	knit_pool_options_t o = knit::thread_options(2);
	o.topology = KNIT_TOPOLOGY_LANES;
	o.info_flags = KNIT_POOL_INFO_TIMING;
	knit::result<knit::pool> timed =
		knit::pool::create(o, knit::task("id", [](knit::value v) { return v.i64(); }));
	CHECK_OK(timed);
	constexpr int n = 20;
	for (int i = 0; i < n; i++)
		CHECK_OK(timed->enqueue(0, i));
	int got = 0;
	for (int tries = 0; got < n && tries < 100; tries++)
		for (knit::completion &x : timed->completions(10s)) {
			knit::result<knit_completion_info_t> in = x.info();
			CHECK(in && (in->flags & KNIT_INFO_TIMING) && in->lane < 2 &&
			      in->run_ns >= in->cpu_ns && in->wait_ns >= 0 &&
			      in->death == KNIT_DEATH_NONE);
			got++;
		}
	CHECK(got == n);
}

// A task that blocks until released (bounded: 20 s), for cancel and fd tests.
struct gate {
	std::atomic<bool> open{false};
	std::atomic<int> entered{0};
	void wait() const
	{
		for (int i = 0; i < 20000 && !open; i++)
			std::this_thread::sleep_for(1ms);
	}
	bool wait_entered(int n) const
	{
		for (int i = 0; i < 20000 && entered < n; i++)
			std::this_thread::sleep_for(1ms);
		return entered >= n;
	}
};

static void test_cancel()
{
	gate g;
	knit::result<knit::pool> r = knit::pool::create(knit::thread_options(1),
							knit::task("block", [&g](knit::value v) {
								g.entered++;
								g.wait();
								return v;
							}));
	CHECK_OK(r);
	knit::pool &p = *r;
	knit::result<knit::ticket> first = p.enqueue(0, 1);
	CHECK(first && g.wait_entered(1));
	knit::result<knit::ticket> second = p.enqueue(0, 2); // queued behind the first
	CHECK_OK(second);
	CHECK_OK(p.cancel(*second));
	knit::result<knit::completion> c = p.complete(10s);
	CHECK(c && c->ticket() == *second && c->error() == knit::error::canceled);
	knit::result<void> again = p.cancel(*second); // completed: nothing to cancel
	CHECK(!again && again.error() == knit::error::not_found);
	knit::result<void> sig = p.cancel(*first, KNIT_CANCEL_SIGNAL); // no abort bit
	CHECK(!sig && sig.error() == knit::error::invalid_argument);
	g.open = true;
	knit::result<knit::completion> done = p.complete(10s);
	CHECK(done && done->ticket() == *first && done->as<int>().value_or(0) == 1);

	// An abortable call signalled while it runs sees its abort bit.
	gate g2;
	knit::result<knit::pool> ra =
		knit::pool::create(knit::thread_options(1),
				   knit::task(
					   "spin",
					   [&g2](knit::task_context &ctx, knit::value) {
						   g2.entered++;
						   for (int i = 0; i < 20000 && !ctx.aborted(); i++)
							   std::this_thread::sleep_for(1ms);
						   return ctx.aborted();
					   },
					   0, KNIT_TASK_ABORTABLE));
	CHECK_OK(ra);
	knit::result<knit::ticket> t = ra->enqueue(0);
	CHECK(t && g2.wait_entered(1));
	CHECK_OK(ra->cancel(*t, KNIT_CANCEL_SIGNAL));
	knit::result<knit::completion> ac = ra->complete(30s);
	CHECK(ac && ac->as<bool>().value_or(false));
}

static bool readable(int fd, int ms)
{
	struct pollfd pfd = {fd, POLLIN, 0};
	return ::poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

static void test_completion_fd()
{
	gate g;
	knit::result<knit::pool> r = knit::pool::create(knit::thread_options(1),
							knit::task("block", [&g](knit::value v) {
								g.entered++;
								g.wait();
								return v;
							}));
	CHECK_OK(r);
	knit::pool &p = *r;
	knit::result<int> fd = p.completion_fd();
	CHECK(fd && *fd >= 0);
	if (!fd)
		return;
	CHECK(p.completion_fd().value_or(-1) == *fd); // the pool's one descriptor
	CHECK(!readable(*fd, 0));                     // idle: nothing to reap
	CHECK_OK(p.enqueue(0, 3));
	CHECK(g.wait_entered(1));
	CHECK(!readable(*fd, 0)); // running, not done
	g.open = true;
	CHECK(readable(*fd, 20000));
	unsigned n = 0;
	for (knit::completion &c : p.completions(knit::poll))
		n += c.as<int>().value_or(0) == 3 ? 1 : 100;
	CHECK(n == 1);
	CHECK(!readable(*fd, 0)); // reaped: quiet again
}

static void test_stats_stop()
{
	knit::result<knit::pool> r = knit::pool::create(
		knit::thread_options(2), knit::task("id", [](knit::value v) { return v; }));
	CHECK_OK(r);
	knit::pool &p = *r;
	for (int i = 0; i < 10; i++)
		CHECK(p.call<int>(0, i).value_or(-1) == i);
	for (int i = 0; i < 5; i++)
		CHECK_OK(p.enqueue(0, i));
	int got = 0;
	for (int tries = 0; got < 5 && tries < 100; tries++)
		for (knit::completion &c : p.completions(10s))
			got += c.ok();
	CHECK(got == 5);
	knit::result<knit_pool_stats_t> st = p.stats();
	CHECK_OK(st);
	if (st) {
		CHECK(st->workers == 2 && st->lanes == 2);
		CHECK(st->enqueued == 15 && st->completed == 15 && st->pending == 0);
		std::uint64_t calls = 0;
		for (std::uint32_t i = 0; i < st->lanes; i++)
			calls += st->lane[i].calls;
		CHECK(calls == 15);
	}
	// Stopped and drained: the range ends with closed; calls are refused.
	CHECK_OK(p.enqueue(0, 1));
	CHECK_OK(p.stop(KNIT_STOP_DRAIN, 10s));
	int after = 0;
	std::optional<knit::error> why;
	for (int tries = 0; !why && tries < 100; tries++) {
		knit::completion_range range = p.completions(10s);
		for (knit::completion &c : range)
			after += c.ok();
		why = range.last_error();
	}
	CHECK(after == 1 && why == knit::error::closed);
	knit::result<knit::completion> late = p.call(0, 1);
	CHECK(!late && late.error() == knit::error::closed);
	knit::result<knit::ticket> late_t = p.enqueue(0, 1);
	CHECK(!late_t && late_t.error() == knit::error::closed);
}

static void test_process_pool()
{
	knit_pool_options_t o = knit::process_options(KT_BUILD_DIR "/tests/lib/proc_tasks.so", 1);
	o.worker_path = KT_BUILD_DIR "/libexec/knitting/knit-worker";
	knit::result<knit::pool> r = knit::pool::create(o);
	CHECK_OK(r);
	if (!r)
		return;
	knit::pool &p = *r;
	knit::result<std::int64_t> pid = p.call<std::int64_t>(id(p, "pid"));
	CHECK(pid && *pid > 0 && *pid != static_cast<std::int64_t>(getpid()));
	CHECK(p.call<std::string>(id(p, "echo"), "across processes").value_or("") ==
	      "across processes");
	knit::result<knit::completion> e = p.call(id(p, "error"), 5);
	CHECK(e && e->error() == knit::error::task && e->task_code() == 5 &&
	      e->message() == "task error");
	CHECK_OK(p.enqueue(id(p, "echo"), 11));
	knit::result<knit::completion> c = p.complete(20s);
	CHECK(c && c->as<int>().value_or(0) == 11);

	// A process pool refuses C++ tasks: its tasks come from the library.
	knit::result<knit::pool> mixed = knit::pool::create(o, knit::task("t", [](knit::value) {}));
	CHECK(!mixed && mixed.error() == knit::error::invalid_argument);
	knit_pool_options_t missing =
		knit::process_options(KT_BUILD_DIR "/tests/lib/no-such-library.so");
	missing.worker_path = o.worker_path;
	knit::result<knit::pool> nolib = knit::pool::create(missing);
	CHECK(!nolib && nolib.error() == knit::error::no_such_file);
	CHECK(std::strstr(knit::last_error(), "no-such-library.so") != nullptr);
}

int main()
{
	test_create_destroy();
	test_move();
	test_lambdas();
	test_values();
#if KNIT_HPP_EXCEPTIONS
	test_exceptions();
#endif
	test_error_code();
	test_enqueue_reap();
	test_info();
	test_cancel();
	test_completion_fd();
	test_stats_stop();
	test_process_pool();
	CHECK(counted::live == 0);
	std::printf("knitting.hpp (C++%ld, %s, %s): %d checks, %d failed\n",
		    __cplusplus / 100 % 100, KNIT_HPP_EXCEPTIONS ? "exceptions" : "no exceptions",
#if defined(__clang__)
		    "clang",
#else
		    "gcc",
#endif
		    checks, failures);
	return failures ? 1 : 0;
}
