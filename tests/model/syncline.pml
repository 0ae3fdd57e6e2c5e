/* SPDX-License-Identifier: MIT */
/*
 * tests/model/syncline.pml - the synchronous call line of a worker lane
 * (the contract: src/syncline.h, edges S1-S12; the park/wake half is W1-W4
 * of src/wake.h, the host's sleep is the doorbell's D1-D4).
 *
 * One line, one worker, NC caller threads making CALLS calls each, and one
 * stopper running knit_stop(DRAIN) or knit_stop(CANCEL) at any moment.
 *
 * Caller, per call (host thread, any number of them):
 *   outstanding += 1                     -- S1: seq_cst RMW
 *   CAS line IDLE -> CLAIMED             -- S1: seq_cst RMW; failure: fall back
 *   if closed: line = IDLE, outstanding -= 1, return ECLOSED (no call made)
 *   write request; s = private seq + 1; store_release(rq_seq, s)    -- S2
 *   fence(seq_cst); if parked: lane_wake                          -- W1
 *   loop: if load_acquire(rp_seq) == s: read reply, CAS CLAIMED -> IDLE:
 *             won: return the reply; lost (CANCELLED): return ECLOSED
 *         if line == CANCELLED: return ECLOSED (the line stays retired)
 *         (after the bounded spin) d = db_seq; armed = 1; fence;   -- D1
 *         re-check the two conditions above; futex_wait(db_seq, d)
 *   outstanding -= 1
 * Worker, every loop pass and in its park re-check:
 *   if load_acquire(rq_seq) == served + 1: read request, run, write the
 *     reply, store_release(rp_seq, served + 1)                       -- S5
 *     fence(seq_cst); if armed: CAS armed 1 -> 0, db_seq += 1, wake all -- D2/D3
 *   if stop == REQUESTED: acknowledge, exit
 *   park: s = seq; parked = 1; fence; re-check line and stop; futex_wait -- W2
 * Stopper:
 *   closed = 1; fence(seq_cst)                                        -- S7
 *   DRAIN:  wait until outstanding == 0
 *   CANCEL: CAS line CLAIMED -> CANCELLED; db_seq += 1, wake all (host_event)
 *   stop = REQUESTED; fence; if parked: lane_wake; wait for the ack
 * Loser (-DLOSS: the worker is lost at any moment, S10; the worker process
 * keeps running, as a thread that cannot be killed does):
 *   loop: IDLE -> RETIRED (CAS), or CLAIMED -> LOST (CAS) then db_seq += 1,
 *   wake all (host_event); until the line is neither IDLE nor CLAIMED.
 *   A caller treats LOST as CANCELLED (it completes with the loss's status).
 *   The loser may also kill the worker (a dead process never serves again;
 *   the stopper then does not wait for its acknowledgement, as the host
 *   acknowledges for a dead worker). With LOSS the stopper only drains:
 *   the loss's CAS against the caller's release CAS is the same race as the
 *   cancel's, which the runs without LOSS check.
 *
 * Every statement is one sequentially consistent step (the seq_cst fences
 * are implied); the NOFENCE_* runs put one side's Dekker store in an x86-TSO
 * store buffer that drains at the next locked instruction or syscall.
 * futex is exact (compare-and-queue is one step, a wake reaches queued
 * waiters only). There is no watchdog: a lost wake leaves a process blocked
 * for good, which spin reports as an invalid end state; the drain waiter's
 * own sleep (host_wait, host_event.pml) is abstracted to a blocking guard.
 *
 * Checked: every call that was made ends in exactly one completion (a
 * reply, or ECLOSED when the stop cancelled it); a reply a caller returns
 * is the one computed from its own request; nothing blocks for good; the
 * worker always acknowledges the stop.
 *
 * Mutants (each must fail):
 *   NOFENCE_PUBLISH           no fence between the rq_seq store and the parked load
 *   NOFENCE_REPLY             no fence between the rp_seq store and the armed load
 *   MUTANT_NO_LINE_RECHECK    the worker's park re-check ignores the line
 *   MUTANT_CLOSED_BEFORE_CLAIM the caller reads closed before it claims the line
 *   MUTANT_RELEASE_BEFORE_READ the caller frees the line, then reads the reply
 *   MUTANT_NO_CANCEL_RING     the canceller does not ring the doorbell
 *   MUTANT_NO_LOSS_RING       (with LOSS) the loss does not ring the doorbell
 *   MUTANT_LOST_IGNORED       (with LOSS) a waiting caller looks only for CANCELLED
 *
 * Reopen (-DREOPEN, implies LOSS; S10/S11: a process worker dies and is
 * respawned DEATHS times, and the line is reopened for each new worker):
 *   Loser, per death: the worker process dies (it stops at its next loop
 *   top or in its park, and the loser waits until it has: recovery runs
 *   after the reap); then, if no stop was requested yet (a respawn):
 *   token = 0 (xchg: a reopen for the dead worker not made is void); one
 *   step on the state (wait out OPENING; from IDLE or CLAIMED the token =
 *   the new worker's nonce first); CAS IDLE or DOWN -> DOWN, CLAIMED or
 *   LOST_OPEN -> LOST_OPEN (CLAIMED: then ring); from DOWN or LOST_OPEN
 *   the token after the step; spawn the new worker (served 0, waiting for
 *   open == its nonce); wait out OPENING; if the line is DOWN: REOPEN.
 *   Else (stopping): acknowledge for the dead worker, no respawn, the line
 *   goes RETIRED / LOST for good.
 *   Caller: LOST_OPEN ends a wait as LOST does; on its way out of a call
 *   that did not release the line: CAS LOST_OPEN -> DOWN, then REOPEN.
 *   REOPEN (either party): CAS DOWN -> OPENING (one at a time); n = xchg
 *   (token, 0); n == 0: line = DOWN (the recovery reopens after its store
 *   of the token); else base = hseq; rq_seq = rp_seq = base; rq_open = n;
 *   line = IDLE.
 *   New worker: until rq_open == its nonce it serves nothing; then
 *   served = rp_seq (the base) and it serves as before.
 *   Ghost: lgen, the line's epoch, bumped by each recovery's state step; a
 *   claim copies it into its request (rq_g); worker g serves only requests
 *   of epoch g (a request of an earlier epoch is a call that already ended
 *   with the loss's status: running it is hazard 1).
 * Reopen mutants (each must fail):
 *   MUTANT_REOPEN_EARLY       the recovery reopens a LOST_OPEN line at once,
 *                             without waiting for its caller
 *   MUTANT_SERVE_BEFORE_OPEN  the new worker adopts rp_seq at boot and serves
 *                             without waiting for the open word
 *   MUTANT_TOKEN_EARLY        the recovery stores the new token before its
 *                             state step (and clears nothing): a reopen
 *                             half-way for the dead worker opens the line
 *                             for the new one, and a claim of the old epoch
 *                             slips in before the step (needs two deaths)
 *
 * Re-send (S12, in every REOPEN run): the worker stores the sequence it
 * takes (taken, its lane extension word) before the task runs; the
 * recovery, stepping from CLAIMED, copies it (lost_taken) before its CAS to
 * LOST_OPEN, and wipes the word for the new worker; the caller, after its
 * CAS LOST_OPEN -> DOWN, decides: no reply and lost_taken != s -> the call
 * is sent again on the ticketed path (ghost: resent + 1; that path runs it
 * at most once and completes it once, its own proofs); else it ends with
 * the loss status. -DMIDKILL lets the kill land between any two steps of a
 * serve (read / taken / task begun / reply published / rung), not only at
 * the loop top and in the park; -DLATE_STOP starts the stop after every
 * call (the stop-during-loss cases are the REOPEN runs'), to keep it small.
 *   Checked: every call made ends in exactly one completion (completed +
 *   resent == made); a re-sent call never began (ran[v] == 0, and the new
 *   worker never serves it: each task begins at most once on any route);
 *   a call the dead worker never took does not end with the loss status
 *   when its caller turned the line DOWN (it is re-sent).
 * Re-send mutants (each must fail; MIDKILL):
 *   MUTANT_COPY_AFTER_CAS     the recovery copies taken after its CAS to
 *                             LOST_OPEN: the caller reads the old copy and
 *                             re-sends a call that ran
 *   MUTANT_DECIDE_EARLY       the caller reads the copy before the look
 *                             that ends its wait (the read its CAS orders)
 *   MUTANT_TAKEN_AFTER_RUN    the worker stores taken after the task ran
 *   MUTANT_SERVE_BELOW_BASE   the new worker adopts base - 1: it serves the
 *                             request in the slot (the epoch check fires;
 *                             without it, the run-once check)
 *   MUTANT_RESEND_IF_NONE     the caller re-sends only if the dead worker
 *                             took nothing at all (taken == 0): a call it
 *                             never took, after one it served, fails
 */

