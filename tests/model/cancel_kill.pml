/* SPDX-License-Identifier: MIT */
/*
 * tests/model/cancel_kill.pml - knit_cancel(KNIT_CANCEL_KILL) on a process
 * pool's lane (src/api.cpp knit_cancel, src/proc.cpp proc_cancel_kill and
 * cancel_kills, the running stamp of src/worker.cpp, lane_lost of
 * src/lane.cpp as lanes_death.pml proves it).
 *
 * One lane, calls 1..N placed in order. The worker runs them one by one:
 * it stores its running stamp (the call's id), runs the task (the ghost
 * runs[] counts executions), publishes the result, clears the stamp. The
 * reaper (a dispatcher holder) completes published results. The canceller
 * asks to kill call K: holding mu, it posts the request and completes K
 * with CANCELED in the same hold. The monitor takes the request, takes the
 * dispatcher, then mu, and kills the worker only if the stamp names K and
 * K is still held by the lane (not reaped); the death then runs lane_lost:
 * what was published completes normally, the started calls not completed
 * fail CRASHED, the unstarted ones run again on the successor.
 *
 * Checked: every call completes exactly once; K, if the cancel found it
 * open, completes CANCELED; no call runs twice; a kill
 * is sent only while the stamp names K (so a K that never started, or that
 * finished, costs no worker); besides K, at most one call fails CRASHED:
 * the one the worker runs when the signal lands, if it finished K and
 * started another between the monitor's last look at the stamp and the
 * signal (the window).
 *
 * Runs:
 *   safety         the above
 *   k_first        the first call cancelled (more calls after it)
 *   gap_next_call  asserts that no call but K fails: spin finds the window
 *                  (the worker finishes K and starts another between the
 *                  monitor's last stamp look and the kill): documented in
 *                  knit_cancel(3), expected to fail
 * Mutants (each must make spin report an error):
 *   MUTANT_NO_STAMP_CHECK   the monitor kills without reading the stamp: a
 *                           cancel of a call not started kills the worker
 *   MUTANT_POST_BEFORE_DONE the canceller posts the request outside the
 *                           hold that completes K: the monitor can kill
 *                           first, and lane_lost fails K CRASHED
 */

/* check: safety | cc: -DSAFETY | pan: -m100000 */
/* check: k_first | spin: -DK=1 | cc: -DSAFETY | pan: -m100000 */
/* check: gap_next_call | spin: -DGAP | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_no_stamp_check | spin: -DMUTANT_NO_STAMP_CHECK | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_post_before_done | spin: -DMUTANT_POST_BEFORE_DONE | cc: -DSAFETY | pan: -m100000 | expect: fail */

#ifndef N
#define N 3 /* calls on the lane */
#endif
#ifndef K
#define K 2 /* the call cancelled with KILL */
#endif

#define OPEN 0
#define OK 1
#define CANCELED 2
#define CRASHED 3

byte status[N + 1]; /* OPEN until its one completion */
byte ncompl[N + 1]; /* completions made (must end at 1) */
byte runs[N + 1];   /* ghost: executions of the task */
bool pub[N + 1];    /* its result is published (not reaped yet) */
bool reaped[N + 1]; /* its frame came back: the lane no longer holds it */
byte nreaped;
byte stamp;         /* the running stamp: the call running, 0 = none */
byte next = 1;      /* the next call the worker takes */
bool dead;          /* the kill was sent: the worker takes no more steps */
bool posted;        /* the KILL request waits for the monitor */
bool cdone;         /* knit_cancel returned */
bool disp;          /* the dispatcher lock */
bool mu;            /* the calls' mutex */
bool lost;          /* lane_lost ran */

inline complete(c, st)
{
	if
	:: status[c] == OPEN -> status[c] = st; ncompl[c]++
	:: else -> skip
	fi
}

inline take(l) { atomic { l == false -> l = true } }

/* The worker: stops at any step once killed (a SIGKILL lands between any
 * two of its instructions); its death is seen (exited) only after that. */
