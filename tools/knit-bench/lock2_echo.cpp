// SPDX-License-Identifier: MIT
// tools/knit-bench/lock2_echo.cpp - the floor of libknitting's own protocol:
// a host and one worker exchange scalar frames through one lane block's
// request lock and return lock (src/lock2.h, src/layout.h) and nothing else:
// no tickets, mutex, dispatcher, backlog or completion queue. What a batch
// of no-op calls can reach on this machine before the runtime around the
// locks costs anything: the ceiling of knit.batch1000.
//
// The code is the runtime's own (LockProducer / LockConsumer over a region
// made by region_create, attached as src/pool.cpp attaches a lane), linked
// from the archive the white-box tests link (build/lib/libknitting-test.a);
// the shared library hides these classes. So the floor measures the
// protocol as this build of knit-bench was linked, whatever lib dir a run
// points libknitting.so at.
#include "tools/knit-bench/bench.h"

#include "src/layout.h"
#include "src/lock2.h"
#include "src/region.h"

namespace kb {

namespace {

using knit::detail::ConsumerLimits;
using knit::detail::FrameHead;
using knit::detail::LockConsumer;
using knit::detail::LockProducer;
using knit::detail::Region;

int scale(int full, int quick) { return g_quick ? quick : full; }

// As a thread pool with default options sizes a lane's arenas
// (src/options.cpp, src/pool.cpp: payload_max_bytes 64 MiB, a call's
// payload at most an eighth of it). Scalar frames never touch them: only
// the address space is reserved, as in the pool.
constexpr uint64_t kArenaCap = 64ull << 20;
constexpr uint64_t kPerCallMax = kArenaCap / 8;
// Tickets: the runtime's default max_pending (65536) bounds ticket indexes;
// frame i carries ticket (i - 1) mod 65536 and the value i.
constexpr uint32_t kTickets = 65536;
// Both sides publish every 8 frames (a quarter of the lanes) as well as at
// the end of a round, so the other side starts on the first frames while
// this one writes the rest. Publishing a whole round (32 lanes) at once
// makes the two sides take turns: measured here at 0.65-0.7x the
// throughput of publishing every 8 (fast mode, 2 vCPUs); every 4 or 16
// measured no better than 8.
constexpr uint32_t kPublishEvery = 8;

inline FrameHead request_head(uint64_t i, uint32_t gen)
{
	FrameHead h{};
	h.ticket = (uint32_t)((i - 1) % kTickets);
	h.generation = gen;
	return h;
}
inline knit_value_t i64_value(int64_t v)
{
	knit_value_t x{};
	x.type = KNIT_VALUE_I64;
	x.i64 = v;
	return x;
}

// One lane block and its four endpoints. The host's two and the worker's two
// sit on cache lines of their own (each endpoint's private state is written
// by one thread only).
struct Lock2Echo {
	struct alignas(128) HostSide {
		LockProducer req; // requests: host -> worker
		LockConsumer ret; // results: worker -> host
	};
	struct alignas(128) WorkerSide {
		LockConsumer req;
		LockProducer ret;
	};
	Region region{nullptr, 0, -1};
	HostSide host;
	WorkerSide worker;
	alignas(128) std::atomic<bool> stop{false};
	std::atomic<uint64_t> bad_requests{0}; // worker: frames that did not decode
	std::thread thread;
	bool ok = false;

	Lock2Echo()
	{
		using namespace knit::detail;
		// Zero-filled memory is a valid initial lane block (layout.h); the
		// thread pool's kind of mapping (src/pool.cpp).
		if (region_create(RegionKind::kAnonymous, lane_block_bytes(kArenaCap, kArenaCap),
				  nullptr, &region) != 0)
			return;
		uint8_t *block = region.base;
		uint8_t *req_lock = block + kLaneOffReqLock;
		uint8_t *ret_lock = block + kLaneOffRetLock;
		const ArenaShared req_sh =
			lock_arena_shared(req_lock, block + lane_req_arena_offset(), kArenaCap);
		const ArenaShared ret_sh = lock_arena_shared(
			ret_lock, block + lane_ret_arena_offset(kArenaCap), kArenaCap);
		// Task 0 only, no request flags, tickets below kTickets.
		const ConsumerLimits limits = {1, kTickets, 0};
		// All four attached here, before the worker thread exists: its
		// creation orders them before the worker's first use of its two.
		if (host.req.attach(req_lock, req_sh, kPerCallMax) != 0 ||
		    worker.req.attach(req_lock, req_sh, limits) != 0 ||
		    worker.ret.attach(ret_lock, ret_sh, kPerCallMax) != 0 ||
		    host.ret.attach(ret_lock, ret_sh, limits) != 0)
			return;
		ok = true;
		thread = pinned_thread(g_place.worker, [this] { run_worker(); });
	}
	~Lock2Echo()
	{
		stop_worker();
		knit::detail::region_destroy(&region);
	}
	// Stop and join the worker; returns the requests it could not decode.
	uint64_t stop_worker()
	{
		stop.store(true, std::memory_order_relaxed);
		if (thread.joinable())
			thread.join();
		return bad_requests.load(std::memory_order_relaxed);
	}

