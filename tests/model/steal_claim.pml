/* SPDX-License-Identifier: MIT */
/*
 * tests/model/steal_claim.pml - work stealing on one submit lock: one
 * producer, N consumers, the region-Dekker claim (the steps and why it is
 * exactly once: src/steal.h; words: src/layout.h STEAL CONTROL BLOCK).
 *
 * Shared words: A (producer), ACK[c] and WANT[c] (consumer c only), DEAD
 * (host only; bit c = consumer c gone; zero = all alive, the complement of the
 * reference's LIVE mask), slot[] payloads (producer), and, for the death
 * handling (REAP_CLAIM), CLAIM[c]: the lanes consumer c has taken and not yet
 * retired, stored by c in the same 64-bit word as ACK[c].
 *
 * Consumer c, one claim attempt (src/steal.h "The claim"):
 *   1 pending = load(A) ^ lw ^ XOR load(ACK[p]) (p != c), one load per step
 *   2 pending regions        3 live = ~load(DEAD); peer/senior intents from
 *   4 skip senior intents; prefer regions nobody wants     load(WANT[p])
 *   5 the candidate region of the oldest pending lane: the first met
 *     walking down from the producer's ring cursor RING (loaded after A)
 *   6 store WANT[c] = 1<<r (seq_cst)
 *   7 check every peer live now (DEATH: DEAD loaded again after the WANT
 *     store): senior has r -> withdraw (WANT = 0);
 *     junior only -> wait until no currently live junior has r
 *   8 take = fresh pending & mask(r)   (0 -> WANT = 0, give up), then
 *     only its oldest lane (ring order from a fresh load of RING): a claim
 *     takes ONE call (MUTANT_HOARD: the whole region, the old protocol)
 *     [REAP_CLAIM: store CLAIM[c] = take, one 64-bit store with ACK[c]]
 *   9 decode each lane of take, oldest first
 *  10 lw ^= take; store ACK[c] = lw (and CLAIM[c] = 0 in the same store)
 *  11 store WANT[c] = 0; then the consumer starts what it took, in order
 *
 * The producer fills the first free lane at or below its ring cursor RING
 * (walking down, wrapping) and moves RING below it; it stores RING, then A.
 * Every Promela step does at most one access to a shared protocol word;
 * purely local computation and branching ride along with the step before
 * them (invisible to the other parties, so this loses no interleaving), and
 * ghost state may be read or written. All steps are sequentially consistent,
 * as the protocol requires for the WANT store / peer WANT loads (a Dekker
 * pair: seq_cst store + loads, or a seq_cst fence between them).
 *
 * A failed attempt (nothing pending, senior intent, senior conflict, empty
 * take) blocks until some other party has written a control word since the
 * attempt began (ghost `chg`): a retry before that would read the same values
 * and fail the same way, so this removes only futile spinning and makes a
 * consumer that could spin forever show up as an invalid end state. The
 * `_no_livelock` runs (-DNP, pan -l, no progress labels, no fairness) find
 * no cycle at all: every execution is finite, so "no invalid end state"
 * means every execution ends with all tasks resolved, under any scheduler.
 *
 * Parameters: N consumers (2, 3), G lanes per region, REGIONS (default
 * N + 1, the runtime's rule), TASKS published by the producer (more than
 * LANES = G * REGIONS makes lanes carry a second generation); PREPUBLISH:
 * the producer publishes everything before the consumers start.
 *
 * Checked (assertions + no invalid end state):
 *   - every lane generation is decoded at most once, with the payload the
 *     producer published for it; every task is, by the end, either decoded
 *     once or reported lost to the dead consumer (and then only if that
 *     consumer had recorded it as taken), never both by a survivor and lost;
 *   - region mutual exclusion between step 8 and step 11 (ghost owner[]);
 *   - a decoded lane is in flight; the producer only writes free lanes;
 *   - a claim decodes the oldest in-flight lane of its region (ghost
 *     pubval = publish order; MUTANT_TAKE_LOWEST takes the lowest lane);
 *   - BUSY: consumer BUSYC, once it has started a call, stays in it until
 *     every task has started (a long task the test releases at the end):
 *     the others must start everything else, so no claim may hold a call
 *     its claimant has not started (MUTANT_HOARD: it does, and the run
 *     ends with BUSYC stuck: an invalid end state);
 *   - progress: no deadlock, every consumer ends (all tasks resolved);
 *     A == XOR ACK at the end (everything retired).
 *
 * Death (DEATH): consumer DEADC may die at any point of a claim (after WANT,
 * during the junior wait, after owning the region, after take, after CLAIM,
 * after each decode, after ACK before the WANT clear) or while idle; or,
 * waiting for a junior, withdraw (WANT = 0) and then leave: a worker asked
 * to stop (src/steal.h, set_stop_word). The host
 * reaper then runs once the worker has exited:
 *   REAP_CLAIM (the runtime's protocol): load ACK/CLAIM of the dead consumer
 *     (one 64-bit load); report every CLAIM lane's task lost (its call fails
 *     with an error); store ACK ^= CLAIM, CLAIM = 0 on its behalf (the dead
 *     consumer will never write again); then DEAD |= 1<<d.
 *   otherwise (the reference: only clear LIVE): a survivor re-takes lanes the
 *     dead consumer had already decoded -> spin finds a double decode. This
 *     run is an expected failure: it is why the runtime needs CLAIM.
 *
 *   RESPAWN (a process pool's respawned worker, src/steal.h "Revival"):
 *     after the reap and DEAD, the host revives the id: CLAIM = 0 with ACK
 *     kept, WANT = 0, then DEAD cleared, and runs a successor consumer with
 *     the same id whose ACK mirror starts from ACK[d]. Step 7 loads DEAD
 *     again after the WANT store (the runtime does so always; without
 *     death DEAD is constant, so the model loads it only under DEATH).
 *     MUTANT_REVIVE_ACK_ZERO (ACK zeroed too), MUTANT_REVIVE_BEFORE_REAP
 *     (the successor runs before the reap) and MUTANT_STALE_DEAD (step 7
 *     uses step 3's DEAD) must fail.
 *
 *   Death after the last decode and before the ACK store (in the runtime:
 *   after the lanes' arena slots were freed) is the DIE of the step that
 *   stores ACK; MUTANT_CLAIM_AFTER_DECODE records CLAIM only there, after
 *   the decodes, and must fail (a survivor decodes a lane again).
 *
 * TAKE_K: step 8 keeps the k oldest lanes of the take (ring order), any
 * k >= 1 the claimant picks, except that a consumer whose calls are long
 * (BUSYC under BUSY) takes one: exactly once, order and BUSY must hold;
 * MUTANT_TAKE_K_SKIP (leaves the oldest lane out of a claim of several) and
 * BUSYC_TAKES_K (the long-running consumer takes several too: it hoards)
 * must fail.
 *
 * Mutants (expected failures): MUTANT_HOARD, MUTANT_TAKE_LOWEST (above),
 * MUTANT_NO_WITHDRAW (junior ignores a senior
 * conflict), MUTANT_NO_CHECK (no step 7), MUTANT_SNAPSHOT_TAKE (take from the
 * step 1 snapshot), MUTANT_WANT_BEFORE_ACK (WANT cleared before ACK),
 * MUTANT_SENIOR_NO_WAIT (senior does not wait for a conflicting junior),
 * MUTANT_NO_REAP (the host never marks the dead consumer),
 * MUTANT_REVIVE_ACK_ZERO, MUTANT_REVIVE_BEFORE_REAP, MUTANT_STALE_DEAD
 * (RESPAWN, above),
 * MUTANT_SENIOR_WITHDRAWS (both sides back off on a conflict: a livelock,
 * caught by the non-progress run).
 */

