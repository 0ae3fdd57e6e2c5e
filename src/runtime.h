// SPDX-License-Identifier: MIT
// src/runtime.h - the runtime's shared types behind the C ABI: the pool
// record (Pool, knit_pool), the host-side call records and their tables, the
// region layout and the constants every room uses, plus the entry points of
// the rooms that have no header of their own yet: src/options.cpp (option
// resolution), src/dispatch.cpp (the host dispatcher: admission, placement,
// the backlog, deadlines, the waiting ladder), src/trim.cpp (arena
// give-back) and src/worker.cpp (the worker loop). It is named for what it
// holds; src/pool.cpp (create, stop, destroy, stats: the top floor) defines
// only ABI entries and needs no header. The floors of every module, and the
// check that keeps them (tests/layering.sh), are in src/README.md.
//
// Topology (per-lane, KNIT_TOPOLOGY_LANES): W worker lanes, each a worker (a
// thread or a process, src/workers.h) with
// a request lock (host produces, worker consumes) and a return lock (worker
// produces, host consumes) in one lane block of the pool's shared region, plus
// an optional inline lane run by whichever host thread runs a dispatcher pass.
// Worker lane w has index w; the inline lane has index W (it is last in the
// stats array); KNIT_INLINE_FIRST/LAST only decide where it sits in the
// balancer's rotation.
//
// Topology KNIT_TOPOLOGY_STEAL (src/steal.h): the same worker lanes, but the
// host publishes every call into ONE shared submit lock (Pool::steal, in the
// steal area after the lane blocks) that the workers claim from by region;
// each worker still answers on its own lane's return lock, and the lanes'
// request locks stay unused. Calls record lane = kStealLane until the host
// sees which worker claimed them (steal_track), then that worker's index.
//
// Host concurrency (any number of host threads):
//  - the DISPATCHER is a try-lock (never waited for). Its holder owns every
//    request-lock producer, every return-lock consumer, the dequeue side of
//    the backlog, the private ordered backlog list, the inline FIFO, the
//    per-lane in-flight counts and the balancer state. Whoever releases it
//    re-checks the backlog afterwards (unlock_and_recheck), so a call pushed
//    by a thread that failed the try-lock is never stranded.
//  - the BACKLOG is liburcu's wait-free concurrent queue (multi-producer),
//    bounded by max_pending through an atomic counter.
//  - `mu` (a mutex, short critical sections only, never held across a task or
//    a wait) guards call-record state: completion, holds, the completion
//    queue, the ticket free list, the deadline heap and abort-bit allocation.
//
// Shared region layout (offsets from the region base; lane blocks per
// src/layout.h):
//   0                    doorbell sequence (u32, own 128-byte block): the
//                        futex every waiting host thread sleeps on; workers
//                        bump it when they ring, host threads on host events
//   128                  doorbell armed flag (u32, own block)
//   256 + 256*i          lane i extension: [0,128) running stamp (seqlock:
//                        u32 seq, u32 ticket, u32 generation, u32 pad, u64
//                        start ns) written by the worker, read by the host
//                        (hard timeout), and at 32 (process workers, lanes
//                        topology) the started mask: u32, bit s = the frame
//                        in request slot s was started and is not retired
//                        yet (kLaneExtOffStarted), at 36 the line request it
//                        took last (u32, kLaneExtOffLineTaken), at 40
//                        (process workers, steal topology) the call it
//                        started last (u64, kLaneExtOffStealStarted);
//                        [128,256) worker counters
//                        (u64 x 16, single writer: the worker; relaxed)
//   line_area_off(nlanes) worker lanes' synchronous call lines (src/syncline.h):
//                        kLineBytes per worker lane
//   abort_off            abort bitmap: ceil(abort_capacity/32) u32 words
//   spill_off + i*sstride process pools only: worker lane i's line spill slot
//                        (line_spill_off / line_spill_stride, src/syncline.h)
//   lanes_off + i*stride lane block i (lane_block_bytes(req_cap, ret_cap));
//                        an isolated process pool adds the lane's tail
//                        (its extension, line and spill slot: lane_tail_bytes)
//                        to its stride, and leaves the header's unused
//   steal_off            steal topology only: steal control block, submit
//                        lock and its arena (steal_area_bytes(cap))
#ifndef KNIT_SRC_RUNTIME_H
#define KNIT_SRC_RUNTIME_H

#include "src/common.h"

#include <pthread.h>
#include <urcu/wfcqueue.h>

#include "knitting.h"
#include "src/layout.h"
#include "src/lock2.h"
#include "src/region.h"
#include "src/steal.h"

