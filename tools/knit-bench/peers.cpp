// SPDX-License-Identifier: MIT
// tools/knit-bench/peers.cpp - what a C or C++ user would pick instead of
// libknitting, measured the same way: oneTBB (task_group throughput,
// task_arena::enqueue round trips hot, after 200 us gaps and after a 5-10 ms
// host sleep), Boost.Lockfree spsc, moodycamel ConcurrentQueue and
// BlockingConcurrentQueue, atomic_queue, a plain mutex + condition-variable
// pool, and a hand-rolled SPSC echo pool (the single-worker ceiling).
//
// Every peer is optional: a header that is not installed leaves that peer
// out (compiled in only when present), and the run says which and why.
#include "tools/knit-bench/bench.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>

#if __has_include(<boost/lockfree/spsc_queue.hpp>)
#include <boost/lockfree/spsc_queue.hpp>
#define KB_HAVE_BOOST 1
#endif
#if __has_include(<concurrentqueue/blockingconcurrentqueue.h>)
#include <concurrentqueue/blockingconcurrentqueue.h>
#include <concurrentqueue/concurrentqueue.h>
#define KB_HAVE_MOODY 1
#endif
#if __has_include(<atomic_queue/atomic_queue.h>)
#include <atomic_queue/atomic_queue.h>
#define KB_HAVE_AQ 1
#endif
// oneTBB needs its library too: the Makefile defines KB_TBB_LINKED when it
// links -ltbb.
#if defined(KB_TBB_LINKED) && __has_include(<oneapi/tbb/task_arena.h>)
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/task_scheduler_observer.h>
#define KB_HAVE_TBB 1
#endif

