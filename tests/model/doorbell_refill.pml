/* SPDX-License-Identifier: MIT */
/*
 * tests/model/doorbell_refill.pml - the refill doorbell of a steal pool
 * (src/wake.h "The refill doorbell", L1-L3; src/wake.cpp worker_ring(),
 * worker_park(); src/spin.cpp host_refill_recheck(); src/dispatch.cpp
 * sleep_recheck()).
 *
 * One host produces TOTAL calls into a submit lock of FULL lanes (the rest
 * wait in its backlog) and reaps the results; NW workers claim one call at
 * a time, run it and publish its result on their own return lock, which
 * holds RCAP results (a worker whose result finds no room keeps it and may
 * not claim until it went out). The host, when its pass found nothing to
 * return, arms the doorbell and sleeps:
 *   host:   armed = ANY, or (backlog and more than LOW lanes pending:
 *           either choice, the CPU look is a hint) armed = REFILL;
 *           fence(seq_cst); re-check; futex_wait(seq)
 *           re-check ANY: a result published;
 *                    REFILL: pending <= LOW, a worker parked for room, or
 *                            a parked worker with results published
 *   worker: claim (its ACK: claimed[w]++), run, publish (res[w]++);
 *           fence(seq_cst); a = armed;
 *           ring if a == ANY, or a == REFILL and pending <= LOW, where
 *           pending = placed - claimed[0] - claimed[1] read word by word
 *           (L1); the CAS armed a -> NONE claims the ring
 *   worker park (why = WORK: nothing pending; ROOM: a result waits):
 *           parked = why; fence(seq_cst); armed == REFILL -> ring (L2);
 *           re-check; block until a host wake (W1-W4: wake.pml)
 * Host wakes of parked workers after a refill or a reap are modelled as
 * their effect (the eventcount is wake.pml's proof), and so are the claim
 * (steal_claim.pml), the host's pass (reap, refill) and a publish: one
 * step each. The protocol's own words (armed, parked, the ACK words in a
 * re-check, res) are read one per step.
 *
 * Checked: the host never sleeps forever while it is needed (a refill, a
 * reap) -- a `timeout` while it sleeps is an assertion failure -- and every
 * call is completed exactly once (got == TOTAL, nothing left pending).
 *
 * Mutants (must FAIL):
 *   MUTANT_NO_PARK_RING     a parking worker does not ring (no L2): workers
 *                           whose results find no room (or who found nothing
 *                           left) leave the host asleep, since the claims that
 *                           crossed LOW published nothing to ring after
 *   MUTANT_NO_REFILL_RECHECK  the host's REFILL re-check sees nothing (no
 *                           L3): workers that parked between its pass and its
 *                           arm rang nobody
 *   MUTANT_RECHECK_BEFORE_ARM  the host re-checks, then stores armed (the
 *                           D1 order broken)
 * The three checks of L3 back each other up (a worker parked for work
 * before the arm means the lock ran down to 0 <= LOW since the refill),
 * so no single one is a mutant; neither is L1's mark (L2 rings anyway once
 * the workers run out): L1 is what makes the refill come early.
 */

/* check: safety | cc: -DSAFETY | pan: -m100000 */
/* check: mutant_no_park_ring | spin: -DMUTANT_NO_PARK_RING | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_no_refill_recheck | spin: -DMUTANT_NO_REFILL_RECHECK | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_recheck_before_arm | spin: -DMUTANT_RECHECK_BEFORE_ARM | cc: -DSAFETY | pan: -m100000 | expect: fail */

#ifndef TOTAL
#define TOTAL 5
#endif
#ifndef FULL
#define FULL 4
#endif
#ifndef LOW
#define LOW 1
#endif
#ifndef RCAP
#define RCAP 1
#endif
#define NW 2

#define NONE 0
#define ANY 1
#define REFILL 2

#define AWAKE 0
#define WORK 1
#define ROOM 2

byte placed = 0;          /* calls published into the submit lock (A) */
byte claimed[NW];         /* calls each worker claimed (its ACK word) */
byte res[NW];             /* results published, not reaped (return lock) */
byte held[NW];            /* a result that found no room (pend_count) */
byte parked[NW];          /* AWAKE, WORK, ROOM */
byte armed = NONE;
bit rung = 0;             /* the doorbell sequence moved since the host read it (D4) */
bit sleeping = 0;         /* the host is queued on the futex */
byte got = 0;             /* results the host reaped */

#define PENDING (placed - claimed[0] - claimed[1])

/* ring: claim with the CAS, bump the sequence, wake the sleeper */
inline ring(a)
{
	atomic {
		if
		:: armed == a -> armed = NONE; rung = 1; sleeping = 0
		:: else -> skip
		fi
	}
}

/* after a publish: fence(seq_cst), then D3 / L1 */
inline after_publish()
{
	a = armed;
	if
	:: a == ANY -> ring(ANY)
	:: a == REFILL ->
		/* pending() reads A and each ACK word by word */
		c0 = claimed[0];
		c1 = claimed[1];
		if :: placed - c0 - c1 <= LOW -> ring(REFILL) :: else -> skip fi;
		c0 = 0;
		c1 = 0
	:: else -> skip
	fi;
	a = 0
}

