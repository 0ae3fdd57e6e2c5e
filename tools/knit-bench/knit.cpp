// SPDX-License-Identifier: MIT
// tools/knit-bench/knit.cpp - libknitting's cases: hot round trips, batches,
// a stream, cold and after-sleep round trips, a 1 MiB bytes echo, create to
// first result and destroy, the idle cost, 2 workers against 1, and the
// original's steal benchmark load shapes. Every case also checks its counts
// (each call completed exactly once, the pool's counters agree) and reports
// the pool's own counters per call.
#include "tools/knit-bench/bench.h"

#include <cstring>
#include <random>
#include <unistd.h>

#include "knitting.h"

namespace kb {

namespace {

int scale(int full, int quick) { return g_quick ? quick : full; }

int t_nop(knit_ctx_t *, const knit_value_t *, knit_value_t *) { return 0; }
int t_echo(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	*ret = *arg;
	return 0;
}
// The original's load: `rounds` steps of an LCG; returns the CPU time it took.
int t_work(knit_ctx_t *, const knit_value_t *arg, knit_value_t *ret)
{
	uint64_t c0 = thread_cpu_ns();
	uint32_t x = 1;
	for (int64_t i = 0; i < arg->i64; i++)
		x = x * 1664525u + 1013904223u;
	__asm__ __volatile__("" ::"r"(x));
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)(thread_cpu_ns() - c0);
	return 0;
}
// `arg` LCG rounds and nothing else (no clock read): a call of a known,
// small length (lcg_rounds_per_us).
int t_spin(knit_ctx_t *, const knit_value_t *arg, knit_value_t *)
{
	lcg(arg->i64);
	return 0;
}
const knit_task_t kTasks[] = {{"echo", t_echo, 0, 0},
			      {"nop", t_nop, 0, 0},
			      {"spin", t_spin, 0, 0},
			      {"work", t_work, 0, 0}};
enum { kEcho = 0, kNop = 1, kSpin = 2, kWork = 3 }; // ids are indexes in name order
constexpr uint32_t kNumTasks = sizeof kTasks / sizeof kTasks[0];

struct PoolSpec {
	uint32_t workers = 1;
	uint32_t topology = KNIT_TOPOLOGY_AUTO;
	uint32_t spin_us = 0;
	bool pin = true;             // one worker on the worker CPU; more: both CPUs
	bool processes = false;      // knit-worker processes over knit-bench-tasks.so
	bool spread = false;         // one worker per CPU, the host's CPU last (the scale case)
	uint32_t info_flags = 0;     // KNIT_POOL_INFO_* (knit_completion_info(3))
	uint64_t recycle_calls = 0;  // processes: recycle a worker after this many calls
	uint32_t recycle_age_ms = 0; // processes: ... or this long after it took its lane
	bool sandbox = false;        // processes: seccomp's default policy and Landlock
	uint32_t inline_lane = 0;    // threads: enum knit_inline_lane (the host runs calls too)
};

// The process cases' task library: knit-bench-tasks.so beside knit-bench.
std::string proc_task_library()
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return "";
	exe[n] = 0;
	std::string dir(exe);
	return dir.substr(0, dir.rfind('/')) + "/knit-bench-tasks.so";
}

knit_pool_t *make_pool(const PoolSpec &s)
{
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.workers = s.workers;
	o.topology = s.topology;
	o.spin_us = s.spin_us;
	o.info_flags = s.info_flags;
	o.inline_lane = s.inline_lane;
	const std::string lib = s.processes ? proc_task_library() : "";
	// The sandbox's default policy, Landlock with no path (best effort: a
	// kernel without it runs the case unconfined) and no_new_privs
	// (libknitting(7), "Sandboxing"): the fast path makes no syscall, so
	// its cost is the boot's and a parked worker's wake.
	knit_sandbox_t sb;
	memset(&sb, 0, sizeof sb);
	sb.size = sizeof sb;
	sb.flags = KNIT_SANDBOX_SECCOMP | KNIT_SANDBOX_LANDLOCK | KNIT_SANDBOX_LANDLOCK_BEST_EFFORT;
	if (s.processes) {
		o.worker_kind = KNIT_WORKERS_PROCESSES;
		o.task_library = lib.c_str();
		o.recycle_calls = s.recycle_calls;
		o.recycle_age_ms = s.recycle_age_ms;
		if (s.sandbox)
			o.sandbox = &sb;
	}
	// Worker processes are placed as threads are: left alone, they would
	// inherit the pinned host's CPU.
	if (s.spread && g_place.host >= 0) {
		// Every CPU but the host's, one worker each; more workers than
		// that: every CPU (the host's too), still one worker each.
		std::vector<int> use;
		for (int c : g_place.cpus)
			if (c != g_place.host)
				use.push_back(c);
		if (s.workers > use.size())
			use = g_place.cpus;
		for (int c : use)
			o.cpu_mask[c / 64] |= 1ull << (c % 64);
		o.cpu_flags = KNIT_CPU_ONE_PER_WORKER;
	} else if (s.pin && g_place.worker >= 0) {
		o.cpu_mask[g_place.worker / 64] |= 1ull << (g_place.worker % 64);
		if (s.workers > 1 && g_place.host >= 0) {
			o.cpu_mask[g_place.host / 64] |= 1ull << (g_place.host % 64);
			o.cpu_flags = KNIT_CPU_ONE_PER_WORKER;
		}
	}
	knit_pool_t *p = nullptr;
	int rc = s.processes ? knit_pool_create(&o, nullptr, 0, &p)
			     : knit_pool_create(&o, kTasks, kNumTasks, &p);
	if (rc != 0) {
		fprintf(stderr, "knit-bench: knit_pool_create: %s\n", knit_strerror(rc));
		exit(2);
	}
	return p;
}

struct Snap {
	knit_pool_stats_t s;
	double cs;
};
Snap snap(knit_pool_t *p)
{
	Snap x;
	memset(&x.s, 0, sizeof x.s);
	x.s.size = sizeof x.s;
	if (knit_pool_stats(p, &x.s, sizeof x.s) == -KNIT_EVERSION) {
		// A 1.0 library (an A/B against an older build): its structure
		// ends before backlogged, which then reads 0.
		x.s.size = (uint32_t)offsetof(knit_pool_stats_t, backlogged);
		knit_pool_stats(p, &x.s, x.s.size);
	}
	x.cs = ctx_switches();
	return x;
}

