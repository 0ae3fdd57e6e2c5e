// SPDX-License-Identifier: GPL-2.0
/*
 * knit-trace.bpf.c - the kernel half of knit-trace(8).
 *
 * USDT programs on libknitting's probes (provider "knitting", see
 * src/trace.h) count every probe per pool and lane and pair them into
 * latencies; two tp_btf scheduler programs follow the worker thread a host
 * ring targets until it is on a CPU. Everything lands in two hash maps the
 * loader reads and clears each interval: `counts` (per pool and lane) and
 * `hists` (log2 histograms per pool, lane and view).
 *
 * Pairing state, keyed so that one missing half (the tool attached mid-way)
 * only costs a sample, never a wrong one:
 *   parked   worker tid       -> when it parked          (park duration)
 *   rings    worker tid       -> when the host rang it   (wake latency), or
 *            a marker when the worker took the wake before the host's ring
 *            probe fired (the probe comes after the host claims the wake)
 *   lanetid  (pool, lane)     -> the lane's worker tid, as the kernel numbers
 *            it (learnt at worker_park, so it is right inside PID namespaces
 *            too; the ring probe's own tid argument is the fallback)
 *   calls    (pool, ticket)   -> enqueue / start times   (queue, service, call)
 *   stops    (pool, lane)     -> stop request time       (stop ack)
 *   arms     host tid         -> doorbell arm time       (host doorbell sleep)
 *
 * Which processes count (with -p): `hosts` holds the traced host's tgid;
 * `procs` maps each of its worker processes (knit-worker, process pools) to
 * the host's pool it serves. A worker process's probes name its own view of
 * the pool, so every probe is first resolved through `procs`: its events
 * land under the host's pool id and, with the lane the probe names, on the
 * host's lane. A worker enters `procs` at its proc_worker_start probe when
 * its parent is a host (so a respawned worker counts from its first probe),
 * or from the loader, which finds workers that started before it attached.
 *
 * GPL because the scheduler tracepoints need GPL-only helpers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "knit-trace.h"

#define MAX_THREADS 4096
#define MAX_CALLS 65536
#define MAX_HISTS 16384
#define MAX_LANES 8192

/* Knobs set by the loader before load (read-only once loaded). */
const volatile bool filter_tgid = false; /* only `hosts` and their `procs` */
const volatile __u64 targ_pool = 0;      /* 0 = every pool */
const volatile bool filter_lane = false;
const volatile __u32 targ_lane = 0;

#define MAX_HOSTS 64
#define MAX_PROCS 1024

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_HOSTS);
	__type(key, __u32);
	__type(value, __u32);
} hosts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PROCS);
	__type(key, __u32);
	__type(value, struct kt_proc);
} procs SEC(".maps");

struct park_val {
	__u64 ts;
};

/* rings[tid].state */
enum {
	RING_PENDING = 0, /* rung, nothing seen since */
	RING_ONCPU = 1,   /* woken and switched in: on-CPU sample taken */
	RING_WOKEN = 2,   /* sched_wakeup seen, not on a CPU yet */
	RING_RUNNING = 3, /* switched in without a wakeup: it never slept */
	RING_CLAIMED = 4, /* a marker, not a ring: the worker took a host's
			     wake before that host's ring probe fired */
};

struct ring_val {
	__u64 ts;
	__u64 pool;
	__u32 lane;
	__u32 state;
};

struct call_key {
	__u64 pool;
	__u64 ticket;
};

struct call_val {
	__u64 enq_ts;
	__u64 start_ts;
	__u32 lane;
	__u32 pad;
};

struct arm_val {
	__u64 ts;
	__u64 pool;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, struct park_val);
} parked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, struct ring_val);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_LANES);
	__type(key, struct kt_lane_key);
	__type(value, __u32);
} lanetid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_CALLS);
	__type(key, struct call_key);
	__type(value, struct call_val);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_LANES);
	__type(key, struct kt_lane_key);
	__type(value, __u64);
} stops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_THREADS);
	__type(key, __u32);
	__type(value, struct arm_val);
} arms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_LANES);
	__type(key, struct kt_lane_key);
	__type(value, struct kt_counts);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_HISTS);
	__type(key, struct kt_hist_key);
	__type(value, struct kt_hist);
} hists SEC(".maps");

/* Zero values to seed map entries with (too big for the 512-byte stack). */
static const struct kt_hist zero_hist;
static const struct kt_counts zero_counts;

static __always_inline __u32 cur_tid(void) { return (__u32)bpf_get_current_pid_tgid(); }

