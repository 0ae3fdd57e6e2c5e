/* SPDX-License-Identifier: MIT */
/*
 * tests/model/steal_resend.pml - the host's accounting of a steal call among
 * worker processes whose ACK words lie (src/lane.cpp steal_track,
 * steal_judge, lane_steal_reap, steal_unstarted_calls; the started word and
 * the sending echoed in the frames, src/worker.cpp). The claim protocol
 * itself (regions, WANT, the Dekker check) is steal_claim.pml's; here one
 * call X and the words that decide who answers it.
 *
 * X's sending k sits in submit lane k (a re-send takes the next lane; at
 * most SENDS sendings). A lane reads pending to a worker when A[k] ^ the
 * XOR of every worker's ACK bit k is 1. Worker 0 is honest: it claims a
 * lane that reads pending (one toggle of its ACK bit), runs the sending it
 * decoded and answers it (a frame naming the sending, the right value).
 * Workers 1 and 2 are hostile, each a nondeterministic writer of its own
 * words until it dies: it toggles an ACK bit at will (a forged claim), may
 * claim and run a sending the honest way while it reads pending (a copy
 * run misled, or a real claim), may answer any sending it ran with a wrong
 * value at any later time (a replay of its own rewritten return lock), may
 * write any sending into its started word, and then dies.
 *
 * The host looks at every ACK word at once (steal_track): a toggle of a
 * lane whose sending has no claim yet is its claim (the first holder of
 * that sending; fixed from then on); a toggle of a lane whose claim it
 * counted already cancels out with that claim (the lane is unclaimed again,
 * the holder stays); any other toggle is taken as it is. Nobody is blamed.
 * A frame counts only if its worker holds the sending it names and that
 * sending is the current one. At a hostile worker's death the host looks
 * once more; if the dead worker held X's current sending and its started
 * word does not name it, X is sent again (a fresh lane, unclaimed), else X
 * fails; the dead worker's ACK word is reset from the host's own state
 * (every published unclaimed lane pending, every other one retired).
 *
 * Checked: X completes exactly once; a status-0 completion with a wrong
 * value comes only from a worker that ran that very sending (a call that
 * ran on the liar); X fails only when a dead worker's started word named
 * its current sending (it "began" there); nothing is stranded (the honest
 * worker never waits for good: an invalid end state otherwise).
 *
 *   pass                  the runtime's accounting
 *   mutant_no_echo        a frame counts for the current sending whatever
 *                         sending it names (no kFrameAttemptMask check): a
 *                         replay of an old sending's frame completes X
 *                         with a wrong value -> must FAIL
 *   mutant_fail_on_death  the calls a dead worker held fail (no re-send,
 *                         the old code): a forged claim fails X -> FAIL
 */
/* check: pass | spin: | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 */
/* check: mutant_no_echo | spin: -DMUTANT_NO_ECHO | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_fail_on_death | spin: -DMUTANT_FAIL_ON_DEATH | cc: -DSAFETY | pan: -m100000 | expect: fail */

#define W 3      /* worker 0 honest, 1 and 2 hostile */
#define SENDS 3  /* X's sendings: one per hostile worker's forged claim, + 1 */
#define NONE 255
#define GOOD 1
#define BAD 2

bit A[SENDS];          /* lane k published (sending k) */
bit ack[W * SENDS];    /* ack[w*SENDS+k]: worker w's ACK bit of lane k */
bit seen[W * SENDS];   /* the host's last look at it */
byte holder[SENDS];    /* the worker the host counts as sending k's claimant */
bit unclaimed[SENDS];  /* lane k's sending has no claim the host counted */
byte claimer[SENDS];   /* the toggle the host took as that claim (NONE: none) */
byte cur = 0;          /* X's current sending */
bit ran[W * SENDS];    /* ghost: worker w ran sending k */
byte started[W];       /* the started word (the dead worker's, read at death) */
bit alive[W];
byte done = 0;         /* completions of X */
byte value = 0;        /* GOOD / BAD of a status-0 completion; 0 = failed */
bit fail_named = 0;    /* X failed because a started word named it */

#define PEND(k) (A[k] ^ ack[0 * SENDS + k] ^ ack[1 * SENDS + k] ^ ack[2 * SENDS + k])
#define ANYPEND (PEND(0) || PEND(1) || PEND(2))
#define RAN(w) (ran[w * SENDS + 0] || ran[w * SENDS + 1] || ran[w * SENDS + 2])

/* steal_track + steal_judge, one look at every word */
inline look()
{
	w2 = 0;
	do
	:: w2 < W ->
		k2 = 0;
		do
		:: k2 < SENDS ->
			if
			:: ack[w2 * SENDS + k2] != seen[w2 * SENDS + k2] ->
				seen[w2 * SENDS + k2] = ack[w2 * SENDS + k2];
				if
				:: A[k2] && unclaimed[k2] ->
					unclaimed[k2] = 0;
					claimer[k2] = w2;
					if
					:: holder[k2] == NONE -> holder[k2] = w2
					:: else -> skip
					fi
				:: !(A[k2] && unclaimed[k2]) && claimer[k2] != NONE && claimer[k2] != w2 ->
					/* a second claim: the two cancel out */
					unclaimed[k2] = 1;
					claimer[k2] = NONE
				:: else -> skip /* taken as it is */
				fi
			:: else -> skip
			fi;
			k2++
		:: else -> break
		od;
		w2++
	:: else -> break
	od
}

