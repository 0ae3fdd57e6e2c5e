/* SPDX-License-Identifier: MIT */
/*
 * tests/model/doorbell.pml - the host doorbell on a worker's return lock
 * (src/wake.cpp host_doorbell_sleep() and worker_ring(), D1-D4 in
 * src/wake.h; the re-check: src/dispatch.cpp sleep_recheck(); libknitting(7) "Parking and waking"; word: src/layout.h LANE
 * BLOCK doorbell word).
 *
 * On the return lock the worker is the producer (publish word A) and the host
 * the consumer (ack word B, private mirror lw). When the host has drained
 * everything it goes idle:
 *   host:   store(armed, 1); fence(seq_cst)
 *           if load(A) != lw: not-equal, go drain        (user-space compare)
 *           futex_wait(&A, lw)     -- the kernel compares A with lw again
 *           store(armed, 0); go drain
 *   worker: publish a result: store(A) (flip a free lane's bit); fence(seq_cst)
 *           if load(armed) == 1: futex_wake(&A)          (ring)
 * futex_wait is exact: compare-and-queue is one atomic step, a wake reaches
 * only a queued waiter. `timeout` (nothing else can move) while the host
 * sleeps means only the watchdog could wake it: an assertion failure.
 *
 * Checked: the host never sleeps forever while a result is pending (the
 * worker publishes RESULTS results through LANES lanes and blocks when all are
 * in flight, the host must consume them all: no timeout, no invalid end
 * state); a ring happens only if the host was armed at some moment since the
 * worker's publish became visible (ghost armed_since_pub).
 *
 * Memory-model variants (x86-TSO store buffer for one store; drained at the
 * next syscall or locked instruction):
 *   NOFENCE_WORKER  worker's A store may pass its armed load -> must FAIL
 *   NOFENCE_HOST    host's armed store may pass its user-space A load. This
 *                   one PASSES: the sleep decision is the kernel's compare of
 *                   A itself, and futex_wait orders the prior armed store
 *                   before that compare (syscall / futex-internal full
 *                   barrier). The runtime keeps the fence anyway (idle path
 *                   only, and it keeps the proof independent of the kernel).
 * Mutants (must FAIL):
 *   MUTANT_RING_BEFORE_PUBLISH  worker checks armed and rings before storing A
 *   MUTANT_WAIT_SEEN_A          host waits for A to change from the value it
 *                               loaded after arming, not from its ack mirror
 *   MUTANT_ALWAYS_RING          worker rings without looking at armed
 */

/* check: safety | cc: -DSAFETY | pan: -m10000 */
/* check: nofence_host_is_safe | spin: -DNOFENCE_HOST | cc: -DSAFETY | pan: -m10000 */
/* check: nofence_worker | spin: -DNOFENCE_WORKER | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: mutant_ring_before_publish | spin: -DMUTANT_RING_BEFORE_PUBLISH | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: mutant_wait_seen_a | spin: -DMUTANT_WAIT_SEEN_A | cc: -DSAFETY | pan: -m10000 | expect: fail */
/* check: mutant_always_ring | spin: -DMUTANT_ALWAYS_RING | cc: -DSAFETY | pan: -m10000 | expect: fail */

#ifndef LANES
#define LANES 2
#endif
#ifndef RESULTS
#define RESULTS 4
#endif
#define FULL ((1 << LANES) - 1)
#define BIT(i) (1 << (i))

byte A = 0;       /* return lock publish word (worker) */
byte B = 0;       /* return lock ack word (host) */
bit armed = 0;    /* doorbell word (host) */
bit sleeping = 0; /* futex queue on A: the host is queued */
bit watchdog_fired = 0; /* ghost: the park timeout would have been needed */

/* ghost */
byte got = 0;            /* results the host consumed */
bit armed_since_pub = 0; /* host armed at some moment since the last visible publish */
byte rings = 0;