/* Should a probe for (pool, lane) be looked at? In a worker process *pool
 * becomes the host's pool id first. lane KT_LANE_POOL passes the
 * lane filter (pool-level probes have no lane), and so does KT_LANE_SHARED (a
 * call in the shared submit queue has no lane until a worker starts it). */
static __always_inline bool wanted(__u64 *pool, __u32 lane)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct kt_proc *pv = bpf_map_lookup_elem(&procs, &tgid);

	if (pv) {
		/* A worker process: its view stands for the host's pool. The
		 * loader does not know the view of a worker it found running:
		 * the first probe names it (a worker has one view). */
		if (pv->host_pool && !pv->view)
			pv->view = *pool;
		if (pv->host_pool && *pool == pv->view)
			*pool = pv->host_pool;
	} else if (filter_tgid && !bpf_map_lookup_elem(&hosts, &tgid)) {
		return false;
	}
	if (targ_pool && *pool != targ_pool)
		return false;
	if (filter_lane && lane != KT_LANE_POOL && lane != KT_LANE_SHARED && lane != targ_lane)
		return false;
	return true;
}

static __always_inline struct kt_counts *counts_of(__u64 pool, __u32 lane)
{
	struct kt_lane_key key = {.pool = pool, .lane = lane};
	struct kt_counts *c;

	c = bpf_map_lookup_elem(&counts, &key);
	if (!c) {
		bpf_map_update_elem(&counts, &key, &zero_counts, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&counts, &key);
	}
	return c;
}

static __always_inline void count(__u64 pool, __u32 lane, __u32 ev)
{
	struct kt_counts *c;

	if (ev >= KT_NR_EVENTS)
		return;
	c = counts_of(pool, lane);
	if (c)
		__sync_fetch_and_add(&c->ev[ev], 1);
}

/* The lane of a synchronous-line call's id, or KT_LANE_POOL for a ticket. */
static __always_inline __u32 line_lane(__u64 id)
{
	__u32 lo = (__u32)id;

	return lo >= KT_LINE_ID_BASE ? lo - KT_LINE_ID_BASE : KT_LANE_POOL;
}

/* floor(log2(v)) for v > 0; 0 for v == 0. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffULL) << 5;
	v >>= shift;
	r |= shift;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline void record(__u64 pool, __u32 lane, __u32 view, __u64 start, __u64 now)
{
	struct kt_hist_key key = {.pool = pool, .lane = lane, .view = view};
	struct kt_hist *h;
	__u64 delta, old;
	__u32 slot;
	int i;

	if (now < start)
		return;
	delta = now - start;
	h = bpf_map_lookup_elem(&hists, &key);
	if (!h) {
		bpf_map_update_elem(&hists, &key, &zero_hist, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h)
			return;
	}
	slot = log2_u64(delta);
	if (slot >= KT_MAX_SLOTS)
		slot = KT_MAX_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, delta);
	/* min/max: a bounded CAS loop; losing to a concurrent update is only
	 * possible 4 times in a row under heavy contention, and then the
	 * other CPU's value stands, which is as good. */
	for (i = 0; i < 4; i++) {
		old = h->max_ns;
		if (old >= delta || __sync_val_compare_and_swap(&h->max_ns, old, delta) == old)
			break;
	}
	for (i = 0; i < 4; i++) {
		old = h->min_ns;
		if ((old != 0 && old <= delta) ||
		    __sync_val_compare_and_swap(&h->min_ns, old, delta) == old)
			break;
	}
}

