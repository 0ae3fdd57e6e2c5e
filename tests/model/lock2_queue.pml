/* SPDX-License-Identifier: MIT */
/*
 * tests/model/lock2_queue.pml - the single-producer single-consumer lock2
 * lane protocol (src/lock2.h "Protocol"; the invariants are the asserts below).
 *
 * A is the producer's publish word, B the consumer's acknowledge word; lane i
 * is free iff bit i of A equals bit i of B. The producer keeps its own copy of
 * A (lastLocal) and a stale shadow of B that it reloads only when the lane it
 * wants is not free in its cached set; it fills the lanes in a ring, downwards
 * and wrapping, the lane below the one it filled last and only that one
 * (src/lock2.h "Order"), writes the slot payload (a message sequence number),
 * then publishes with one store of A. The
 * consumer loads A fresh on every pass, takes the pending lanes of that
 * snapshot in descending round-robin order (cursor), copies each payload out,
 * and retires every lane it took with one store of B; it may also retire the
 * lanes it has copied out so far in the middle of a pass (a worker's early
 * publish of a long batch), the rest of the snapshot still to come.
 *
 * Every Promela statement is one sequentially consistent step; the shared
 * words are A, B and slot[]. The lock2 protocol needs only release (A, B
 * stores) / acquire (A, B loads), and in a two-party message-passing protocol
 * in which each word has a single writer, SC and release/acquire give the same
 * outcomes, so this model is faithful for the real orderings.
 *
 * Waiting is modelled by blocking guards instead of spin loops: "consumer
 * polls A until something is pending" is `A != lastWorker` (a poll that would
 * see nothing new changes no state, so only the successful poll matters);
 * likewise the producer's backlog retry blocks until B moved.
 *
 * Checked: every message consumed exactly once and in the order produced
 * (FIFO: the n-th message consumed is message n), with the payload that was
 * published for that lane generation (no overwrite of live data); the producer
 * never writes or publishes a lane that is in flight; each retire flips only
 * in-flight bits; the consumer never blocks while a message is pending
 * (no invalid end state); at the end A == B and all messages consumed.
 *
 * Mutants (each must make spin report an error; run by check.sh):
 *   MUTANT_PUBLISH_FIRST  producer stores A before writing the slot
 *                         -> consumer reads a stale payload (assertion)
 *   MUTANT_STALE_LOCAL    producer computes its free set from the A it had at
 *                         its last shadow refresh instead of its current A
 *                         -> publishes into an in-flight lane (assertion)
 *   MUTANT_RETIRE_FRESH   consumer retires "load(A) ^ lastWorker" instead of
 *                         the lanes it took -> retires a message it never
 *                         consumed (assertion / lost message)
 *   MUTANT_EARLY_RETIRE_ALL an early retire also retires the lanes of the
 *                         snapshot not copied out yet (and drops them)
 *                         -> lost messages / stale payload
 *   MUTANT_CACHE_A        consumer loads A once and never again
 *                         -> consumer sleeps with work pending (invalid end)
 *   MUTANT_HIGHEST_FREE   producer fills the highest free lane, refreshing
 *                         its shadow only when no lane is free (the first
 *                         rule) -> a later message overtakes (FIFO assertion)
 *   MUTANT_RING_SKIPS_FAILED a stage that fails after picking its lane
 *                         (no arena room for the payload) leaves the ring
 *                         past that lane -> the free hole is filled after a
 *                         wrap, ahead of the consumer (FIFO assertion)
 * Not a bug (spin proves it safe, see README): MUTANT_CACHE_A_REFRESH_ON_EMPTY,
 * a consumer that caches A and reloads it only when its cached pending set is
 * empty (a cached pending lane cannot change until the consumer retires it).
 */