namespace knit::detail {

struct Pool;
struct Lane;

// ---- constants ------------------------------------------------------------------
inline constexpr uint32_t kLaneInflightMax = kLanes;   // published-not-reaped calls per lane
inline constexpr uint32_t kWorkerBatch = 32;           // tasks run per worker pass (results are
						       // published early, kResultFlushTasks
						       // and kResultFlushNs)
inline constexpr uint32_t kTicketChunk = 256;          // call records allocated together
inline constexpr uint32_t kGenLast = 0xFFFFFFFFu;      // a record's last generation (then retired)
inline constexpr uint32_t kRetireAllowance = 1u << 20; // ticket indexes beyond the live bound
inline constexpr uint32_t kTicketIndexMax = 0xFFFFFF00u;      // ticket indexes stay below this
inline constexpr uint32_t kMaxAbortCapacity = (1u << 24) - 2; // abort id + 1 fits 24 flag bits
inline constexpr uint32_t kMaxPendingLimit = 1u << 28;
inline constexpr uint32_t kReqFlagsMask = 0x00FFFFFFu; // request flags: abort id + 1 (0 = none)
// Request and result flags, stealing: the call's sending (Call::resends,
// < 256) above the abort id; a worker echoes it in the result's flags, and
// a result counts only for the sending it names (src/lane.cpp handle_result).
inline constexpr uint32_t kFrameAttemptShift = 24;
inline constexpr uint32_t kFrameAttemptMask = 0xFF000000u;
inline constexpr int64_t kHostSpinNs = 20 * 1000;         // host spin per wait before arming
inline constexpr int64_t kHostWakeSpinMaxNs = 200 * 1000; // ... after a wake it sent (spin.h)
inline constexpr int64_t kResultFlushNs = 50 * 1000;      // worker: publish early after this long
inline constexpr uint32_t kResultFlushTasks = 16;         // ... or after this many tasks (even)

// now + timeout_ns (timeout_ns >= 0) as an absolute CLOCK_MONOTONIC
// deadline, or `none` when the sum would not fit an int64_t: a deadline past
// the representable range means no deadline (and never signed overflow).
inline int64_t deadline_after(int64_t now, int64_t timeout_ns, int64_t none)
{
	return timeout_ns > INT64_MAX - now ? none : now + timeout_ns;
}

// Pool header in the region.
inline constexpr uint64_t kPoolOffDoorbellSeq = 0;
inline constexpr uint64_t kPoolOffDoorbellArmed = kBlock;
inline constexpr uint64_t kPoolOffLaneExt = 2 * kBlock;
inline constexpr uint64_t kLaneExtBytes = 2 * kBlock;
// The started mask in a lane extension's first block (after the stamp).
inline constexpr uint64_t kLaneExtOffStarted = 32;
// The line request the lane's worker took last (u32 sequence, stored
// before it runs the request; src/syncline.h S12).
inline constexpr uint64_t kLaneExtOffLineTaken = 36;
// Steal topology, process workers: the call the worker started last (u64
// ticket_pack(generation, index), stored before it runs the call and never
// cleared; src/worker.cpp), so the host can tell, after the worker died,
// which of the calls it had claimed it may have started (src/lane.cpp
// lane_lost).
inline constexpr uint64_t kLaneExtOffStealStarted = 40;

// An isolated process pool (src/proc.h, "isolation") keeps every word a
// worker writes in pages of its own: a lane's extension, line and line
// spill slot follow its lane block, in its stride ("the lane's tail"):
//   lane_block_bytes(cap, cap)   extension (kLaneExtBytes)
//   + kLaneExtBytes              line (kLineBytes, src/syncline.h)
//   + kLaneExtBytes + kLineBytes spill slot (line_spill_stride)
// and the pool header's extensions, lines and spill slots stay unused.
// The tail's size: lane_tail_bytes(spill_stride), 4096-aligned.
inline constexpr uint64_t lane_tail_bytes(uint64_t spill_stride)
{
	return align_up(kLaneExtBytes + 2 * kBlock + spill_stride, kArenaAlign);
}

// Worker counters (u64 indexes in the lane extension's second block).
enum WorkerCounter : uint32_t {
	kWcCalls = 0,
	kWcParks,
	kWcWakesReceived,
	kWcWatchdog,
	kWcSpins,
	kWcDoorbellRings,
	kWcSpurious,
	kWcStealClaims,    // steal topology: claims, one call or more each (StealConsumer::claims)
	kWcStealConflicts, // steal topology: withdrawals + waits for a junior
	kWcPeerWakes,      // wakes a peer worker PROCESS sent this lane (steal_wake_one):
			   // the only counter of the block others write (relaxed add);
			   // a worker thread counts them in Lane::wakes_sent instead
	kWcServiceNs,      // steal topology: the worker's estimate of one call's run
			   // time, ns (0 = none yet; src/spin.h "claims and wakes");
			   // the worker stores it, relaxed; a hint, never trusted
	kWcCount_
};
static_assert(kWcCount_ * 8 <= kBlock, "worker counters fit one block");

// ---- resolved options -------------------------------------------------------------
struct PoolConfig {
	uint32_t workers;
	uint32_t topology; // KNIT_TOPOLOGY_LANES or KNIT_TOPOLOGY_STEAL (never AUTO)
	uint32_t steal_g;  // steal: lanes per claim region (steal.h); else 0
	uint32_t balancer; // never KNIT_BALANCE_DEFAULT after resolution
	uint32_t inline_lane;
	uint32_t inline_batch;
	uint32_t stall_free_loops;
	uint32_t max_backoff_ms;
	bool doorbell;
	uint32_t spin_us;
	uint32_t park_ms;   // the idle period (arena trims; the watchdog when on)
	bool park_watchdog; // park_ms given: every park is timed (else: see park())
	uint32_t abort_capacity;
	uint32_t hard_timeout_ms;
	uint32_t max_pending;
	uint64_t payload_max_bytes;
	uint64_t payload_initial_bytes;
	uint64_t max_payload_bytes;
	// Worker placement: `place` when cpu_mask has any bit set.
	bool place;
	bool one_per_worker;
	bool processes;        // KNIT_WORKERS_PROCESSES (src/proc.h)
	bool timing;           // KNIT_POOL_INFO_TIMING: workers time every task (src/info.h)
	bool cpu_time;         // KNIT_POOL_INFO_CPU: and read their thread's CPU clock
	uint32_t info_records; // the info ring's entries (src/info.h)
	uint64_t cpu_mask[KNIT_CPU_MASK_WORDS];
	// Process pools: recycle a worker past any of these marks (0 = off;
	// src/lane.h, "Recycling").
	uint64_t recycle_calls;
	uint64_t recycle_rss_bytes;
	uint32_t recycle_age_ms;
};

// Validate *in (NULL = all defaults) per the ABI contract and fill *out with
// every default resolved. Returns 0, -KNIT_EVERSION or -KNIT_EINVAL.
int options_resolve(const knit_pool_options_t *in, PoolConfig *out);

// ---- the task table (src/pool.cpp) -------------------------------------------------
struct TaskEntry;

// ---- call records (types; their lifecycle: src/calls.h) ---------------------------

// Structural references that keep a record from being recycled. The record
// returns to the free list when the last one is dropped (under mu).
enum CallHold : uint32_t {
	kHoldEnqueue = 1u << 0,   // the enqueuing thread still uses it (only a call
				  // with a deadline keeps it past allocation)
	kHoldHostQueue = 1u << 1, // in the backlog, the private list, the inline FIFO,
				  // or placed in a worker lane until its frame is reaped
	kHoldUser = 1u << 2,      // its completion has not been handed out yet
};

// Internal call flags.
enum CallFlag : uint32_t {
	kCallPrivate = 1u << 0,  // knit_call: completion goes to the caller only
	kCallPinned = 1u << 1,   // KNIT_CALL_LANE
	kCallTicketed = 1u << 2, // knit_call_ex with a ticket: knit_cancel may reach it
	kCallChunk = 1u << 3,    // knit_map's chunk task (id ntasks, src/map.cpp)
	// A burst's calls that share one frame (knit_enqueue_many, src/calls.h
	// "riders"): the carrier is the one call that travels (a chunk task
	// call, never handed out), each rider a call of the burst that never
	// travels itself and completes when its carrier does.
	kCallRider = 1u << 4,
	kCallCarrier = 1u << 5,
	// Bits 8..9: the priority class as its rank, kClassHigh .. kClassLow
	// (call_class). Normal is 1, set by call_args for every call.
	kCallClassShift = 8,
};
// Priority classes in placement order (KNIT_CALL_HIGH, normal, KNIT_CALL_LOW).
inline constexpr uint32_t kClassHigh = 0, kClassNormal = 1, kClassLow = 2, kClasses = 3;
inline uint32_t call_class(uint32_t flags) { return (flags >> kCallClassShift) & 3u; }

// A timed reap's words for a call it completes (src/info.h, "the packed
// path"): the response's packed timing word (timing_pack) with its
// start's half made an offset from the call's enqueue tick (the worker's,
// untrusted: decoded and clamped only at the lookup), the span from the
// enqueue tick to the reap's, the lane that ran the call and its worker's
// pid. Lives in the call's argument words (Call::ran).
struct CallRan {
	uint64_t word;
	int64_t span;
	uint32_t lane;
	int32_t pid;
};
static_assert(sizeof(CallRan) <= sizeof(knit_value_t), "the timing fits the argument's words");

struct Call {
	cds_wfcq_node qnode; // backlog link (the wait-free queue)
	Call *next;          // private backlog list / inline FIFO (dispatcher-owned) / free list
	// Under mu. Until the call completes, a timed pool's tick at its
	// enqueue (src/info.h; 0 in an untimed pool); from the completion on
	// (cq_append_locked), its link in the completion queue, which only
	// completed calls are on. The reap reads the tick before it completes
	// the call; nothing else reads either word out of its time.
	union {
		int64_t t_enq;
		Call *cq_next;
	};
	uint32_t index; // slot in the ticket table (never changes)
	uint32_t gen;   // generation of the current use (under mu)
	uint32_t pub;   // release-stored before the backlog push (TSan-visible handoff)
	uint32_t done;  // private calls: 1 once completed (release store under mu)
	// Set by the enqueuing thread before the call becomes reachable, then
	// read-only until the record is recycled.
	uint32_t task;
	uint32_t flags;      // CallFlag
	uint32_t pin_lane;   // with kCallPinned
	int32_t abort_bit;   // -1 = none
	int64_t deadline_ns; // 0 = none
	void *user_data;
	// Until its frame is back (a re-run may stage it again, a lane_stage
	// or steal_stage reads it), the argument; once a timed reap completed
	// the call (ran_packed = 1), what that reap learned of its timing
	// (CallRan, src/info.h), for the hand-out to move into the call's info
	// entry. Nothing reads the argument of a call whose frame is back and
	// which is completed: it is never staged or run again.
	union {
		knit_value_t arg; // data points into arg_buf (or is NULL)
		CallRan ran;
	};
	uint8_t *arg_buf; // malloc'd copy; freed once published (dispatcher)
	// Dispatcher-owned while queued/in flight.
	uint32_t lane; // lane it was placed in (UINT32_MAX before)
	// Under mu.
	uint8_t live;       // allocated (not on the free list)
	uint8_t ran_packed; // `ran` holds this use's timing (a timed reap; 0 at alloc)
	uint16_t resends;   // times sent again after a worker's death (lane_lost; < kResendMax)
	uint32_t holds;     // CallHold
	uint32_t completed; // a completion was produced
	uint32_t heap_pos;  // deadline heap index, UINT32_MAX = not in the heap
	int32_t status;
	knit_value_t result; // data = result_buf
	uint8_t *result_buf; // malloc'd, owned by the record until handed out
};

inline constexpr uint32_t kNoHeap = 0xFFFFFFFFu;
inline constexpr uint32_t kNoLane = 0xFFFFFFFFu;

// A ticket: (generation << 32) | index, generation >= 1, so never 0; a
// generation is never reused for an index (a record is retired after its
// last one, see calls.cpp), so a ticket is never reused. Each table starts
// its generations at its own base (TicketTable::init), so another pool's
// tickets do not name this pool's calls.
inline uint64_t ticket_pack(uint32_t gen, uint32_t index) { return ((uint64_t)gen << 32) | index; }
inline uint32_t ticket_index(uint64_t ticket) { return (uint32_t)ticket; }
inline uint32_t ticket_gen(uint64_t ticket) { return (uint32_t)(ticket >> 32); }
inline uint64_t ticket_of(const Call *c) { return ticket_pack(c->gen, c->index); }

// The table of call records: chunks of kTicketChunk allocated on first use,
// a LIFO free list. At most `capacity` (init) records are live at once;
// indexes run up to capacity() (larger: room for retired records). Not
// thread-safe except lookup(): callers hold the pool's mu.
class TicketTable {
public:
	// Allow `capacity` live records of calls and `carriers` live carriers
	// (src/calls.h riders; allocated lazily). 0 or -KNIT_ENOMEM.
	int init(uint32_t capacity, uint32_t carriers = 0);
	// Free every chunk (records must hold no memory any more: see pool.cpp).
	void fini();
	// A free record (live = 1, gen bumped, its ticket in *ticket; every
	// field reset but the call's own, task .. arg_buf, which the caller
	// sets: call_alloc_locked), or nullptr with *err = -KNIT_EAGAIN (all
	// capacity in use, or every index worn out) or -KNIT_ENOMEM.
	// Inline for the common case: the free list's head, not worn out.
	Call *alloc(uint64_t *ticket, int *err)
	{
		Call *c = free_;
		if (live_ >= max_live_ || c == nullptr || c->gen == kGenLast)
			return alloc_slow(ticket, err);
		free_ = c->next;
		prefetch_next();
		return take(c, ticket);
	}
	// A record for a carrier (flags kCallCarrier set; the caller sets the
	// rest as for alloc()), counted apart from the calls' records: nullptr
	// with *err = -KNIT_EAGAIN when all carriers' room is in use (or every
	// index worn out) or -KNIT_ENOMEM.
	Call *alloc_carrier(uint64_t *ticket, int *err);
	// Back to the free list (live = 0). Caller frees its buffers first.
	void free(Call *c);
	// The record at index, or nullptr when index was never handed out. Safe
	// from any thread (acquire load of the chunk pointer); the record's
	// fields are then read under mu.
	Call *lookup(uint32_t index) const;
	// Records that may still be allocated now (under mu).
	uint32_t room() const { return live_ < max_live_ ? max_live_ - live_ : 0; }
	// Exclusive bound of the indexes (what a frame's ticket is checked against).
	uint32_t capacity() const { return capacity_; }
	// Indexes handed out so far: every record that ever lived is below it.
	uint32_t used() const { return next_new_; }
	// Indexes handed out so far (records [0, high()) exist). Under mu.
	uint32_t high() const { return next_new_; }

private:
	// The rest of alloc(); a carrier's (alloc_carrier) skips the calls'
	// bound.
	Call *alloc_slow(uint64_t *ticket, int *err, bool carrier = false);
	// The next allocation resets and fills the free list's new head: after
	// a burst of completions its lines are usually out of L1 (a stream
	// keeps thousands of records in flight), and its enqueuer would stall
	// on them. Fetch them (for writing) while this call is being placed.
	// Through the arch layer's knit_prefetch_write (an asm statement on
	// x86-64): inlined here, GCC 12 silently dropped __builtin_prefetch,
	// and the next allocation's first load of the record (its gen) was the
	// enqueue's costliest instruction again.
	void prefetch_next() const
	{
		if (free_ == nullptr)
			return;
		const char *nx = reinterpret_cast<const char *>(free_);
		static_assert(sizeof(Call) == 192, "a record is three lines");
		knit_prefetch_write(nx);
		knit_prefetch_write(nx + 64);
		knit_prefetch_write(nx + 128);
	}
	// Make c (off the free list) a live record of a new generation.
	Call *take(Call *c, uint64_t *ticket)
	{
		// gen is bumped at every allocation and starts at the table's
		// base (>= 1): ticket never 0; it never wraps (retired in
		// alloc_slow() at kGenLast). The
		// ticket is made from the new generation in a register: a load of
		// (index, gen) right after the 4-byte store of gen could not be
		// forwarded from it and would wait for the store to reach the
		// cache.
		const uint32_t gen = c->gen + 1;
		c->gen = gen;
		*ticket = ticket_pack(gen, c->index);
		// Reset what the record's life reads before it writes it, field
		// by field; a whole-record memset costs more than the call's other
		// bookkeeping (rep stos on a 192-byte record). The call's own
		// fields (task, flags, pin_lane, deadline_ns, user_data, arg,
		// arg_buf) are not reset here: the enqueuer (the only allocator)
		// sets every one of them before the record is reachable
		// (call_alloc_locked, calls.h).
		c->next = nullptr;
		c->cq_next = nullptr;
		c->flags = 0; // free() reads kCallCarrier, even before the fill
		c->pub = 0;
		c->done = 0;
		c->abort_bit = -1;
		c->lane = kNoLane;
		c->live = 1;
		c->ran_packed = 0;
		c->resends = 0; // beside live and ran_packed: one store with them
		c->holds = 0;
		c->completed = 0;
		c->heap_pos = kNoHeap;
		c->status = 0;
		memset(&c->result, 0, sizeof c->result);
		c->result.type = KNIT_VALUE_NONE;
		c->result_buf = nullptr;
		// A field added to Call needs its reset above.
		static_assert(sizeof(Call) == 192 && offsetof(Call, result_buf) == 184,
			      "Call changed: reset its new fields here");
		live_++;
		return c;
	}

