/* SPDX-License-Identifier: MIT */
/*
 * tests/model/wake.pml - the no-lost-wake park/wake handshake and the stop
 * word of a worker lane (src/wake.cpp worker_park() and lane_wake(), W1-W4
 * in src/wake.h; the re-check: src/worker.cpp park_recheck();
 * libknitting(7) "Parking and waking"; words: src/layout.h LANE BLOCK: wake
 * sequence, parked flag, stop word).
 *
 * Worker, every loop pass:
 *   top:  if stop == REQUESTED: stop = ACKNOWLEDGED, exit
 *         if the request queue has work: consume it, goto top
 *         s = load(seq)                    -- BEFORE announcing itself
 *         store(parked, 1); fence(seq_cst)
 *         if the queue has work: parked = 0, goto top
 *         if stop == REQUESTED: ack, exit  -- "before parking"
 *         futex_wait(&seq, s)              -- returns at once if seq != s
 *         parked = 0, goto top
 * Host, per published task and for the stop request:
 *         publish (store A) / store(stop, REQUESTED); fence(seq_cst)
 *         if load(parked) == 1: seq += 1 (atomic add); futex_wake(&seq)
 *
 * The queue is abstracted to two counters (published = the host's A,
 * consumed = the worker's B); "work pending" is published != consumed.
 * futex_wait is modelled exactly: the kernel compares seq with s and queues
 * the waiter in one atomic step; futex_wake wakes the queued waiter only.
 * The park timeout is only a watchdog: Promela's `timeout` (no process can
 * move) models "only the watchdog could wake the worker now", and firing it
 * is an assertion failure, so a pass proves the watchdog is never needed.
 *
 * Every Promela statement is sequentially consistent, i.e. the default model
 * has the seq_cst fences. NOFENCE_WORKER / NOFENCE_HOST drop one side's fence
 * and model the x86-TSO store buffer for that side's Dekker store (the store
 * may become visible after the following loads, at the latest at the next
 * locked instruction or syscall); both must fail.
 *
 * The host publishes up to TASKS tasks (interleaved with everything), then
 * either waits until all of them are consumed (a lost wake blocks it forever:
 * invalid end state / timeout) or requests stop at once with work still
 * queued; then it requests stop and waits for the acknowledgement. All runs
 * are finite (no loops without a host step), so "no invalid end state" means
 * every run ends with the work drained (when waited for) and the stop
 * acknowledged; the ltl runs (LTL_RUN: no watchdog assertion, a lost wake is
 * just a worker asleep forever) prove the same as liveness properties under
 * weak fairness, and their own mutants show they can fail.
 *
 * Mutants (each must fail):
 *   NOFENCE_WORKER          no fence between parked = 1 and the re-check
 *   NOFENCE_HOST            no fence between the publish and the parked load
 *   MUTANT_SEQ_AFTER_RECHECK worker reads seq after its re-check
 *   MUTANT_NO_SEQ_INC       waker calls futex_wake without bumping seq
 *   MUTANT_NO_STOP_RECHECK  worker does not look at stop before parking
 */

/* check: safety | cc: -DSAFETY | pan: -m10000 */
/* check: spurious_wakeups | spin: -DSPURIOUS | cc: -DSAFETY | pan: -m10000 */
/* check: ltl_work_drained | spin: -DLTL_RUN | cc: -DNOREDUCE | pan: -m20000 -a -f -N work_drained */
/* check: ltl_stop_acked | spin: -DLTL_RUN | cc: -DNOREDUCE | pan: -m20000 -a -f -N stop_acked */
/* check: ltl_stop_acked_spurious | spin: -DLTL_RUN -DSPURIOUS | cc: -DNOREDUCE | pan: -m20000 -a -f -N stop_acked */
/* check: ltl_nofence_worker | spin: -DLTL_RUN -DNOFENCE_WORKER | cc: -DNOREDUCE | pan: -m20000 -a -f -N work_drained | expect: fail */
/* check: ltl_mutant_no_stop_recheck | spin: -DLTL_RUN -DMUTANT_NO_STOP_RECHECK | cc: -DNOREDUCE | pan: -m20000 -a -f -N stop_acked | expect: fail */
/* check: nofence_worker | spin: -DNOFENCE_WORKER | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: nofence_host | spin: -DNOFENCE_HOST | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: mutant_seq_after_recheck | spin: -DMUTANT_SEQ_AFTER_RECHECK | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: mutant_no_seq_inc | spin: -DMUTANT_NO_SEQ_INC | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: mutant_no_stop_recheck | spin: -DMUTANT_NO_STOP_RECHECK | cc: -DSAFETY | pan: -m10000 | expect: fail */

#ifndef TASKS
#define TASKS 3
#endif

#define RUNNING 0
#define REQUESTED 1
#define ACKNOWLEDGED 2