	// The worker: take every pending request of one snapshot, stage its
	// echo (status 0, the same value); every kPublishEvery frames and at
	// the end of the snapshot, retire the requests taken (one store of B)
	// and publish the results staged (one store of A) - retire first, so
	// the request lanes are free by the time the host sees the results.
	// Every wait ends when the host moves or stop is set.
	void run_worker()
	{
		LockConsumer &rq = worker.req;
		LockProducer &rs = worker.ret;
		uint64_t bad = 0;
		uint32_t unpublished = 0;
		while (!stop.load(std::memory_order_relaxed)) {
			uint32_t snap = rq.pending();
			if (snap == 0) {
				relax();
				continue;
			}
			rq.prefetch(snap);
			int lane;
			while ((lane = rq.next_lane(&snap)) >= 0) {
				FrameHead h;
				knit_value_t v;
				const int rc = rq.decode((uint32_t)lane, &h, &v);
				rq.release((uint32_t)lane);
				FrameHead r{};
				r.task = h.task;
				r.ticket = h.ticket;
				r.generation = h.generation;
				knit_value_t out = i64_value(v.i64);
				if (rc != 0 || v.type != KNIT_VALUE_I64) {
					bad++;
					r.status = -KNIT_EPROTO;
					out = knit_value_t{};
				}
				// No free result lane: publish what is staged, wait for
				// the host to take results.
				while (rs.stage(r, out) == -KNIT_EAGAIN) {
					rs.flush();
					if (stop.load(std::memory_order_relaxed)) {
						bad_requests.store(bad, std::memory_order_relaxed);
						return;
					}
					relax();
				}
				if (++unpublished == kPublishEvery) {
					rq.retire_taken();
					rs.flush();
					unpublished = 0;
				}
			}
			rq.retire_taken();
			rs.flush();
			unpublished = 0;
		}
		bad_requests.store(bad, std::memory_order_relaxed);
	}

	// Host: take every pending result; returns how many. `sum` adds their
	// values, `bad` counts results that are not the echo of their request.
	uint32_t reap(uint32_t gen, uint64_t *sum, uint64_t *bad)
	{
		LockConsumer &rs = host.ret;
		uint32_t snap = rs.pending();
		if (snap == 0)
			return 0;
		rs.prefetch(snap); // as the runtime's reap (src/dispatch.cpp)
		uint32_t n = 0;
		int lane;
		while ((lane = rs.next_lane(&snap)) >= 0) {
			FrameHead h;
			knit_value_t v;
			const int rc = rs.decode((uint32_t)lane, &h, &v);
			if (rc != 0 || h.status != 0 || h.generation != gen ||
			    (uint32_t)((uint64_t)(v.i64 - 1) % kTickets) != h.ticket)
				(*bad)++;
			*sum += (uint64_t)v.i64;
			rs.release((uint32_t)lane);
			n++;
		}
		rs.retire_taken();
		return n;
	}
};

// Throughput: `batch` frames staged into whatever request lanes are free
// (published every kPublishEvery frames and at the end of the round), then
// every result there is taken; repeated until all are answered.
Meas lock2_batch(int batch, int reps)
{
	Lock2Echo e;
	Meas m;
	check(e.ok, "lock2 echo: lane block mapped and attached");
	if (!e.ok)
		return m;
	uint64_t bad = 0;
	for (int r = 0; r < reps; r++) {
		const uint32_t gen = (uint32_t)r + 1;
		uint64_t t0 = now_ns(), sum = 0;
		int sent = 0, got = 0;
		bool failed = false;
		while (got < batch && !failed) {
			while (sent < batch) {
				const int rc = e.host.req.stage(
					request_head((uint64_t)sent + 1, gen), i64_value(sent + 1));
				if (rc < 0) {
					failed = rc != -KNIT_EAGAIN; // no free lane: after the reap
					break;
				}
				if (++sent % kPublishEvery == 0)
					e.host.req.flush();
			}
			e.host.req.flush();
			const uint32_t n = e.reap(gen, &sum, &bad);
			if (n == 0)
				relax();
			got += (int)n;
		}
		m.ns += (double)(now_ns() - t0);
		m.ops += batch;
		check(!failed, "lock2 echo batch: stage failed other than with no free lane");
		if (failed)
			break;
		check(sum == (uint64_t)batch * (batch + 1) / 2,
		      "lock2 echo batch: every call answered once");
	}
	check(bad == 0, "lock2 echo batch: %llu results not the echo of their request",
	      (unsigned long long)bad);
	check(e.stop_worker() == 0, "lock2 echo batch: every request decoded");
	return m;
}

const MetricSpec kTput{"tput", "calls/s", Better::Higher, true};

} // namespace

void register_protocol_floors()
{
	// Alternated with what knit.batch1000 is compared with, and shown
	// beside the best peer (the SPSC echo). No stream floor: a stream's
	// producer and reaper share the host CPU, and 32 lanes let the
	// producer run only 32 frames ahead before the reaper must get the
	// CPU, where knit.stream's backlog lets it run on. Such a case (tried)
	// measured 0.5-1.3x knit.stream: no ceiling of it.
	add_case({"floor.lock2_echo.batch1000",
		  "batch1000",
		  "floor",
		  comparison("peer.tbb.task_group.batch1000", "peer.spsc_echo.batch1000"),
		  {kTput},
		  [] { return lock2_batch(1000, scale(200, 3)); },
		  "lock2 request + return locks alone, batches of 1000 scalar frames"});
}

} // namespace kb
