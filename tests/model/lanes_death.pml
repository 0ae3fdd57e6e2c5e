/* SPDX-License-Identifier: MIT */
/*
 * tests/model/lanes_death.pml - a process worker on the lanes topology dies
 * at any point; the host fails only the calls it started and runs the others
 * again (src/lane.cpp lane_lost and unstarted_calls, the started mask of
 * src/worker.cpp).
 *
 * The host places calls into one lane request lock (A its publish word, a
 * private mirror lastLocal; B the worker's retire word; lock2_queue.pml
 * proves the lock itself) and records, per slot, the call it carries
 * (rec[], known: lane_stage). The worker takes the pending slots of a fresh
 * A, and for each one: marks the slot in the shared started mask, runs the
 * call (the ghost runs[] counts executions: the task's side effect) and
 * stages its result; it retires the slots it ran with one store of B
 * (possibly early, in the middle of its snapshot), then clears their
 * started bits, then publishes the staged results with one store. The host
 * reaps published results (a completion each) and may kill the worker at
 * any moment; the kill takes effect between any two of its steps.
 *
 * After the death the host reaps what was published, then: the slots in
 * (lastLocal ^ B) & ~started & known whose recorded call is still on the
 * lane and not completed run again (on the respawned worker: modelled as
 * one run and one completion); every other call still on the lane
 * completes with -KNIT_ECRASHED; calls never placed run on the new worker.
 *
 * Checked (honest worker): every call completes exactly once; no call runs
 * twice; a call run again ran exactly once in all. HOSTILE: the dead worker
 * leaves any value in B and in the started mask: still exactly one
 * completion each, and no call runs more than twice.
 *
 * Mutants (each must make spin report an error):
 *   MUTANT_NO_STARTED          recovery ignores the started mask: the call
 *                              that was running (or ran, result unpublished,
 *                              slot not retired) runs again -> twice
 *   MUTANT_MARK_AFTER_RUN      the worker marks the slot after the task's
 *                              side effect -> a death in between: twice
 *   MUTANT_CLEAR_BEFORE_RETIRE the worker clears the started bits before its
 *                              store of B -> a death in between: twice
 *   MUTANT_NO_RECORD_CHECK     (HOSTILE) recovery re-runs a recorded slot's
 *                              call without checking it is still on the lane
 *                              and not completed -> a second completion
 */

/* check: safety | cc: -DSAFETY | pan: -m20000 */
/* check: lanes3_msgs6 | spin: -DMSGS=6 | cc: -DSAFETY | pan: -m20000 */
/* check: hostile | spin: -DHOSTILE | cc: -DSAFETY | pan: -m20000 */
/* check: mutant_no_started | spin: -DMUTANT_NO_STARTED | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_mark_after_run | spin: -DMUTANT_MARK_AFTER_RUN | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_clear_before_retire | spin: -DMUTANT_CLEAR_BEFORE_RETIRE | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_no_record_check | spin: -DHOSTILE -DMUTANT_NO_RECORD_CHECK | cc: -DSAFETY | pan: -m20000 | expect: fail */

#ifndef LANES
#define LANES 3 /* slots of the request lock (32 in the runtime) */
#endif
#ifndef MSGS
#define MSGS 5 /* calls (> LANES: slots are reused); at most 7 (res is a byte) */
#endif
#define FULL ((1 << LANES) - 1)
#define BIT(i) (1 << (i))

/* shared words */
byte A = 0;       /* host's publish word */
byte B = 0;       /* worker's retire word */
byte started = 0; /* worker's started mask (lane extension) */
byte slot[LANES]; /* the call a slot's frame names */
byte res = 0;     /* results published, bit m = call m (the return lock) */

/* host-private */
byte rec[LANES];       /* lane_stage's record: the call each slot carries */
byte known = 0;        /* slots recorded since the lane was set up */
bool onlane[MSGS + 1]; /* placed, frame not back (kHoldHostQueue, lane) */

/* ghost */
byte runs[MSGS + 1]; /* executions of each call */
byte done[MSGS + 1]; /* completions of each call */
bool again[MSGS + 1]; /* run again after the death */
bool dead = false;
bool gone = false;   /* the worker stopped (the host reaped the child) */

inline complete(m)
{
	done[m]++;
	assert(done[m] == 1)
}

