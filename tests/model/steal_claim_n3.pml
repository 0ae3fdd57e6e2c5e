/* SPDX-License-Identifier: MIT */
/*
 * tests/model/steal_claim_n3.pml - the steal claim protocol with three
 * consumers (the model itself is steal_claim.pml; see its header).
 *
 * Three consumers and a concurrent producer with more than two tasks is out
 * of reach of an exhaustive search within the time budget (> 34 million
 * states), so the N = 3 instances are:
 *   n3_prepublished     the producer publishes 3 tasks into 4 regions of 2
 *                       lanes before the consumers start (two share a
 *                       region): every claim race between three consumers
 *                       (senior/middle/junior) over multi-lane regions,
 *                       nothing published concurrently. One call per claim
 *                       means one claim per task, all aimed at the region of
 *                       the oldest: 4 tasks are 26 million states (107 s
 *                       with -DCOLLAPSE), over the budget, 3 are 5.8 million;
 *   n3_live             4 regions of 1 lane, 2 tasks published concurrently
 *                       with the claims.
 * Both keep the runtime's rule regions >= consumers + 1.
 */
/* check: n3_prepublished | spin: -DN=3 -DG=2 -DREGIONS=4 -DTASKS=3 -DPREPUBLISH | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: n3_live | spin: -DN=3 -DG=1 -DREGIONS=4 -DTASKS=2 | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: n3_mutant_no_withdraw | spin: -DN=3 -DG=2 -DREGIONS=4 -DTASKS=6 -DPREPUBLISH -DMUTANT_NO_WITHDRAW | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: n3_mutant_senior_no_wait | spin: -DN=3 -DG=2 -DREGIONS=4 -DTASKS=6 -DPREPUBLISH -DMUTANT_SENIOR_NO_WAIT | cc: -DSAFETY | pan: -m100000 | expect: fail */
#include "steal_claim.pml"