namespace kb {

namespace {

int scale(int full, int quick) { return g_quick ? quick : full; }

// The host's wait: spin a little, then yield (the host shares its CPU with
// the reaper in the stream cases; a pure spin would hold it for a slice).
struct Backoff {
	int n = 0;
	void operator()()
	{
		if (++n < 64)
			relax();
		else
			sched_yield();
	}
};

// ---- queue adapters: bool push(uint64_t), bool pop(uint64_t &) ----------------------
// Values are never 0 (atomic_queue reserves 0 as its empty marker).

struct SpscRing {
	static constexpr uint32_t kCap = 4096;
	alignas(128) std::atomic<uint32_t> head{0}; // consumer
	alignas(128) uint32_t tail_cache = 0;
	alignas(128) std::atomic<uint32_t> tail{0}; // producer
	alignas(128) uint32_t head_cache = 0;
	alignas(128) uint64_t slot[kCap];
	bool push(uint64_t v)
	{
		uint32_t t = tail.load(std::memory_order_relaxed);
		if (t - head_cache == kCap) {
			head_cache = head.load(std::memory_order_acquire);
			if (t - head_cache == kCap)
				return false;
		}
		slot[t % kCap] = v;
		tail.store(t + 1, std::memory_order_release);
		return true;
	}
	bool pop(uint64_t &v)
	{
		uint32_t h = head.load(std::memory_order_relaxed);
		if (h == tail_cache) {
			tail_cache = tail.load(std::memory_order_acquire);
			if (h == tail_cache)
				return false;
		}
		v = slot[h % kCap];
		head.store(h + 1, std::memory_order_release);
		return true;
	}
};

#ifdef KB_HAVE_BOOST
struct BoostQ {
	boost::lockfree::spsc_queue<uint64_t, boost::lockfree::capacity<4096>> q;
	bool push(uint64_t v) { return q.push(v); }
	bool pop(uint64_t &v) { return q.pop(v); }
};
#endif
#ifdef KB_HAVE_AQ
struct AtomicQ {
	atomic_queue::AtomicQueue<uint64_t, 4096> q;
	bool push(uint64_t v) { return q.try_push(v); }
	bool pop(uint64_t &v) { return q.try_pop(v); }
};
#endif
#ifdef KB_HAVE_MOODY
struct MoodyQ {
	moodycamel::ConcurrentQueue<uint64_t> q{4096};
	bool push(uint64_t v) { return q.enqueue(v); }
	bool pop(uint64_t &v) { return q.try_dequeue(v); }
};
#endif

// A one-worker pool over two queues: the worker takes a request, runs the
// task (returns its argument), answers; it spins while idle (these queues
// have no way to sleep).
template <typename Q> struct SpinPool {
	Q req, resp;
	std::atomic<bool> stop{false};
	std::thread worker;
	SpinPool()
	{
		worker = pinned_thread(g_place.worker, [this] {
			uint64_t v;
			while (!stop.load(std::memory_order_relaxed)) {
				if (req.pop(v)) {
					while (!resp.push(v))
						relax();
				} else
					relax();
			}
		});
	}
	~SpinPool()
	{
		stop = true;
		worker.join();
	}
};

template <typename Q> Meas spin_pingpong(int n)
{
	SpinPool<Q> p;
	Meas m;
	uint64_t v, sum = 0;
	for (int i = 0; i < 1000; i++) { // warm-up: the worker running, the lines hot
		while (!p.req.push(1))
			relax();
		while (!p.resp.pop(v))
			relax();
	}
	for (int i = 1; i <= n; i++) {
		uint64_t t0 = now_ns();
		while (!p.req.push((uint64_t)i))
			relax();
		while (!p.resp.pop(v))
			relax();
		m.samples.push_back((double)(now_ns() - t0));
		sum += v;
	}
	check(sum == (uint64_t)n * (n + 1) / 2, "ping-pong: every call answered once");
	return m;
}

// Throughput: `batch` calls pushed, then all reaped; repeated.
template <typename Q> Meas spin_batch(int batch, int reps)
{
	SpinPool<Q> p;
	Meas m;
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns(), sum = 0, v;
		int sent = 0, got = 0;
		while (got < batch) {
			bool moved = false;
			while (sent < batch && p.req.push((uint64_t)sent + 1))
				sent++, moved = true;
			while (p.resp.pop(v))
				sum += v, got++, moved = true;
			if (!moved)
				relax();
		}
		m.ns += (double)(now_ns() - t0);
		m.ops += batch;
		check(sum == (uint64_t)batch * (batch + 1) / 2, "batch: every call answered once");
	}
	return m;
}

// Stream: a producer thread pushes continuously while a reaper thread takes
// the results; both on the host CPU.
template <typename Q> Meas spin_stream(int n)
{
	SpinPool<Q> p;
	Meas m;
	uint64_t sum = 0;
	uint64_t t0 = now_ns();
	auto prod = pinned_thread(g_place.host, [&] {
		Backoff b;
		for (int i = 1; i <= n; i++)
			while (!p.req.push((uint64_t)i))
				b();
	});
	auto reap = pinned_thread(g_place.host, [&] {
		Backoff b;
		uint64_t v;
		for (int got = 0; got < n;) {
			if (p.resp.pop(v))
				sum += v, got++;
			else
				b();
		}
	});
	prod.join();
	reap.join();
	m.ns = (double)(now_ns() - t0);
	m.ops = n;
	check(sum == (uint64_t)n * (n + 1) / 2, "stream: every call answered once");
	return m;
}

// ---- a plain mutex + condition variable pool (one worker) ----------------------------
struct MutexPool {
	std::mutex mu;
	std::condition_variable cv_req, cv_resp;
	std::deque<uint64_t> req, resp;
	bool stop = false;
	std::thread worker;
	MutexPool()
	{
		worker = pinned_thread(g_place.worker, [this] {
			std::unique_lock<std::mutex> lk(mu);
			for (;;) {
				cv_req.wait(lk, [this] { return stop || !req.empty(); });
				if (req.empty())
					return;
				while (!req.empty()) {
					uint64_t v = req.front();
					req.pop_front();
					resp.push_back(v);
				}
				cv_resp.notify_all();
			}
		});
	}
	~MutexPool()
	{
		{
			std::lock_guard<std::mutex> g(mu);
			stop = true;
		}
		cv_req.notify_all();
		worker.join();
	}
	void submit(uint64_t v)
	{
		{
			std::lock_guard<std::mutex> g(mu);
			req.push_back(v);
		}
		cv_req.notify_one();
	}
	// Take up to everything waiting; blocks until at least one.
	uint64_t take(uint64_t *sum)
	{
		std::unique_lock<std::mutex> lk(mu);
		cv_resp.wait(lk, [this] { return !resp.empty(); });
		uint64_t n = resp.size();
		for (uint64_t v : resp)
			*sum += v;
		resp.clear();
		return n;
	}
};

Meas mutex_roundtrip(int n, uint64_t gap_ns)
{
	MutexPool p;
	Meas m;
	uint64_t sum = 0, warm = 0;
	for (int i = 0; i < 100; i++) { // warm-up
		p.submit(1);
		p.take(&warm);
	}
	double cs0 = ctx_switches();
	for (int i = 1; i <= n; i++) {
		if (gap_ns)
			sleep_ns(gap_ns);
		uint64_t t0 = now_ns();
		p.submit((uint64_t)i);
		p.take(&sum);
		m.samples.push_back((double)(now_ns() - t0));
	}
	m.calls = (uint64_t)n;
	m.counts["ctxsw"] = ctx_switches() - cs0;
	check(sum == (uint64_t)n * (n + 1) / 2, "mutex pool: every call answered once");
	return m;
}

Meas mutex_batch(int batch, int reps)
{
	MutexPool p;
	Meas m;
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns(), sum = 0;
		for (int i = 1; i <= batch; i++)
			p.submit((uint64_t)i);
		for (uint64_t got = 0; got < (uint64_t)batch;)
			got += p.take(&sum);
		m.ns += (double)(now_ns() - t0);
		m.ops += batch;
		check(sum == (uint64_t)batch * (batch + 1) / 2,
		      "mutex batch: every call answered once");
	}
	return m;
}

