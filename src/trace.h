// SPDX-License-Identifier: MIT
// src/trace.h - libknitting's USDT probe points (provider "knitting").
//
// Each KNIT_TRACE_* macro is one statically defined tracepoint (sys/sdt.h):
// the compiled code is a single nop plus a note in the ELF section
// .note.stapsdt telling a tracer where the nop is and where each argument
// lives. Nothing runs unless a tracer (knit-trace(8), bpftrace, perf,
// systemtap) has placed a uprobe on it. We use the semaphore-less form (no
// _SDT_HAS_SEMAPHORES): there is no "is anybody listening" check to pay for,
// so a disabled probe costs exactly its nop and keeping its arguments in
// registers.
//
// Arguments are forced into registers or immediates (constraint "nr", not the
// default "nor"): libbpf's USDT argument decoder reads constants, registers
// and register+offset memory, but not every addressing mode the compiler may
// pick for an "o" operand, so a register is the form every consumer reads.
//
// Every argument has a fixed width, which is part of the probe ABI that
// tools/knit-trace relies on:
//   pool      u64  the knit_pool_t pointer, identifies the pool
//   lane      u32  lane index (worker lanes first, the inline lane last)
//   wake_seq  u64  the value of the worker's wake word it parks on
//   reason    u32  enum knit_trace_wake_reason
//   target    s32  kernel thread id of the worker being woken
//   ticket    u64  the call's knit_ticket_t
//   status    s32  0 or a negative KNIT_E* code
//   host_pool u64  in a worker process: the host's knit_pool_t pointer
//   cause     u32  enum knit_trace_exit_cause
//   code      s32  the signal number or exit status the worker ended with
//
// A knit_call served on a lane's synchronous line has no ticket: its
// task_enqueue, task_start, task_done and task_complete carry a line id
// instead, whose low 32 bits are KNIT_TRACE_LINE_ID_BASE + the lane (no
// ticket's low half reaches that base), so a tracer tells synchronous
// calls from ticketed ones and knows the line's lane from the id alone.
//
// A worker process (knit-worker, process pools) fires the same probes from
// its own copy of the library, but its `pool` is the address of its own
// view of the pool, meaningless in the host. Its proc_worker_start probe
// names the host's pool once, before any other probe of that process, so
// a tracer can report the worker's events under the host's pool. A tracer
// that attaches later finds the same id in the worker's boot record, which
// the worker carries hex-encoded as argv[2] (see KNIT_TRACE_BOOT_* below).
//
// Build with -DKNIT_NO_TRACE to compile every probe out (the arguments are
// still type-checked, never evaluated).
//
// This header is C and C++: the runtime includes it after src/common.h, the
// probe fixture in tests/trace/ and knit-trace.c include it directly.
#ifndef KNIT_SRC_TRACE_H
#define KNIT_SRC_TRACE_H

#include <stdint.h>

// Where a tracer finds the host in a worker process's boot record (the
// bytes hex-encoded in its argv[2], "--knit-boot" being argv[1]): a u32
// magic, the worker's lane (u32), the host's pid (s32) and the host's pool
// id (u64, as its probes report it), all in host byte order. src/proc.h
// asserts these offsets.
#define KNIT_TRACE_BOOT_MAGIC 0x6B6E6974u
#define KNIT_TRACE_BOOT_OFF_MAGIC 0
#define KNIT_TRACE_BOOT_OFF_LANE 16
#define KNIT_TRACE_BOOT_OFF_PPID 36
#define KNIT_TRACE_BOOT_OFF_HOST_POOL 40

// Why a parked worker woke up (worker_wake's reason argument).
enum knit_trace_wake_reason {
	KNIT_TRACE_WAKE_RUNG = 0,     // its wake word changed: the host rang it
	KNIT_TRACE_WAKE_WATCHDOG = 1, // park_ms elapsed with no ring
	KNIT_TRACE_WAKE_SPURIOUS = 2, // futex returned, wake word unchanged, no timeout
	KNIT_TRACE_WAKE_STOP = 3      // woken to acknowledge a stop request
};

// The low half of a synchronous-line call's id is this + its lane
// (src/syncline.h asserts it is the first value no ticket index reaches).
#define KNIT_TRACE_LINE_ID_BASE 0xFFFFFF00u