// Per-call counters between two snapshots, and the stats' own consistency.
void account(Meas &m, const Snap &a, const Snap &b, uint64_t calls, const char *what)
{
	double wakes = 0, parks = 0, rings = 0, lane_calls = 0;
	for (uint32_t i = 0; i < b.s.lanes; i++) {
		wakes += (double)(b.s.lane[i].wakes_sent - a.s.lane[i].wakes_sent);
		parks += (double)(b.s.lane[i].parks - a.s.lane[i].parks);
		rings += (double)(b.s.lane[i].doorbell_rings - a.s.lane[i].doorbell_rings);
		lane_calls += (double)(b.s.lane[i].calls - a.s.lane[i].calls);
	}
	m.calls += calls;
	m.counts["wakes_sent"] += wakes;
	m.counts["parks"] += parks;
	m.counts["doorbell_arms"] += (double)(b.s.doorbell_arms - a.s.doorbell_arms);
	m.counts["doorbell_wakes"] += (double)(b.s.doorbell_wakes - a.s.doorbell_wakes);
	// Futex wakes, host and worker together: the host's wakes of parked
	// workers plus the workers' rings of a sleeping host.
	m.counts["futex_wakes"] += wakes + (double)(b.s.doorbell_wakes - a.s.doorbell_wakes);
	m.counts["ctxsw"] += b.cs - a.cs;
	// Calls that found no free slot and waited in the backlog (placed on a
	// second look): the host's extra work when it outruns the workers.
	m.counts["backlogged"] += (double)(b.s.backlogged - a.s.backlogged);
	// Process pools that recycle: the recycles and the spawns that really
	// happened (a mark of recycle_calls is reached again while the last
	// successor still boots: a recycle lags behind its mark by a boot).
	const uint64_t recycles = b.s.recycles_calls + b.s.recycles_rss + b.s.recycles_age -
				  a.s.recycles_calls - a.s.recycles_rss - a.s.recycles_age;
	if (recycles != 0 || b.s.spawns != a.s.spawns) {
		m.counts["recycles"] += (double)recycles;
		m.counts["spawns"] += (double)(b.s.spawns - a.s.spawns);
	}
	check(b.s.enqueued - a.s.enqueued == calls, "%s: enqueued %llu, expected %llu", what,
	      (unsigned long long)(b.s.enqueued - a.s.enqueued), (unsigned long long)calls);
	check(b.s.completed - a.s.completed == calls, "%s: completed %llu, expected %llu", what,
	      (unsigned long long)(b.s.completed - a.s.completed), (unsigned long long)calls);
	// A lane counts the frames it ran: a burst's calls that shared frames
	// (knit_enqueue_many(3)) count once per frame.
	const uint64_t shared = b.s.shared_calls - a.s.shared_calls;
	const uint64_t frames = calls - shared + (b.s.shared_frames - a.s.shared_frames);
	if (shared != 0)
		m.counts["shared"] += (double)shared;
	check(lane_calls == (double)frames, "%s: lanes ran %.0f frames, expected %llu", what,
	      lane_calls, (unsigned long long)frames);
	check(b.s.pending == 0, "%s: %llu calls still pending", what,
	      (unsigned long long)b.s.pending);
}

knit_value_t i64(int64_t v)
{
	knit_value_t x;
	memset(&x, 0, sizeof x);
	x.type = KNIT_VALUE_I64;
	x.i64 = v;
	return x;
}

// One knit_call of echo(i); checks the answer.
void call_echo(knit_pool_t *p, int64_t i)
{
	knit_value_t a = i64(i);
	knit_completion_t c;
	int rc = knit_call(p, kEcho, &a, &c, -1);
	check(rc == 0 && c.status == 0 && c.result.type == KNIT_VALUE_I64 && c.result.i64 == i,
	      "knit_call echo(%lld): rc %d status %d", (long long)i, rc, rc == 0 ? c.status : 0);
	if (rc == 0)
		knit_completion_release(p, &c);
}

// Reap exactly n completions whose user_data is index + 1 in [0, n): each
// seen once, each status 0. Returns the sum of their i64 results.
int64_t reap_n(knit_pool_t *p, uint64_t n, std::vector<uint8_t> &seen, const char *what)
{
	seen.assign(n, 0);
	knit_completion_t c[256];
	int64_t sum = 0;
	for (uint64_t got = 0; got < n;) {
		int k = knit_complete(p, c, 256, -1);
		if (k <= 0) {
			check(false, "%s: knit_complete returned %d with %llu of %llu reaped", what,
			      k, (unsigned long long)got, (unsigned long long)n);
			return sum;
		}
		for (int j = 0; j < k; j++) {
			uint64_t idx = (uint64_t)(uintptr_t)c[j].user_data - 1;
			check(idx < n && !seen[idx], "%s: completion %llu unknown or seen twice",
			      what, (unsigned long long)idx);
			check(c[j].status == 0, "%s: status %d", what, c[j].status);
			if (idx < n)
				seen[idx] = 1;
			if (c[j].result.type == KNIT_VALUE_I64)
				sum += c[j].result.i64;
			knit_completion_release(p, &c[j]);
		}
		got += (uint64_t)k;
	}
	return sum;
}

void enqueue(knit_pool_t *p, uint32_t task, int64_t arg, uint64_t idx)
{
	knit_value_t a = i64(arg);
	knit_ticket_t t;
	int rc;
	while ((rc = knit_enqueue(p, task, &a, (void *)(uintptr_t)(idx + 1), &t)) == -KNIT_EAGAIN)
		sched_yield();
	check(rc == 0, "knit_enqueue: %d", rc);
}

// ---- cases ---------------------------------------------------------------------------------

Meas hot_call(int n, const PoolSpec &spec = {})
{
	knit_pool_t *p = make_pool(spec);
	for (int i = 0; i < 1000; i++) // warm-up
		call_echo(p, i);
	Meas m;
	Snap a = snap(p);
	for (int i = 1; i <= n; i++) {
		uint64_t t0 = now_ns();
		call_echo(p, i);
		m.samples.push_back((double)(now_ns() - t0));
	}
	account(m, a, snap(p), (uint64_t)n, "hot knit_call");
	knit_pool_destroy(p);
	return m;
}

Meas hot_enqueue_complete(int n)
{
	knit_pool_t *p = make_pool({});
	Meas m;
	std::vector<uint8_t> seen;
	for (int i = 0; i < 1000; i++) {
		enqueue(p, kEcho, i, 0);
		reap_n(p, 1, seen, "warm-up");
	}
	Snap a = snap(p);
	for (int i = 1; i <= n; i++) {
		uint64_t t0 = now_ns();
		enqueue(p, kEcho, i, 0);
		int64_t v = reap_n(p, 1, seen, "hot enqueue+complete");
		m.samples.push_back((double)(now_ns() - t0));
		check(v == i, "hot enqueue+complete: echo %lld gave %lld", (long long)i,
		      (long long)v);
	}
	account(m, a, snap(p), (uint64_t)n, "hot enqueue+complete");
	knit_pool_destroy(p);
	return m;
}