Meas mutex_stream(int n)
{
	MutexPool p;
	Meas m;
	uint64_t sum = 0, t0 = now_ns();
	auto prod = pinned_thread(g_place.host, [&] {
		for (int i = 1; i <= n; i++)
			p.submit((uint64_t)i);
	});
	auto reap = pinned_thread(g_place.host, [&] {
		for (uint64_t got = 0; got < (uint64_t)n;)
			got += p.take(&sum);
	});
	prod.join();
	reap.join();
	m.ns = (double)(now_ns() - t0);
	m.ops = n;
	check(sum == (uint64_t)n * (n + 1) / 2, "mutex stream: every call answered once");
	return m;
}

#ifdef KB_HAVE_MOODY
// BlockingConcurrentQueue: a worker that sleeps when idle (its semaphore),
// so a call after a gap is a cold round trip.
Meas blocking_roundtrip(int n, uint64_t gap_ns)
{
	moodycamel::BlockingConcurrentQueue<uint64_t> req, resp;
	auto w = pinned_thread(g_place.worker, [&] {
		uint64_t v;
		for (;;) {
			req.wait_dequeue(v);
			if (v == 0)
				return;
			resp.enqueue(v);
		}
	});
	Meas m;
	uint64_t sum = 0, v;
	for (int i = 0; i < 100; i++) { // warm-up
		req.enqueue(1);
		resp.wait_dequeue(v);
	}
	double cs0 = ctx_switches();
	for (int i = 1; i <= n; i++) {
		if (gap_ns)
			sleep_ns(gap_ns);
		uint64_t t0 = now_ns();
		req.enqueue((uint64_t)i);
		resp.wait_dequeue(v);
		m.samples.push_back((double)(now_ns() - t0));
		sum += v;
	}
	m.calls = (uint64_t)n;
	m.counts["ctxsw"] = ctx_switches() - cs0;
	req.enqueue(0);
	w.join();
	check(sum == (uint64_t)n * (n + 1) / 2, "blocking queue: every call answered once");
	return m;
}
#endif

#ifdef KB_HAVE_TBB
// Pins TBB's worker threads to the worker CPU as they join an arena.
struct PinObserver : tbb::task_scheduler_observer {
	explicit PinObserver(tbb::task_arena &a) : tbb::task_scheduler_observer(a)
	{
		observe(true);
	}
	PinObserver() { observe(true); }
	void on_scheduler_entry(bool is_worker) override
	{
		if (is_worker)
			pin_self(g_place.worker);
	}
};

// Host + one worker, like the other one-worker pools: a scoped limit (a
// case that measures more threads, tbb_batch, sets its own).
struct TbbLimit {
	tbb::global_control gc{tbb::global_control::max_allowed_parallelism, 2};
};