/* check: safety | cc: -DSAFETY | pan: -m20000 */
/* check: lanes4 | spin: -DLANES=4 -DMSGS=12 | cc: -DSAFETY | pan: -m20000 */
/* check: mutant_publish_first | spin: -DMUTANT_PUBLISH_FIRST | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_stale_local | spin: -DMUTANT_STALE_LOCAL | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_retire_fresh | spin: -DMUTANT_RETIRE_FRESH | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_early_retire_all | spin: -DMUTANT_EARLY_RETIRE_ALL | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_cache_a | spin: -DMUTANT_CACHE_A | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_highest_free | spin: -DMUTANT_HIGHEST_FREE | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_ring_skips_failed | spin: -DMUTANT_RING_SKIPS_FAILED | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: cache_a_refresh_on_empty_is_safe | spin: -DMUTANT_CACHE_A_REFRESH_ON_EMPTY | cc: -DSAFETY | pan: -m20000 */

#ifndef LANES
#define LANES 3 /* lanes per lock (32 in the runtime) */
#endif
#ifndef MSGS
#define MSGS 7 /* messages produced: > 2 x LANES, so lanes are reused */
#endif
#define FULL ((1 << LANES) - 1)
#define BIT(i) (1 << (i))

byte A = 0;       /* producer's publish toggles */
byte B = 0;       /* consumer's retire toggles */
byte slot[LANES]; /* lane payload: the message's sequence number 1..MSGS */

/* ghost state (not part of the protocol) */
byte pubval[LANES];     /* message published in the lane's current generation */
byte consumed[MSGS + 1];/* times each message was consumed */
byte nconsumed = 0;
byte reuse[LANES];      /* publishes per lane (to see generations wrap) */
bool producer_done = false;

active proctype producer()
{
	byte lastLocal = 0; /* == A: the producer is A's only writer */
	byte shadow = 0;    /* stale copy of B */
	byte atRefresh = 0; /* lastLocal when shadow was last refreshed (mutant) */
	byte freeSet, n = 1, i;
	byte ring = LANES - 1; /* the next lane to fill */
	byte want;             /* the lanes it may fill now */

	do
	:: n > MSGS -> break
	:: else ->
		/* step 1: cached free set; refresh the shadow only when it is empty */
#ifdef MUTANT_STALE_LOCAL
		freeSet = ~(atRefresh ^ shadow) & FULL;
#else
		freeSet = ~(lastLocal ^ shadow) & FULL;
#endif
#if defined(MUTANT_HIGHEST_FREE)
		want = FULL;
#else
		want = BIT(ring);
#endif
		if
		:: (freeSet & want) == 0 ->
			shadow = B; /* acquire load of B */
			atRefresh = lastLocal;
			freeSet = ~(lastLocal ^ shadow) & FULL;
			if
			:: (freeSet & want) == 0 ->
				/* no lane for us (the ring's is busy): the task is
				 * backlogged and retried; a retry before B moves would
				 * find the same state */
				B != shadow;
				goto retry
			:: else -> skip
			fi
		:: else -> skip
		fi;
		/* step 3: the lane */
		d_step {
#if defined(MUTANT_HIGHEST_FREE)
			i = LANES - 1;
			do
			:: (freeSet & BIT(i)) != 0 -> break
			:: else -> i--
			od
#else
			i = ring;
			ring = (ring + LANES - 1) % LANES
#endif
		}
		/* The payload may not fit (arena full, src/lock2.cpp stage_slow):
		 * nothing is written, the lane stays free and the ring goes back
		 * to it; the stage is retried. */
		if
		:: true ->
#ifndef MUTANT_RING_SKIPS_FAILED
			ring = i;
#endif
			goto retry
		:: true -> skip
		fi;
		/* the lane is truly free (A_i == B_i): never overwrite live data */
		assert(((A ^ B) & BIT(i)) == 0);
		lastLocal = lastLocal ^ BIT(i);
#ifdef MUTANT_PUBLISH_FIRST
		d_step { A = lastLocal; pubval[i] = n; reuse[i]++ }
		slot[i] = n;
#else
		slot[i] = n; /* step 4-5: payload and header (plain stores) */
		/* step 6: publish, one (release) store of A; the ghost records
		 * which message this lane generation carries */
		d_step {
			assert(((A ^ B) & BIT(i)) == 0); /* publishing a free lane */
			A = lastLocal;
			pubval[i] = n;
			reuse[i]++
		}
#endif
		n++;
retry:		skip
	od;
	producer_done = true
}