	Call **chunks_ = nullptr;
	uint32_t nchunks_ = 0;
	uint32_t capacity_ = 0; // index bound
	uint32_t gen_base_ = 1; // a fresh record's first generation (init)
	uint32_t max_live_ = 0; // live record bound (calls)
	uint32_t next_new_ = 0;
	uint32_t live_ = 0;         // live calls' records
	uint32_t carriers_ = 0;     // live carriers' records
	uint32_t max_carriers_ = 0; // and their bound
	Call *free_ = nullptr;
};

// Min-heap of calls by deadline with O(log n) removal (Call::heap_pos).
// Under mu.
class DeadlineHeap {
public:
	int init(uint32_t capacity);
	void fini();
	void push(Call *c);
	void remove(Call *c);
	Call *top() const { return n_ ? a_[0] : nullptr; }
	uint32_t size() const { return n_; }

private:
	void sift_up(uint32_t i);
	void sift_down(uint32_t i);
	void place(uint32_t i, Call *c)
	{
		a_[i] = c;
		c->heap_pos = i;
	}
	Call **a_ = nullptr;
	uint32_t n_ = 0;
	uint32_t cap_ = 0;
};

// ---- the host side of a steal pool (src/steal.h: the claim protocol) ----------------
inline constexpr uint8_t kNoClaimer = 0xFF; // StealHost::lane_claimer: none
struct StealHost {
	bool on;              // the pool uses KNIT_TOPOLOGY_STEAL
	uint8_t *ctl;         // steal control block
	uint8_t *lock;        // the shared submit lock
	LockProducer req;     // the host's producer endpoint (dispatcher holder only)
	uint32_t staged;      // frames staged, not flushed (dispatcher holder only)
	uint32_t wake_cursor; // next worker to consider for a wake (relaxed; any thread)
	// Who claimed what (dispatcher holder only; see steal_track): the call
	// each submit lane carries until a worker's ACK toggle names its
	// claimant, and the last ACK word seen from each worker.
	uint32_t unclaimed;           // lanes whose call has no claimant yet
	uint32_t lane_ticket[kLanes]; // that call's record index
	uint32_t lane_gen[kLanes];    // and generation
	// The worker whose toggle the host accepted as the claim of the lane's
	// publication (kNoClaimer: none yet, or the claim was cancelled out by
	// a second one, steal_judge).
	uint8_t lane_claimer[kLanes];
	uint32_t ack_seen[kMaxStealConsumers];
	// Each worker's kWcServiceNs as last read (dispatcher holder only),
	// re-read every kSvcRefresh flushes (steal_host_wake_pays, spin.h).
	uint64_t svc_ns[kMaxStealConsumers];
	uint32_t svc_tick;
	// The toggles of each worker's ACK word the host accepted (claims of
	// unclaimed lanes, and pairs of toggles that cancel out): ack_seen ^
	// ack_valid is what a worker's word says that the host does not
	// believe (steal_track, steal_judge), and a dead worker's word is reset
	// so that the XOR of every ACK matches what the host believes: every
	// unclaimed publication pending, every other lane retired
	// (lane_steal_reap).
	uint32_t ack_valid[kMaxStealConsumers];
	// Calls steal_orphan gave back (steal_stage, steal_rescue: maybe while
	// the backlog was being placed), linked by Call::next:
	// dispatch_flush_backlog puts them back in the backlog.
	Call *orphans;
	// Some worker's ACK word said what the host does not believe (sticky):
	// from then on an honest worker may be misled into running a call it
	// does not hold, and its frame for one is dropped, not blamed.
	bool misled;
	// The backlog's placing last stopped at a full submit lock, and
	// full_acks was the XOR of every ACK word then (dispatcher holder
	// only; backlog_futile in src/dispatch.cpp).
	uint32_t full_acks;
};

// ---- the pool ------------------------------------------------------------------------

struct TaskEntry {
	const char *name; // points into Pool::names
	knit_task_fn fn;
	void *data; // knit_task_t.data, handed to the task as knit_ctx_task_data()
	uint32_t timeout_ms;
	uint32_t flags;
	// Riders (src/calls.h): what carriers of this task measured, hints
	// only (a worker process writes the run time they come from). Written
	// under mu by a carrier's completion, read relaxed by an enqueue.
	uint64_t ride_ns;      // a call's run, ns, estimated (0: none yet)
	uint32_t ride_room;    // the most result bytes one rider's outcome took
	uint32_t ride_probing; // 1 while a probe (a carrier of one) is in flight
	uint64_t ride_last;    // the last carrier's sample (ns per call)
};

// Result bytes a completion handed out owns (knit_completion_release): a
// completion carries a handle {generation, slot} to its entry, never a
// pointer the library would have to trust. Under mu.
struct OwnedBuf {
	uint8_t *buf;  // nullptr = free slot
	uint32_t gen;  // bumped when the slot is taken; handles name it
	uint32_t next; // free list link (slot index + 1, 0 = end)
};

// ---- completion infos (types; their room: src/info.h) ----------------------------
// What the pool learned about one call before its completion is handed out,
// by record index (a chunk of kTicketChunk notes allocated on first use):
// timing (a pool with KNIT_POOL_INFO_TIMING) and a death. A note counts
// only for the use of the record it names (gen). Under mu.
// 48 bytes: an info entry (below) is one line with it.
struct CallNote {
	uint32_t gen;   // the record's generation the note is about
	uint32_t flags; // KNIT_INFO_* gathered so far
	uint32_t lane;  // the lane that ran (or last held) the call
	int32_t pid;    // its worker process, 0 for a thread or the inline lane
	int64_t wait;   // in ticks, clamped (KNIT_INFO_TIMING; src/tick.h)
	int64_t run;
	int64_t cpu_ns; // KNIT_INFO_CPU (clamped to run at the lookup)
	uint16_t death; // enum knit_death_cause (KNIT_INFO_DEATH)
	uint16_t sys;   // 1 + a sandbox violation's syscall (DeathNote::sys, below
			// 4096: src/sandbox.h), 0 = none
	int32_t detail; // the signal number or exit status
};
static_assert(sizeof(CallNote) == 48, "a note and its entry's head are one line");
// One handed-out completion's info, in the ring, one cache line: seq
// names it, ticket says whose it is, note is the call's note as it was at
// the hand-out (a member counts only when its flag says so). Under mu.
struct alignas(64) InfoEntry {
	uint64_t ticket;
	uint32_t seq; // 0 = empty
	uint32_t unused;
	CallNote note;
};
static_assert(sizeof(InfoEntry) == 64, "an info entry is one line");
struct InfoRoom {
	bool timing;       // KNIT_POOL_INFO_TIMING (read-only after create)
	CallNote **chunks; // by record index / kTicketChunk, nullptr until used
	uint32_t nchunks;
	uint32_t notes;  // an untimed pool's death notes not handed out yet; a
			 // timed pool's is 1 for good (every hand-out looks):
			 // hand-out skips the lookup while 0
	InfoEntry *ring; // cap entries: the last infos handed out
	uint32_t cap;
	uint32_t seq; // the last sequence handed out (skips 0 on wrap)
	uint32_t pos; // its entry: (seq - 1) % cap
};

struct alignas(128) Pool {
	PoolConfig cfg;
	uint32_t fork_gen; // g_fork_gen when created: differs in a fork child (pool_forked)
	TaskEntry *tasks;  // ntasks + 1: the caller's, then the map chunk task
	char *names;
	uint32_t ntasks; // the caller's tasks (ids below it); the chunk task's id