/* check: safety | cc: -DSAFETY | pan: -m20000 */
/* check: one_caller_three_calls | spin: -DNC=1 -DCALLS=3 | cc: -DSAFETY | pan: -m20000 */
/* check: nofence_publish | spin: -DNOFENCE_PUBLISH | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: nofence_reply | spin: -DNOFENCE_REPLY | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_no_line_recheck | spin: -DMUTANT_NO_LINE_RECHECK | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_closed_before_claim | spin: -DMUTANT_CLOSED_BEFORE_CLAIM | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_release_before_read | spin: -DMUTANT_RELEASE_BEFORE_READ | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_no_cancel_ring | spin: -DMUTANT_NO_CANCEL_RING | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: loss | spin: -DLOSS | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m20000 */
/* check: loss_one_caller_two_calls | spin: -DLOSS -DNC=1 -DCALLS=2 | cc: -DSAFETY -O2 | pan: -m20000 */
/* check: mutant_no_loss_ring | spin: -DLOSS -DMUTANT_NO_LOSS_RING | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: mutant_lost_ignored | spin: -DLOSS -DMUTANT_LOST_IGNORED | cc: -DSAFETY | pan: -m20000 | expect: fail */
/* check: reopen_one_caller_two_calls | spin: -DREOPEN -DNC=1 -DCALLS=2 | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 */
/* check: reopen_two_deaths | spin: -DREOPEN -DDEATHS=2 -DNC=1 -DCALLS=1 | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 */
/* check: mutant_reopen_early | spin: -DREOPEN -DMUTANT_REOPEN_EARLY | cc: -DSAFETY -O2 | pan: -m100000 | expect: fail */
/* check: mutant_serve_before_open | spin: -DREOPEN -DMUTANT_SERVE_BEFORE_OPEN | cc: -DSAFETY -O2 | pan: -m100000 | expect: fail */
/* check: mutant_token_early | spin: -DREOPEN -DMUTANT_TOKEN_EARLY -DDEATHS=2 -DNC=1 -DCALLS=2 | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 | expect: fail */
/* check: resend_midkill | spin: -DREOPEN -DMIDKILL -DLATE_STOP -DNC=1 -DCALLS=2 | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 */
/* check: resend_midkill_two_deaths | spin: -DREOPEN -DMIDKILL -DLATE_STOP -DDEATHS=2 -DNC=1 -DCALLS=1 | cc: -DSAFETY -DCOLLAPSE -O2 | pan: -m100000 */
/* check: mutant_copy_after_cas | spin: -DREOPEN -DMIDKILL -DLATE_STOP -DNC=1 -DCALLS=2 -DMUTANT_COPY_AFTER_CAS | cc: -DSAFETY -O2 | pan: -m100000 | expect: fail */
/* check: mutant_decide_early | spin: -DREOPEN -DMIDKILL -DLATE_STOP -DNC=1 -DCALLS=2 -DMUTANT_DECIDE_EARLY | cc: -DSAFETY -O2 | pan: -m100000 | expect: fail */
/* check: mutant_taken_after_run | spin: -DREOPEN -DMIDKILL -DLATE_STOP -DNC=1 -DCALLS=2 -DMUTANT_TAKEN_AFTER_RUN | cc: -DSAFETY -O2 | pan: -m100000 | expect: fail */
/* check: mutant_serve_below_base | spin: -DREOPEN -DMIDKILL -DLATE_STOP -DNC=1 -DCALLS=2 -DMUTANT_SERVE_BELOW_BASE | cc: -DSAFETY -O2 | pan: -m100000 | expect: fail */
/* check: mutant_resend_if_none | spin: -DREOPEN -DMIDKILL -DLATE_STOP -DNC=1 -DCALLS=2 -DMUTANT_RESEND_IF_NONE | cc: -DSAFETY -O2 | pan: -m100000 | expect: fail */