bool exited;
active proctype worker()
{
	do
	:: atomic { !dead && next <= N -> stamp = next } /* stamp_write: before the task */
		atomic { if :: dead -> goto out :: else -> runs[next]++ fi }   /* the task */
		atomic { if :: dead -> goto out :: else -> pub[next] = true fi } /* publish */
		atomic { if :: dead -> goto out :: else -> stamp = 0; next++ fi } /* after */
	:: dead -> break
	:: atomic { !dead && next > N -> break }
	od;
out:
	exited = true
}

/* The reaper: a dispatcher holder that reaps published results. */
active proctype reaper()
{
	byte i;
	do
	:: lost -> break
	:: !lost && nreaped == N -> break
	:: !lost && nreaped < N ->
		take(disp);
		if
		:: lost -> skip
		:: else ->
			for (i : 1 .. N) {
				if
				:: pub[i] && !reaped[i] ->
					take(mu);
					complete(i, OK); /* late for K: dropped */
					reaped[i] = true;
					nreaped++;
					mu = false
				:: else -> skip
				fi
			}
		fi;
		disp = false
	od
}

/* knit_cancel(K, KNIT_CANCEL_KILL). */
active proctype canceller()
{
	take(mu);
	if
	:: status[K] == OPEN ->
#ifdef MUTANT_POST_BEFORE_DONE
		mu = false;
		posted = true;
		take(mu);
#else
		posted = true;
#endif
		complete(K, CANCELED)
	:: else -> skip /* -KNIT_ENOTFOUND: nothing posted */
	fi;
	mu = false;
	cdone = true
}

/* The monitor: the KILL request under the dispatcher, then a death's
 * lane_lost under the dispatcher. */
active proctype monitor()
{
	byte i;
	bool hit;
	bool named;
	(posted || cdone);
	if
	:: !posted -> goto done /* nothing was asked */
	:: else -> skip
	fi;
	take(disp);
	named = stamp == K; /* lane_read_stamp, before mu (as cancel_kills) */
#ifdef MUTANT_NO_STAMP_CHECK
	named = true;
#endif
	take(mu);
	hit = named && !reaped[K]; /* the record: live, same generation, on the lane */
#ifndef MUTANT_NO_STAMP_CHECK
	hit = hit && stamp == K; /* looked at again, right before the signal */
#endif
	if
	:: hit ->
		assert(runs[K] > 0 || stamp == K); /* never a K not started */
		dead = true                        /* the signal, after the look */
	:: else -> skip
	fi;
	mu = false;
	disp = false;
	if
	:: dead ->
		/* on_death (the pidfd: after the exit): lane_lost under the
		 * dispatcher. */
		exited;
		take(disp);
		lost = true;
		take(mu);
		for (i : 1 .. N) {
			if
			:: pub[i] && !reaped[i] -> complete(i, OK); reaped[i] = true
			:: else -> skip
			fi
		}
		for (i : 1 .. N) {
			if
			:: runs[i] > 0 && !reaped[i] ->
				complete(i, CRASHED) /* started, never answered */
			:: else -> skip
			fi
		}
		mu = false;
		disp = false;
		/* The unstarted calls run again, once, on the successor. */
		for (i : 1 .. N) {
			if
			:: runs[i] == 0 && status[i] == OPEN -> runs[i]++; complete(i, OK)
			:: else -> skip
			fi
		}
	:: else -> skip
	fi;
done:
	skip
}

/* At the end of every run: every call completed exactly once, K cancelled,
 * no call ran twice; and, GAP, no call but K failed. */
active proctype check()
{
	byte i, others;
	timeout ->
	for (i : 1 .. N) {
		assert(ncompl[i] == 1);
		assert(runs[i] <= 1);
		if
		:: i != K && status[i] == CRASHED -> others++
		:: else -> skip
		fi
	}
#ifdef GAP
	assert(others == 0);
#else
	assert(others <= 1); /* the one it runs when the signal lands */
#endif
	assert(!posted || status[K] == CANCELED) /* (not posted: K was done, ENOTFOUND) */
}
