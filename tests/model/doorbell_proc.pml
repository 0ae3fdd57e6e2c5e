/* SPDX-License-Identifier: MIT */
/*
 * tests/model/doorbell_proc.pml - the doorbell of a process pool with ring
 * pages (src/wake.cpp ring_sleep() and worker_ring(), R1/R2 and D1-D4 in
 * src/wake.h; the pages: src/proc.h kRingBytes): per-worker ring words and a
 * vectored futex wait (futex_waitv), so a hostile worker cannot silence an
 * honest one. (Without futex_waitv the host keeps the 100 ms watchdog.)
 *
 * Words: worker i has its own armed[i] and seq[i]; the host has a private
 * host-event sequence (host events, H1/H2, are not modelled: they never
 * touch a worker's words). The honest worker 0 publishes RESULTS results:
 *   worker 0: A++ (release); fence(seq_cst)                       (D2)
 *             if CAS(armed[0], 1 -> 0): seq[0]++; wake             (D3)
 *   host:     s0 = seq[0]; s1 = seq[1] (acquire)                  (D4)
 *             armed[0] = 1; armed[1] = 1; fence(seq_cst)           (D1)
 *             if A != seen: drain
 *             else futex_waitv({seq[0], s0}, {seq[1], s1}): the kernel
 *                  compares every word and queues on all in one step
 * Worker 1 is hostile: any number (up to HOSTILE) of arbitrary writes to
 * ITS OWN words (clear or set armed[1], bump seq[1] and wake). Sequential
 * consistency (spin's interleaving): the TSO store-buffer variants of the
 * single-worker doorbell (doorbell.pml) are unchanged per worker.
 * `timeout` while the host sleeps = only a watchdog could wake it: fails.
 *
 * Checked: the host consumes every result of the honest worker whatever
 * the hostile one does to its own words.
 * Mutants (must FAIL):
 *   MUTANT_CLEAR_PEER  the hostile worker may also clear armed[0]: what a
 *                      worker process could do if the words lived in the
 *                      pool's memfd (every worker maps all of it read-write,
 *                      src/proc_worker.cpp), hence a page per worker that
 *                      only that worker is handed.
 *   MUTANT_SKIP_ARM    the host does not arm worker 0 before its sleep.
 *   MUTANT_SEQ_AFTER   the host reads seq[0] after arming and re-checking
 *                      (D4 after D1): a ring in between is lost.
 */

/* check: safety | cc: -DSAFETY | pan: -m100000 */
/* check: mutant_clear_peer | spin: -DMUTANT_CLEAR_PEER | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_skip_arm | spin: -DMUTANT_SKIP_ARM | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_seq_after | spin: -DMUTANT_SEQ_AFTER | cc: -DSAFETY | pan: -m100000 | expect: fail */

#ifndef RESULTS
#define RESULTS 3
#endif
#ifndef HOSTILE
#define HOSTILE 3
#endif

byte A = 0;          /* worker 0's results published (its return lock) */
bit armed[2];        /* armed[i]: worker i's own ring word */
byte seq[2];         /* seq[i]: worker i's own ring sequence (futex word) */
bit sleeping = 0;    /* the host is queued on every seq[i] (futex_waitv) */
byte got = 0;        /* ghost: results the host consumed */

active proctype honest()
{
	byte n = 0;
	do
	:: n == RESULTS -> break
	:: else ->
		A++; /* publish; the fence (D2) is sequential consistency here */
		atomic {
			if
			:: armed[0] == 1 -> armed[0] = 0; seq[0]++; sleeping = 0 /* D3: claim, bump, wake */
			:: else -> skip
			fi
		}
		n++
	od
}

active proctype hostile()
{
	byte k = 0;
	do
	:: k == HOSTILE -> break
	:: else ->
		if
		:: armed[1] = 0
		:: armed[1] = 1
		:: atomic { seq[1]++; sleeping = 0 } /* a spurious ring: its own syscall */
#ifdef MUTANT_CLEAR_PEER
		:: armed[0] = 0
#endif
		fi;
		k++
	od
}

active proctype host()
{
	byte seen = 0, s0, s1;
	do
	:: got == RESULTS -> break
	:: else ->
		if
		:: A != seen -> d_step { got = got + (A - seen); seen = A }
		:: else ->
#ifndef MUTANT_SEQ_AFTER
			s0 = seq[0]; s1 = seq[1]; /* D4 */
#endif
#ifndef MUTANT_SKIP_ARM
			armed[0] = 1;
#endif
			armed[1] = 1; /* D1; the fence is sequential consistency */
#ifdef MUTANT_SEQ_AFTER
			if
			:: A != seen -> skip
			:: else ->
				s0 = seq[0]; s1 = seq[1];
#else
			if
			:: A != seen -> skip /* the re-check found a result */
			:: else ->
#endif
				atomic {
					if
					:: seq[0] == s0 && seq[1] == s1 -> sleeping = 1
					:: else -> skip /* EAGAIN: some word moved */
					fi
				}
				if
				:: sleeping == 0 -> skip
				:: timeout -> assert(false) /* only a watchdog could wake us */
				fi
			fi
		fi
	od
}