#ifndef NC
#define NC 2
#endif
#ifndef CALLS
#define CALLS 1
#endif

#define IDLE 0
#define CLAIMED 1
#define CANCELLED 2
#define RETIRED 3
#define LOST 4
#define DOWN 5
#define LOST_OPEN 6
#define OPENING 7

#ifdef REOPEN
#ifndef LOSS
#define LOSS
#endif
#ifndef DEATHS
#define DEATHS 1
#endif
#endif

#define RUNNING 0
#define REQUESTED 1
#define ACKNOWLEDGED 2

/* the line: the state word is host-private (Lane), the rest is shared */
byte line = IDLE;
byte hseq = 0;   /* the line's request count: host-private, claim holder only */
byte rq_seq = 0; /* request block: sequence (host writes) */
byte rq_val = 0; /* request block: argument */
byte rp_seq = 0; /* reply block: sequence (worker writes) */
byte rp_val = 0; /* reply block: value */

/* waking: the worker's park (wake.pml) and the hosts' doorbell (doorbell.pml) */
byte wseq = 0;
bit parked = 0;
bit wsleeping = 0;
byte db_seq = 0;
bit armed = 0;
bit hsleeping[NC];

byte stop = RUNNING;
bit closed = 0;
byte outstanding = 0;
bit dead = 0; /* LOSS: the worker died (it stops at its next loop top) */
#ifdef REOPEN
byte kills = 0;   /* workers killed: worker g is dead once kills > g */
byte stopped = 0; /* workers that stopped (died or acknowledged) */
byte rq_open = 0; /* request block: the open word (host writes, S11) */
byte token = 0;   /* Lane::line_token: the open word of a reopen due */
byte lgen = 0;    /* ghost: the line's epoch (recoveries' state steps) */
byte rq_g = 0;    /* ghost: the epoch of the claim that wrote the request */
/* S12 */
byte taken = 0;      /* the lane extension's taken word: the sequence the
                        worker took last (S4), wiped for a respawned one */