byte published = 0; /* request lock A (abstracted to a count) */
byte consumed = 0;  /* request lock B (abstracted to a count) */
byte seq = 0;       /* wake sequence: the futex word */
bit parked = 0;     /* worker's "I am about to sleep" flag */
byte stop = RUNNING;

bit sleeping = 0; /* futex wait queue: the worker is queued on seq */
bit watchdog_fired = 0; /* ghost: the park timeout would have been needed */
bit host_waits = 0; /* ghost: the host chose to wait for its results */

#define pending (published != consumed)

/* futex_wake(&seq): wake the queued waiter, if any */
#define FUTEX_WAKE sleeping = 0

active proctype worker()
{
	byte s, a;
#ifdef NOFENCE_WORKER
	bit sb = 0; /* parked = 1 still in the store buffer */
#define W_DRAIN_MAYBE if :: sb -> parked = 1; sb = 0 :: true -> skip fi
#define W_DRAIN if :: sb -> parked = 1; sb = 0 :: else -> skip fi
#else
#define W_DRAIN_MAYBE skip
#define W_DRAIN skip
#endif

top:
	/* acknowledge stop at the top of every pass */
	if
	:: stop == REQUESTED -> stop = ACKNOWLEDGED; goto done
	:: else -> skip
	fi;
	/* check the queue: acquire load of A, drain, store B */
	if
	:: pending -> a = published; consumed = a; a = 0; goto top
	:: else -> skip
	fi;
#ifndef MUTANT_SEQ_AFTER_RECHECK
	s = seq; /* acquire: pairs with the host's add on seq */
#endif
#ifdef NOFENCE_WORKER
	sb = 1; /* parked = 1 sits in the store buffer: no fence */
#else
	parked = 1; /* seq_cst store + fence: pairs with the host's fence */
#endif
	/* re-check the queue, then stop, after announcing "parked" */
	W_DRAIN_MAYBE;
	if
	:: pending -> W_DRAIN; parked = 0; goto top
	:: else -> skip
	fi;
	W_DRAIN_MAYBE;
#ifndef MUTANT_NO_STOP_RECHECK
	if
	:: stop == REQUESTED -> W_DRAIN; parked = 0; stop = ACKNOWLEDGED; goto done
	:: else -> skip
	fi;
#endif
#ifdef MUTANT_SEQ_AFTER_RECHECK
	s = seq;
#endif
	/* futex_wait(&seq, s): the syscall drains the store buffer; the kernel
	 * compares and queues atomically */
	W_DRAIN;
	atomic {
		if
		:: seq == s -> sleeping = 1
		:: else -> skip
		fi
	}
	if
	:: sleeping == 0 -> skip
#ifdef SPURIOUS
	:: sleeping == 1 -> sleeping = 0 /* EINTR / spurious return */
#endif
#ifndef LTL_RUN
	:: timeout ->
		/* nothing else can move: only the watchdog would wake us */
		watchdog_fired = 1;
		assert(!watchdog_fired)
#endif
	fi;
	parked = 0;
	goto top;
done:
	skip
}

active proctype host()
{
	byte sent = 0;
	bit p;
#ifdef NOFENCE_HOST
	bit hb; /* the publish / stop store is still in the store buffer */
#endif

	do
	:: sent < TASKS ->
		/* publish one task: release store of A, then seq_cst fence,
		 * then the load of parked (Dekker with the worker) */
#ifdef NOFENCE_HOST
		hb = 1;
		if
		:: hb -> published++; hb = 0; p = parked
		:: true -> p = parked
		fi;
		if :: hb -> published++; hb = 0 :: else -> skip fi;
#else
		published++;
		p = parked;
#endif
		if
		:: p == 1 ->
#ifndef MUTANT_NO_SEQ_INC
			seq++;
#endif
			FUTEX_WAKE
		:: else -> skip
		fi;
		sent++
	:: sent > 0 -> break
	od;

	/* either wait for every result (a lost wake blocks here forever)
	 * or stop with work still queued */
	if
	:: host_waits = 1
	:: host_waits = 0
	fi;
	if
	:: host_waits -> !pending
	:: else -> skip
	fi;

	/* request stop, fence, wake if parked */
#ifdef NOFENCE_HOST
	hb = 1;
	if
	:: hb -> stop = REQUESTED; hb = 0; p = parked
	:: true -> p = parked
	fi;
	if :: hb -> stop = REQUESTED; hb = 0 :: else -> skip fi;
#else
	stop = REQUESTED;
	p = parked;
#endif
	if
	:: p == 1 ->
#ifndef MUTANT_NO_SEQ_INC
		seq++;
#endif
		FUTEX_WAKE
	:: else -> skip
	fi;
	/* join: the worker must acknowledge */
	stop == ACKNOWLEDGED;
	assert(!host_waits || !pending)
}

/* liveness under weak fairness (the ltl runs): work the host waits for is
 * drained, and stop is always acknowledged */
ltl work_drained { [] ((host_waits && pending) -> <> !pending) }
ltl stop_acked { <> (stop == ACKNOWLEDGED) }