// How a worker process ended (proc_worker_exit's cause argument). The
// causes the pool counts as crashes (knit_pool_stats `crashes`) are
// SIGNAL, STATUS, PROTO, OOM and SANDBOX, when they happen while the pool runs.
enum knit_trace_exit_cause {
	KNIT_TRACE_EXIT_STOPPED = 0, // exited 0 after the host asked it to stop
	KNIT_TRACE_EXIT_SIGNAL = 1,  // died of a signal the pool did not send (code: the signal)
	KNIT_TRACE_EXIT_STATUS = 2,  // exited unasked or with a failure status (code: the status)
	// killed by the host: the hard timeout, no exit within the grace at
	// destroy, or a failed create
	KNIT_TRACE_EXIT_KILLED = 3,
	KNIT_TRACE_EXIT_PROTO = 4, // killed by the host for a protocol error
	// SIGKILLed by the kernel's OOM killer (the memory cgroup's oom_kill
	// count grew: KNIT_DEATH_OOM, knit_completion_info(3)); code: SIGKILL
	KNIT_TRACE_EXIT_OOM = 5,
	// killed by its sandbox's seccomp filter (KNIT_DEATH_SANDBOX); code:
	// the syscall's number as the worker reported it, -1 when it did not
	KNIT_TRACE_EXIT_SANDBOX = 6
};

#if defined(KNIT_NO_TRACE)

#define KNIT_TRACE_NOP1_(a) ((void)sizeof(a))
#define KNIT_TRACE_WORKER_PARK(pool, lane, wake_seq)                                               \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(wake_seq))
#define KNIT_TRACE_WORKER_WAKE(pool, lane, reason)                                                 \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(reason))
#define KNIT_TRACE_HOST_RING(pool, lane, target_tid)                                               \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(target_tid))
#define KNIT_TRACE_DOORBELL_ARM(pool) KNIT_TRACE_NOP1_(pool)
#define KNIT_TRACE_DOORBELL_RING(pool, lane) (KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane))
#define KNIT_TRACE_DOORBELL_WAKE(pool) KNIT_TRACE_NOP1_(pool)
#define KNIT_TRACE_TASK_ENQUEUE(pool, lane, ticket)                                                \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(ticket))
#define KNIT_TRACE_TASK_START(pool, lane, ticket)                                                  \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(ticket))
#define KNIT_TRACE_TASK_DONE(pool, lane, ticket, status)                                           \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(ticket),                 \
	 KNIT_TRACE_NOP1_(status))
#define KNIT_TRACE_TASK_COMPLETE(pool, ticket, status)                                             \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(ticket), KNIT_TRACE_NOP1_(status))
#define KNIT_TRACE_STOP_REQUEST(pool, lane) (KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane))
#define KNIT_TRACE_STOP_ACK(pool, lane) (KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane))
#define KNIT_TRACE_PROC_WORKER_START(pool, lane, host_pool)                                        \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(host_pool))
#define KNIT_TRACE_PROC_WORKER_EXIT(pool, lane, cause, code)                                       \
	(KNIT_TRACE_NOP1_(pool), KNIT_TRACE_NOP1_(lane), KNIT_TRACE_NOP1_(cause),                  \
	 KNIT_TRACE_NOP1_(code))

#else

#ifndef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT nr
#endif
#include <sys/sdt.h>

// Fixed-width argument conversions (see the table above).
#define KNIT_TRACE_POOL_(p) ((uint64_t)(uintptr_t)(p))
#define KNIT_TRACE_U32_(v) ((uint32_t)(v))
#define KNIT_TRACE_S32_(v) ((int32_t)(v))
#define KNIT_TRACE_U64_(v) ((uint64_t)(v))

// Worker `lane` of `pool` is about to futex-wait on its wake word, whose value
// it saw as `wake_seq`. Fired once per futex wait (== lane stats `parks`).
#define KNIT_TRACE_WORKER_PARK(pool, lane, wake_seq)                                               \
	DTRACE_PROBE3(knitting, worker_park, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),        \
		      KNIT_TRACE_U64_(wake_seq))

// Worker `lane` stopped being parked; `reason` is a knit_trace_wake_reason.
// Fires after every futex wait (so once per worker_park), and also when the
// worker finds, while re-checking before its futex wait, that a host already
// claimed its wake (no worker_park then). RUNG and STOP (a ring that came
// with a stop request) fire exactly where `wakes_received` counts, WATCHDOG
// where `watchdog_expiries` counts.
#define KNIT_TRACE_WORKER_WAKE(pool, lane, reason)                                                 \
	DTRACE_PROBE3(knitting, worker_wake, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),        \
		      KNIT_TRACE_U32_(reason))