active proctype consumer()
{
	byte lastWorker = 0; /* == B: the consumer is B's only writer */
	byte cursor = LANES; /* last lane taken; LANES = none yet */
	byte pend, taken, i, v, k;
#if defined(MUTANT_CACHE_A) || defined(MUTANT_CACHE_A_REFRESH_ON_EMPTY)
	byte cachedA = 0;
#endif

	do
	:: nconsumed == MSGS -> break /* ghost: the bounded run is over */
#if defined(MUTANT_CACHE_A)
	:: (cachedA ^ lastWorker) != 0 -> pend = cachedA ^ lastWorker;
#elif defined(MUTANT_CACHE_A_REFRESH_ON_EMPTY)
	:: atomic { (cachedA ^ lastWorker) == 0 && (A ^ lastWorker) != 0 -> cachedA = A };
	:: (cachedA ^ lastWorker) != 0 -> pend = cachedA ^ lastWorker;
#else
		/* step 1: pending = load(A) ^ lastWorker, fresh every pass (one
		 * acquire load; the poll is a blocking guard) */
	:: atomic { (A ^ lastWorker) != 0 -> pend = A ^ lastWorker };
#endif
		taken = 0;
		/* step 2-3: every lane of this snapshot, descending round robin */
		do
		:: pend == 0 -> break
		:: else ->
			d_step {
				/* highest pending lane strictly below the cursor, else
				 * the highest pending lane */
				i = 255;
				k = cursor;
				do
				:: k == 0 -> break
				:: else -> k--; if :: (pend & BIT(k)) != 0 -> i = k; break :: else -> skip fi
				od;
				if
				:: i == 255 ->
					k = LANES;
					do
					:: (pend & BIT(k - 1)) != 0 -> i = k - 1; break
					:: else -> k--
					od
				:: else -> skip
				fi;
				cursor = i;
				pend = pend & ~BIT(i);
				k = 0
			}
			v = slot[i]; /* copy the payload out */
			d_step {
				assert(v >= 1 && v <= MSGS);
				assert(v == pubval[i]); /* what this generation carried */
				assert(v == nconsumed + 1); /* FIFO */
				consumed[v]++;
				assert(consumed[v] == 1); /* exactly once */
				nconsumed++
			}
			taken = taken | BIT(i);
			/* the early publish of a long batch (src/worker.cpp
			 * run_batch): the consumer may retire the lanes it has
			 * consumed so far, one (release) store of B, and go on
			 * with the rest of the snapshot */
			if
			:: pend != 0 ->
#ifdef MUTANT_EARLY_RETIRE_ALL
				taken = taken | pend;
#endif
				lastWorker = lastWorker ^ taken;
				d_step {
					assert(((A ^ B) & taken) == taken);
					B = lastWorker
				}
#ifdef MUTANT_EARLY_RETIRE_ALL
				pend = 0;
#endif
				taken = 0
			:: true -> skip
			fi
		od;
		/* step 4: retire every lane of the pass with one (release) store */
#ifdef MUTANT_RETIRE_FRESH
		taken = (A ^ lastWorker) & FULL;
#endif
		lastWorker = lastWorker ^ taken;
		d_step {
			assert(((A ^ B) & taken) == taken); /* only in-flight bits */
			B = lastWorker
		}
	od;

	/* the end: everything drained */
	producer_done;
	assert(A == B);
	k = 1;
	do
	:: k > MSGS -> break
	:: else -> assert(consumed[k] == 1); k++
	od
}
