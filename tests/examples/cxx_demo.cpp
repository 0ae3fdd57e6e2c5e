// SPDX-License-Identifier: MIT
/*
 * tests/examples/cxx_demo.cpp - libknitting from C++ with knitting.hpp: a
 * pool of lambda tasks, one synchronous call, a burst of enqueued calls
 * reaped with a range-for, and a task's error. Built as C++17; exits 0 only
 * if every answer is right.
 */
#include <knitting.hpp>

#include <atomic>
#include <cstdio>
#include <string>

using namespace std::chrono_literals;

int main()
{
	std::atomic<long> served{0}; // captured state, shared by every worker
	knit::result<knit::pool> made =
		knit::pool::create(knit::thread_options(2),
				   knit::task("square",
					      [&served](knit::value v) {
						      served++;
						      return v.i64() * v.i64();
					      }),
				   knit::task("greet", [](knit::value name) -> knit::reply {
					   if (name.str().empty())
						   return knit::task_error{1, "greet: no name"};
					   return "hello, " + std::string(name.str());
				   }));
	if (!made) {
		std::fprintf(stderr, "knit::pool::create: %s\n", made.message());
		return 1;
	}
	knit::pool &pool = *made;
	const std::uint32_t square = pool.task_id("square").value_or(0);
	const std::uint32_t greet = pool.task_id("greet").value_or(0);

	// One round trip: the value, or why not.
	knit::result<std::int64_t> sq = pool.call<std::int64_t>(square, 12);
	std::printf("square(12) = %lld\n", static_cast<long long>(sq.value_or(-1)));

	// A burst: enqueue, then reap each completion exactly once.
	long sum = 0;
	int pending = 0;
	for (int i = 1; i <= 100; i++)
		pending += pool.enqueue(square, i) ? 1 : 0;
	for (int rounds = 0; pending > 0 && rounds < 1000; rounds++)
		for (knit::completion &c : pool.completions(5s)) {
			sum += c.as<long>().value_or(0);
			pending--;
		}
	std::printf("sum of squares 1..100 = %ld (%ld calls served)\n", sum, served.load());

	// Strings, and a task's own error with its code and message.
	knit::result<std::string> hi = pool.call<std::string>(greet, "knitter");
	knit::result<knit::completion> no = pool.call(greet, "");
	const bool err_ok = no && no->error() == knit::error::task && no->task_code() == 1;
	std::printf("%s; greet(\"\") failed: %.*s (code %d)\n", hi ? hi->c_str() : hi.message(),
		    no ? static_cast<int>(no->message().size()) : 0, no ? no->message().data() : "",
		    no ? no->task_code() : 0);

	const bool ok = sq && *sq == 144 && pending == 0 && sum == 338350 && served == 101 && hi &&
			*hi == "hello, knitter" && err_ok;
	std::printf("%s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