	Region region;
	uint32_t *db_seq;   // doorbell / host event sequence (futex word)
	uint32_t *db_armed; // 1 = a waiting host asked to be rung
	uint32_t *abort_words;
	uint32_t abort_nwords;

	Lane *lanes; // nworkers worker lanes, then the inline lane if any
	uint32_t nworkers;
	uint32_t nlanes;                      // nworkers + (inline ? 1 : 0)
	uint32_t order[KNIT_MAX_WORKERS + 1]; // balancer rotation
	uint32_t rr_cursor;                   // dispatcher-owned
	uint32_t lanes_retired;               // dispatcher-owned: worker lanes RETIRED (src/lane.h)
	uint32_t lanes_distrusted;       // worker lanes DISTRUSTED (src/lane.h lane_set_state):
					 // written by the holder, relaxed-readable
	uint64_t rng;                    // dispatcher-owned
	int futex_shared;                // 0: thread workers (private futexes)
	bool rings;                      // host of a process pool: every worker rings through
					 // its own ring page, and db_seq is host_seq (wake.h)
	bool isolated;                   // host of a process pool whose workers map writable
					 // only their own pages (src/proc.h, "isolation")
	const struct WorkerOps *workers; // the worker kind's operations (src/workers.h)
	// Thread workers: the options' worker_start / worker_stop and their
	// argument, run on each worker thread around its loop
	// (src/workers_thread.cpp); set before the threads start.
	knit_worker_hook_fn thread_start_hook;
	knit_worker_hook_fn thread_stop_hook;
	void *thread_hook_arg;
	int64_t born_ns;       // knit_pool_create's clock (stats: a thread's age)
	struct ProcHost *proc; // process workers: the host side (src/proc.h)
	// The workers are other processes, whose shared words may say anything
	// (set by their backend, src/proc.cpp): a doorbell sleep without ring
	// pages is bounded by kProcDoorbellWatchdogNs, and no host arms for a
	// refill, which trusts every worker to ring at its low-water mark
	// (src/wake.cpp).
	bool untrusted_workers;
	// Steal topology: no worker wakes a peer (a worker process may not
	// write a peer's page, layout.h): only the host's wake at each publish
	// (steal_flush) and the workers' re-check before they park (W2) hand
	// out the work. Set in a process pool's workers.
	bool steal_no_peer_wake;
	uint32_t failed;        // 1: the workers cannot be replaced any more (out of
				// respawns): new calls fail -KNIT_ECRASHED (a release
				// store after the reason, WorkerOps::failed_why; stored
				// before closed, under mu: pool_failed)
	uint32_t *efd_flag;     // in a worker process: its "completion fd on" word
	int efd_bridge;         // (ring page, else header) and its lane's bridge
	StealHost steal;        // steal topology (steal.h); on = false otherwise
	int64_t submit_idle_ns; // steal: submit lock idle since (0 = busy;
				// dispatcher-owned, src/trim.cpp)