/* The N = 2 instances (N = 3: steal_claim_n3.pml, death: steal_claim_death.pml,
 * both include this file). */
/* check: n2_reuse | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=5 | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: n2_regions_of_2 | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=6 | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: n2_busy | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=4 -DBUSY -DBUSYC=0 | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: n2_busy_junior | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=4 -DBUSY -DBUSYC=1 | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: mutant_hoard | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=4 -DBUSY -DBUSYC=0 -DMUTANT_HOARD | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_take_lowest | spin: -DN=2 -DMUTANT_TAKE_LOWEST | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: n2_no_livelock | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 | cc: -DNP -O2 | pan: -l -m100000 */
/* check: mutant_senior_withdraws | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 -DMUTANT_SENIOR_WITHDRAWS | cc: -DNP | pan: -l -m100000 | expect: fail */
/* check: mutant_no_withdraw | spin: -DN=2 -DMUTANT_NO_WITHDRAW | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_no_check | spin: -DN=2 -DMUTANT_NO_CHECK | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_snapshot_take | spin: -DN=2 -DMUTANT_SNAPSHOT_TAKE | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_want_before_ack | spin: -DN=2 -DMUTANT_WANT_BEFORE_ACK | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_senior_no_wait | spin: -DN=2 -DMUTANT_SENIOR_NO_WAIT | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* Claims of several calls (TAKE_K: the k oldest of the region, any k >= 1;
 * src/spin.h "claims and wakes"): exactly once and order hold for any k;
 * BUSY: a consumer whose calls are long takes one while the other takes k. */