inline reap()
{
	d_step {
		k = 1;
		do
		:: k > MSGS -> break
		:: else ->
			if
			:: (res & BIT(k)) != 0 && onlane[k] ->
				res = res & ~BIT(k);
				onlane[k] = false;
				complete(k)
			:: else -> skip
			fi;
			k++
		od
	}
}

active proctype host()
{
	byte lastLocal = 0, n = 1, i, k, m, unst, freeSet;
	do
	:: atomic {
		!dead && n <= MSGS && (~(lastLocal ^ B) & FULL) != 0 ->
			freeSet = ~(lastLocal ^ B) & FULL
	   };
		d_step {
			i = LANES - 1;
			do
			:: (freeSet & BIT(i)) != 0 -> break
			:: else -> i--
			od
		}
		slot[i] = n;
		rec[i] = n;
		known = known | BIT(i);
		onlane[n] = true;
		lastLocal = lastLocal ^ BIT(i);
		A = lastLocal;
		n++
	:: !dead && (res != 0) -> reap()
	:: !dead -> dead = true /* the kill (or the crash), at any point */
	:: dead -> break
	od;
	gone; /* on_death: the child is reaped */
#ifdef HOSTILE
	/* whatever the dead worker left in its words */
	k = 0;
	do
	:: k == LANES -> break
	:: else ->
		if
		:: B = B ^ BIT(k)
		:: started = started ^ BIT(k)
		:: skip
		fi;
		k++
	od;
#endif
	reap(); /* what it published is delivered first */
	/* lane_lost: the unstarted calls run again, the rest fail */
#ifdef MUTANT_NO_STARTED
	unst = (lastLocal ^ B) & known & FULL;
#else
	unst = (lastLocal ^ B) & ~started & known & FULL;
#endif
	i = 0;
	do
	:: i == LANES -> break
	:: else ->
		m = rec[i];
		if
#ifdef MUTANT_NO_RECORD_CHECK
		:: (unst & BIT(i)) != 0 ->
#else
		:: (unst & BIT(i)) != 0 && onlane[m] && done[m] == 0 ->
#endif
			onlane[m] = false;
			again[m] = true;
			runs[m]++; /* the respawned worker runs it */
			complete(m)
		:: else -> skip
		fi;
		i++
	od;
	m = 1;
	do
	:: m > MSGS -> break
	:: else ->
		if
		:: onlane[m] -> onlane[m] = false; complete(m) /* -KNIT_ECRASHED */
		:: else -> skip
		fi;
		m++
	od;
	/* calls never placed run on the new worker */
	do
	:: n > MSGS -> break
	:: else -> runs[n]++; complete(n); n++
	od;
	m = 1;
	do
	:: m > MSGS -> break
	:: else ->
		assert(done[m] == 1);
#ifdef HOSTILE
		assert(runs[m] <= 2);
#else
		assert(runs[m] <= 1);
		assert(!again[m] || runs[m] == 1);
#endif
		m++
	od
}

active proctype worker()
{
	byte mirror = 0, pend, taken = 0, staged = 0, i, v;
	{
		do
		:: atomic { (A ^ mirror) != 0 -> pend = A ^ mirror };
			do
			:: pend == 0 -> break
			:: else ->
				d_step {
					i = LANES - 1;
					do
					:: (pend & BIT(i)) != 0 -> break
					:: else -> i--
					od;
					pend = pend & ~BIT(i)
				}
				v = slot[i];
#ifdef MUTANT_MARK_AFTER_RUN
				runs[v]++;
				started = started | BIT(i);
#else
				started = started | BIT(i); /* before the task runs */
				runs[v]++; /* the task (its side effect) */
#endif
				staged = staged | BIT(v);
				taken = taken | BIT(i);
				if
				:: pend != 0 -> goto retire /* the early publish of a long batch */
				:: true -> skip
				fi;
next:				skip
			od;
retire:
			mirror = mirror ^ taken;
#ifdef MUTANT_CLEAR_BEFORE_RETIRE
			started = started & ~taken;
			B = mirror;
#else
			B = mirror; /* C3: the slots that ran are retired */
			started = started & ~taken; /* only then unmarked */
#endif
			taken = 0;
			res = res | staged; /* the results' publish (one store of A) */
			staged = 0;
			if
			:: pend != 0 -> goto next
			:: else -> skip
			fi
		od
	} unless { dead };
	gone = true
}
