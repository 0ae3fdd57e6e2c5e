/* SPDX-License-Identifier: MIT */
/*
 * tests/model/doorbell_refill_lanes.pml - the refill doorbell of a lanes
 * pool (src/wake.h "The refill doorbell", L1-L3 with their lanes clauses;
 * src/wake.cpp worker_ring() / refill_low(), worker_park(); src/spin.cpp
 * host_refill_recheck() / lane_low(); src/dispatch.cpp sleep_recheck()).
 * doorbell_refill.pml is the steal pool's; here each worker has its own
 * request lane of FULL slots.
 *
 * One host places TOTAL calls into the workers' lanes, at most FULL calls
 * placed and not yet reaped per lane (the rest wait in its backlog), and
 * reaps the results; worker w runs the calls of its own lane one at a time:
 * it retires the frame (B: retired[w]++), then publishes its result on its
 * return lock, which holds RCAP results (a worker whose result finds no
 * room keeps it and goes on only once it went out). The host, when its pass
 * found nothing to return, arms the doorbell and sleeps:
 *   host:   armed = ANY, or (backlog and every lane above LOW frames
 *           published and not retired: either choice, the CPU look is a
 *           hint) armed = REFILL; fence(seq_cst); re-check; futex_wait(seq)
 *           re-check ANY: a result published;
 *                    REFILL: a lane at or below LOW (its B read afresh),
 *                            a worker parked for room, or a parked worker
 *                            with results published
 *   worker: retire (B), publish (res[w]++); fence(seq_cst); a = armed;
 *           ring if a == ANY, or a == REFILL and its own lane holds LOW or
 *           fewer (placed[w], a fresh load of A, minus retired[w]) (L1);
 *           the CAS armed a -> NONE claims the ring
 *   worker park (why = WORK: its lane is empty; ROOM: a result waits):
 *           parked = why; fence(seq_cst); armed == REFILL -> ring (L2);
 *           re-check; block until a host wake (W1-W4: wake.pml)
 * Host wakes of parked workers after a placement or a reap are modelled as
 * their effect (the eventcount is wake.pml's proof), and so are the host's
 * pass (reap, place) and a worker's take: one step each. The protocol's own
 * words (armed, parked, B, res) are read one per step.
 *
 * Checked: the host never sleeps forever while it is needed (a refill, a
 * reap) -- a `timeout` while it sleeps is an assertion failure -- every call
 * is completed exactly once (got == TOTAL, nothing left in a lane); and the
 * point of L1 and the lanes clause of L3: no worker finds its lane empty and
 * parks for work while the host sleeps armed for a refill (the refill is
 * asked for before a lane runs dry, not after).
 *
 * Mutants (must FAIL):
 *   MUTANT_NO_PARK_RING     a parking worker does not ring (no L2): a worker
 *                           whose result finds no room leaves the host asleep
 *   MUTANT_NO_REFILL_RECHECK  the host's REFILL re-check sees nothing (no L3)
 *   MUTANT_RECHECK_BEFORE_ARM  the host re-checks, then stores armed (the D1
 *                           order broken)
 *   MUTANT_NO_LANE_MARK     a worker's publish never rings a REFILL arm (no
 *                           L1): its lane runs dry under a sleeping host
 *                           (L2 still wakes it, one park late)
 *   MUTANT_NO_LANE_RECHECK  the REFILL re-check skips the lanes' levels: a
 *                           lane that crossed LOW between the host's choice
 *                           and its arm rang nobody
 *   MUTANT_COUNT_BEFORE_RETIRE  the worker reads its lane's level before its
 *                           retire (a stale B): the retire that crosses LOW
 *                           does not ring
 */

/* check: safety | cc: -DSAFETY | pan: -m100000 */
/* check: low0 | spin: -DLOW=0 -DFULL=2 -DTOTAL=5 | cc: -DSAFETY | pan: -m100000 */
/* check: room_fits | spin: -DRCAP=3 | cc: -DSAFETY | pan: -m100000 */
/* check: mutant_no_park_ring | spin: -DMUTANT_NO_PARK_RING | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_no_refill_recheck | spin: -DMUTANT_NO_REFILL_RECHECK | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_recheck_before_arm | spin: -DMUTANT_RECHECK_BEFORE_ARM | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_no_lane_mark | spin: -DMUTANT_NO_LANE_MARK -DRCAP=3 | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_no_lane_recheck | spin: -DMUTANT_NO_LANE_RECHECK -DRCAP=3 | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_count_before_retire | spin: -DMUTANT_COUNT_BEFORE_RETIRE -DLOW=0 -DFULL=2 -DTOTAL=5 -DRCAP=3 | cc: -DSAFETY | pan: -m100000 | expect: fail */