byte lost_taken = 0; /* Lane::line_lost_taken: S10's copy of it */
byte resent = 0;     /* ghost: calls sent again on the ticketed path */
#define NV (NC * CALLS + 1)
byte ran[NV];        /* ghost: times call v's task began, on any route */
#ifdef MIDKILL
bit tk[NV];          /* ghost: a worker stored call v's sequence as taken */
#define TOOK(v) tk[v]
#define TAKE_GHOST(v) tk[v] = 1
#else
#define TOOK(v) (ran[v] != 0) /* taken and begun are one step */
#define TAKE_GHOST(v) skip
#endif
#ifdef LATE_STOP
byte ended = 0;      /* ghost: callers that made all their calls */
#endif
#define DEAD (kills > g)
/* a kill lands between any two steps of a serve (S12's windows): the
 * step runs only if the worker is still alive (one step, no extra state) */
#define ALIVE(stmts) atomic { if :: DEAD -> goto gone :: else -> stmts fi }
#else
#define DEAD dead
#endif

/* ghosts */
byte made = 0;      /* calls that went onto the line */
byte completed = 0; /* completions those calls ended in */
bit cancel_mode = 0;

#define WAKE_HOSTS  d_step { byte i_ = 0; do :: i_ < NC -> hsleeping[i_] = 0; i_++ :: else -> break od }
#define LANE_WAKE   atomic { if :: parked == 1 -> parked = 0; wseq++; wsleeping = 0 :: else -> skip fi }
#ifdef MUTANT_LOST_IGNORED
#define LINE_ENDED (line == CANCELLED)
#else
#define LINE_ENDED (line == CANCELLED || line == LOST || line == LOST_OPEN)
#endif
#ifdef MUTANT_NO_LINE_RECHECK
#define LINE_PENDING false
#else
#define LINE_PENDING (!waiting && rq_seq != served)
#endif
/* S11, worker: the open word for us (acquire), then adopt the base */
#ifdef MUTANT_SERVE_BELOW_BASE
#define ADOPT if :: waiting && rq_open == g -> served = rp_seq - 1; waiting = 0 :: else -> skip fi
#else
#define ADOPT if :: waiting && rq_open == g -> served = rp_seq; waiting = 0 :: else -> skip fi
#endif
/* S11, host: take the token, write the base and the open word, then IDLE */
#define REOPEN_LINE \
	atomic { if :: line == DOWN -> line = OPENING; got = 1 :: else -> got = 0 fi }; \
	if \
	:: got -> \
		d_step { n = token; token = 0 }; \
		if \
		:: n == 0 -> line = DOWN \
		:: else -> rq_seq = hseq; rp_seq = hseq; rq_open = n; line = IDLE \
		fi \
	:: else -> skip \
	fi

