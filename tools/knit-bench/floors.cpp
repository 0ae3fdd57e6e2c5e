// SPDX-License-Identifier: MIT
// tools/knit-bench/floors.cpp - what no pool can beat on this machine: a
// cache-line round trip between two pinned threads, a futex ping-pong (two
// wakes per round trip), one futex wake answered by a spinning thread, one
// wake of a thread parked as long as a cold call's gap, FUTEX_WAKE with no
// waiter, clock_gettime, thread create + join, and the two 1 MiB copies a
// bytes echo cannot avoid. The floors of libknitting's own protocol (the
// lock2 echo) are in lock2_echo.cpp.
#include "tools/knit-bench/bench.h"

#include <cstring>

namespace kb {

namespace {

struct alignas(128) Line {
	std::atomic<uint64_t> v{0};
};

// Cache-line ping-pong: the host writes i, the partner answers i.
// The first tenth of every floor's round trips is warm-up, not kept.
int with_warmup(int n) { return n + n / 10; }
void drop_warmup(Meas &m, int n)
{
	m.samples.erase(m.samples.begin(),
			m.samples.begin() + (std::ptrdiff_t)(m.samples.size() - (size_t)n));
}

Meas cacheline(int n)
{
	const int keep = n;
	n = with_warmup(n);
	Line ping, pong;
	std::atomic<bool> stop{false};
	auto t = pinned_thread(g_place.worker, [&] {
		uint64_t seen = 0;
		while (!stop.load(std::memory_order_relaxed)) {
			uint64_t v = ping.v.load(std::memory_order_acquire);
			if (v != seen) {
				seen = v;
				pong.v.store(v, std::memory_order_release);
			} else
				relax();
		}
	});
	Meas m;
	m.samples.reserve(n);
	for (int i = 1; i <= n; i++) {
		uint64_t t0 = now_ns();
		ping.v.store((uint64_t)i, std::memory_order_release);
		while (pong.v.load(std::memory_order_acquire) != (uint64_t)i)
			relax();
		m.samples.push_back((double)(now_ns() - t0));
	}
	stop = true;
	t.join();
	check(pong.v.load() == (uint64_t)n, "cacheline: %d round trips answered", n);
	drop_warmup(m, keep);
	return m;
}

// Futex ping-pong: both sides sleep, so every round trip is two wakes.
Meas futex_pingpong(int n)
{
	const int keep = n;
	n = with_warmup(n);
	alignas(128) uint32_t a = 0;
	alignas(128) uint32_t b = 0;
	auto t = pinned_thread(g_place.worker, [&] {
		for (uint32_t i = 1; i <= (uint32_t)n; i++) {
			while (__atomic_load_n(&a, __ATOMIC_ACQUIRE) != i)
				futex(&a, FUTEX_WAIT, i - 1);
			__atomic_store_n(&b, i, __ATOMIC_RELEASE);
			futex(&b, FUTEX_WAKE, 1);
		}
	});
	Meas m;
	double cs0 = ctx_switches();
	for (uint32_t i = 1; i <= (uint32_t)n; i++) {
		uint64_t t0 = now_ns();
		__atomic_store_n(&a, i, __ATOMIC_RELEASE);
		futex(&a, FUTEX_WAKE, 1);
		while (__atomic_load_n(&b, __ATOMIC_ACQUIRE) != i)
			futex(&b, FUTEX_WAIT, i - 1);
		m.samples.push_back((double)(now_ns() - t0));
	}
	t.join();
	m.calls = (uint64_t)n;
	m.counts["ctxsw"] = ctx_switches() - cs0;
	drop_warmup(m, keep);
	return m;
}

// One wake per round trip: the host sleeps, the partner spins and wakes it.
Meas futex_wake_spinner(int n)
{
	const int keep = n;
	n = with_warmup(n);
	alignas(128) uint32_t a = 0;
	alignas(128) uint32_t b = 0;
	auto t = pinned_thread(g_place.worker, [&] {
		for (uint32_t i = 1; i <= (uint32_t)n; i++) {
			while (__atomic_load_n(&a, __ATOMIC_ACQUIRE) != i)
				relax();
			__atomic_store_n(&b, i, __ATOMIC_RELEASE);
			futex(&b, FUTEX_WAKE, 1);
		}
	});
	Meas m;
	for (uint32_t i = 1; i <= (uint32_t)n; i++) {
		uint64_t t0 = now_ns();
		__atomic_store_n(&a, i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&b, __ATOMIC_ACQUIRE) != i)
			futex(&b, FUTEX_WAIT, i - 1);
		m.samples.push_back((double)(now_ns() - t0));
	}
	t.join();
	drop_warmup(m, keep);
	return m;
}

// One wake after the gap knit.call.cold leaves (300 us): the partner has
// been parked on a futex that long, the host wakes it and spins for the
// answer. What a cold call cannot beat: the wake of a thread (and, on a VM,
// of a vCPU) idle that long, which can cost more than the two wakes of a
// ping-pong whose sides sleep only a few microseconds.
Meas futex_wake_after_gap(int n, uint64_t gap_ns)
{
	const int keep = n;
	n = with_warmup(n);
	alignas(128) uint32_t a = 0;
	alignas(128) uint32_t b = 0;
	auto t = pinned_thread(g_place.worker, [&] {
		for (uint32_t i = 1; i <= (uint32_t)n; i++) {
			while (__atomic_load_n(&a, __ATOMIC_ACQUIRE) != i)
				futex(&a, FUTEX_WAIT, i - 1);
			__atomic_store_n(&b, i, __ATOMIC_RELEASE);
		}
	});
	Meas m;
	for (uint32_t i = 1; i <= (uint32_t)n; i++) {
		sleep_ns(gap_ns);
		uint64_t t0 = now_ns();
		__atomic_store_n(&a, i, __ATOMIC_RELEASE);
		futex(&a, FUTEX_WAKE, 1);
		while (__atomic_load_n(&b, __ATOMIC_ACQUIRE) != i)
			relax();
		m.samples.push_back((double)(now_ns() - t0));
	}
	t.join();
	drop_warmup(m, keep);
	return m;
}

// A loop of `n` calls timed in groups of 100 (one call is below the clock's
// own cost), reported per call.
template <typename F> Meas per_call(int n, F f)
{
	Meas m;
	for (int g = 0; g < n / 100; g++) {
		uint64_t t0 = now_ns();
		for (int i = 0; i < 100; i++)
			f();
		m.samples.push_back((double)(now_ns() - t0) / 100);
	}
	return m;
}

Meas thread_create_join(int n)
{
	Meas m;
	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		pthread_t t;
		pthread_create(
			&t, nullptr, [](void *) -> void * { return nullptr; }, nullptr);
		pthread_join(t, nullptr);
		m.samples.push_back((double)(now_ns() - t0));
	}
	return m;
}