/* popcount of a lane mask (LANES <= 8) */
inline popcount(m, c)
{
	c = (((m) >> 0) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1) + (((m) >> 3) & 1) +
	    (((m) >> 4) & 1) + (((m) >> 5) & 1) + (((m) >> 6) & 1) + (((m) >> 7) & 1)
}

active proctype worker()
{
	byte lastLocal = 0, shadow = 0, freeSet, n = 0, i;
	bit p;
#ifdef NOFENCE_WORKER
	bit sb = 0; /* the A store is still in the store buffer */
#define W_DRAIN if :: sb -> d_step { A = lastLocal; armed_since_pub = armed; sb = 0 } :: else -> skip fi
#endif

	do
	:: n == RESULTS -> break
	:: else ->
		freeSet = ~(lastLocal ^ shadow) & FULL;
		if
		:: freeSet == 0 ->
			/* the host is consuming: refresh the stale copy of B */
#ifdef NOFENCE_WORKER
			W_DRAIN; /* the retry loop's next locked op / the buffer drains */
#endif
			B != shadow; /* blocks while nothing was retired */
			shadow = B;
			freeSet = ~(lastLocal ^ shadow) & FULL
		:: else -> skip
		fi;
		d_step {
			i = LANES - 1;
			do
			:: (freeSet & BIT(i)) != 0 -> break
			:: else -> i--
			od;
			lastLocal = lastLocal ^ BIT(i)
		}
#ifdef MUTANT_RING_BEFORE_PUBLISH
		p = armed;
		if :: p -> rings++; sleeping = 0 :: else -> skip fi;
		d_step { A = lastLocal; armed_since_pub = 1 }; /* ghost: no ring follows it */
#else
		/* publish (release store of A) + fence(seq_cst): pairs with the
		 * host's fence between its armed store and its compare of A */
#ifdef NOFENCE_WORKER
		sb = 1;
		if
		:: W_DRAIN; p = armed
		:: p = armed; W_DRAIN
		fi;
#else
		d_step { A = lastLocal; armed_since_pub = armed };
		p = armed;
#endif
#ifdef MUTANT_ALWAYS_RING
		p = 1;
#endif
		if
		:: p ->
			/* ring: futex_wake(&A) */
			d_step {
				assert(armed_since_pub); /* a ring only if armed */
				rings++;
				sleeping = 0
			}
		:: else -> skip
		fi;
#endif
		n++
	od;
#ifdef NOFENCE_WORKER
	W_DRAIN
#endif
}

active proctype host()
{
	byte lw = 0, a, c;

	do
	:: got == RESULTS -> break /* ghost: the bounded run is over */
	:: else ->
		/* drain: acquire load of A, consume every pending lane, one
		 * release store of B */
		a = A;
		if
		:: a != lw ->
			d_step { popcount(a ^ lw, c); got = got + c; c = 0 };
			lw = a;
			B = lw
		:: else ->
			/* idle: arm, fence, compare, sleep */
#ifdef NOFENCE_HOST
			/* the armed store may pass the user-space load of A; the
			 * futex syscall drains it before the kernel's compare */
			if
			:: d_step { armed = 1; armed_since_pub = 1 }; a = A
			:: a = A; d_step { armed = 1; armed_since_pub = 1 }
			fi;
#else
			d_step { armed = 1; armed_since_pub = 1 };
			a = A;
#endif
#ifdef MUTANT_WAIT_SEEN_A
			lw = a; /* wait for "a change", not for "differs from my mirror" */
#endif
			if
			:: a != lw -> skip /* not-equal: results raced the arm */
			:: else ->
				/* futex_wait(&A, lw) */
				atomic {
					if
					:: A == lw -> sleeping = 1
					:: else -> skip
					fi
				}
				if
				:: sleeping == 0 -> skip
				:: timeout -> watchdog_fired = 1; assert(!watchdog_fired) /* only the watchdog could wake us */
				fi
			fi;
#ifdef MUTANT_WAIT_SEEN_A
			lw = B; /* (the mutant keeps its real mirror elsewhere) */
#endif
			armed = 0
		fi
	od;
	assert(A == B && A == lw)
}