	// The dispatcher try-lock, alone on its block.
	alignas(128) uint32_t dispatch_lock;

	// Backlog: wait-free MPSC queue + the dispatcher's ordered private list.
	alignas(128) struct __cds_wfcq_head bq_head;
	alignas(128) struct cds_wfcq_tail bq_tail;
	alignas(128) uint64_t backlog_count; // calls waiting for a slot (atomic)
	uint64_t backlog_placed;             // dispatcher-owned: placed, still in backlog_count
	uint64_t backlog_hw;                 // high-water mark (atomic max)
	Call *pb_head[kClasses], *pb_tail[kClasses]; // dispatcher-owned, unpinned calls per
						     // priority class, each in enqueue order
	uint32_t pb_waiting;                         // dispatcher-owned: bit k = pb_head[k] set
	uint64_t pin_waiting; // dispatcher-owned: bit w = a pin_head of lanes[w] set
	uint64_t st_class_backlogged[kClasses]; // the holder's (counter_add), stats read
	uint64_t st_class_enqueued[2];          // high and low calls accepted (under mu; normal:
						// st_enqueued less these)
	uint64_t backlog_visits; // dispatcher-owned: backlog calls placement examined
	// Dispatcher-owned: the shared backlog's placing last stopped with
	// every lane (the steal submit lock) full, as of StealHost::full_acks
	// or each Lane::full_b; cleared by every pass (backlog_futile in
	// src/dispatch.cpp).
	bool backlog_full;
	uint64_t wake_lanes;    // dispatcher-owned: lanes published, not yet looked
				// at for a parked worker (W1 in dispatch_unlock)
	uint64_t room_lanes;    // dispatcher-owned: lanes given room back (B), the same
	uint32_t inline_queued; // calls in the inline FIFO (atomic, relaxed reads)

