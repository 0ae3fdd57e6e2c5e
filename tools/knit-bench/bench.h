// SPDX-License-Identifier: MIT
// tools/knit-bench/bench.h - the measuring kit shared by knit-bench's cases:
// clocks, pinning, the mode probe, measurements and their statistics.
//
// knit-bench is a tool, not the runtime: it is plain C++ with the standard
// library and links the peers it was built with.
#ifndef KNIT_BENCH_H
#define KNIT_BENCH_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace kb {

inline uint64_t now_ns()
{
	timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

inline uint64_t thread_cpu_ns()
{
	timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

// True when host and workers share one CPU: a spin-wait must then give the
// CPU away, or each wait lasts a scheduler slice.
extern bool g_yield;

inline void relax()
{
	if (g_yield) {
		sched_yield();
		return;
	}
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

inline void sleep_ns(uint64_t ns)
{
	timespec t{(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &t, &t) != 0) {
	}
}

inline long futex(uint32_t *w, int op, uint32_t v)
{
	return syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, v, nullptr, nullptr, 0);
}

// The CPUs the host and the workers (and peer threads) run on; -1 = unpinned.
struct Placement {
	int host = -1, worker = -1;
	int ncpu_online = 1;
	std::vector<int> cpus; // every CPU the process may run on, ascending
};
extern Placement g_place;
extern bool g_quick;

inline bool pin_thread(pthread_t t, int cpu)
{
	if (cpu < 0)
		return true;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(t, sizeof s, &s) == 0;
}
inline bool pin_self(int cpu) { return pin_thread(pthread_self(), cpu); }

// Run fn on a thread that may use every CPU of g_place.cpus (knit-bench's
// own host thread is pinned), and wait for it: what a program that never
// pins anything sees. Threads fn creates inherit that mask.
inline void run_unplaced(const std::function<void()> &fn)
{
	std::thread t([&fn] {
		cpu_set_t s;
		CPU_ZERO(&s);
		for (int c : g_place.cpus)
			CPU_SET(c, &s);
		pthread_setaffinity_np(pthread_self(), sizeof s, &s);
		fn();
	});
	t.join();
}

// `rounds` steps of an LCG: a task body of a known length (calibrate with
// lcg_rounds_per_us).
inline uint32_t lcg(int64_t rounds)
{
	uint32_t x = 1;
	for (int64_t i = 0; i < rounds; i++)
		x = x * 1664525u + 1013904223u;
	__asm__ __volatile__("" ::"r"(x));
	return x;
}
// LCG rounds that take about 1 us of CPU on this machine (measured once).
int64_t lcg_rounds_per_us();

// A thread pinned to `cpu` from its first instruction of `fn` on.
inline std::thread pinned_thread(int cpu, std::function<void()> fn)
{
	return std::thread([cpu, fn = std::move(fn)] {
		pin_self(cpu);
		fn();
	});
}

// What one measurement produced. Latency cases fill samples (ns per call);
// throughput cases fill ops and ns; anything else goes into extra.
struct Meas {
	std::vector<double> samples;
	double ops = 0, ns = 0;
	std::map<std::string, double> extra;
	uint64_t calls = 0;                   // calls counted for the per-call counters
	std::map<std::string, double> counts; // summed raw counts (divided by calls later)
	std::vector<double> modes;            // mode probes (ns) taken before each part
	void merge(const Meas &o)
	{
		samples.insert(samples.end(), o.samples.begin(), o.samples.end());
		ops += o.ops;
		ns += o.ns;
		for (auto &kv : o.extra)
			extra[kv.first] = extra.count(kv.first) ? (extra[kv.first] + kv.second) / 2
								: kv.second;
		calls += o.calls;
		for (auto &kv : o.counts)
			counts[kv.first] += kv.second;
		modes.insert(modes.end(), o.modes.begin(), o.modes.end());
	}
};

inline double quantile(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = (size_t)(q * (double)(v.size() - 1) + 0.5);
	return v[std::min(i, v.size() - 1)];
}
inline double median(const std::vector<double> &v) { return quantile(v, 0.5); }

// oneTBB at `threads` threads (the caller's included: an arena of that
// many slots): `reps` task_group batches of `batch` tasks of lcg(rounds)
// (0 = no-op). False when this build has no oneTBB (*out untouched).
bool tbb_batch(int threads, int batch, int reps, int64_t rounds, Meas *out);

// Metric values of a measurement by name: p50, p99, max, mean (ns) when it
// has samples; tput (calls/s) when it has ops; every extra; and every count
// per call (name + "/call").
std::map<std::string, double> metrics_of(const Meas &m);

// Context switches of the whole process so far (voluntary + involuntary).
inline double ctx_switches()
{
	rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_nvcsw + r.ru_nivcsw);
}

// The cache-line mode probe: median round trip (ns) of a short ping-pong
// between the host CPU and the worker CPU.
double mode_probe();
// The machine kind switches between a fast (~100 ns) and a slow (~500 ns)
// cache-line round trip; anything above this counts as the slow mode.
inline constexpr double kSlowModeNs = 250;

// Count failures of the --quick checks (counts, never times).
void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern int g_check_failures;

// Case registry.
enum class Better { Lower, Higher };
struct MetricSpec {
	std::string name; // key into metrics_of()
	std::string unit; // "ns", "calls/s", "x", "/s", "%", "/call"
	Better better;
	bool compared; // compared with the case's floor and peers
};
struct Case {
	std::string name;
	std::string group; // peers of a libknitting case share its group
	std::string kind;  // "floor", "peer", "knit"
	std::string floor; // the case it alternates with (its comparison), or ""
	std::vector<MetricSpec> metrics;
	std::function<Meas()> run; // one part (called twice per pass)
	std::string note;
};
void add_case(Case c);
std::vector<Case> &cases();

// The comparison a case alternates with when its first choice may be left
// out of this build: `preferred` when that case is registered, else
// `fallback`. Only for cases registered after the peers.
std::string comparison(const std::string &preferred, const std::string &fallback);

// Peers left out of this build and why (printed in the header).
std::vector<std::string> &left_out();

// Case registration functions (each file adds its own).
void register_floors();
void register_peers();
void register_knit();
// The protocol floors (lock2_echo.cpp): registered after the peers, whose
// cases they alternate with.
void register_protocol_floors();

// The picture (plot.cpp): one row per libknitting case and metric, as the
// table and the --json file have it.
struct PlotRow {
	std::string cs, metric, unit, floor_name, peer_name;
	double value = 0, ratio = 0, peer_ratio = 0; // NAN where there is none
	bool lower_better = true;
};
struct PlotInfo {
	std::string title;  // two lines: what, and on what machine
	std::string source; // where the rows came from, for messages
};
// Draw `rows` into the PNG `png` through gnuplot (its output captured).
// 0, or -1 with the reason printed on stderr.
int write_plot(const std::string &png, const std::vector<PlotRow> &rows, const PlotInfo &info);
// --plot-from: the same picture from a saved --json file.
int plot_from_json(const std::string &json, const std::string &png);

} // namespace kb

#endif
