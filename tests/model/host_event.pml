/* SPDX-License-Identifier: MIT */
/*
 * tests/model/host_event.pml - a new earliest deadline against a host thread
 * going to sleep on the doorbell sequence (src/api.cpp enqueue(),
 * src/wake.cpp host_doorbell_sleep() and host_event(), H1/D1 in src/wake.h).
 *
 * A host thread blocked in knit_complete / knit_call / knit_stop(DRAIN)
 * sleeps until the earliest call deadline it read, or without a deadline
 * when there is none (there is no periodic watchdog). A thread that enqueues
 * a call with a deadline must therefore either be seen by the sleeper's
 * re-check or see the sleeper and bump the sequence it sleeps on:
 *   enqueuer: store(earliest, D)   (under mu: the unlock is only a release)
 *             fence(seq_cst)
 *             if load(host_waiters) != 0: seq += 1; futex_wake(&seq)
 *   sleeper:  s = load(seq)        -- BEFORE announcing itself
 *             host_waiters += 1; fence(seq_cst)
 *             if load(earliest) set: sleep until it (a timed wait: it ends)
 *             else futex_wait(&seq, s) without a deadline
 *             host_waiters -= 1
 * futex_wait is exact: compare-and-queue is one atomic step. A sleeper
 * blocked with no deadline while the earliest deadline is set and nobody
 * will bump seq is a lost wake: spin reports it as an invalid end state.
 *
 * Memory-model variants (x86-TSO store buffer for the Dekker store of one
 * side; on aarch64 / riscv64 the relaxed load may likewise pass the store):
 *   NOFENCE_ENQUEUE  the enqueuer's store of earliest may pass its load of
 *                    host_waiters (the code before the fence was added)
 *                    -> must FAIL
 *   NOFENCE_HOST     the sleeper's increment may pass its load of earliest
 *                    -> must FAIL
 * Mutant (must FAIL):
 *   MUTANT_SEQ_AFTER_CHECK  the sleeper reads seq after its re-check
 */

/* check: safety | cc: -DSAFETY | pan: -m10000 */
/* check: nofence_enqueue | spin: -DNOFENCE_ENQUEUE | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: nofence_host | spin: -DNOFENCE_HOST | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: mutant_seq_after_check | spin: -DMUTANT_SEQ_AFTER_CHECK | cc: -DSAFETY | pan: -m10000 | expect: fail */

#ifndef SLEEPERS
#define SLEEPERS 2
#endif
#ifndef ENQUEUERS
#define ENQUEUERS 2
#endif

byte seq = 0;     /* doorbell sequence (futex word) */
byte waiters = 0; /* host_waiters */
byte earliest = 0; /* earliest deadline: 0 = none, else set */

proctype enqueuer()
{
	byte w;
#ifdef NOFENCE_ENQUEUE
	if
	:: earliest = 1; w = waiters
	:: w = waiters; earliest = 1
	fi;
#else
	earliest = 1;
	/* fence(seq_cst): pairs with the sleeper's fence */
	w = waiters;
#endif
	if
	:: w != 0 -> seq++ /* atomic add, then FUTEX_WAKE (all waiters) */
	:: else -> skip
	fi
}

proctype sleeper()
{
	byte s;
	bit plan;
	do
	:: earliest != 0 -> break /* a pass sees the deadline: done */
	:: else ->
#ifndef MUTANT_SEQ_AFTER_CHECK
		s = seq;
#endif
#ifdef NOFENCE_HOST
		if
		:: waiters++; plan = earliest
		:: plan = earliest; waiters++
		fi;
#else
		waiters++;
		/* fence(seq_cst): pairs with the enqueuer's fence */
		plan = earliest;
#endif
#ifdef MUTANT_SEQ_AFTER_CHECK
		s = seq;
#endif
		if
		:: plan != 0 -> skip /* timed sleep until the deadline: it ends */
		:: else -> seq != s  /* futex_wait(&seq, s): exact compare-and-queue */
		fi;
		waiters--
	od
}

init
{
	byte i;
	atomic {
		i = 0;
		do
		:: i < SLEEPERS -> run sleeper(); i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < ENQUEUERS -> run enqueuer(); i++
		:: else -> break
		od
	}
}