Meas tbb_task_group(int batch, int reps)
{
	TbbLimit limit;
	PinObserver obs;
	std::atomic<uint64_t> sum{0};
	Meas m;
	for (int r = 0; r < reps; r++) {
		sum = 0;
		tbb::task_group tg;
		uint64_t t0 = now_ns();
		for (int i = 1; i <= batch; i++)
			tg.run([&sum, i] {
				sum.fetch_add((uint64_t)i, std::memory_order_relaxed);
			});
		tg.wait();
		m.ns += (double)(now_ns() - t0);
		m.ops += batch;
		check(sum == (uint64_t)batch * (batch + 1) / 2,
		      "tbb task_group: every task ran once");
	}
	return m;
}

// task_arena::enqueue round trip: one worker slot, none reserved for the
// host; the host waits for the task's answer by spinning (hot) after a gap
// (sleeping gap_ns, or 5-10 ms when gap_ns is 1).
Meas tbb_arena_roundtrip(int n, uint64_t gap_ns)
{
	TbbLimit limit;
	tbb::task_arena arena(1, 0);
	arena.initialize();
	PinObserver obs(arena);
	alignas(128) std::atomic<uint64_t> done{0};
	std::mt19937 rng(12345);
	for (uint64_t i = 1; i <= 1000; i++) { // warm-up: the worker thread exists and has run
		arena.enqueue([&done, i] { done.store(i, std::memory_order_release); });
		while (done.load(std::memory_order_acquire) != i)
			relax();
	}
	done = 0;
	Meas m;
	double cs0 = ctx_switches();
	for (int i = 1; i <= n; i++) {
		if (gap_ns == 1)
			sleep_ns(5000000 + rng() % 5000000);
		else if (gap_ns)
			sleep_ns(gap_ns);
		uint64_t t0 = now_ns();
		arena.enqueue([&done, i] { done.store((uint64_t)i, std::memory_order_release); });
		while (done.load(std::memory_order_acquire) != (uint64_t)i)
			relax();
		m.samples.push_back((double)(now_ns() - t0));
	}
	m.calls = (uint64_t)n;
	m.counts["ctxsw"] = ctx_switches() - cs0;
	return m;
}

Meas tbb_stream(int n)
{
	TbbLimit limit;
	tbb::task_arena arena(1, 0);
	arena.initialize();
	PinObserver obs(arena);
	alignas(128) std::atomic<uint64_t> done{0};
	Meas m;
	uint64_t t0 = now_ns();
	auto prod = pinned_thread(g_place.host, [&] {
		for (int i = 0; i < n; i++)
			arena.enqueue([&done] { done.fetch_add(1, std::memory_order_release); });
	});
	auto reap = pinned_thread(g_place.host, [&] {
		Backoff b;
		while (done.load(std::memory_order_acquire) != (uint64_t)n)
			b();
	});
	prod.join();
	reap.join();
	m.ns = (double)(now_ns() - t0);
	m.ops = n;
	check(done.load() == (uint64_t)n, "tbb stream: every task ran once");
	return m;
}
#endif

const MetricSpec kP50{"p50", "ns", Better::Lower, true};
const MetricSpec kP99{"p99", "ns", Better::Lower, false};
const MetricSpec kTput{"tput", "calls/s", Better::Higher, true};
const MetricSpec kCs{"ctxsw/call", "/call", Better::Lower, false};

// batch_cmp, stream_cmp: a case to alternate with (and show the ratio to),
// or "" for none.
template <typename Q>
void add_queue_peer(const std::string &name, const std::string &what,
		    const std::string &batch_cmp = "", const std::string &stream_cmp = "")
{
	add_case({"peer." + name + ".pingpong",
		  "hot",
		  "peer",
		  "floor.cacheline",
		  {kP50, kP99},
		  [] { return spin_pingpong<Q>(scale(20000, 300)); },
		  what + " ping-pong, worker spinning"});
	add_case({"peer." + name + ".batch1000",
		  "batch1000",
		  "peer",
		  batch_cmp,
		  {kTput},
		  [] { return spin_batch<Q>(1000, scale(200, 3)); },
		  what + " pool, batches of 1000"});
	add_case({"peer." + name + ".stream",
		  "stream",
		  "peer",
		  stream_cmp,
		  {kTput},
		  [] { return spin_stream<Q>(scale(200000, 2000)); },
		  what + " pool, producer and reaper threads"});
}

} // namespace

