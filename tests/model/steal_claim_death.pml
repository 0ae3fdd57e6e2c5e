/* SPDX-License-Identifier: MIT */
/*
 * tests/model/steal_claim_death.pml - the steal claim protocol when one
 * consumer dies mid-claim (the model itself is steal_claim.pml; see its
 * header, "Death"). Two consumers, 3 regions of 1 lane, 4 tasks (a lane is
 * reused), a concurrent producer; the senior (DEADC=0) or the junior
 * (DEADC=1) may die at any point of any claim or while idle.
 *
 *   dead0 / dead1            the runtime's reaping (REAP_CLAIM): survivors
 *                            finish every task, nothing is decoded twice,
 *                            the dead consumer's recorded claim is reported
 *                            lost and retired by the host
 *   dead1_reference_reap     the reference's reaping (only the LIVE/DEAD
 *                            bit): a survivor decodes again a lane the dead
 *                            consumer had already decoded -> must FAIL
 *   mutant_claim_after_decode the claim is recorded after the decodes (in
 *                            the runtime: after the arena slots were freed)
 *                            instead of before: dying between the last
 *                            decode and the record, the lanes look pending
 *                            and unclaimed -> decoded twice, must FAIL
 *   mutant_no_reap           the host never marks the consumer dead: a
 *                            survivor waits for the stale WANT forever
 *
 * Respawn (RESPAWN, a process pool's respawned worker; 3 tasks: with 4 the
 * state space passes 34 million states, beyond the runs' memory bound):
 * after the reap the host revives the dead consumer's id (steal_revive:
 * CLAIM = 0 keeping ACK, WANT = 0, then DEAD cleared) and a successor
 * consumer with that id starts, its ACK mirror loaded from ACK[d]. Every
 * task is still decoded exactly once or reported lost (only if the dead
 * consumer had recorded it), regions stay mutually exclusive, A == XOR ACK
 * at the end.
 *
 *   respawn0 / respawn1      the senior / the junior dies and is revived
 *   respawn1_no_livelock     no cycle at all with the successor either
 *   mutant_revive_ack_zero   the revival zeroes ACK[d] too (the successor
 *                            starts from 0): the lanes d retired look
 *                            pending again -> must FAIL
 *   mutant_revive_before_reap the successor runs before the dead
 *                            consumer's claim is reaped: the reaper then
 *                            retires the successor's claim -> must FAIL
 *   mutant_stale_dead[0]     step 7 checks the peers live at step 3 (no
 *                            fresh DEAD load after the WANT store): a
 *                            survivor that saw d dead skips the successor's
 *                            WANT, and both own one region -> must FAIL
 */
/* check: dead0 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 -DDEATH -DDEADC=0 -DREAP_CLAIM | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: dead1 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 -DDEATH -DDEADC=1 -DREAP_CLAIM | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: dead0_no_livelock | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=0 -DREAP_CLAIM | cc: -DNP -O2 | pan: -l -m100000 */
/* check: dead1_reference_reap | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 -DDEATH -DDEADC=1 | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_claim_after_decode | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 -DDEATH -DDEADC=1 -DREAP_CLAIM -DMUTANT_CLAIM_AFTER_DECODE | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_claim_after_decode0 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 -DDEATH -DDEADC=0 -DREAP_CLAIM -DMUTANT_CLAIM_AFTER_DECODE | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_no_reap | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=4 -DDEATH -DDEADC=0 -DREAP_CLAIM -DMUTANT_NO_REAP | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: respawn0 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=0 -DREAP_CLAIM -DRESPAWN | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: respawn1 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN | cc: -DSAFETY -O2 | pan: -m100000 */
/* check: respawn1_no_livelock | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN | cc: -DNP -O2 | pan: -l -m100000 */
/* check: mutant_revive_ack_zero | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN -DMUTANT_REVIVE_ACK_ZERO | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_revive_before_reap | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN -DMUTANT_REVIVE_BEFORE_REAP | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_stale_dead | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=1 -DREAP_CLAIM -DRESPAWN -DMUTANT_STALE_DEAD | cc: -DSAFETY | pan: -m100000 | expect: fail */
/* check: mutant_stale_dead0 | spin: -DN=2 -DG=1 -DREGIONS=3 -DTASKS=3 -DDEATH -DDEADC=0 -DREAP_CLAIM -DRESPAWN -DMUTANT_STALE_DEAD | cc: -DSAFETY | pan: -m100000 | expect: fail */
#include "steal_claim.pml"