/* check: n2_take_k | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=6 -DTAKE_K | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 */
/* check: n2_take_k_g1 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=5 -DTAKE_K | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 */
/* check: n2_take_k_busy | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=4 -DBUSY -DBUSYC=0 -DTAKE_K | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: n2_take_k_busy_junior | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=4 -DBUSY -DBUSYC=1 -DTAKE_K | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: mutant_take_k_skip | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=6 -DTAKE_K -DMUTANT_TAKE_K_SKIP | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_take_k_hoard | spin: -DN=2 -DG=2 -DREGIONS=3 -DTASKS=4 -DBUSY -DBUSYC=0 -DTAKE_K -DBUSYC_TAKES_K | cc: -DSAFETY | pan: -m100000 | expect: fail */

#ifndef N
#define N 2 /* consumers (2 or 3) */
#endif
#ifndef G
#define G 2 /* lanes per region */
#endif
#ifndef REGIONS
#define REGIONS (N + 1) /* the runtime's rule: regions >= consumers + 1 */
#endif
#define LANES (G * REGIONS)
#ifndef TASKS
#if N == 2
#define TASKS 6
#else
#define TASKS 5
#endif
#endif
#define FULL ((1 << LANES) - 1)
#define ALLC ((1 << N) - 1)
#define BIT(i) (1 << (i))
#define RMASK(r) (((1 << G) - 1) << ((r) * G))

byte A = 0;        /* publish toggles (producer) */
byte ACK[3];       /* retire toggles of consumer c (consumer c) */
byte WANT[3];      /* region intent of consumer c (consumer c) */
byte CLAIM[3];     /* lanes c took and has not retired (same word as ACK) */
byte DEAD = 0;     /* host: bit c = consumer c has exited */
bit STOPREQ = 0;   /* RECYCLE: the host asked consumer DEADC to leave (its RETIRE) */
byte slot[LANES];  /* lane payload: task number 1..TASKS */
byte RING = LANES - 1; /* producer: next lane to try, walking down */

#define XORACK (ACK[0] ^ ACK[1] ^ ACK[2])

/* ghost state */
byte pubval[LANES];    /* task carried by the lane's current generation */
byte execd[TASKS + 1]; /* times each task was decoded */
bit lost[TASKS + 1];   /* reported lost to the dead consumer */
bit dtook[TASKS + 1];  /* the dying consumer recorded it as taken */
byte ndone = 0;        /* tasks resolved: retired by a consumer or reported lost */
byte nstarted = 0;     /* BUSY: tasks a consumer has started */
byte owner[REGIONS];   /* consumers between step 8 and step 11 */
byte chg = 0; /* bit c: another party wrote a control word since c's attempt began */
bit died = 0;
bit dc_exited = 0;     /* consumer DEADC ended normally */
byte died_in = 255;    /* region the dead consumer owned when it died */

#define CHANGED(self) chg = chg | (ALLC & ~BIT(self))
#define CHANGED_ALL chg = ALLC

/* the first lane of m (non-zero) walking down from lane r, wrapping */
inline ring_first(m, r, out)
{
	out = r;
	do
	:: (m & BIT(out)) != 0 -> break
	:: else -> out = (out == 0 -> LANES - 1 : out - 1)
	od
}