bool tbb_batch(int threads, int batch, int reps, int64_t rounds, Meas *out)
{
#ifdef KB_HAVE_TBB
	tbb::global_control gc(tbb::global_control::max_allowed_parallelism, (size_t)threads);
	tbb::task_arena arena(threads, 1); // one slot kept for this (the host) thread
	std::atomic<uint64_t> sum{0};
	Meas m;
	arena.execute([&] {
		for (int r = 0; r < reps; r++) {
			sum = 0;
			tbb::task_group tg;
			uint64_t t0 = now_ns();
			for (int i = 1; i <= batch; i++)
				tg.run([&sum, i, rounds] {
					if (rounds > 0)
						lcg(rounds);
					sum.fetch_add((uint64_t)i, std::memory_order_relaxed);
				});
			tg.wait();
			m.ns += (double)(now_ns() - t0);
			m.ops += batch;
			check(sum == (uint64_t)batch * (uint64_t)(batch + 1) / 2,
			      "tbb task_group (%d threads): every task ran once", threads);
		}
	});
	*out = m;
	return true;
#else
	(void)threads, (void)batch, (void)reps, (void)rounds, (void)out;
	return false;
#endif
}

#ifdef KB_HAVE_TBB
// oneTBB parallel_for over `n` items of lcg(rounds) at `threads` threads
// (the caller's included), automatic partitioning: `reps` loops.
static Meas tbb_parallel_for(int threads, int n, int reps, int64_t rounds)
{
	tbb::global_control gc(tbb::global_control::max_allowed_parallelism, (size_t)threads);
	tbb::task_arena arena(threads, 1);
	std::atomic<uint64_t> sum{0};
	Meas m;
	arena.execute([&] {
		for (int r = 0; r <= reps; r++) { // rep 0: warm-up
			sum = 0;
			uint64_t t0 = now_ns();
			tbb::parallel_for(tbb::blocked_range<int>(0, n),
					  [&sum, rounds](const tbb::blocked_range<int> &br) {
						  uint64_t s = 0;
						  for (int i = br.begin(); i != br.end(); i++) {
							  lcg(rounds);
							  s += (uint64_t)i + 1;
						  }
						  sum.fetch_add(s, std::memory_order_relaxed);
					  });
			if (r > 0) {
				m.ns += (double)(now_ns() - t0);
				m.ops += n;
			}
			check(sum == (uint64_t)n * (uint64_t)(n + 1) / 2,
			      "tbb parallel_for: every item ran once");
		}
	});
	return m;
}
#endif