proctype worker(byte g; bit waiting)
{
	byte served = 0, s, v;
#ifdef NOFENCE_REPLY
	bit sb = 0; /* rp_seq = served still in the store buffer */
#define R_DRAIN if :: sb -> rp_seq = served; sb = 0 :: else -> skip fi
#define R_DRAIN_MAYBE if :: sb -> rp_seq = served; sb = 0 :: true -> skip fi
#else
#define R_DRAIN skip
#define R_DRAIN_MAYBE skip
#endif

#ifdef MUTANT_SERVE_BEFORE_OPEN
	if :: waiting -> served = rp_seq; waiting = 0 :: else -> skip fi;
#endif
top:
	R_DRAIN_MAYBE;
	if
	:: DEAD -> goto gone /* LOSS: a dead worker does nothing more */
	:: else -> skip
	fi;
#ifdef REOPEN
	ADOPT;
#endif
	if
	:: stop == REQUESTED -> goto ack /* the line is not served after a stop */
	:: true -> skip
	fi;
	if
	:: !waiting && rq_seq == served + 1 ->
		/* S3: acquire load of rq_seq saw the request; read it */
#if defined(REOPEN) && !defined(MIDKILL)
		/* read; S12: the taken word, before the task runs; the task
		 * begins (the worker dies only at its loop top or in its park,
		 * so nobody can tell these steps apart) */
		d_step {
			v = rq_val;
			assert(rq_g == g); /* never a request of an earlier epoch */
			taken = served + 1;
			assert(ran[v] == 0); ran[v]++
		}
		rp_val = v;
#else
		v = rq_val;
#ifdef REOPEN
		assert(rq_g == g); /* never a request of an earlier epoch */
		/* killed here: read, not taken (taken != s: sent again) */
#ifdef MUTANT_TAKEN_AFTER_RUN
		ALIVE(assert(ran[v] == 0); ran[v]++);
		ALIVE(taken = served + 1; TAKE_GHOST(v));
#else
		/* S12: the taken word, before the task runs */
		ALIVE(taken = served + 1; TAKE_GHOST(v));
		/* killed here: taken, not begun (the one window the word cannot
		 * tell: it ends with the loss status, it never runs twice) */
		ALIVE(assert(ran[v] == 0); ran[v]++); /* the task begins */
#endif
		/* killed here: ran, no reply (the loss status) */
		ALIVE(rp_val = v);
#else
		/* run the task (echo); write the reply, then publish (S5) */
		rp_val = v;
#endif
#endif
		served++;
#ifdef NOFENCE_REPLY
		sb = 1; /* rp_seq = served sits in the store buffer: no fence */
		R_DRAIN_MAYBE;
#else
		rp_seq = served;
#endif
		/* D2: (fence) load armed; D3: claim the ring (a locked RMW) */
		atomic {
			if
#ifdef MIDKILL
			:: DEAD -> goto gone /* published, not rung: the loss's ring wakes the caller */
#endif
			:: armed == 1 -> R_DRAIN; armed = 0; db_seq++; WAKE_HOSTS
			:: else -> skip
			fi
		}
		goto top
	:: else -> skip
	fi;
	if
	:: stop == REQUESTED -> goto ack
	:: else -> skip
	fi;
	/* park (W2): read the sequence, announce, fence, re-check */
	s = wseq;
	R_DRAIN; /* the announcement's fence (a locked instruction) drains it */
	parked = 1;
#ifdef REOPEN
	ADOPT;
#endif
	if
	:: LINE_PENDING -> parked = 0; goto top
	:: else -> skip
	fi;
	if
	:: stop == REQUESTED -> parked = 0; goto top
	:: else -> skip
	fi;
	atomic {
		if
		:: wseq == s -> wsleeping = 1
		:: else -> skip
		fi
	}
	wsleeping == 0 || DEAD;
	parked = 0; /* (the waker already cleared it, or the compare failed) */
	goto top;
ack:
	R_DRAIN;
	stop = ACKNOWLEDGED;
gone:
#ifdef REOPEN
	stopped++;
#endif
	skip
}