/* lane_reap of one frame of worker w naming sending k, after a look */
inline answer(w, k, v)
{
	atomic { /* the host is one thread (the dispatcher's holder) */
	look();
#ifdef MUTANT_NO_ECHO
	if
	:: done == 0 && holder[cur] == w && A[k] ->
#else
	if
	:: done == 0 && holder[k] == w && k == cur ->
#endif
		done++;
		value = v;
		/* a wrong value only from a worker that ran this very sending */
		assert(v == GOOD || ran[w * SENDS + cur]);
	:: else -> skip /* dropped: not held, or an earlier sending */
	fi }
}

/* lane_lost of hostile worker w */
inline death(w)
{
	alive[w] = 0;
	look();
	if
	:: done == 0 && holder[cur] == w ->
#ifdef MUTANT_FAIL_ON_DEATH
		done++;
		value = 0;
		fail_named = (started[w] == cur)
#else
		if
		:: started[w] == cur -> done++; value = 0; fail_named = 1
		:: started[w] != cur && cur + 1 < SENDS ->
			cur++;
			A[cur] = 1;
			unclaimed[cur] = 1
		:: started[w] != cur && cur + 1 >= SENDS -> done++; value = 0
		fi
#endif
	:: else -> skip
	fi;
	/* its claims are nobody's now; its ACK word reset from the host's state */
	k3 = 0;
	do
	:: k3 < SENDS ->
		if
		:: claimer[k3] == w -> claimer[k3] = NONE
		:: else -> skip
		fi;
		x3 = A[k3] ^ (A[k3] & unclaimed[k3]);
		o = 0;
		do
		:: o < W ->
			if
			:: o != w -> x3 = x3 ^ seen[o * SENDS + k3]
			:: else -> skip
			fi;
			o++
		:: else -> break
		od;
		ack[w * SENDS + k3] = x3;
		seen[w * SENDS + k3] = x3;
		k3++
	:: else -> break
	od
}

proctype honest()
{
	byte k, w2, k2;
	do
	:: done != 0 -> break
	:: atomic { done == 0 && ANYPEND ->
		if
		:: PEND(0) -> k = 0
		:: PEND(1) -> k = 1
		:: PEND(2) -> k = 2
		fi;
		ack[0 * SENDS + k] = 1 - ack[0 * SENDS + k]; /* the claim */
		ran[0 * SENDS + k] = 1 }
		answer(0, k, GOOD)
	od
}

proctype hostile(byte w)
{
	byte forges = 1, k, w2, k2, k3, x3, o;
	bit dup = 1, replay = 1, stamp = 1;
	do
	:: forges > 0 -> /* a forged toggle of any lane */
		if
		:: k = 0
		:: k = 1
		:: k = 2
		fi;
		ack[w * SENDS + k] = 1 - ack[w * SENDS + k];
		forges--
	:: atomic { dup && ANYPEND -> /* a claim the honest way of a lane that reads pending */
		if
		:: PEND(0) -> k = 0
		:: PEND(1) -> k = 1
		:: PEND(2) -> k = 2
		fi;
		ack[w * SENDS + k] = 1 - ack[w * SENDS + k];
		ran[w * SENDS + k] = 1;
		dup = 0 }
	:: replay && RAN(w) -> /* a wrong answer to a sending it ran */
		if
		:: ran[w * SENDS + 0] -> k = 0
		:: ran[w * SENDS + 1] -> k = 1
		:: ran[w * SENDS + 2] -> k = 2
		fi;
		answer(w, k, BAD);
		replay = 0
	:: stamp -> /* any started word */
		if
		:: started[w] = 0
		:: started[w] = 1
		:: started[w] = 2
		:: started[w] = NONE
		fi;
		stamp = 0
	:: atomic { true -> death(w); break }
	od
}

init
{
	atomic {
		byte i;
		i = 0;
		do
		:: i < SENDS -> holder[i] = NONE; claimer[i] = NONE; i++
		:: else -> break
		od;
		started[0] = NONE;
		started[1] = NONE;
		started[2] = NONE;
		A[0] = 1;
		unclaimed[0] = 1;
		alive[0] = 1;
		alive[1] = 1;
		alive[2] = 1;
		run honest();
		run hostile(1);
		run hostile(2)
	}
	(_nr_pr == 1);
	/* exactly once (answer and death never count a second one) */
	assert(done == 1);
	/* it failed only where a started word named it */
	assert(value != 0 || fail_named)
}