SEC("usdt")
int BPF_USDT(worker_park, __u64 pool, __u32 lane, __u64 wake_seq)
{
	struct kt_lane_key lk = {.pool = pool, .lane = lane};
	struct park_val pv = {.ts = bpf_ktime_get_ns()};
	__u32 tid = cur_tid();
	struct ring_val *rv;

	(void)wake_seq;
	if (!wanted(&pool, lane))
		return 0;
	lk.pool = pool;
	count(pool, lane, KT_EV_WORKER_PARK);
	/* A marker still here when the worker parks again belongs to a ring
	 * fired before we attached: left, the next ring would take it, and
	 * every later one the marker of the wake before it. */
	rv = bpf_map_lookup_elem(&rings, &tid);
	if (rv && rv->state == RING_CLAIMED)
		bpf_map_delete_elem(&rings, &tid);
	bpf_map_update_elem(&parked, &tid, &pv, BPF_ANY);
	bpf_map_update_elem(&lanetid, &lk, &tid, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(worker_wake, __u64 pool, __u32 lane, __u32 reason)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = cur_tid();
	struct park_val *pv;
	struct ring_val *rv;

	if (!wanted(&pool, lane))
		return 0;
	switch (reason) {
	case KT_REASON_RUNG:
		count(pool, lane, KT_EV_WAKE_RUNG);
		break;
	case KT_REASON_WATCHDOG:
		count(pool, lane, KT_EV_WAKE_WATCHDOG);
		break;
	case KT_REASON_SPURIOUS:
		count(pool, lane, KT_EV_WAKE_SPURIOUS);
		break;
	case KT_REASON_STOP:
		count(pool, lane, KT_EV_WAKE_STOP);
		break;
	default:
		count(pool, lane, KT_EV_WAKE_OTHER);
		break;
	}
	pv = bpf_map_lookup_elem(&parked, &tid);
	if (pv) {
		record(pool, lane, KT_VIEW_PARK, pv->ts, now);
		bpf_map_delete_elem(&parked, &tid);
	}
	rv = bpf_map_lookup_elem(&rings, &tid);
	if (!rv && (reason == KT_REASON_RUNG || reason == KT_REASON_STOP)) {
		/* A host claimed this wake but its ring probe has not fired
		 * yet (the probe follows the claim): leave a marker for it.
		 * NOEXIST: the ring probe may be inserting on another CPU right
		 * now; whichever insert loses sees the other's entry. */
		struct ring_val mark = {
			.ts = now, .pool = pool, .lane = lane, .state = RING_CLAIMED};

		if (!bpf_map_update_elem(&rings, &tid, &mark, BPF_NOEXIST))
			return 0;
		rv = bpf_map_lookup_elem(&rings, &tid); /* the ring won the race */
	}
	if (rv && rv->state != RING_CLAIMED) {
		/* A ring stamped after our `now` won the insert race above: the
		 * worker took that wake before the host's ring probe ran, as
		 * with a marker. Recorded as a latency, the negative sample
		 * would be dropped and the ring counted nowhere. */
		if (rv->ts > now)
			count(rv->pool, rv->lane, KT_EV_RING_AFTER_WAKE);
		else
			record(rv->pool, rv->lane, KT_VIEW_WAKE_PROBE, rv->ts, now);
		if (rv->state != RING_ONCPU)
			count(rv->pool, rv->lane, KT_EV_RING_RUNNING);
		bpf_map_delete_elem(&rings, &tid);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(host_ring, __u64 pool, __u32 lane, __s32 target_tid)
{
	struct kt_lane_key lk = {.pool = pool, .lane = lane};
	struct ring_val rv = {.pool = pool, .lane = lane, .state = RING_PENDING};
	struct ring_val *old;
	__u32 *known, tid;

	if (!wanted(&pool, lane))
		return 0;
	lk.pool = pool;
	rv.pool = pool;
	count(pool, lane, KT_EV_HOST_RING);
	known = bpf_map_lookup_elem(&lanetid, &lk);
	tid = known ? *known : (__u32)target_tid;
	if (!tid)
		return 0;
	/* NOEXIST first: a plain lookup-then-update would overwrite the
	 * marker of a worker whose wake probe (on another CPU) slipped in
	 * between, losing this ring from every view. */
	rv.ts = bpf_ktime_get_ns();
	if (!bpf_map_update_elem(&rings, &tid, &rv, BPF_NOEXIST))
		return 0;
	old = bpf_map_lookup_elem(&rings, &tid);
	if (old && old->state == RING_CLAIMED && old->pool == pool && old->lane == lane) {
		/* The worker already woke with this ring: it never slept. */
		count(pool, lane, KT_EV_RING_AFTER_WAKE);
		count(pool, lane, KT_EV_RING_RUNNING);
		bpf_map_delete_elem(&rings, &tid);
		return 0;
	}
	bpf_map_update_elem(&rings, &tid, &rv, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(doorbell_arm, __u64 pool)
{
	struct arm_val av = {.ts = bpf_ktime_get_ns(), .pool = pool};
	__u32 tid = cur_tid();

	if (!wanted(&pool, KT_LANE_POOL))
		return 0;
	av.pool = pool;
	count(pool, KT_LANE_POOL, KT_EV_DOORBELL_ARM);
	bpf_map_update_elem(&arms, &tid, &av, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(doorbell_ring, __u64 pool, __u32 lane)
{
	if (!wanted(&pool, lane))
		return 0;
	count(pool, lane, KT_EV_DOORBELL_RING);
	return 0;
}

SEC("usdt")
int BPF_USDT(doorbell_wake, __u64 pool)
{
	__u32 tid = cur_tid();
	struct arm_val *av;

	if (!wanted(&pool, KT_LANE_POOL))
		return 0;
	count(pool, KT_LANE_POOL, KT_EV_DOORBELL_WAKE);
	av = bpf_map_lookup_elem(&arms, &tid);
	if (av && av->pool == pool) {
		record(pool, KT_LANE_POOL, KT_VIEW_DOORBELL, av->ts, bpf_ktime_get_ns());
		bpf_map_delete_elem(&arms, &tid);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(task_enqueue, __u64 pool, __u32 lane, __u64 ticket)
{
	struct call_key ck = {.pool = pool, .ticket = ticket};
	struct call_val cv = {.enq_ts = bpf_ktime_get_ns(), .lane = lane};
	__u32 line = line_lane(ticket);

	/* A synchronous-line call names the shared pseudo-lane in a steal pool
	 * (as every call there does), but it is on its line's lane. */
	if (line != KT_LANE_POOL)
		lane = cv.lane = line;
	if (!wanted(&pool, lane))
		return 0;
	ck.pool = pool;
	/* A steal pool's shared queue is not a lane: its enqueues count at pool
	 * level; task_start gives the call its lane (cv.lane until then). */
	count(pool, lane == KT_LANE_SHARED ? KT_LANE_POOL : lane, KT_EV_TASK_ENQUEUE);
	if (line != KT_LANE_POOL)
		count(pool, lane, KT_EV_SYNC_ENQUEUE);
	bpf_map_update_elem(&calls, &ck, &cv, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(task_start, __u64 pool, __u32 lane, __u64 ticket)
{
	struct call_key ck = {.pool = pool, .ticket = ticket};
	__u64 now = bpf_ktime_get_ns();
	struct call_val *cv;

	if (!wanted(&pool, lane))
		return 0;
	ck.pool = pool;
	count(pool, lane, KT_EV_TASK_START);
	cv = bpf_map_lookup_elem(&calls, &ck);
	if (cv) {
		if (cv->enq_ts)
			record(pool, lane, KT_VIEW_QUEUE, cv->enq_ts, now);
		cv->start_ts = now;
		cv->lane = lane;
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(task_done, __u64 pool, __u32 lane, __u64 ticket, __s32 status)
{
	struct call_key ck = {.pool = pool, .ticket = ticket};
	struct call_val *cv;

	if (!wanted(&pool, lane))
		return 0;
	ck.pool = pool;
	count(pool, lane, KT_EV_TASK_DONE);
	if (status != 0)
		count(pool, lane, KT_EV_TASK_FAILED);
	cv = bpf_map_lookup_elem(&calls, &ck);
	if (cv && cv->start_ts)
		record(pool, lane, KT_VIEW_SERVICE, cv->start_ts, bpf_ktime_get_ns());
	return 0;
}

SEC("usdt")
int BPF_USDT(task_complete, __u64 pool, __u64 ticket, __s32 status)
{
	struct call_key ck = {.ticket = ticket};
	struct call_val *cv;
	__u64 host_pool = pool;

	(void)status;
	/* The pool (and process) filter first, without the lane filter: that
	 * one goes by the lane the call ran on. */
	if (!wanted(&host_pool, KT_LANE_POOL))
		return 0;
	ck.pool = host_pool;
	pool = host_pool;
	cv = bpf_map_lookup_elem(&calls, &ck);
	/* The lane filter applies through the lane the call ran on (the lane it
	 * was enqueued on, or under steal the one whose task_start took it). A
	 * filtered-out call's entry is dropped all the same. */
	if (filter_lane && (!cv || cv->lane != targ_lane)) {
		if (cv)
			bpf_map_delete_elem(&calls, &ck);
		return 0;
	}
	count(pool, KT_LANE_POOL, KT_EV_TASK_COMPLETE);
	if (line_lane(ticket) != KT_LANE_POOL)
		count(pool, KT_LANE_POOL, KT_EV_SYNC_COMPLETE);
	if (cv) {
		/* Completed without ever starting (cancelled, expired) while in
		 * the shared queue: a pool-level sample. */
		if (cv->enq_ts)
			record(pool, cv->lane == KT_LANE_SHARED ? KT_LANE_POOL : cv->lane,
			       KT_VIEW_CALL, cv->enq_ts, bpf_ktime_get_ns());
		bpf_map_delete_elem(&calls, &ck);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(stop_request, __u64 pool, __u32 lane)
{
	struct kt_lane_key lk = {.pool = pool, .lane = lane};
	__u64 now = bpf_ktime_get_ns();

	if (!wanted(&pool, lane))
		return 0;
	lk.pool = pool;
	count(pool, lane, KT_EV_STOP_REQUEST);
	bpf_map_update_elem(&stops, &lk, &now, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(stop_ack, __u64 pool, __u32 lane)
{
	struct kt_lane_key lk = {.pool = pool, .lane = lane};
	__u64 *ts;

	if (!wanted(&pool, lane))
		return 0;
	lk.pool = pool;
	count(pool, lane, KT_EV_STOP_ACK);
	ts = bpf_map_lookup_elem(&stops, &lk);
	if (ts) {
		record(pool, lane, KT_VIEW_STOP, *ts, bpf_ktime_get_ns());
		bpf_map_delete_elem(&stops, &lk);
	}
	return 0;
}

/* A worker process of a traced host (its parent) starts: from now on its
 * probes count under the host's pool. Also its lane's worker tid, for the
 * host's rings (the tid learnt from a previous worker is stale). */
SEC("usdt")
int BPF_USDT(proc_worker_start, __u64 view, __u32 lane, __u64 host_pool)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct kt_lane_key lk = {.pool = host_pool, .lane = lane};
	struct kt_proc pv = {.host_pool = host_pool, .view = view, .lane = lane};
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;

	pv.host_tgid = BPF_CORE_READ(task, real_parent, tgid);
	if (filter_tgid && !bpf_map_lookup_elem(&hosts, &pv.host_tgid))
		return 0;
	bpf_map_update_elem(&procs, &tgid, &pv, BPF_ANY);
	if (targ_pool && host_pool != targ_pool)
		return 0;
	if (filter_lane && lane != targ_lane)
		return 0;
	count(host_pool, lane, KT_EV_PROC_START);
	bpf_map_update_elem(&lanetid, &lk, &tid, BPF_ANY);
	return 0;
}

/* The host reaped a worker process: count its end by cause. */
SEC("usdt")
int BPF_USDT(proc_worker_exit, __u64 pool, __u32 lane, __u32 cause, __s32 code)
{
	struct kt_counts *c;
	__u32 ev;

	if (!wanted(&pool, lane))
		return 0;
	switch (cause) {
	case KT_EXIT_STOPPED:
		ev = KT_EV_PROC_STOPPED;
		break;
	case KT_EXIT_SIGNAL:
		ev = KT_EV_PROC_SIGNAL;
		break;
	case KT_EXIT_STATUS:
		ev = KT_EV_PROC_STATUS;
		break;
	case KT_EXIT_KILLED:
		ev = KT_EV_PROC_KILLED;
		break;
	case KT_EXIT_PROTO:
		ev = KT_EV_PROC_PROTO;
		break;
	case KT_EXIT_OOM:
		ev = KT_EV_PROC_OOM;
		break;
	case KT_EXIT_SANDBOX:
		ev = KT_EV_PROC_SANDBOX;
		break;
	default:
		ev = KT_EV_PROC_OTHER;
		break;
	}
	c = counts_of(pool, lane);
	if (!c)
		return 0;
	__sync_fetch_and_add(&c->ev[ev], 1);
	if (ev == KT_EV_PROC_SIGNAL && code >= 1 && code <= 64)
		__sync_fetch_and_or(&c->signals, 1ULL << (code - 1));
	return 0;
}

/* A worker process ended: forget it (its pid may be reused). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(kt_sched_process_exit, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid), leader = BPF_CORE_READ(p, tgid);

	if (tid == leader)
		bpf_map_delete_elem(&procs, &leader);
	return 0;
}

/*
 * A rung worker counts as "on a CPU" when the scheduler switches it in after
 * the ring. If it is switched in without having been woken (it was runnable,
 * preempted, not asleep) or never switched at all before its wake probe, the
 * ring found it running: no on-CPU sample, KT_EV_RING_RUNNING instead.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(kt_sched_wakeup, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	struct ring_val *rv;

	rv = bpf_map_lookup_elem(&rings, &tid);
	if (rv && rv->state == RING_PENDING)
		rv->state = RING_WOKEN;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(kt_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct ring_val *rv;

	rv = bpf_map_lookup_elem(&rings, &tid);
	if (!rv)
		return 0;
	if (rv->state == RING_WOKEN) {
		record(rv->pool, rv->lane, KT_VIEW_WAKE_ONCPU, rv->ts, bpf_ktime_get_ns());
		rv->state = RING_ONCPU;
	} else if (rv->state == RING_PENDING) {
		rv->state = RING_RUNNING; /* back from a preemption, not a sleep */
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