proctype caller(byte me)
{
	byte k = 0, s, d, v, r, cg, n, lt;
	bit got, p, rel, replied, resend;
#ifdef NOFENCE_PUBLISH
	bit hb = 0;
#endif

next:
	if
	:: k == CALLS -> goto fin
	:: else -> skip
	fi;
	v = me * CALLS + k + 1;
	outstanding++; /* S1 */
#ifdef MUTANT_CLOSED_BEFORE_CLAIM
	if
	:: closed -> outstanding--; k++; goto next
	:: else -> skip
	fi;
#endif
	atomic {
		if
		:: line == IDLE -> line = CLAIMED; got = 1
#ifdef REOPEN
			; cg = lgen
#endif
		:: else -> got = 0
		fi
	}
	rel = 0;
	if
	:: !got -> outstanding--; k++; goto next /* fall back: the slow path's business */
	:: else -> skip
	fi;
#ifndef MUTANT_CLOSED_BEFORE_CLAIM
	if
	:: closed -> line = IDLE; outstanding--; k++; goto next
	:: else -> skip
	fi;
#endif
	/* S2: write the request, publish its sequence */
	rq_val = v;
#ifdef REOPEN
	rq_g = cg;
#endif
	hseq++;
	s = hseq;
	made++;
	/* W1: fence, load parked; then claim the park and ring */
#ifdef NOFENCE_PUBLISH
	hb = 1;
	if
	:: hb -> rq_seq = s; hb = 0; p = parked
	:: true -> p = parked
	fi;
	if :: hb -> rq_seq = s; hb = 0 :: else -> skip fi;
#else
	rq_seq = s;
	p = parked;
#endif
	if
	:: p -> LANE_WAKE
	:: else -> skip
	fi;
wait:
#ifdef MUTANT_DECIDE_EARLY
	lt = lost_taken; /* read before the look that ends the wait */
#endif
	if
	:: rp_seq == s -> goto reply
	:: LINE_ENDED -> goto cancelled
	:: else -> skip
	fi;
	/* the bounded spin ran out: sleep on the doorbell (D4, D1) */
	d = db_seq;
	armed = 1;
	if
	:: rp_seq == s -> goto reply
	:: LINE_ENDED -> goto cancelled
	:: else -> skip
	fi;
	atomic {
		if
		:: db_seq == d -> hsleeping[me] = 1
		:: else -> skip
		fi
	}
	hsleeping[me] == 0;
	goto wait;
reply:
#ifdef REOPEN
	replied = 1;
#endif
#ifdef MUTANT_RELEASE_BEFORE_READ
	atomic { if :: line == CLAIMED -> line = IDLE; got = 1 :: else -> got = 0 fi }
	r = rp_val;
#else
	r = rp_val; /* S6: read the reply after the acquire load of rp_seq */
	atomic { if :: line == CLAIMED -> line = IDLE; got = 1 :: else -> got = 0 fi }
#endif
	if
	:: got -> assert(r == v); rel = 1 /* its own reply, nobody else's */
	:: else -> skip          /* cancelled or lost meanwhile: ECLOSED or the
	                            loss's status, the reply is dropped */
	fi;
	goto complete;
cancelled:
	skip;
complete:
#ifdef REOPEN
	/* S11: on the way out of a call whose line was lost with a respawn */
	resend = 0;
	if
	:: !rel ->
		atomic { if :: line == LOST_OPEN -> line = DOWN; got = 1 :: else -> got = 0 fi };
		if
		:: got ->
			/* S12: the dead worker's taken word, copied by S10 before
			 * its CAS to LOST_OPEN (which ours read from) */
#ifndef MUTANT_DECIDE_EARLY
			lt = lost_taken;
#endif
			if
#ifdef MUTANT_RESEND_IF_NONE
			:: !replied && lt == 0 -> resend = 1
#else
			:: !replied && lt != s -> resend = 1
#endif
			:: else -> skip
			fi;
			/* a call the dead worker never took does not end with the
			 * loss status: it is sent again */
			assert(resend || replied || TOOK(v));
			REOPEN_LINE
		:: else -> skip
		fi
	:: else -> skip
	fi;
	/* re-sent (S12): the ticketed path completes it once and runs it at
	 * most once (its own proofs, lanes_death.pml); it must not have begun
	 * here, and the new worker must never serve it (S11's base) */
	d_step {
		if
		:: resend -> assert(ran[v] == 0); ran[v]++; resent++
		:: else -> completed++
		fi;
		lt = 0; replied = 0; resend = 0 /* (dead locals) */
	}
#else
	completed++;
#endif
	assert(completed <= made);
	outstanding--;
	k++;
	goto next;
fin:
#ifdef LATE_STOP
	ended++;
#endif
	skip
}