inline popcount(m, k)
{
	k = (((m) >> 0) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1) + (((m) >> 3) & 1) +
	    (((m) >> 4) & 1) + (((m) >> 5) & 1) + (((m) >> 6) & 1) + (((m) >> 7) & 1)
}

proctype producer()
{
	byte lastLocal = 0, shadow = 0, x, freeSet, n = 1, i, ring = LANES - 1;

	do
	:: atomic {
		n <= TASKS;
		freeSet = ~(lastLocal ^ shadow) & FULL;
		if
		:: freeSet == 0 -> goto refresh
		:: else -> skip
		fi;
		/* the first free lane at or below the ring cursor (private copy
		 * in x: the producer is RING's only writer) */
		ring_first(freeSet, ring, i);
		ring = (i == 0 -> LANES - 1 : i - 1);
		freeSet = 0;
		assert(((A ^ XORACK) & BIT(i)) == 0); /* truly free (ghost read) */
		slot[i] = n /* payload + header: plain stores */
	   };
		/* publish: one release store of A */
		/* the ring cursor first (relaxed), then A (release) */
		RING = ring;
		d_step { lastLocal = lastLocal ^ BIT(i); A = lastLocal; pubval[i] = n; CHANGED_ALL; i = 0; n++ };
		goto next;
refresh:
		/* no free lane in the cached view: reload the copy of B = XOR of
		 * every ACK, one load at a time (a torn read only makes lanes
		 * look busy) */
		x = ACK[0];
#if N > 2
		x = x ^ ACK[1];
		atomic {
			x = x ^ ACK[2];
#else
		atomic {
			x = x ^ ACK[1];
#endif
			shadow = x;
			x = 0;
			if
			:: (~(lastLocal ^ shadow) & FULL) == 0 ->
				/* backlog: retry once something was retired */
				XORACK != shadow
			:: else -> skip
			fi
		};
next:		skip
	:: n > TASKS -> break
	od
}

#if defined(DEATH) && !defined(RECYCLE)
/* consumer DEADC may die here (its thread/process exits); its successor
 * (RESPAWN) does not */
#define DIE if :: c == DEADC && !died -> goto dead :: true -> skip fi;
#else
#define DIE
#endif
#ifdef RECYCLE
/* consumer DEADC, asked to leave, leaves here: the top of its loop (the
 * worker's stop word check before it claims). Reading STOPREQ in the same
 * step as A loses nothing: nobody else reads it and its one write does not
 * touch A. Its successor (died set) never leaves. */
#define LEAVE if :: c == DEADC && !died && STOPREQ -> goto dead :: else -> skip fi;
#else
#define LEAVE
#endif

/* store CLAIM[c] = take (ghost: the dying consumer recorded these tasks) */
#ifdef DEATH
#define RECORD_CLAIM \
	CLAIM[c] = take; \
	if \
	:: c == DEADC && !died -> \
		k = 0; \
		do \
		:: k == LANES -> break \
		:: else -> if :: (take & BIT(k)) != 0 -> dtook[pubval[k]] = 1 :: else -> skip fi; k++ \
		od; \
		k = 0 \
	:: else -> skip \
	fi
#else
#define RECORD_CLAIM CLAIM[c] = take
#endif

#if N > 2
/* the two peers of c */
#define PEER1 (c == 0 -> 1 : 0)
#define PEER2 (c == 2 -> 1 : 2)
#else
#define PEER1 (1 - c)
#endif
#define SENIOR(p) ((p) < c)

proctype consumer(byte c)
{
	byte lw = 0; /* == ACK[c] */
	byte pend, snap, cl, rg, live, peerI, senI, r, take, rest, w, i, v, k, j;
#ifdef TAKE_K
	byte fpend; /* step 8's fresh pending lanes, every region */
#endif
	bit jconf, own, busied;

#ifdef RESPAWN
	/* attach: the ACK mirror starts from the shared word (a successor
	 * continues its predecessor's ACK; a first consumer reads 0) */
	lw = ACK[c];
#endif
	/* Each atomic step below does exactly one access to a shared protocol
	 * word; the local computation and branching after it ride along (they
	 * are invisible to the other parties), and ghost state may be read or
	 * written. */
	do
	:: atomic {
		ndone != TASKS; /* ghost: the bounded run is not over */
		DIE
		LEAVE
		/* step 1: snapshot, one load per step; the ghost chg* start the attempt */
		chg = chg & ~BIT(c);
		pend = A ^ lw
	   };
#if N > 2
		pend = pend ^ ACK[PEER1];
		atomic {
			pend = (pend ^ ACK[PEER2]) & FULL;
#else
		atomic {
			pend = (pend ^ ACK[PEER1]) & FULL;
#endif
#ifdef MUTANT_SNAPSHOT_TAKE
			rest = pend;
#endif
			snap = pend;
			if
			:: pend == 0 -> goto fail
			:: else -> skip
			fi
		};
		/* the ring cursor, after A */
		rg = RING;
		/* step 3: live peers and their intents */
		live = ~DEAD & ALLC;
		atomic {
			if
			:: (live & BIT(PEER1)) != 0 ->
				w = WANT[PEER1];
				peerI = w;
				if :: SENIOR(PEER1) -> senI = w :: else -> skip fi;
				w = 0
			:: else -> skip
			fi
		};
#if N > 2
		atomic {
			if
			:: (live & BIT(PEER2)) != 0 ->
				w = WANT[PEER2];
				peerI = peerI | w;
				if :: SENIOR(PEER2) -> senI = senI | w :: else -> skip fi;
				w = 0
			:: else -> skip
			fi
		};
#endif
		/* step 2, 4, 5, 6: choose r and announce */
		atomic {
			k = 0;
			do
			:: k == REGIONS -> break
			:: else -> if :: (pend & RMASK(k)) != 0 -> w = w | BIT(k) :: else -> skip fi; k++
			od;
			pend = w & ~senI; /* never contend with a senior's intent */
			if
			:: pend != 0 && (w & ~peerI) != 0 -> pend = w & ~peerI /* clean ones first */
			:: else -> skip
			fi;
			k = 0; w = 0; peerI = 0; senI = 0;
			if
			:: pend == 0 -> snap = 0; rg = 0; goto fail
			:: else -> skip
			fi;
			/* step 5: the candidate region of the oldest pending lane */
			do
			:: k == REGIONS -> break
			:: else -> if :: (pend & BIT(k)) != 0 -> cl = cl | RMASK(k) :: else -> skip fi; k++
			od;
			ring_first(snap & cl, rg, i);
			r = i / G;
			k = 0; pend = 0; snap = 0; cl = 0; i = 0;
			/* step 6: announce, seq_cst store (pairs with peers' step 7) */
			WANT[c] = BIT(r);
			CHANGED(c)
		};
		/* step 7: check the peers live now (DEAD loaded again after the
		 * WANT store; MUTANT_STALE_DEAD: the peers live in step 3): a
		 * senior wanting r makes us withdraw, a junior makes us wait */
#ifndef MUTANT_NO_CHECK
#if defined(DEATH) && !defined(MUTANT_STALE_DEAD)
		live = ~DEAD & ALLC;
#endif
		atomic {
			DIE
			if
			:: (live & BIT(PEER1)) != 0 && (WANT[PEER1] & BIT(r)) != 0 ->
#ifndef MUTANT_NO_WITHDRAW
#ifdef MUTANT_SENIOR_WITHDRAWS
				goto withdraw /* the mutant: everybody backs off */
#else
				if :: SENIOR(PEER1) -> goto withdraw :: else -> jconf = 1 fi
#endif
#else
				jconf = 1
#endif
			:: else -> skip
			fi
		};
#if N > 2
		atomic {
			if
			:: (live & BIT(PEER2)) != 0 && (WANT[PEER2] & BIT(r)) != 0 ->
#ifndef MUTANT_NO_WITHDRAW
#ifdef MUTANT_SENIOR_WITHDRAWS
				goto withdraw
#else
				if :: SENIOR(PEER2) -> goto withdraw :: else -> jconf = 1 fi
#endif
#else
				jconf = 1
#endif
			:: else -> skip
			fi
		};
#endif
#endif
		live = 0;
#ifndef MUTANT_SENIOR_NO_WAIT
		/* senior: spin until no currently live junior wants r (each guard
		 * is one load: DEAD or that junior's WANT) */
		if
		:: jconf && c < 1 ->
			if
			:: (DEAD & BIT(1)) != 0 -> skip
			:: (WANT[1] & BIT(r)) == 0 -> skip
#if defined(DEATH) && !defined(RECYCLE)
			:: c == DEADC && !died -> goto dead /* dies while waiting */
			/* asked to stop while waiting: withdraws, then leaves (the
			 * host marks it dead once it is gone) */
			:: c == DEADC && !died -> atomic { WANT[c] = 0; CHANGED(c) }; goto dead
#endif
#ifdef RECYCLE
			/* asked to leave while waiting: withdraws, then leaves */
			:: c == DEADC && !died && STOPREQ -> atomic { WANT[c] = 0; CHANGED(c) }; goto dead
#endif
			fi
		:: else -> skip
		fi;
#if N > 2
		if
		:: jconf && c < 2 ->
			if
			:: (DEAD & BIT(2)) != 0 -> skip
			:: (WANT[2] & BIT(r)) == 0 -> skip
#if defined(DEATH) && !defined(RECYCLE)
			:: c == DEADC && !died -> goto dead
			:: c == DEADC && !died -> atomic { WANT[c] = 0; CHANGED(c) }; goto dead
#endif
#ifdef RECYCLE
			:: c == DEADC && !died && STOPREQ -> atomic { WANT[c] = 0; CHANGED(c) }; goto dead
#endif
			fi
		:: else -> skip
		fi;
#endif
#endif
		/* step 8: region r is ours (ghost owner); take from fresh loads */
		atomic {
			jconf = 0;
			owner[r]++;
			own = 1;
			assert(owner[r] == 1); /* region mutual exclusion */
			DIE
#ifdef MUTANT_SNAPSHOT_TAKE
			/* the mutant takes from the attempt's first snapshot */
			take = rest & RMASK(r);
			rest = 0;
			if :: take == 0 -> goto none :: else -> skip fi
#else
			take = A ^ lw
#endif
		};
#ifndef MUTANT_SNAPSHOT_TAKE
#if N > 2
		take = take ^ ACK[PEER1];
		atomic {
#ifdef TAKE_K
			fpend = take ^ ACK[PEER2];
#endif
			take = (take ^ ACK[PEER2]) & RMASK(r);
#else
		atomic {
#ifdef TAKE_K
			fpend = take ^ ACK[PEER1];
#endif
			take = (take ^ ACK[PEER1]) & RMASK(r);
#endif
			if :: take == 0 -> goto none :: else -> skip fi
		};
#endif
		/* only the oldest lane of the take, by a fresh load of RING
		 * (TAKE_K: the k oldest, any k >= 1, chosen by the claimant) */
		atomic {
			rg = RING;
#if defined(TAKE_K)
			/* a consumer whose calls are long (BUSYC: its estimate
			 * says so) takes one; any other any number of the oldest
			 * lanes of r that follow one another among all pending
			 * lanes (older lanes of other regions passed over, a
			 * younger one ends the run; MUTANT_TAKE_K_SKIP: the
			 * oldest of r is left out) */
			rest = fpend;
			take = 0;
			do
			:: rest != 0 ->
				ring_first(rest, rg, i);
				rest = rest & ~BIT(i);
				if
				:: (RMASK(r) & BIT(i)) == 0 && take == 0 -> goto nexttk
				:: (RMASK(r) & BIT(i)) == 0 -> break
				:: else -> skip
				fi;
#ifdef MUTANT_TAKE_K_SKIP
				if
				:: take == 0 && (rest & RMASK(r)) != 0 ->
					ring_first(rest & RMASK(r), rg, i); rest = rest & ~BIT(i)
				:: else -> skip
				fi;
#endif
				take = take | BIT(i);
				if
#if defined(BUSY) && !defined(BUSYC_TAKES_K)
				:: c != BUSYC -> skip
#else
				:: true -> skip
#endif
				:: true -> break
				fi;
nexttk:				skip
			:: else -> break
			od;
			rest = 0;
			fpend = 0;
#elif defined(MUTANT_TAKE_LOWEST)
			i = 0;
			do
			:: (take & BIT(i)) != 0 -> break
			:: else -> i++
			od;
			take = BIT(i);
#elif !defined(MUTANT_HOARD)
			ring_first(take, rg, i);
			take = BIT(i);
#endif
			i = 0
		};
#if defined(REAP_CLAIM) && !defined(MUTANT_CLAIM_AFTER_DECODE)
		/* record the claim before decoding (same 64-bit word as ACK) */
		atomic {
			DIE
			RECORD_CLAIM
		};
#endif
#ifdef MUTANT_LEAVE_AFTER_CLAIM
		/* the mutant leaves with a claim in hand (a stop check between the
		 * claim and the run) */
		atomic { if :: c == DEADC && !died && STOPREQ -> goto dead :: else -> skip fi };
#endif
		/* step 9: decode every lane of take, lowest first; then
		 * step 10: retire them all with one release store of ACK[c] */
		rest = take;
		do
		:: atomic {
			rest != 0;
			DIE
			ring_first(rest, rg, i);
			rest = rest & ~BIT(i);
			v = slot[i]; /* the shared load: copy the lane out */
			assert(((A ^ XORACK) & BIT(i)) != 0); /* in flight (ghost read) */
			assert(v >= 1 && v <= TASKS && v == pubval[i]);
			/* the oldest of its region still waiting (ghost reads) */
			j = 0;
			do
			:: j == LANES -> break
			:: else ->
				if
				:: j != i && (RMASK(r) & BIT(j)) != 0 && ((A ^ XORACK) & BIT(j)) != 0 &&
				   ((take & ~rest) & BIT(j)) == 0 -> assert(pubval[j] > v)
				:: else -> skip
				fi;
				j++
			od;
			j = 0;
			execd[v]++;
			assert(execd[v] == 1); /* each lane generation once */
			v = 0;
			i = 0
		   }
		:: atomic {
			rest == 0;
			DIE
#if defined(REAP_CLAIM) && defined(MUTANT_CLAIM_AFTER_DECODE)
			/* the mutant records the claim only after decoding (and,
			 * in the runtime, freeing the arena slots) */
			RECORD_CLAIM
		   };
		   atomic {
			DIE
#endif
#ifdef MUTANT_WANT_BEFORE_ACK
			owner[r]--; own = 0; WANT[c] = 0; CHANGED(c)
		   };
		   atomic {
#endif
			lw = lw ^ take;
			popcount(take, k);
			ndone = ndone + k;
			k = 0;
			ACK[c] = lw; /* (and CLAIM[c] = 0: the same 64-bit store) */
			CLAIM[c] = 0;
			CHANGED(c)
		   };
		   break
		od;
		/* step 11: release, strictly after the ACK store */
		atomic {
			DIE
#ifndef MUTANT_WANT_BEFORE_ACK
			owner[r]--; own = 0; WANT[c] = 0; CHANGED(c);
#endif
#ifdef BUSY
			rest = take;
#else
			rg = 0;
#endif
			take = 0;
			r = 0
		};
#ifdef BUSY
		/* start what we took, oldest first; BUSYC's first call is a long
		 * one that ends only once every task has started */
		do
		:: rest != 0 ->
			atomic { ring_first(rest, rg, i); rest = rest & ~BIT(i); i = 0; nstarted++ };
			if
			:: c == BUSYC && !busied -> busied = 1; nstarted == TASKS
			:: else -> skip
			fi
		:: else -> break
		od;
		rg = 0;
#endif
		goto next;
withdraw:
		/* a senior wants r too: the junior withdraws */
		atomic { WANT[c] = 0; CHANGED(c); live = 0; jconf = 0; r = 0; rg = 0; goto fail };
none:
		/* nothing left in r: release it */
		atomic { owner[r]--; own = 0; WANT[c] = 0; CHANGED(c); r = 0; rg = 0 };
fail:
		/* wait until another party wrote a control word (see top) */
		if
		:: (chg & BIT(c)) != 0 -> skip
		:: ndone == TASKS -> skip
		fi;
next:
		skip
	:: ndone == TASKS -> break
	od;
	goto out;
dead:
	/* the worker thread/process is gone; its words keep their last values */
	atomic {
		died = 1;
		if :: own -> died_in = r :: else -> skip fi;
		goto gone
	};
out:
#ifdef DEATH
	if :: c == DEADC -> dc_exited = 1 :: else -> skip fi;
#endif
gone:
	skip
}

#ifdef DEATH
/* the host's reap of the dead consumer's claim (REAP_CLAIM) */
inline reap_claim()
{
	d_step { a = ACK[DEADC]; cl = CLAIM[DEADC] }; /* one 64-bit load */
#ifdef RECYCLE
	/* a consumer that left as asked holds no claim: a recycle loses no call */
	assert(cl == 0);
#endif
	if
	:: cl != 0 ->
		/* report the claimed lanes' calls lost, retire them on its behalf */
		d_step {
			k = 0;
			do
			:: k == LANES -> break
			:: else ->
				if
				:: (cl & BIT(k)) != 0 ->
					t = pubval[k];
					assert(dtook[t] && !lost[t]);
					lost[t] = 1;
					ndone++
				:: else -> skip
				fi;
				k++
			od;
			k = 0; t = 0
		};
		d_step { ACK[DEADC] = a ^ cl; CLAIM[DEADC] = 0; CHANGED_ALL } /* one 64-bit store */
	:: else -> skip
	fi
}

/* let survivors ignore its WANT (atomic OR) */
inline mark_dead()
{
	d_step {
		DEAD = DEAD | BIT(DEADC);
		CHANGED_ALL;
		if :: died_in != 255 -> owner[died_in]-- :: else -> skip fi
	}
}

/* steal_revive (RESPAWN): a successor takes over consumer DEADC. CLAIM = 0
 * with ACK kept (one 64-bit store; MUTANT_REVIVE_ACK_ZERO zeroes ACK too),
 * WANT = 0, and only then DEAD cleared; then the successor starts */
inline revive()
{
#ifdef MUTANT_REVIVE_ACK_ZERO
	d_step { ACK[DEADC] = 0; CLAIM[DEADC] = 0; CHANGED_ALL };
#else
	d_step { CLAIM[DEADC] = 0; CHANGED_ALL };
#endif
	d_step { WANT[DEADC] = 0; CHANGED_ALL };
	d_step { DEAD = DEAD & ~BIT(DEADC); CHANGED_ALL };
	run consumer(DEADC)
}

/* the host, once the dead worker has exited (join / pidfd) */
proctype reaper()
{
	byte a, cl, k, t;

	if
#if defined(RECYCLE) && defined(MUTANT_JOIN_EARLY)
	/* the mutant lets the successor in once the leave is asked for, not
	 * once the leaver is gone */
	:: STOPREQ -> skip
#else
	:: died -> skip
#endif
	:: dc_exited -> goto out /* it ended normally */
	fi;
#ifndef MUTANT_NO_REAP
#ifdef MUTANT_REVIVE_BEFORE_REAP
	/* the mutant: the successor runs before the claim is reaped */
	mark_dead();
	revive();
	reap_claim();
#else
#ifdef REAP_CLAIM
	reap_claim();
#endif
	mark_dead();
#ifdef RESPAWN
	revive();
#endif
#endif
#endif
out:
	skip
}
#endif

#ifdef RECYCLE
/* the host recycles consumer DEADC at any point: its successor is ready,
 * so it asks the worker to leave (the stop word RETIRE, src/lane.h) */
proctype retire()
{
	STOPREQ = 1
}
#endif

init
{
	byte k;
	atomic {
		run producer();
#ifdef PREPUBLISH
	}
	/* the producer publishes everything before any consumer starts */
	_nr_pr == 1;
	atomic {
#endif
		run consumer(0);
		run consumer(1);
#if N > 2
		run consumer(2);
#endif
#ifdef DEATH
		run reaper();
#endif
#ifdef RECYCLE
		run retire();
#endif
	}
	_nr_pr == 1; /* everyone else has ended */
	assert(A == XORACK); /* everything retired */
	k = 1;
	do
	:: k > TASKS -> break
	:: else ->
		/* decoded exactly once, or lost to the dead consumer (and then
		 * decoded at most once, by it) */
		assert((execd[k] == 1 && !lost[k]) || (lost[k] && dtook[k] && execd[k] <= 1));
#ifdef RECYCLE
		assert(execd[k] == 1 && !lost[k]); /* a recycle: every call ran, once */
#endif
		k++
	od
}