void register_peers()
{
	// The hand-rolled ring is the ceiling of any one-worker pool here; its
	// ratio to oneTBB, alternated in the same run, is the most any such pool
	// can show against oneTBB on this machine.
#ifdef KB_HAVE_TBB
	add_queue_peer<SpscRing>("spsc_echo", "hand-rolled SPSC ring",
				 "peer.tbb.task_group.batch1000", "peer.tbb.stream");
#else
	add_queue_peer<SpscRing>("spsc_echo", "hand-rolled SPSC ring");
#endif
	// The ceiling at libknitting's other batch sizes (their comparison).
	for (int size : {1, 32, 10000}) {
		int reps = std::max(1, (g_quick ? 2000 : 400000) / size);
		if (size == 1)
			reps = scale(20000, 200);
		add_case({"peer.spsc_echo.batch" + std::to_string(size),
			  "batch" + std::to_string(size),
			  "peer",
			  "",
			  {kTput},
			  [size, reps] { return spin_batch<SpscRing>(size, reps); },
			  "hand-rolled SPSC ring pool, batches of " + std::to_string(size)});
	}
#ifdef KB_HAVE_BOOST
	add_queue_peer<BoostQ>("boost_spsc", "Boost.Lockfree spsc_queue");
#else
	left_out().push_back(
		"boost_spsc: <boost/lockfree/spsc_queue.hpp> not found (libboost-dev)");
#endif
#ifdef KB_HAVE_AQ
	add_queue_peer<AtomicQ>("atomic_queue", "atomic_queue::AtomicQueue");
#else
	left_out().push_back(
		"atomic_queue: <atomic_queue/atomic_queue.h> not found (libatomic-queue-dev)");
#endif
#ifdef KB_HAVE_MOODY
	add_queue_peer<MoodyQ>("moodycamel", "moodycamel::ConcurrentQueue");
	add_case({"peer.moodycamel_blocking.gap200us",
		  "cold",
		  "peer",
		  "floor.futex_pingpong",
		  {kP50, kP99, kCs},
		  [] { return blocking_roundtrip(scale(1000, 30), 200000); },
		  "moodycamel::BlockingConcurrentQueue round trip after a 200 us gap"});
#else
	left_out().push_back("moodycamel: <concurrentqueue/concurrentqueue.h> not found "
			     "(libconcurrentqueue-dev)");
#endif
	add_case({"peer.mutex_cv.roundtrip",
		  "hot",
		  "peer",
		  "floor.cacheline",
		  {kP50, kP99, kCs},
		  [] { return mutex_roundtrip(scale(5000, 100), 0); },
		  "mutex + condition variable pool round trip"});
	add_case({"peer.mutex_cv.gap200us",
		  "cold",
		  "peer",
		  "floor.futex_pingpong",
		  {kP50, kP99, kCs},
		  [] { return mutex_roundtrip(scale(1000, 30), 200000); },
		  "mutex + condition variable pool after a 200 us gap"});
	add_case({"peer.mutex_cv.batch1000",
		  "batch1000",
		  "peer",
		  "",
		  {kTput},
		  [] { return mutex_batch(1000, scale(200, 3)); },
		  "mutex + condition variable pool, batches of 1000"});
	add_case({"peer.mutex_cv.stream",
		  "stream",
		  "peer",
		  "",
		  {kTput},
		  [] { return mutex_stream(scale(200000, 2000)); },
		  "mutex + condition variable pool, producer and reaper"});
#ifdef KB_HAVE_TBB
	add_case({"peer.tbb.task_group.batch1000",
		  "batch1000",
		  "peer",
		  "",
		  {kTput},
		  [] { return tbb_task_group(1000, scale(200, 3)); },
		  "oneTBB task_group: run 1000, wait"});
	add_case({"peer.tbb.parallel_for.200ns.t2",
		  "map_200ns",
		  "peer",
		  "",
		  {kTput},
		  [] {
			  return tbb_parallel_for(2, 10000, scale(40, 2),
						  std::max<int64_t>(1, lcg_rounds_per_us() / 5));
		  },
		  "oneTBB parallel_for over 10000 ~200 ns items, 2 threads"});
	add_case({"peer.tbb.arena_enqueue.hot",
		  "hot",
		  "peer",
		  "floor.cacheline",
		  {kP50, kP99},
		  [] { return tbb_arena_roundtrip(scale(20000, 300), 0); },
		  "oneTBB task_arena::enqueue round trip, back to back"});
	add_case({"peer.tbb.arena_enqueue.gap200us",
		  "cold",
		  "peer",
		  "floor.futex_pingpong",
		  {kP50, kP99, kCs},
		  [] { return tbb_arena_roundtrip(scale(1000, 30), 200000); },
		  "oneTBB task_arena::enqueue after a 200 us gap"});
	add_case({"peer.tbb.arena_enqueue.after_sleep",
		  "first",
		  "peer",
		  "floor.futex_pingpong",
		  {kP50, kP99, kCs},
		  [] { return tbb_arena_roundtrip(scale(40, 4), 1); },
		  "oneTBB task_arena::enqueue after the host slept 5-10 ms"});
	add_case({"peer.tbb.stream",
		  "stream",
		  "peer",
		  "",
		  {kTput},
		  [] { return tbb_stream(scale(200000, 2000)); },
		  "oneTBB task_arena::enqueue from a producer, counted by a reaper"});
#else
	left_out().push_back("oneTBB: <oneapi/tbb/task_arena.h> or libtbb not found (libtbb-dev)");
#endif
}

} // namespace kb