active proctype stopper()
{
	bit p;
#ifdef LATE_STOP
	ended == NC; /* (S12 runs) the stop comes after every caller's calls */
#endif
	closed = 1; /* S7: then the fence of host_event */
	d_step { db_seq++; WAKE_HOSTS }
	/* With LOSS the stop drains (the loss's CAS against the caller's
	 * release is the cancel's race again, checked without LOSS). */
	if
#ifndef LOSS
	:: cancel_mode = 1
#endif
	:: cancel_mode = 0
	fi;
	if
	:: cancel_mode ->
		atomic { if :: line == CLAIMED -> line = CANCELLED :: else -> skip fi };
#ifndef MUTANT_NO_CANCEL_RING
		d_step { db_seq++; WAKE_HOSTS }
#endif
		skip
	:: else ->
		outstanding == 0 /* DRAIN: every call made has completed */
	fi;
	stop = REQUESTED;
	LANE_WAKE;
#ifdef REOPEN
	stop == ACKNOWLEDGED; /* the worker's, or the recovery's on its behalf */
#else
	stop == ACKNOWLEDGED || dead; /* a dead worker is acknowledged for (host) */
#endif
	/* every call made completed exactly once, or (CANCEL) is still
	 * completing in a caller that will return ECLOSED */
#ifdef REOPEN
	/* each call made completed exactly once: on the line, or re-sent
	 * and completed by the ticketed path */
	assert(completed + resent == made)
#else
	assert(cancel_mode || completed == made)
#endif
}

