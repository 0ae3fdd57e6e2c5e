/* SPDX-License-Identifier: MIT */
/*
 * tests/model/steal_claim_recycle.pml - a recycle under stealing: a
 * consumer that leaves the claim protocol as asked and a successor that
 * joins with its id (the model itself is steal_claim.pml; see its header,
 * "Death", and src/lane.h "Recycling"). Two consumers, 3 regions of 1 lane,
 * 3 tasks, a concurrent producer. At any point the host asks consumer
 * DEADC to leave (its stop word RETIRE); it leaves at the top of its loop,
 * or withdraws its WANT and leaves while it waits for a junior. Once it is
 * gone the host reaps its claim, marks it dead and revives the id for the
 * successor (steal_revive), as after a death.
 *
 *   leave0 / leave1            the senior / the junior leaves: every task
 *                              is decoded exactly once, none is lost (the
 *                              leaver holds no claim when the host reaps
 *                              it: asserted), regions stay mutually
 *                              exclusive with the successor, A == XOR ACK
 *   leave1_no_livelock         no cycle at all, the successor included
 *   mutant_leave_after_claim   the leaver checks its stop between its claim
 *                              and the run of what it took: a call is lost
 *                              to the recycle -> must FAIL
 *   mutant_join_early          the successor joins once the leave is asked
 *                              for, before the leaver is gone: two consumers
 *                              with one id -> must FAIL
 */
/* check: leave0 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=0 -DREAP_CLAIM -DRESPAWN -DRECYCLE | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: leave1 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN -DRECYCLE | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: leave1_no_livelock | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN -DRECYCLE | cc: -DNP -O2 | pan: -l -m100000 */
/* check: mutant_leave_after_claim | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN -DRECYCLE -DMUTANT_LEAVE_AFTER_CLAIM | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_join_early | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN -DRECYCLE -DMUTANT_JOIN_EARLY | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_join_early0 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=0 -DREAP_CLAIM -DRESPAWN -DRECYCLE -DMUTANT_JOIN_EARLY | cc: -DSAFETY | pan: -m100000 | expect: fail */
#include "steal_claim.pml"