// A batch's time per call split into its two phases: enqueueing (`enq`
// ns in all, which includes the reaping and refilling the dispatcher does
// for room) and reaping the rest. Where the split moves between runs while
// the sum stays, the pace is set by neither side's own work.
void phases(Meas &m, double enq)
{
	if (m.ops <= 0)
		return;
	m.extra["enqueue_ns"] = enq / m.ops;
	m.extra["reap_ns"] = (m.ns - enq) / m.ops;
}

// `reps` timed batches on a warmed-up pool p: submit() enqueues `size`
// calls whose user_data is index + 1, then they are reaped and checked;
// the pool is destroyed after.
Meas timed_batches(knit_pool_t *p, int size, int reps, const std::function<void()> &submit,
		   std::vector<uint8_t> &seen, const char *what)
{
	Meas m;
	Snap a = snap(p);
	double enq = 0;
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns();
		submit();
		enq += (double)(now_ns() - t0);
		reap_n(p, (uint64_t)size, seen, what);
		m.ns += (double)(now_ns() - t0);
		m.ops += size;
	}
	phases(m, enq);
	account(m, a, snap(p), (uint64_t)size * (uint64_t)reps, what);
	knit_pool_destroy(p);
	return m;
}

Meas batch(int size, int reps, uint32_t task, int64_t arg, const PoolSpec &spec, const char *what)
{
	knit_pool_t *p = make_pool(spec);
	std::vector<uint8_t> seen;
	for (int i = 0; i < std::min(size, 1000); i++) // warm-up
		enqueue(p, task, arg, (uint64_t)i);
	reap_n(p, (uint64_t)std::min(size, 1000), seen, what);
	return timed_batches(
		p, size, reps,
		[&] {
			for (int i = 0; i < size; i++)
				enqueue(p, task, arg, (uint64_t)i);
		},
		seen, what);
}

// batch() through knit_enqueue_many: each rep's `size` calls go in as
// bursts of what the pool accepts (the rest again after a yield, as
// enqueue() does on -KNIT_EAGAIN), then are reaped.
Meas batch_many(int size, int reps, uint32_t task, int64_t arg, const char *what)
{
	knit_pool_t *p = make_pool({});
	std::vector<uint8_t> seen;
	std::vector<knit_value_t> args((size_t)size, i64(arg));
	std::vector<knit_request_t> reqs((size_t)size);
	for (int i = 0; i < size; i++) {
		memset(&reqs[(size_t)i], 0, sizeof reqs[(size_t)i]);
		reqs[(size_t)i].task = task;
		reqs[(size_t)i].arg = &args[(size_t)i];
		reqs[(size_t)i].user_data = (void *)(uintptr_t)(i + 1);
	}
	auto burst = [&] {
		for (int done = 0; done < size;) {
			int k = knit_enqueue_many(p, reqs.data() + done, (uint32_t)(size - done),
						  nullptr);
			if (k == -KNIT_EAGAIN) {
				sched_yield();
				continue;
			}
			check(k > 0, "knit_enqueue_many: %d", k);
			if (k <= 0)
				return;
			done += k;
		}
	};
	burst(); // warm-up
	reap_n(p, (uint64_t)size, seen, what);
	return timed_batches(p, size, reps, burst, seen, what);
}

Meas stream(int n)
{
	knit_pool_t *p = make_pool({});
	Meas m;
	std::vector<uint8_t> seen;
	int64_t sum = 0;
	Snap a = snap(p);
	uint64_t t0 = now_ns();
	auto prod = pinned_thread(g_place.host, [&] {
		for (int i = 0; i < n; i++)
			enqueue(p, kEcho, i + 1, (uint64_t)i);
	});
	auto reap =
		pinned_thread(g_place.host, [&] { sum = reap_n(p, (uint64_t)n, seen, "stream"); });
	prod.join();
	reap.join();
	m.ns = (double)(now_ns() - t0);
	m.ops = n;
	check(sum == (int64_t)n * (n + 1) / 2, "stream: results add up");
	account(m, a, snap(p), (uint64_t)n, "stream");
	knit_pool_destroy(p);
	return m;
}

// Round trips after the host slept: gap_ns, or 5-10 ms when gap_ns is 1.
Meas after_gap(int n, uint64_t gap_ns, const PoolSpec &spec = {})
{
	knit_pool_t *p = make_pool(spec);
	call_echo(p, 0);
	std::mt19937 rng(12345);
	Meas m;
	Snap a = snap(p);
	for (int i = 1; i <= n; i++) {
		sleep_ns(gap_ns == 1 ? 5000000 + rng() % 5000000 : gap_ns);
		uint64_t t0 = now_ns();
		call_echo(p, i);
		m.samples.push_back((double)(now_ns() - t0));
	}
	account(m, a, snap(p), (uint64_t)n, "cold knit_call");
	knit_pool_destroy(p);
	return m;
}

Meas bytes_echo(int n)
{
	knit_pool_t *p = make_pool({});
	const size_t sz = 1 << 20;
	std::vector<uint8_t> buf(sz);
	for (size_t i = 0; i < sz; i++)
		buf[i] = (uint8_t)(i * 7);
	knit_value_t a;
	memset(&a, 0, sizeof a);
	a.type = KNIT_VALUE_BYTES;
	a.data = buf.data();
	a.len = sz;
	Meas m;
	Snap s0 = snap(p);
	for (int i = 0; i < n + 2; i++) {
		knit_completion_t c;
		uint64_t t0 = now_ns();
		int rc = knit_call(p, kEcho, &a, &c, -1);
		double dt = (double)(now_ns() - t0);
		if (i >= 2) // the first two commit the arenas
			m.samples.push_back(dt);
		check(rc == 0 && c.status == 0 && c.result.len == sz &&
			      memcmp(c.result.data, buf.data(), sz) == 0,
		      "1 MiB echo came back intact");
		if (rc == 0)
			knit_completion_release(p, &c);
	}
	account(m, s0, snap(p), (uint64_t)n + 2, "bytes echo");
	knit_pool_destroy(p);
	return m;
}

Meas create_first(int n, const PoolSpec &spec = {})
{
	Meas m;
	std::vector<double> destroy;
	// Process pools: the CPU time of a worker process's whole life (spawn,
	// exec, dynamic loading, mapping, task-table check, one call, exit),
	// user and system, as the kernel accounts its reaped children: what
	// every boot of a successor costs the machine, whatever its load.
	rusage c0, c1;
	getrusage(RUSAGE_CHILDREN, &c0);
	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		knit_pool_t *p = make_pool(spec);
		call_echo(p, 7);
		uint64_t t1 = now_ns();
		knit_pool_destroy(p);
		destroy.push_back((double)(now_ns() - t1));
		m.samples.push_back((double)(t1 - t0));
	}
	m.extra["destroy_p50"] = median(destroy);
	if (spec.processes) {
		getrusage(RUSAGE_CHILDREN, &c1);
		const auto us = [](const rusage &r) {
			return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
			       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
		};
		m.extra["worker_cpu_us"] = (us(c1) - us(c0)) / ((double)n * spec.workers);
	}
	return m;
}