Meas memcpy_1mib_x2(int n)
{
	const size_t sz = 1 << 20;
	std::vector<char> a(sz, 'a'), b(sz), c(sz);
	Meas m;
	for (int i = 0; i < n; i++) {
		a[(size_t)i % sz] = (char)i;
		uint64_t t0 = now_ns();
		memcpy(b.data(), a.data(), sz);
		__asm__ __volatile__("" ::"r"(b.data()) : "memory");
		memcpy(c.data(), b.data(), sz);
		__asm__ __volatile__("" ::"r"(c.data()) : "memory");
		m.samples.push_back((double)(now_ns() - t0));
	}
	check(memcmp(a.data(), c.data(), sz) == 0, "memcpy floor copied");
	return m;
}

int scale(int full, int quick) { return g_quick ? quick : full; }

const MetricSpec kP50{"p50", "ns", Better::Lower, true};
const MetricSpec kP99{"p99", "ns", Better::Lower, false};

} // namespace

double mode_probe()
{
	Meas m = cacheline(g_quick ? 200 : 2000);
	return median(m.samples);
}

void register_floors()
{
	add_case({"floor.cacheline",
		  "hot",
		  "floor",
		  "",
		  {kP50, kP99},
		  [] { return cacheline(scale(20000, 500)); },
		  "cache-line round trip, two pinned threads"});
	add_case({"floor.futex_pingpong",
		  "cold",
		  "floor",
		  "",
		  {kP50, kP99, {"ctxsw/call", "/call", Better::Lower, false}},
		  [] { return futex_pingpong(scale(2000, 50)); },
		  "futex round trip, both sides sleep (two wakes)"});
	add_case({"floor.futex_wake_spinner",
		  "wake1",
		  "floor",
		  "",
		  {kP50, kP99},
		  [] { return futex_wake_spinner(scale(2000, 50)); },
		  "host sleeps, a spinning thread wakes it (one wake)"});
	// Alternated with the ping-pong: the cold call's one wake, against the
	// floor its target names.
	add_case({"floor.futex_wake_gap300us",
		  "cold",
		  "floor",
		  "floor.futex_pingpong",
		  {kP50, kP99},
		  [] { return futex_wake_after_gap(scale(1000, 30), 300000); },
		  "a thread parked 300 us is woken and answers a spinning host (one wake)"});
	add_case({"floor.futex_wake_nowaiter",
		  "sys",
		  "floor",
		  "",
		  {kP50},
		  [] {
			  static uint32_t w;
			  return per_call(scale(100000, 1000), [] { futex(&w, FUTEX_WAKE, 1); });
		  },
		  "FUTEX_WAKE with no waiter"});
	add_case({"floor.clock_gettime",
		  "sys",
		  "floor",
		  "",
		  {kP50},
		  [] {
			  return per_call(scale(1000000, 1000), [] {
				  volatile uint64_t t = now_ns();
				  (void)t;
			  });
		  },
		  "clock_gettime(CLOCK_MONOTONIC)"});
	add_case({"floor.thread_create_join",
		  "create",
		  "floor",
		  "",
		  {kP50, kP99},
		  [] { return thread_create_join(scale(500, 20)); },
		  "pthread_create + pthread_join"});
	add_case({"floor.memcpy_1mib_x2",
		  "bytes",
		  "floor",
		  "",
		  {kP50},
		  [] { return memcpy_1mib_x2(scale(200, 5)); },
		  "two 1 MiB memcpy (in and out)"});
}

} // namespace kb