#ifdef REOPEN
active proctype loser()
{
	byte st, g, n;
	bit got, respawn;
	do
	:: kills < DEATHS ->
		/* the current worker dies; recovery runs after the reap */
		kills++;
		g = kills;
		d_step { if :: parked == 1 -> parked = 0; wsleeping = 0 :: else -> skip fi }
		stopped == kills;
		atomic {
			if
			:: stop == RUNNING -> respawn = 1
			:: else -> respawn = 0; stop = ACKNOWLEDGED /* on its behalf */
			fi
		}
#ifdef MUTANT_TOKEN_EARLY
		if :: respawn -> token = g :: else -> skip fi;
#else
		if :: respawn -> token = 0 :: else -> skip fi;
#endif
step:
		line != OPENING; /* wait out a reopen half-way */
		st = line;
#ifndef MUTANT_TOKEN_EARLY
		/* from IDLE / CLAIMED no reopen can start before our step: the
		 * token may go first, so the LOST_OPEN caller finds it */
		if
		:: respawn && (st == IDLE || st == CLAIMED) -> token = g
		:: else -> skip
		fi;
#endif
#ifndef MUTANT_COPY_AFTER_CAS
		/* S12: what the dead worker took, before the CAS publishes it */
		if
		:: st == CLAIMED -> lost_taken = taken
		:: else -> skip
		fi;
#endif
		atomic {
			if
			:: line != st -> got = 0 /* moved: look again */
			:: else -> got = 1;
				if
				:: st == IDLE || st == DOWN -> line = (respawn -> DOWN : RETIRED); lgen++
				:: st == CLAIMED || st == LOST_OPEN -> line = (respawn -> LOST_OPEN : LOST); lgen++
				:: else -> skip /* CANCELLED, RETIRED, LOST: for good */
				fi
			fi
		}
		if
		:: !got -> goto step
		:: else -> skip
		fi;
#ifdef MUTANT_COPY_AFTER_CAS
		if
		:: st == CLAIMED -> lost_taken = taken
		:: else -> skip
		fi;
#endif
#ifndef MUTANT_NO_LOSS_RING
		if
		:: st == CLAIMED -> d_step { db_seq++; WAKE_HOSTS; skip }
		:: else -> skip
		fi;
#endif
		if
		:: respawn -> skip
		:: else -> break
		fi;
		taken = 0; /* lane_lost wipes the extension for the new worker */
#ifndef MUTANT_TOKEN_EARLY
		/* after the step from DOWN / LOST_OPEN (an earlier loss's) */
		if
		:: st == DOWN || st == LOST_OPEN -> token = g
		:: else -> skip
		fi;
#endif
		run worker(g, 1);
#ifdef MUTANT_REOPEN_EARLY
		atomic { if :: line == LOST_OPEN -> line = DOWN :: else -> skip fi };
#endif
		line != OPENING; /* wait out a reopen half-way */
		REOPEN_LINE
	:: else -> break
	od
}
#elif defined(LOSS)
active proctype loser()
{
	bit rang = 0;
	/* a process worker dies (never serves again); a thread worker being
	 * retired may run on */
	if
	:: dead = 1
	:: skip
	fi;
again:
	if
	:: atomic { line == IDLE -> line = RETIRED }
	:: atomic { line == CLAIMED -> line = LOST; rang = 1 }
	:: atomic { line == CANCELLED || line == RETIRED || line == LOST -> skip }
	fi;
#ifndef MUTANT_NO_LOSS_RING
	if
	:: rang -> d_step { db_seq++; WAKE_HOSTS; skip }
	:: else -> skip
	fi;
#endif
	skip
}
#endif

init
{
	byte i = 0;
	atomic {
		run worker(0, 0);
		do
		:: i < NC -> run caller(i); i++
		:: else -> break
		od
	}
}