Meas idle(uint64_t secs_ns)
{
	knit_pool_t *p = make_pool({});
	call_echo(p, 1);
	sleep_ns(100000000); // past the spin window
	Snap a = snap(p);
	rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	uint64_t t0 = now_ns();
	sleep_ns(secs_ns);
	double secs = (double)(now_ns() - t0) / 1e9;
	getrusage(RUSAGE_SELF, &r1);
	Snap b = snap(p);
	double wakeups = 0;
	for (uint32_t i = 0; i < b.s.lanes; i++)
		wakeups += (double)(b.s.lane[i].wakes_received - a.s.lane[i].wakes_received +
				    b.s.lane[i].watchdog_expiries - a.s.lane[i].watchdog_expiries);
	auto us = [](const rusage &r) {
		return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 +
		       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
	};
	Meas m;
	m.extra["wakeups_per_s"] = wakeups / secs;
	m.extra["cpu_pct"] = (us(r1) - us(r0)) / 1e6 / secs * 100;
	m.extra["ctxsw_per_s"] = (b.cs - a.cs) / secs;
	check(b.s.completed == 1 && b.s.pending == 0, "idle: one call, completed");
	knit_pool_destroy(p);
	return m;
}

// 2 workers against 1 on the same batch of small tasks.
Meas two_vs_one(uint32_t topology, int reps)
{
	const int size = 1000;
	const int64_t rounds = 2000; // a few microseconds each
	PoolSpec one{1, KNIT_TOPOLOGY_AUTO, 0, true};
	PoolSpec two{2, topology, 0, true};
	Meas m1 = batch(size, reps, kWork, rounds, one, "1 worker");
	Meas m2 = batch(size, reps, kWork, rounds, two,
			topology == KNIT_TOPOLOGY_STEAL ? "2 workers steal" : "2 workers lanes");
	Meas m;
	m.extra["tput_1w"] = m1.ops / m1.ns * 1e9;
	m.extra["tput_2w"] = m2.ops / m2.ns * 1e9;
	m.extra["ratio_2w_1w"] = m.extra["tput_2w"] / m.extra["tput_1w"];
	m.calls = m2.calls;
	m.counts = m2.counts;
	return m;
}

// ---- several workers as a program that never pins sees them -----------------------------
// Created and driven from a thread that may use every CPU (run_unplaced),
// no cpu_mask, every other option at its default.
PoolSpec unplaced(uint32_t workers, uint32_t topology)
{
	PoolSpec s;
	s.workers = workers;
	s.topology = topology;
	s.pin = false;
	return s;
}

// No-op batches of 1000: 2 workers (`topology`) against 1 (AUTO), both
// unplaced, alternated four times within the part.
Meas two_vs_one_nop(uint32_t topology, int reps)
{
	Meas m1, m2;
	run_unplaced([&] {
		for (int k = 0; k < 4; k++) {
			m1.merge(batch(1000, std::max(1, reps / 4), kNop, 0,
				       unplaced(1, KNIT_TOPOLOGY_AUTO), "2v1 no-op, 1 worker"));
			m2.merge(batch(1000, std::max(1, reps / 4), kNop, 0, unplaced(2, topology),
				       "2v1 no-op, 2 workers"));
		}
	});
	Meas m;
	m.extra["tput_1w"] = m1.ops / m1.ns * 1e9;
	m.extra["tput_2w"] = m2.ops / m2.ns * 1e9;
	m.extra["ratio_2w_1w"] = m.extra["tput_2w"] / m.extra["tput_1w"];
	m.calls = m2.calls;
	m.counts = m2.counts;
	return m;
}

// Back-to-back knit_call: p50 with 2 workers (AUTO) over p50 with 1,
// unplaced, alternated twice within the part.
Meas hot_call_2v1(int n)
{
	Meas m1, m2;
	run_unplaced([&] {
		for (int k = 0; k < 2; k++) {
			m1.merge(hot_call(n / 2, unplaced(1, KNIT_TOPOLOGY_AUTO)));
			m2.merge(hot_call(n / 2, unplaced(2, KNIT_TOPOLOGY_AUTO)));
		}
	});
	Meas m;
	m.extra["p50_1w"] = median(m1.samples);
	m.extra["p50_2w"] = median(m2.samples);
	m.extra["p50_ratio_2w_1w"] = m.extra["p50_2w"] / std::max(1.0, m.extra["p50_1w"]);
	m.calls = m2.calls;
	m.counts = m2.counts;
	return m;
}