/* announce a park, fence(seq_cst), L2 */
inline announce(why)
{
	parked[w] = why;
#ifndef MUTANT_NO_PARK_RING
	if :: armed == REFILL -> ring(REFILL) :: else -> skip fi
#else
	skip
#endif
}

proctype worker(byte w)
{
	byte a, c0, c1;
	bit took;
loop:
	if
	:: got == TOTAL -> goto done
	:: else -> skip
	fi;
	if
	:: held[w] == 1 -> goto room
	:: else -> skip
	fi;
	/* claim one call (the claim protocol: steal_claim.pml) */
	atomic {
		took = 0;
		if
		:: PENDING > 0 -> claimed[w]++; took = 1
		:: else -> skip
		fi
	}
	if
	:: took == 0 -> goto park
	:: else -> skip
	fi;
	/* run it, then publish its result, or keep it (no room) */
	atomic {
		if
		:: res[w] < RCAP -> res[w]++
		:: else -> held[w] = 1
		fi
	}
	if
	:: held[w] == 1 -> goto room
	:: else -> after_publish()
	fi;
	goto loop;
room:
	announce(ROOM);
	/* re-check: room now? then publish it and go on */
	atomic {
		if
		:: res[w] < RCAP -> res[w]++; held[w] = 0; parked[w] = AWAKE
		:: else -> skip
		fi
	}
	if
	:: parked[w] == AWAKE -> after_publish(); goto loop
	:: else -> skip
	fi;
end_room:
	parked[w] == AWAKE; /* the host's reap wakes it */
	goto loop;
park:
	announce(WORK);
	atomic {
		if
		:: PENDING > 0 || got == TOTAL -> parked[w] = AWAKE
		:: else -> skip
		fi
	}
end_work:
	parked[w] == AWAKE; /* the host's refill wakes it */
	goto loop;
done:
	skip
}

active proctype host()
{
	byte backlog = TOTAL, k, i, before, mode;
	bit need;

	run worker(0);
	run worker(1);
	do
	:: got == TOTAL -> break
	:: else ->
		/* a pass: reap every return lock, wake who parked for room */
		before = got;
		atomic {
			i = 0;
			do
			:: i < NW ->
				got = got + res[i];
				res[i] = 0;
				if :: parked[i] == ROOM -> parked[i] = AWAKE :: else -> skip fi;
				i++
			:: else -> break
			od
		}
		/* refill the submit lock from the backlog, wake parked workers */
		atomic {
			k = FULL - PENDING;
			if :: k > backlog -> k = backlog :: else -> skip fi;
			placed = placed + k;
			backlog = backlog - k;
			if
			:: PENDING > 0 || got == TOTAL ->
				i = 0;
				do
				:: i < NW -> if :: parked[i] == WORK -> parked[i] = AWAKE :: else -> skip fi; i++
				:: else -> break
				od
			:: else -> skip
			fi
		}
		if
		:: got != before || got == TOTAL -> before = 0; k = 0 /* knit_complete returns */
		:: else ->
			/* sleep: D4 (read the sequence), arm, D1 fence, re-check */
			before = 0;
			k = 0;
			rung = 0;
			if
			:: backlog > 0 && PENDING > LOW -> mode = REFILL
			:: mode = ANY
			fi;
#ifndef MUTANT_RECHECK_BEFORE_ARM
			armed = mode;
#endif
			/* D1: fence(seq_cst), then the re-check (each word alone) */
			need = 0;
			if
			:: mode == REFILL ->
#ifndef MUTANT_NO_REFILL_RECHECK
				/* the ACK words one by one (A is the host's own) */
				k = claimed[0];
				before = claimed[1];
				if :: placed - k - before <= LOW -> need = 1 :: else -> skip fi;
				k = 0;
				before = 0;
				i = 0;
				do
				:: i < NW ->
					if
					:: parked[i] == ROOM -> need = 1
					:: parked[i] != AWAKE && res[i] > 0 -> need = 1
					:: else -> skip
					fi;
					i++
				:: else -> break
				od
#else
				skip
#endif
			:: else ->
				/* armed ANY, or a worker's CAS took it already */
				if :: res[0] > 0 || res[1] > 0 -> need = 1 :: else -> skip fi
			fi;
#ifdef MUTANT_RECHECK_BEFORE_ARM
			armed = mode;
#endif
			i = 0;
			mode = NONE;
			if
			:: need -> need = 0
			:: else ->
				/* futex_wait(&seq, s) */
				atomic {
					if :: rung == 0 -> sleeping = 1 :: else -> skip fi
				}
				if
				:: sleeping == 0 -> skip
				:: timeout -> assert(false) /* only a watchdog could wake us */
				fi
			fi
		fi
	od;
	assert(got == TOTAL && PENDING == 0 && backlog == 0)
}