	// The completion eventfd, written once (knit_completion_fd) and read
	// by every worker after every result (worker_ring): on a block of its
	// own, away from outstanding and mu, which the host writes ~10 times
	// per call.
	alignas(128) uint32_t efd_on; // 1 once efd exists (atomic; workers read)
	int efd;                      // completion eventfd or -1

	alignas(128) uint32_t host_waiters; // host threads sleeping on db_seq (atomic)
	// rings: the host-event sequence db_seq points to (host-private
	// memory: no worker can freeze it)
	uint32_t host_seq;
	uint32_t closed;           // 1 once stop began (atomic; written under mu)
	uint32_t workers_stopping; // stop requested on every worker (atomic)
	uint32_t forced;           // hard timeout force-stopped the pool
	uint64_t outstanding;      // accepted, not completed (atomic; written under mu)
	uint64_t line_outstanding; // line calls not completed (atomic read-modify-write,
				   // src/syncline.h S1/S7; no mu)
	uint32_t line_cursor;      // the line to try first (relaxed; src/syncline.h)
	int64_t earliest_deadline; // heap top deadline or 0 (atomic, under mu writes)
	uint32_t cq_count;         // completions queued (atomic; changed under mu)

	// Under mu.
	pthread_mutex_t mu;
	TicketTable tickets;
	DeadlineHeap heap;
	Call *cq_head, *cq_tail;
	uint32_t pick_waiters;  // threads in knit_complete_tickets / knit_wait_idle
				// (atomic; written under mu: src/calls.h)
	uint32_t *abort_in_use; // host-private mirror of allocated abort bits
	uint32_t abort_cursor;
	uint32_t abort_used;
	OwnedBuf *owned;     // handed-out result bytes not released yet
	uint32_t owned_n;    // slots in use or on the free list
	uint32_t owned_cap;  // slots allocated
	uint32_t owned_free; // free list head (slot + 1, 0 = empty)
	uint64_t owned_salt; // per-pool: the completion's check word mixes it in
	InfoRoom info;       // completion infos (src/info.h)
	// The completion descriptor (knit_completion_fd): an epoll instance
	// watching the eventfd (efd) and a timerfd armed at the earliest call
	// deadline, so a deadline makes it readable without any call into the
	// library (src/calls.cpp deadline_timer_*).
	int epfd;           // what knit_completion_fd returns, or -1
	int tfd;            // the deadline timerfd, or -1
	int64_t tfd_target; // the deadline it is armed at, 0 = disarmed