// The process's CPU time (every thread: the pool's workers are threads), ns.
double process_cpu_ns()
{
	timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

// An idle pool just after a burst, as a program that never pins sees it: 2
// workers, every option at its default (AUTO: steal), unplaced; ten
// batches of 1000 no-op calls, then what the process spends while it
// sleeps: its CPU (as a share of one CPU) in the first 10 ms after the last
// reap, where the spin windows end, and over the next `window_ns`, with
// the wake-ups there.
Meas idle_after_burst(uint64_t window_ns)
{
	Meas m;
	run_unplaced([&] {
		knit_pool_t *p = make_pool(unplaced(2, KNIT_TOPOLOGY_AUTO));
		std::vector<uint8_t> seen;
		for (int r = 0; r < 10; r++) {
			for (int i = 0; i < 1000; i++)
				enqueue(p, kNop, 0, (uint64_t)i);
			reap_n(p, 1000, seen, "idle after a burst");
		}
		const double c0 = process_cpu_ns();
		const uint64_t t0 = now_ns();
		sleep_ns(10000000);
		const double c1 = process_cpu_ns();
		const uint64_t t1 = now_ns();
		Snap a = snap(p);
		sleep_ns(window_ns);
		Snap b = snap(p);
		const double c2 = process_cpu_ns();
		const uint64_t t2 = now_ns();
		double wakeups = 0;
		for (uint32_t i = 0; i < b.s.lanes; i++)
			wakeups +=
				(double)(b.s.lane[i].wakes_received - a.s.lane[i].wakes_received +
					 b.s.lane[i].watchdog_expiries -
					 a.s.lane[i].watchdog_expiries);
		m.extra["cpu_pct_first_10ms"] = (c1 - c0) / (double)(t1 - t0) * 100;
		m.extra["cpu_pct_after_10ms"] = (c2 - c1) / (double)(t2 - t1) * 100;
		m.extra["wakeups_per_s_after_10ms"] = wakeups / ((double)(t2 - t1) / 1e9);
		check(b.s.completed == a.s.completed && b.s.pending == 0,
		      "idle after a burst: nothing completes or waits while idle");
		knit_pool_destroy(p);
	});
	return m;
}

// ---- scale: throughput against workers ----------------------------------------------------
// Workers 1 .. CPUs - 1 (at least 2, so a 2-CPU machine shows the step from
// one worker to two), the host on its own CPU, one worker per CPU.
uint32_t scale_max_workers()
{
	return (uint32_t)std::max<size_t>(2, g_place.cpus.size() > 1 ? g_place.cpus.size() - 1 : 1);
}

// One part of the scale case: for each task (no-op, ~1 us of LCG) and each
// worker count, batches of 1000 on steal and on lanes, and oneTBB
// task_group with as many threads (host + workers) when it is built in;
// throughput per configuration, and each one's speed-up over its own
// 1-worker figure.
Meas scale_part(int reps)
{
	const int64_t us = lcg_rounds_per_us();
	Meas m;
	for (int t = 0; t < 2; t++) {
		const char *task = t == 0 ? "nop" : "1us";
		const int64_t rounds = t == 0 ? 0 : us;
		std::map<std::string, double> one;
		for (uint32_t w = 1; w <= scale_max_workers(); w++) {
			for (uint32_t topo :
			     {(uint32_t)KNIT_TOPOLOGY_STEAL, (uint32_t)KNIT_TOPOLOGY_LANES}) {
				const std::string who =
					topo == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
				PoolSpec s;
				s.workers = w;
				s.topology = topo;
				s.spread = true;
				const Meas b = batch(1000, reps, t == 0 ? kNop : kSpin, rounds, s,
						     "scale");
				const double tput = b.ops / b.ns * 1e9;
				const std::string key = std::string(task) + "." + who;
				m.extra["tput." + key + ".w" + std::to_string(w)] = tput;
				if (w == 1)
					one[key] = tput;
				m.extra["speedup." + key + ".w" + std::to_string(w)] =
					tput / one[key];
			}
			Meas tb;
			if (tbb_batch((int)w + 1, 1000, reps, rounds, &tb)) {
				const double tput = tb.ops / tb.ns * 1e9;
				const std::string key = std::string(task) + ".tbb";
				m.extra["tput." + key + ".w" + std::to_string(w)] = tput;
				if (w == 1)
					one[key] = tput;
				m.extra["speedup." + key + ".w" + std::to_string(w)] =
					tput / one[key];
			}
		}
	}
	return m;
}

// mulberry32, the original's seeded generator.
struct Mulberry {
	uint32_t s;
	double next()
	{
		s += 0x6d2b79f5u;
		uint32_t t = s;
		t = (t ^ (t >> 15)) * (1u | t);
		t = (t + ((t ^ (t >> 7)) * (61u | t))) ^ t;
		return (double)(t ^ (t >> 14)) / 4294967296.0;
	}
};

int64_t g_base_rounds = 0; // LCG rounds for ~200 us, calibrated once

int64_t base_rounds()
{
	if (g_base_rounds)
		return g_base_rounds;
	knit_value_t a = i64(200000), r;
	memset(&r, 0, sizeof r);
	std::vector<double> v;
	for (int i = 0; i < 5; i++) {
		t_work(nullptr, &a, &r);
		v.push_back((double)r.i64);
	}
	double ns = median(v);
	g_base_rounds = (int64_t)(200000.0 * 200000.0 / std::max(ns, 1.0));
	return g_base_rounds;
}

// Load shapes (the JavaScript original's benchmark): a few hundred tasks of ~200 us base work,
// flat, random (0.2x..2x) or heavy (10% at 20x), all enqueued at once; the
// makespan against total work (CPU time the tasks took) / CPUs used.
Meas load_shape(const std::string &shape, uint32_t topology, int reps)
{
	const int tasks = g_quick ? 40 : 300;
	const int64_t base = base_rounds();
	Mulberry rng{12345};
	std::vector<int64_t> sizes;
	for (int i = 0; i < tasks; i++) {
		double r = rng.next();
		if (shape == "flat")
			sizes.push_back(base);
		else if (shape == "heavy")
			sizes.push_back(r < 0.1 ? base * 20 : base);
		else
			sizes.push_back(
				std::max<int64_t>(1, (int64_t)((double)base * (0.2 + r * 1.8))));
	}
	PoolSpec spec{2, topology, 0, true};
	knit_pool_t *p = make_pool(spec);
	std::vector<uint8_t> seen;
	for (int i = 0; i < 16; i++) // warm-up
		enqueue(p, kWork, base / 10, (uint64_t)i);
	reap_n(p, 16, seen, "load warm-up");
	const double cpus = std::min(2, g_place.ncpu_online);
	Meas m;
	std::vector<double> ratio, span;
	Snap a = snap(p);
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns();
		for (int i = 0; i < tasks; i++)
			enqueue(p, kWork, sizes[(size_t)i], (uint64_t)i);
		int64_t work = reap_n(p, (uint64_t)tasks, seen, "load shape");
		double ms = (double)(now_ns() - t0);
		span.push_back(ms);
		ratio.push_back(ms / ((double)work / cpus));
	}
	account(m, a, snap(p), (uint64_t)tasks * (uint64_t)reps, "load shape");
	m.extra["makespan_ms"] = median(span) / 1e6;
	m.extra["makespan_vs_bound"] = median(ratio);
	knit_pool_destroy(p);
	return m;
}

// `reps` knit_map()s of `n` items of `task` (argument `arg`) on a pool
// made from spec, after one warm-up map; every item must end with status 0.
// ops counts items.
Meas map_items(int n, int reps, uint32_t task, int64_t arg, const PoolSpec &spec, const char *what)
{
	knit_pool_t *p = make_pool(spec);
	std::vector<knit_value_t> args((size_t)n, i64(arg));
	std::vector<knit_completion_t> out((size_t)n);
	auto one = [&] {
		int rc = knit_map(p, task, args.data(), (size_t)n, out.data(), nullptr);
		check(rc == 0, "%s: knit_map: %s", what, knit_strerror(rc));
		// Every item checked, one check call per map (a call per item
		// would cost the case more than a no-op item does).
		int bad = -1;
		for (int i = 0; i < n; i++)
			if (out[(size_t)i].status != 0 && bad < 0)
				bad = i;
		check(bad < 0, "%s: item %d: %s", what, bad,
		      knit_strerror(bad < 0 ? 0 : out[(size_t)bad].status));
	};
	one(); // warm-up
	Meas m;
	Snap a = snap(p);
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns();
		one();
		m.ns += (double)(now_ns() - t0);
		m.ops += n;
	}
	// A packed map sends chunks of items, one call each: the pool's counts
	// are per call, and the calls must be at most one per item (then
	// enqueued, completed and run must agree). A map whose caller helps
	// (an inline lane) may send none: its caller ran every item.
	const Snap b = snap(p);
	const uint64_t items = (uint64_t)n * (uint64_t)reps;
	const uint64_t calls = b.s.enqueued - a.s.enqueued;
	check(calls <= items && (calls >= (uint64_t)reps || spec.inline_lane != 0),
	      "%s: %llu calls for %llu items", what, (unsigned long long)calls,
	      (unsigned long long)items);
	account(m, a, b, calls, what);
	m.extra["items_per_call"] = calls != 0 ? (double)items / (double)calls : 0;
	knit_pool_destroy(p);
	return m;
}

