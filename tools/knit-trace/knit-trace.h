/* SPDX-License-Identifier: MIT */
/*
 * knit-trace.h - what knit-trace.bpf.c and knit-trace.c share: map keys and
 * values, the latency views, the counted probe events. Plain C with fixed
 * width types only, so the BPF object and the loader agree on every layout.
 */
#ifndef KNIT_TRACE_H
#define KNIT_TRACE_H

/* log2 buckets of nanoseconds: slot i holds [2^i, 2^(i+1)) ns, slot 0 also
 * holds 0; the last slot holds everything >= 2^(KT_MAX_SLOTS-1) ns (~9 min). */
#define KT_MAX_SLOTS 40

/* Stands for "no lane": probes that belong to the whole pool. */
#define KT_LANE_POOL 0xffffffffu
/* The lane argument of task_enqueue for a call put into the shared submit
 * queue of a steal pool (the library's kStealLane, src/steal.h): no lane yet.
 * The enqueue counts at pool level and the call belongs to the lane whose
 * task_start runs it; it never makes a row of its own. */
#define KT_LANE_SHARED 0xfffffffeu

/* Latency views (one log2 histogram each, per pool and lane). */
enum kt_view {
	KT_VIEW_WAKE_ONCPU = 0, /* host ring -> the rung worker thread is on a CPU */
	KT_VIEW_WAKE_PROBE,     /* host ring -> the worker's worker_wake probe */
	KT_VIEW_PARK,           /* worker_park -> worker_wake (time asleep) */
	KT_VIEW_QUEUE,          /* task_enqueue -> task_start (queue wait) */
	KT_VIEW_SERVICE,        /* task_start -> task_done (service time) */
	KT_VIEW_CALL,           /* task_enqueue -> task_complete (whole call) */
	KT_VIEW_STOP,           /* stop_request -> stop_ack */
	KT_VIEW_DOORBELL,       /* doorbell_arm -> doorbell_wake (host asleep); pool */
	KT_NR_VIEWS
};

/* Counted events, one counter each per pool and lane. */
enum kt_event {
	KT_EV_WORKER_PARK = 0,
	KT_EV_WAKE_RUNG,     /* worker_wake, reason 0 */
	KT_EV_WAKE_WATCHDOG, /* worker_wake, reason 1 */
	KT_EV_WAKE_SPURIOUS, /* worker_wake, reason 2 */
	KT_EV_WAKE_STOP,     /* worker_wake, reason 3 */
	KT_EV_WAKE_OTHER,    /* worker_wake, a reason this tool does not know */
	KT_EV_HOST_RING,
	KT_EV_RING_RUNNING,    /* a ring whose target woke without being scheduled in
				  (it had not gone to sleep yet) */
	KT_EV_RING_AFTER_WAKE, /* the worker took the wake before the host's ring
				  probe fired (it claimed the ring while re-checking
				  before its futex wait): no ring latency exists */
	KT_EV_DOORBELL_ARM,    /* pool-level */
	KT_EV_DOORBELL_RING,
	KT_EV_DOORBELL_WAKE, /* pool-level */
	KT_EV_TASK_ENQUEUE,
	KT_EV_TASK_START,
	KT_EV_TASK_DONE,
	KT_EV_TASK_FAILED,   /* task_done with status != 0 (also counted in DONE) */
	KT_EV_TASK_COMPLETE, /* pool-level */
	KT_EV_STOP_REQUEST,
	KT_EV_STOP_ACK,
	KT_EV_PROC_START,    /* a worker process started on the lane (process pools) */
	KT_EV_SYNC_ENQUEUE,  /* task_enqueue of a synchronous-line call (also in
				TASK_ENQUEUE), on the line's lane */
	KT_EV_SYNC_COMPLETE, /* pool-level: task_complete of one (also in TASK_COMPLETE) */
	/* proc_worker_exit, per lane, by cause (enum knit_trace_exit_cause) */
	KT_EV_PROC_STOPPED, /* exited 0 when asked to stop */
	KT_EV_PROC_SIGNAL,  /* died of a signal the pool did not send */
	KT_EV_PROC_STATUS,  /* exited unasked, or with a failure status */
	KT_EV_PROC_KILLED,  /* killed by the host (hard timeout, destroy, create) */
	KT_EV_PROC_PROTO,   /* killed by the host for a protocol error */
	KT_EV_PROC_OOM,     /* SIGKILLed by the kernel's OOM killer */
	KT_EV_PROC_SANDBOX, /* killed by its sandbox's seccomp filter */
	KT_EV_PROC_OTHER,   /* a cause this tool does not know */
	KT_NR_EVENTS
};

/* Must match enum knit_trace_exit_cause in src/trace.h (checked in knit-trace.c). */
#define KT_EXIT_STOPPED 0
#define KT_EXIT_SIGNAL 1
#define KT_EXIT_STATUS 2
#define KT_EXIT_KILLED 3
#define KT_EXIT_PROTO 4
#define KT_EXIT_OOM 5
#define KT_EXIT_SANDBOX 6

/* Must match KNIT_TRACE_LINE_ID_BASE in src/trace.h (checked in knit-trace.c):
 * a call id whose low half is this + lane is lane's synchronous line. */
#define KT_LINE_ID_BASE 0xFFFFFF00u

/* Must match enum knit_trace_wake_reason in src/trace.h (checked in knit-trace.c). */
#define KT_REASON_RUNG 0
#define KT_REASON_WATCHDOG 1
#define KT_REASON_SPURIOUS 2
#define KT_REASON_STOP 3

/* procs[tgid] (BPF map): a worker process of a traced host, and the host's
 * pool its probes stand for. Written by the BPF side at the worker's
 * proc_worker_start probe, or by the loader for a worker it finds running. */
struct kt_proc {
	__u64 host_pool; /* the host's pool id (0: not known, keep the view's) */
	__u64 view;      /* the worker's own pool address, as its probes name it
			    (0: not known yet, the first probe names it) */
	__u32 host_tgid;
	__u32 lane;
};

struct kt_lane_key {
	__u64 pool;
	__u32 lane; /* or KT_LANE_POOL */
	__u32 pad;
};

struct kt_hist_key {
	__u64 pool;
	__u32 lane; /* or KT_LANE_POOL */
	__u32 view; /* enum kt_view */
};

struct kt_hist {
	__u64 slots[KT_MAX_SLOTS];
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
};

struct kt_counts {
	__u64 ev[KT_NR_EVENTS];
	__u64 signals; /* bit n-1: a worker died of signal n (1..64), KT_EV_PROC_SIGNAL */
};

#endif /* KNIT_TRACE_H */