#ifndef TOTAL
#define TOTAL 7
#endif
#ifndef FULL
#define FULL 3
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

byte placed[NW];          /* calls published into lane w (its A) */
byte retired[NW];         /* frames worker w retired (its B) */
byte res[NW];             /* results published, not reaped (return lock) */
byte held[NW];            /* a result that found no room (pend_count) */
byte parked[NW];          /* AWAKE, WORK, ROOM */
byte armed = NONE;
bit rung = 0;             /* the doorbell sequence moved since the host read it (D4) */
bit sleeping = 0;         /* the host is queued on the futex */
byte got = 0;             /* results the host reaped */

#define QUEUED(w) (placed[w] - retired[w])

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

/* after a publish: fence(seq_cst), then D3 / L1 (q: the level read) */
inline after_publish()
{
	a = armed;
	if
	:: a == ANY -> ring(ANY)
	:: a == REFILL ->
#ifndef MUTANT_NO_LANE_MARK
#ifndef MUTANT_COUNT_BEFORE_RETIRE
		q = placed[w] - retired[w]; /* a fresh load of A; B is our own */
#endif
		if :: q <= LOW -> ring(REFILL) :: else -> skip fi
#else
		skip
#endif
	:: else -> skip
	fi;
	a = 0;
	q = 0
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
	byte a, q;
loop:
	if
	:: got == TOTAL -> goto done
	:: else -> skip
	fi;
	if
	:: held[w] == 1 -> goto room
	:: else -> skip
	fi;
	/* take the next frame of our lane (C1), or park */
	if
	:: QUEUED(w) == 0 -> goto park
	:: else -> skip
	fi;
#ifdef MUTANT_COUNT_BEFORE_RETIRE
	q = placed[w] - retired[w];
#endif
	/* run it; retire its frame (C3: release store of B) */
	retired[w]++;
	/* publish its result (P1), or keep it (no room) */
	atomic {
		if
		:: res[w] < RCAP -> res[w]++
		:: else -> held[w] = 1
		fi
	}
	if
	:: held[w] == 1 -> q = 0; goto room
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
	/* the point of L1 and L3's lanes clause: a host armed for a refill
	 * was rung (or never slept) before our lane ran dry */
	atomic { assert(!(QUEUED(w) == 0 && sleeping == 1 && armed == REFILL)) };
	announce(WORK);
	atomic {
		if
		:: QUEUED(w) > 0 || got == TOTAL -> parked[w] = AWAKE
		:: else -> skip
		fi
	}
end_work:
	parked[w] == AWAKE; /* the host's placement wakes it */
	goto loop;
done:
	skip
}

active proctype host()
{
	byte backlog = TOTAL, k, i, before, mode;
	byte out[NW];  /* host-private: calls placed on lane w and not reaped */
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
				out[i] = out[i] - res[i];
				res[i] = 0;
				if :: parked[i] == ROOM -> parked[i] = AWAKE :: else -> skip fi;
				i++
			:: else -> break
			od
		}
		/* place from the backlog into every lane with room (P1), then
		 * wake its worker if it parked for work (W1) */
		atomic {
			i = 0;
			do
			:: i < NW ->
				k = FULL - out[i];
				if :: k > backlog -> k = backlog :: else -> skip fi;
				placed[i] = placed[i] + k;
				out[i] = out[i] + k;
				backlog = backlog - k;
				if
				:: (QUEUED(i) > 0 || got == TOTAL) && parked[i] == WORK -> parked[i] = AWAKE
				:: else -> skip
				fi;
				i++
			:: else -> break
			od;
			k = 0
		}
		if
		:: got != before || got == TOTAL -> before = 0 /* knit_complete returns */
		:: else ->
			/* sleep: D4 (read the sequence), arm, D1 fence, re-check */
			before = 0;
			rung = 0;
			if
			:: backlog > 0 && QUEUED(0) > LOW && QUEUED(1) > LOW -> mode = REFILL
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
				i = 0;
				do
				:: i < NW ->
#ifndef MUTANT_NO_LANE_RECHECK
					/* L3, lanes: B afresh (A is the host's own) */
					k = retired[i];
					if :: placed[i] - k <= LOW -> need = 1 :: else -> skip fi;
					k = 0;
#endif
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
	assert(got == TOTAL && backlog == 0 && QUEUED(0) == 0 && QUEUED(1) == 0)
}