const MetricSpec kP50{"p50", "ns", Better::Lower, true};
const MetricSpec kP99{"p99", "ns", Better::Lower, false};
const MetricSpec kMax{"max", "ns", Better::Lower, false};
const MetricSpec kMean{"mean", "ns", Better::Lower, false};
const MetricSpec kTput{"tput", "calls/s", Better::Higher, true};
// batch(), batch_many(): ns per call in each phase (phases()).
const MetricSpec kEnqPhase{"enqueue_ns", "ns", Better::Lower, false};
const MetricSpec kReapPhase{"reap_ns", "ns", Better::Lower, false};
MetricSpec per_call(const char *n)
{
	return {std::string(n) + "/call", "/call", Better::Lower, false};
}

} // namespace

int64_t lcg_rounds_per_us()
{
	static int64_t rounds = 0;
	if (rounds)
		return rounds;
	std::vector<double> v;
	for (int i = 0; i < 5; i++) {
		uint64_t c0 = thread_cpu_ns();
		lcg(1000000);
		v.push_back((double)(thread_cpu_ns() - c0));
	}
	rounds = std::max<int64_t>(1, (int64_t)(1000000.0 * 1000.0 / std::max(median(v), 1.0)));
	return rounds;
}

void register_knit()
{
	const std::vector<MetricSpec> lat_counts = {
		per_call("futex_wakes"),   per_call("wakes_sent"),     per_call("parks"),
		per_call("doorbell_arms"), per_call("doorbell_wakes"), per_call("ctxsw"),
		per_call("backlogged")};
	auto with = [&](std::vector<MetricSpec> v) {
		v.insert(v.end(), lat_counts.begin(), lat_counts.end());
		return v;
	};
	add_case({"knit.call.hot", "hot", "knit", "floor.cacheline",
		  with({kP50, kP99, kMax, kMean}), [] { return hot_call(scale(50000, 500)); },
		  "knit_call, 1 worker spinning, pinned apart from the host"});
	add_case({"knit.enqueue_complete.hot", "hot", "knit", "floor.cacheline",
		  with({kP50, kP99, kMean}), [] { return hot_enqueue_complete(scale(50000, 500)); },
		  "knit_enqueue + knit_complete, worker spinning"});
	for (int size : {1, 32, 1000, 10000}) {
		int reps = std::max(1, (g_quick ? 2000 : 400000) / size);
		if (size == 1)
			reps = scale(20000, 200);
		std::string name = "knit.batch" + std::to_string(size);
		std::string cmp = size == 1000 ? comparison("peer.tbb.task_group.batch1000",
							    "peer.spsc_echo.batch1000")
					       : "peer.spsc_echo.batch" + std::to_string(size);
		add_case({name, size == 1000 ? "batch1000" : "batch" + std::to_string(size), "knit",
			  cmp, with({kTput, kEnqPhase, kReapPhase}),
			  [size, reps] { return batch(size, reps, kNop, 0, PoolSpec{}, "batch"); },
			  "batch of " + std::to_string(size) + " no-op calls, 1 worker"});
	}
	// Per-call timing's cost, alternated with the same batch untimed: each
	// call then reads the processor's counter once in its worker (one
	// call's end is the next one's start), the host once per enqueue and
	// per reap, and one info is written per completion; with CPU time also
	// two thread CPU clocks (system calls) per call.
	for (uint32_t f : {(uint32_t)KNIT_POOL_INFO_TIMING, (uint32_t)KNIT_POOL_INFO_CPU}) {
		PoolSpec timed;
		timed.info_flags = f;
		const int reps = (g_quick ? 2000 : 400000) / 1000;
		const bool cpu = f == KNIT_POOL_INFO_CPU;
		add_case(
			{cpu ? "knit.batch1000.timed_cpu" : "knit.batch1000.timed", "batch1000",
			 "knit", "knit.batch1000", with({kTput, kEnqPhase, kReapPhase}),
			 [timed, reps] { return batch(1000, reps, kNop, 0, timed, "batch timed"); },
			 std::string("batch of 1000 no-op calls, 1 worker, ") +
				 (cpu ? "KNIT_POOL_INFO_CPU" : "KNIT_POOL_INFO_TIMING")});
	}
	add_case({"knit.batch1000.many", "batch1000", "knit",
		  comparison("peer.tbb.task_group.batch1000", "peer.spsc_echo.batch1000"),
		  with({kTput, kEnqPhase, kReapPhase}),
		  [] { return batch_many(1000, g_quick ? 2 : 400, kNop, 0, "batch many"); },
		  "batch of 1000 no-op calls through knit_enqueue_many, 1 worker"});
	// knit_map (knit_map(3)): 1000 no-op items on 1 worker, against
	// oneTBB's task_group batch; ~200 ns items on 2 workers against oneTBB's
	// parallel_for at 2 threads; the same map on 2 worker processes
	// against the thread pool's.
	add_case({"knit.map1000", "map", "knit",
		  comparison("peer.tbb.task_group.batch1000", "knit.batch1000"), with({kTput}),
		  [] { return map_items(1000, scale(400, 2), kNop, 0, PoolSpec{}, "map1000"); },
		  "knit_map of 1000 no-op items, 1 worker"});
	{
		PoolSpec inl;
		inl.inline_lane = KNIT_INLINE_LAST;
		add_case({"knit.map1000.inline", "map_inline", "knit",
			  comparison("peer.tbb.task_group.batch1000", "knit.map1000"),
			  with({kTput}),
			  [inl] {
				  return map_items(1000, scale(400, 2), kNop, 0, inl,
						   "map1000 inline");
			  },
			  "knit_map of 1000 no-op items, 1 worker and an inline lane: the caller "
			  "helps, and runs items cheaper than a hand-off itself"});
	}
	{
		PoolSpec two;
		two.workers = 2;
		add_case({"knit.map.200ns.w2", "map_200ns", "knit",
			  comparison("peer.tbb.parallel_for.200ns.t2", ""), with({kTput}),
			  [two] {
				  return map_items(10000, scale(40, 2), kSpin,
						   std::max<int64_t>(1, lcg_rounds_per_us() / 5),
						   two, "map 200ns");
			  },
			  "knit_map of 10000 ~200 ns items, 2 workers"});
		PoolSpec itwo = two;
		itwo.inline_lane = KNIT_INLINE_LAST;
		add_case({"knit.map.200ns.w2.inline", "map_200ns_inline", "knit",
			  comparison("peer.tbb.parallel_for.200ns.t2", "knit.map.200ns.w2"),
			  with({kTput}),
			  [itwo] {
				  return map_items(10000, scale(40, 2), kSpin,
						   std::max<int64_t>(1, lcg_rounds_per_us() / 5),
						   itwo, "map 200ns inline");
			  },
			  "knit_map of 10000 ~200 ns items, 2 workers and an inline lane (the "
			  "caller helps)"});
		PoolSpec ptwo = two;
		ptwo.processes = true;
		add_case({"knit.proc.map.200ns.w2", "proc_map_200ns", "knit", "knit.map.200ns.w2",
			  with({kTput}),
			  [ptwo] {
				  return map_items(10000, scale(40, 2), kSpin,
						   std::max<int64_t>(1, lcg_rounds_per_us() / 5),
						   ptwo, "proc map 200ns");
			  },
			  "knit_map of 10000 ~200 ns items, 2 worker processes"});
	}
	add_case({"knit.batch1000.work", "batch_work", "knit", "", with({kTput}),
		  [] { return batch(1000, scale(200, 2), kWork, 64, PoolSpec{}, "batch work"); },
		  "batch of 1000 small tasks (64 LCG rounds), 1 worker"});
	add_case({"knit.stream", "stream", "knit",
		  comparison("peer.tbb.stream", "peer.spsc_echo.stream"), with({kTput}),
		  [] { return stream(scale(200000, 2000)); },
		  "one thread enqueues continuously, another reaps"});
	add_case({"knit.call.cold", "cold", "knit", "floor.futex_pingpong",
		  with({kP50, kP99, kMean}), [] { return after_gap(scale(1000, 30), 300000); },
		  "knit_call after a 300 us gap (worker parked)"});
	add_case({"knit.call.after_sleep", "first", "knit", "floor.futex_pingpong",
		  with({kP50, kP99}), [] { return after_gap(scale(40, 4), 1); },
		  "first knit_call after the host slept 5-10 ms"});
	add_case({"knit.bytes_1mib", "bytes", "knit", "floor.memcpy_1mib_x2", with({kP50, kP99}),
		  [] { return bytes_echo(scale(200, 5)); }, "knit_call echo of 1 MiB bytes"});
	add_case({"knit.create_first_result",
		  "create",
		  "knit",
		  "floor.thread_create_join",
		  {kP50, kP99, {"destroy_p50", "ns", Better::Lower, false}},
		  [] { return create_first(scale(200, 5)); },
		  "knit_pool_create (1 worker) to the first result; destroy"});
	add_case({"knit.idle",
		  "idle",
		  "knit",
		  "",
		  {{"wakeups_per_s", "/s", Better::Lower, false},
		   {"cpu_pct", "%", Better::Lower, false},
		   {"ctxsw_per_s", "/s", Better::Lower, false}},
		  [] { return idle(g_quick ? 200000000ull : 1000000000ull); },
		  "an idle pool over 2 s (two parts of 1 s)"});
	add_case({"knit.idle.after_burst",
		  "idle_burst",
		  "knit",
		  "",
		  {{"cpu_pct_first_10ms", "%", Better::Lower, false},
		   {"cpu_pct_after_10ms", "%", Better::Lower, false},
		   {"wakeups_per_s_after_10ms", "/s", Better::Lower, false}},
		  [] { return idle_after_burst(g_quick ? 100000000ull : 1000000000ull); },
		  "2 workers (defaults, unplaced) just after ten batches of 1000 no-op calls: the "
		  "process's CPU in the first 10 ms and the next 1 s, wake-ups in that second"});
	// Process pools (knit-worker over knit-bench-tasks.so), placed as the
	// thread pools are: against the same cases, like for like.
	PoolSpec proc1;
	proc1.processes = true;
	PoolSpec proc2 = proc1;
	proc2.workers = 2;
	add_case({"knit.proc.call.hot", "proc_hot", "knit", "knit.call.hot",
		  with({kP50, kP99, kMean}), [proc1] { return hot_call(scale(50000, 500), proc1); },
		  "knit_call, 1 worker process spinning, pinned apart from the host"});
	// Alternated with the thread pool's cold call, not with a floor: what
	// a cold call costs swings by 2x from minute to minute on a shared VM
	// (the wake of a vCPU idle for the gap), more than any floor that does
	// not idle as long tracks, so the process/thread ratio is only honest
	// from parts run side by side.
	add_case({"knit.proc.call.cold", "proc_cold", "knit", "knit.call.cold",
		  with({kP50, kP99, kMean}),
		  [proc1] { return after_gap(scale(1000, 30), 300000, proc1); },
		  "knit_call after a 300 us gap, 1 worker process (parked)"});
	add_case({"knit.proc.batch1000", "proc_batch", "knit", "knit.batch1000", with({kTput}),
		  [proc1] { return batch(1000, scale(400, 2), kNop, 0, proc1, "proc batch"); },
		  "batch of 1000 no-op calls, 1 worker process"});
	// Recycling (knit_pool_create(3), "Worker recycling"): what a recycle
	// every 100 calls costs a batch, and what recycles by age do to a
	// knit_call stream's tail, each alternated with the same case without
	// recycling. Every rep of the batch recycles ~10 workers (each boots a
	// knit-worker: the boots run beside the calls, on the machine's CPUs).
	PoolSpec proc1_r100 = proc1;
	proc1_r100.recycle_calls = 100;
	add_case({"knit.proc.batch1000.recycle100", "proc_batch", "knit", "knit.proc.batch1000",
		  with({kTput, per_call("recycles"), per_call("spawns")}),
		  [proc1_r100] {
			  return batch(1000, scale(100, 2), kNop, 0, proc1_r100,
				       "proc batch, recycle every 100");
		  },
		  "batch of 1000 no-op calls, 1 worker process recycled every 100 calls"});
	// The same recycle mark where a recycle can keep to it: calls of
	// ~200 us, so 100 of them (20 ms) outlast a boot (a few ms) and each
	// batch recycles ~10 workers, one per ~100 calls (the recycles count).
	// At no-op calls the mark comes back long before the successor booted:
	// the case above recycles as fast as workers boot, and each recycle
	// costs ~1.5-2 ms of the two CPUs' time against ~10 us of calls
	// (tools/knit-bench/README.md, "What a recycle costs").
	const int long_us = scale(200, 2);
	add_case({"knit.proc.batch1000.long", "proc_batch_long", "knit", "", with({kTput}),
		  [proc1, long_us] {
			  return batch(1000, scale(3, 1), kSpin, long_us * lcg_rounds_per_us(),
				       proc1, "proc batch of 200 us calls");
		  },
		  "batch of 1000 calls of ~200 us, 1 worker process"});
	add_case({"knit.proc.batch1000.long.recycle100", "proc_batch_long", "knit",
		  "knit.proc.batch1000.long",
		  with({kTput, per_call("recycles"), per_call("spawns")}),
		  [proc1_r100, long_us] {
			  return batch(1000, scale(3, 1), kSpin, long_us * lcg_rounds_per_us(),
				       proc1_r100, "proc batch of 200 us calls, recycle every 100");
		  },
		  "batch of 1000 calls of ~200 us, 1 worker process recycled every 100 calls"});
	PoolSpec proc1_age = proc1;
	proc1_age.recycle_age_ms = 20;
	add_case({"knit.proc.call.hot.recycle_age", "proc_hot", "knit", "knit.proc.call.hot",
		  with({kP50, kP99, kMean}),
		  [proc1_age] { return hot_call(scale(50000, 500), proc1_age); },
		  "knit_call stream, 1 worker process recycled every 20 ms (hitless: its "
		  "successor boots first)"});
	add_case({"knit.proc.create_first_result",
		  "proc_create",
		  "knit",
		  "knit.create_first_result",
		  {kP50,
		   kP99,
		   {"destroy_p50", "ns", Better::Lower, false},
		   {"worker_cpu_us", "us", Better::Lower, false}},
		  [proc2] { return create_first(scale(50, 3), proc2); },
		  "knit_pool_create (2 worker processes) to the first result; destroy"});
	// The same process cases in the sandbox (seccomp, Landlock), each against its
	// unsandboxed twin (the ratio the sandbox's targets are about).
	PoolSpec sbx1 = proc1, sbx2 = proc2;
	sbx1.sandbox = sbx2.sandbox = true;
	add_case({"knit.proc.sandbox.call.hot", "sbx_hot", "knit", "knit.proc.call.hot",
		  with({kP50, kP99, kMean}), [sbx1] { return hot_call(scale(50000, 500), sbx1); },
		  "knit_call, 1 sandboxed worker process (seccomp, Landlock) spinning"});
	add_case({"knit.proc.sandbox.call.cold", "sbx_cold", "knit", "knit.proc.call.cold",
		  with({kP50, kP99, kMean}),
		  [sbx1] { return after_gap(scale(1000, 30), 300000, sbx1); },
		  "knit_call after a 300 us gap, 1 sandboxed worker process (parked)"});
	add_case({"knit.proc.sandbox.batch1000", "sbx_batch", "knit", "knit.proc.batch1000",
		  with({kTput}),
		  [sbx1] { return batch(1000, scale(400, 2), kNop, 0, sbx1, "sandboxed batch"); },
		  "batch of 1000 no-op calls, 1 sandboxed worker process"});
	add_case({"knit.proc.sandbox.create_first_result",
		  "sbx_create",
		  "knit",
		  "knit.proc.create_first_result",
		  {kP50, kP99, {"destroy_p50", "ns", Better::Lower, false}},
		  [sbx2] { return create_first(scale(50, 3), sbx2); },
		  "knit_pool_create (2 sandboxed worker processes) to the first result; destroy"});
	for (uint32_t topo : {(uint32_t)KNIT_TOPOLOGY_STEAL, (uint32_t)KNIT_TOPOLOGY_LANES}) {
		std::string t = topo == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
		add_case({"knit.workers2v1." + t, "2v1", "knit", "",
			  with({{"ratio_2w_1w", "x", Better::Higher, false},
				{"tput_2w", "calls/s", Better::Higher, false},
				{"tput_1w", "calls/s", Better::Higher, false}}),
			  [topo] { return two_vs_one(topo, scale(20, 2)); },
			  "batch of 1000 ~2 us tasks: 2 workers / 1 worker (" + t + ")"});
	}
	for (uint32_t topo : {(uint32_t)KNIT_TOPOLOGY_AUTO, (uint32_t)KNIT_TOPOLOGY_LANES}) {
		std::string t = topo == KNIT_TOPOLOGY_AUTO ? "auto" : "lanes";
		add_case({"knit.batch1000.2v1." + t, "2v1_nop", "knit", "",
			  with({{"ratio_2w_1w", "x", Better::Higher, false},
				{"tput_2w", "calls/s", Better::Higher, false},
				{"tput_1w", "calls/s", Better::Higher, false}}),
			  [topo] { return two_vs_one_nop(topo, scale(400, 4)); },
			  "batch of 1000 no-op calls, unplaced, defaults: 2 workers (" + t +
				  ") / 1 worker"});
	}
	add_case({"knit.call.hot.2v1", "2v1_hot", "knit", "",
		  with({{"p50_ratio_2w_1w", "x", Better::Lower, false},
			{"p50_2w", "ns", Better::Lower, false},
			{"p50_1w", "ns", Better::Lower, false}}),
		  [] { return hot_call_2v1(scale(20000, 400)); },
		  "back-to-back knit_call, unplaced, defaults: p50 2 workers / 1 worker"});
	{
		std::vector<MetricSpec> ms;
		for (const char *task : {"nop", "1us"})
			for (const char *who : {"steal", "lanes", "tbb"}) {
				if (std::string(who) == "tbb" &&
				    comparison("peer.tbb.task_group.batch1000", "") == "")
					continue;
				for (uint32_t w = 1; w <= scale_max_workers(); w++) {
					const std::string k = std::string(task) + "." + who + ".w" +
							      std::to_string(w);
					ms.push_back(
						{"tput." + k, "calls/s", Better::Higher, false});
					ms.push_back({"speedup." + k, "x", Better::Higher, false});
				}
			}
		add_case({"knit.scale", "scale", "knit", "", ms,
			  [] { return scale_part(scale(100, 2)); },
			  "batches of 1000 no-op and ~1 us calls, 1.." +
				  std::to_string(scale_max_workers()) +
				  " workers (one per CPU, host alone), steal and lanes; oneTBB "
				  "task_group with as many threads"});
	}
	for (const char *shape : {"flat", "random", "heavy"})
		for (uint32_t topo :
		     {(uint32_t)KNIT_TOPOLOGY_STEAL, (uint32_t)KNIT_TOPOLOGY_LANES}) {
			std::string t = topo == KNIT_TOPOLOGY_STEAL ? "steal" : "lanes";
			std::string s = shape;
			add_case({"knit.load." + s + "." + t, "load", "knit", "",
				  with({{"makespan_vs_bound", "x", Better::Lower, false},
					{"makespan_ms", "ms", Better::Lower, false}}),
				  [s, topo] { return load_shape(s, topo, scale(3, 1)); },
				  "load shape " + s +
					  " (~200 us tasks: flat, 0.2-2x, or 10% at 20x), 2 "
					  "workers, " +
					  t + ": makespan / (work / CPUs)"});
		}
}

} // namespace kb