	// Statistics (relaxed atomics; st_enqueued and st_completed are
	// written under mu only: mu_counter_add_64).
	uint64_t st_enqueued, st_completed, st_doorbell_arms, st_doorbell_wakes, st_inline_calls;
	uint64_t st_late_drops, st_proto_errors;
	// Calls of a burst may share a frame here (src/calls.h riders): no
	// call is timed and there is no hard timeout. Read-only after create.
	bool ride_ok;
	// Carriers accepted and the riders they took (mu_counter_add_64).
	uint64_t st_shared_frames, st_shared_calls;
	uint64_t st_backlogged; // the dispatcher holder's (counter_add), stats read
};

// The earliest deadline of any call in the heap, 0 = none (any thread;
// written under mu by src/calls.cpp).
inline int64_t earliest_deadline(Pool *p)
{
	return (int64_t)knit_load_relaxed_64(reinterpret_cast<uint64_t *>(&p->earliest_deadline));
}

// No call outstanding on either path (any thread). Acquire: pairs with the
// release decrements of outstanding (call_complete_locked, made after the
// completion was queued) and of line_outstanding (src/syncline.cpp S7).
// The two counters keep the ticketed path's writes plain under mu.
inline bool none_outstanding(Pool *p)
{
	return knit_load_acquire_64(&p->outstanding) == 0 &&
	       knit_load_acquire_64(&p->line_outstanding) == 0;
}

// ---- fork (src/pool.cpp) ----------------------------------------------------------------
// Bumped by a pthread_atfork child handler in every child of fork(2)
// (relaxed: the child is single-threaded when the handler runs).
extern uint32_t g_fork_gen;

// True in a child of fork(2) for a pool created before the fork: the pool's
// shared words belong to the parent's workers (and its futexes, threads and
// eventfd to the parent), so every entry returns -KNIT_ECLOSED before it
// touches any of them, and knit_pool_destroy frees only private memory.
inline bool pool_forked(const Pool *p) { return knit_load_relaxed_32(&g_fork_gen) != p->fork_gen; }

// What a call on a closed pool fails with: -KNIT_ECRASHED once the pool
// failed (Pool::failed, stored before closed; a caller that read closed
// under mu, or after its acquire, sees it), else -KNIT_ECLOSED.
inline int pool_closed_code(const Pool *p)
{
	return knit_load_relaxed_32(&p->failed) != 0 ? -KNIT_ECRASHED : -KNIT_ECLOSED;
}

// ---- region helpers --------------------------------------------------------------------
inline uint8_t *lane_ext(Pool *p, uint32_t lane)
{
	return p->region.base + kPoolOffLaneExt + lane * kLaneExtBytes;
}
inline uint64_t *lane_counter(uint8_t *ext, uint32_t which)
{
	return reinterpret_cast<uint64_t *>(ext + kBlock) + which;
}
// Add to a single-writer counter (the worker's own; the dispatcher
// holder's): relaxed load + store, read concurrently with relaxed loads.
inline void counter_add(uint64_t *c, uint64_t d)
{
	knit_store_relaxed_64(c, knit_load_relaxed_64(c) + d);
}
inline void counter_bump(uint64_t *c) { counter_add(c, 1); }
// Change a counter that is only ever written under the pool's mu (outside
// mu it is only read): mu orders the writers, so a relaxed load + store does
// what a locked read-modify-write would, without draining the store buffer
// on every call (enqueue and completion each change several of these).
inline void mu_counter_add_32(uint32_t *c, uint32_t d)
{
	knit_store_relaxed_32(c, knit_load_relaxed_32(c) + d);
}
inline void mu_counter_add_64(uint64_t *c, uint64_t d)
{
	knit_store_relaxed_64(c, knit_load_relaxed_64(c) + d);
}

// ---- the map chunk's call (src/api.cpp) -------------------------------------------------

// Enqueue a call of the map chunk task (id p->ntasks; src/chunk.h) with
// argument *arg, as knit_enqueue_ex would any task's: 0 with *ticket, or
// the code knit_enqueue_ex documents (src/map.cpp).
int map_chunk_enqueue(knit_pool_t *pool, const knit_value_t *arg, void *user_data,
		      const knit_call_options_t *opts, knit_ticket_t *ticket);

// ---- dispatcher (src/dispatch.cpp) -------------------------------------------------------

// Admit a new call (accepted and counted in outstanding; holds
// kHoldHostQueue): place it at once when the dispatcher is free and no call
// like it waits, else queue it in the backlog, within max_pending. Returns 1
// when a lane or the backlog keeps it (its host-queue hold stays), 0 when no
// queue keeps it any more (it ran inline, or was completed), -KNIT_EAGAIN
// when the backlog is full (nothing references it; the caller undoes it
// unless a stop completed it meanwhile). Any host thread.
int dispatch_submit(Pool *p, Call *c);

// dispatch_submit() for calls[0 .. n-1] in order, with one dispatcher hold,
// one publish per lane and one fence for the lot (while lanes have room):
// returns k, calls[0 .. k-1] admitted (each placed, queued in the backlog,
// or completed: a call no queue keeps any more has had its kHoldHostQueue
// dropped here), calls[k .. n-1] refused (backlog full; untouched, the
// caller undoes them unless a stop completed them meanwhile). Any host
// thread.
uint32_t dispatch_submit_many(Pool *p, Call *const *calls, uint32_t n);

// Try to become the dispatcher (never blocks). Pairs with dispatch_unlock.
bool dispatch_trylock(Pool *p);
// Release the dispatcher, then re-check the backlog and take it again when
// calls were pushed meanwhile (no call is stranded); wakes host waiters when
// inline work is left. Dispatcher holder only.
void dispatch_unlock(Pool *p);

// One dispatcher pass (holder only): reap every return lock, flush the
// backlog, expire deadlines, check the hard timeout, and (run_inline) run up
// to inline_batch inline-lane tasks. Returns the completions it produced.
uint32_t dispatch_pass(Pool *p, bool run_inline);

// Place a new call directly (holder only, the call not queued anywhere):
// returns true when it went into a lane (flushed and woken).
bool dispatch_place_new(Pool *p, Call *c);
// Move the wait-free backlog into the private list and place what fits
// (holder only). Returns false when a half-pushed node blocked the drain
// before anything was dequeued.
bool dispatch_flush_backlog(Pool *p);
// Raise the backlog high-water mark to now_count (any thread).
void backlog_hw_update(Pool *p, uint64_t now_count);
// Append a call to the dispatcher's private backlog: its lane's pinned
// queue (KNIT_CALL_LANE) or the shared list (holder only).
void dispatch_backlog_append(Pool *p, Call *c);
// Put calls back at the FRONT of the dispatcher's private backlog (each
// its lane's pinned queue or the shared list), calls[0] first: a dead
// worker's unstarted calls go ahead of everything queued after them. They
// count in the backlog again (past max_pending if need be: they were
// admitted once). Holder only.
void dispatch_backlog_requeue(Pool *p, Call *const *calls, uint32_t n);
// Does no call like c wait in the private backlog (so c may be placed ahead
// of the backlog without overtaking one)? Holder only.
bool dispatch_backlog_clear_for(Pool *p, const Call *c);

// The waiting ladder shared by knit_complete, knit_call and knit_stop(DRAIN):
// run passes while possible, then sleep on the doorbell (or the backoff
// ladder) until `ready(p, arg)` holds or deadline_ns (absolute, < 0 = none)
// passes. Returns true when ready, false on timeout. poll: one attempt only.
typedef bool (*ReadyFn)(Pool *p, void *arg);
bool host_wait(Pool *p, ReadyFn ready, void *arg, int64_t deadline_ns, bool poll);

// Complete every uncompleted call with -KNIT_ECLOSED (under mu not held).
void cancel_all(Pool *p);
// After cancel_all on a closed pool (or a failed process pool's complete_all,
// src/proc.cpp): take the completed calls out of the
// backlog so stats.backlog reads their true count (0). Bounded by deadline_ns
// (absolute, < 0 = none) while another thread holds the dispatcher.
void backlog_drop_completed(Pool *p, int64_t deadline_ns);
// Ask every worker to stop (stop word REQUESTED + wake). Idempotent.
void request_worker_stop(Pool *p);

// ---- arena give-back (src/trim.cpp) ------------------------------------------------------
// Dispatcher holder, once per pass: trim the request arena of every lane
// (the submit arena under STEAL) that has had nothing in flight for park_ms.
// `now` 0: the pass did not read the clock; read it only for an arena above
// its floor.
void host_arena_trim(Pool *p, int64_t now);
// Worker lane l's own thread, after its park timed out (idle for park_ms):
// trim its return arena.
void worker_arena_trim(Lane *l);
// Worker lane l's own thread, before it parks: does its return arena hold
// bytes above its floor, so that an idle period should end in a trim?
bool worker_arena_trimmable(Lane *l);
// Payload arena bytes committed now, every lane, both directions, the
// submit arena included (any thread; relaxed statistics).
uint64_t arena_committed_bytes(Pool *p);

// ---- workers (src/worker.cpp) ----------------------------------------------------------
// Thread entry of worker lane `arg` (a Lane *).
void *worker_main(void *arg);

// The pool whose task function the calling thread is running now (set by
// run_task, src/task.h, around the call, the previous value restored after:
// a task may call into another pool whose inline lane runs a task of its
// own), or null. The entries that would wait on their own pool from inside
// one of its tasks return -KNIT_EBUSY instead (knit_call, knit_complete and
// friends with a wait, knit_stop, knit_pool_destroy): the wait could need
// the very thread it blocks. A task in a worker process runs under that
// process's own pool record, never the host's.
extern __thread const Pool *t_task_pool;
inline bool in_task_of(const Pool *p) { return t_task_pool == p; }

} // namespace knit::detail

// The opaque handles of the C ABI.
struct knit_pool {
	knit::detail::Pool p;
};

#endif