// The host claimed the wake of worker `lane` (kernel tid `target_tid`),
// which announced it is parked, and is about to futex-wake it. Fires where
// `wakes_sent` counts, before the futex wake (so a tracer sees the ring
// before the scheduler wakes the worker).
#define KNIT_TRACE_HOST_RING(pool, lane, target_tid)                                               \
	DTRACE_PROBE3(knitting, host_ring, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),          \
		      KNIT_TRACE_S32_(target_tid))

// A waiting host armed the completion doorbell (== pool `doorbell_arms`).
#define KNIT_TRACE_DOORBELL_ARM(pool) DTRACE_PROBE1(knitting, doorbell_arm, KNIT_TRACE_POOL_(pool))

// Worker `lane` rang the host's doorbell (== lane `doorbell_rings`).
#define KNIT_TRACE_DOORBELL_RING(pool, lane)                                                       \
	DTRACE_PROBE2(knitting, doorbell_ring, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane))

// A host sleeping on the doorbell was woken by a ring (== pool `doorbell_wakes`).
#define KNIT_TRACE_DOORBELL_WAKE(pool)                                                             \
	DTRACE_PROBE1(knitting, doorbell_wake, KNIT_TRACE_POOL_(pool))

// Call `ticket` was placed in lane `lane`'s request queue.
#define KNIT_TRACE_TASK_ENQUEUE(pool, lane, ticket)                                                \
	DTRACE_PROBE3(knitting, task_enqueue, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),       \
		      KNIT_TRACE_U64_(ticket))

// Lane `lane` starts running call `ticket` (== lane `calls` once per call).
#define KNIT_TRACE_TASK_START(pool, lane, ticket)                                                  \
	DTRACE_PROBE3(knitting, task_start, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),         \
		      KNIT_TRACE_U64_(ticket))

// Lane `lane` finished running call `ticket`; `status` is the call's status
// as the worker sees it (0, -KNIT_ETASK, -KNIT_ETOOBIG).
#define KNIT_TRACE_TASK_DONE(pool, lane, ticket, status)                                           \
	DTRACE_PROBE4(knitting, task_done, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),          \
		      KNIT_TRACE_U64_(ticket), KNIT_TRACE_S32_(status))

// The host completed call `ticket` with `status` (exactly once per call).
#define KNIT_TRACE_TASK_COMPLETE(pool, ticket, status)                                             \
	DTRACE_PROBE3(knitting, task_complete, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U64_(ticket),    \
		      KNIT_TRACE_S32_(status))

// The host moved worker `lane`'s stop word RUNNING -> REQUESTED.
#define KNIT_TRACE_STOP_REQUEST(pool, lane)                                                        \
	DTRACE_PROBE2(knitting, stop_request, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane))

// Worker `lane` moved its stop word REQUESTED -> ACKNOWLEDGED.
#define KNIT_TRACE_STOP_ACK(pool, lane)                                                            \
	DTRACE_PROBE2(knitting, stop_ack, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane))

// A worker process built its view `pool` of the host's pool `host_pool` and
// is about to run lane `lane`'s worker loop. Fires once per worker process
// (so, summed over the lanes, == pool stats `spawns`), in the worker.
#define KNIT_TRACE_PROC_WORKER_START(pool, lane, host_pool)                                        \
	DTRACE_PROBE3(knitting, proc_worker_start, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),  \
		      KNIT_TRACE_U64_(host_pool))

// The host reaped the worker process of lane `lane` of its pool `pool`;
// `cause` is a knit_trace_exit_cause, `code` the signal or exit status.
// Fires once per reaped worker, in the host (summed over the lanes, ==
// pool stats `spawns` once every worker was reaped).
#define KNIT_TRACE_PROC_WORKER_EXIT(pool, lane, cause, code)                                       \
	DTRACE_PROBE4(knitting, proc_worker_exit, KNIT_TRACE_POOL_(pool), KNIT_TRACE_U32_(lane),   \
		      KNIT_TRACE_U32_(cause), KNIT_TRACE_S32_(code))

#endif // KNIT_NO_TRACE

#endif // KNIT_SRC_TRACE_H
