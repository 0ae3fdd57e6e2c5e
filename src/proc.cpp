// SPDX-License-Identifier: MIT
// src/proc.cpp - the host side of process pools (src/proc.h has the
// contract) and the process backend of the worker seam (src/workers.h,
// kProcWorkers): task libraries, spawning knit-worker, the monitor thread,
// a worker's death handed to lane_lost (src/lane.h), respawn and shutdown.
#include "src/common.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <new>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/calls.h"
#include "src/dcheck.h"
#include "src/error.h"
#include "src/lane.h"
#include "src/proc.h"
#include "src/sysfile.h"
#include "src/task.h"
#include "src/syncline.h"
#include "src/wake.h"
#include "src/workers.h"

extern char **environ;

namespace knit::detail {

namespace {

// The probe for futex_waitv (ring pages, isolation): with no waiters the
// call is refused with EINVAL where it exists (not ENOSYS, nor EPERM from
// a seccomp filter).
bool futex_waitv_works()
{
	return knit_syscall6(SYS_futex_waitv, 0, 0, 0, 0, CLOCK_MONOTONIC, 0) == -EINVAL;
}

void close_lane_fds(ProcHost *h)
{
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++)
		if (h->lane_fd[i] >= 0) {
			close(h->lane_fd[i]);
			h->lane_fd[i] = -1;
		}
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++) {
		if (h->steal_fd[i] >= 0)
			close(h->steal_fd[i]);
		if (h->steal_ro[i] >= 0)
			close(h->steal_ro[i]);
		h->steal_fd[i] = h->steal_ro[i] = -1;
	}
}

// How a reaped worker that the host did not kill ended, as a
// knit_trace_exit_cause: STOPPED when it exited 0 and `asked` (it was told
// to stop), else the signal or the exit.
knit_trace_exit_cause exit_cause(const siginfo_t &si, bool asked)
{
	if (si.si_code != CLD_EXITED)
		return KNIT_TRACE_EXIT_SIGNAL;
	return asked && si.si_status == 0 ? KNIT_TRACE_EXIT_STOPPED : KNIT_TRACE_EXIT_STATUS;
}

// Close lane i's successor's pipes and kill and reap it, if there is one
// (a waiting successor holds nothing of the pool: SIGKILL loses nothing).
// failed: it failed to boot or died (recycle_failures; the next try waits
// kRecycleRetryNs). Monitor only (or a destroy after it).
void spare_drop(Pool *p, uint32_t i, bool failed)
{
	ProcHost *h = p->proc;
	if (h->spare_go[i] >= 0)
		close(h->spare_go[i]);
	if (h->spare_rd[i] >= 0)
		close(h->spare_rd[i]);
	h->spare_go[i] = h->spare_rd[i] = -1;
	if (h->spare_pidfd[i] >= 0) {
		sys_pidfd_kill(h->spare_pidfd[i], SIGKILL);
		siginfo_t si;
		reap(h->spare_pidfd[i], h->spare_pid[i], &si);
		close(h->spare_pidfd[i]);
	}
	h->spare_pidfd[i] = -1;
	h->spare_pid[i] = 0;
	h->spare_ready[i] = false;
	h->spare_got[i] = 0;
	if (failed) {
		knit_add_relaxed_64(&h->recycle_failures, 1);
		h->spare_retry[i] = knit_now_ns() + kRecycleRetryNs;
	}
}

// Kill (SIGKILL) and reap every child still there.
void kill_all(Pool *p, uint32_t n)
{
	ProcHost *h = p->proc;
	for (uint32_t i = 0; i < n; i++) {
		spare_drop(p, i, false);
		if (h->boot_rd[i] >= 0)
			close(h->boot_rd[i]);
		h->boot_rd[i] = -1;
		if (h->pidfd[i] < 0)
			continue;
		sys_pidfd_kill(h->pidfd[i], SIGKILL);
		siginfo_t si;
		reap(h->pidfd[i], h->pid[i], &si);
		KNIT_TRACE_PROC_WORKER_EXIT(p, i, KNIT_TRACE_EXIT_KILLED, si.si_status);
		close(h->pidfd[i]);
		h->pidfd[i] = -1;
		__atomic_store_n(&h->pid[i], 0, __ATOMIC_RELAXED); // proc_pid reads it
	}
}

// The message of worker i's end before its verdict (EOF on its status
// pipe): how it exited when it did so within a moment (it closed the pipe
// by exiting, as a program that is not knit-worker does), else that it
// closed the pipe. into: kErrorMax bytes.
void boot_silent_end(ProcHost *h, uint32_t i, char *into)
{
	struct pollfd f = {h->pidfd[i], POLLIN, 0};
	siginfo_t si;
	memset(&si, 0, sizeof si);
	// P_PIDFD (3); WNOWAIT: kill_all reaps it after.
	const bool ended = h->pidfd[i] >= 0 && poll(&f, 1, 1000) == 1 &&
			   knit_sys_waitid(3, h->pidfd[i], &si, WEXITED | WNOWAIT, nullptr) == 0;
	const char *hint = h->nprefix != 0 ? "" : " (is it a knit-worker?)";
	if (!ended)
		snprintf(into, kErrorMax,
			 "worker %u (\"%s\") closed its boot status pipe before reporting ready%s",
			 i, h->worker_path, hint);
	else if (si.si_code == CLD_EXITED)
		snprintf(into, kErrorMax,
			 "worker %u (\"%s\") exited with status %d before reporting ready%s", i,
			 h->worker_path, si.si_status, hint);
	else
		snprintf(into, kErrorMax,
			 "worker %u (\"%s\") was killed by signal %d before reporting ready", i,
			 h->worker_path, si.si_status);
}

// A boot verdict that says ready: "ok\n", or from a worker told to say the
// Landlock ABI it applied (SandboxBoot::ll_report) "ok landlock=N\n", N at
// least the ABI it needed and at most KNIT_LANDLOCK_ABI_MAX, into
// *landlock. Untrusted words: anything else is not ready.
static_assert(KNIT_LANDLOCK_ABI_MAX <= 9, "the verdict's ABI is one digit");
bool verdict_ready(const char *v, uint32_t n, const SandboxBoot &sb, uint32_t *landlock)
{
	if (sb.ll_report == 0)
		return n >= 3 && memcmp(v, "ok\n", 3) == 0;
	const char head[] = "ok landlock=";
	const uint32_t k = sizeof head - 1;
	if (n < k + 2 || memcmp(v, head, k) != 0 || v[k] < '0' || v[k] > '9' || v[k + 1] != '\n')
		return false;
	*landlock = (uint32_t)(v[k] - '0');
	return *landlock >= sb.ll_need && *landlock <= KNIT_LANDLOCK_ABI_MAX;
}

// Spawn every worker and read each one's boot status until "ok" (or an
// error, EOF, or kBootTimeoutNs). 0 or the create-time code, its message
// in why (kErrorMax bytes): a worker's own words (untrusted: sanitised,
// bounded) when it refused to start.
int boot_all(Pool *p, char *why)
{
	ProcHost *h = p->proc;
	const uint32_t n = p->nworkers;
	int rd[KNIT_MAX_WORKERS];
	// A verdict line: "ok\n" or "err CODE MESSAGE\n" (src/proc_worker.cpp,
	// boot_fail, writes less than this).
	char msg[KNIT_MAX_WORKERS][kBootVerdictMax];
	uint32_t got[KNIT_MAX_WORKERS];
	bool open_[KNIT_MAX_WORKERS];
	int rc = 0;
	why[0] = 0;
	uint32_t landlock = KNIT_LANDLOCK_ABI_MAX; // the least any worker applied
	for (uint32_t i = 0; i < n; i++)
		rd[i] = -1, got[i] = 0, open_[i] = false;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		int pfd[2];
		if (pipe2(pfd, O_CLOEXEC) != 0) {
			char text[128];
			snprintf(why, kErrorMax, "cannot make worker %u's boot status pipe: %s", i,
				 strerror_r(errno, text, sizeof text));
			rc = -KNIT_ESYSTEM;
			break;
		}
		rc = spawn_worker(p, i, pfd[1], why);
		close(pfd[1]);
		rd[i] = pfd[0];
		open_[i] = true;
	}
	const int64_t deadline = knit_now_ns() + kBootTimeoutNs;
	while (rc == 0) {
		struct pollfd fds[KNIT_MAX_WORKERS];
		uint32_t map[KNIT_MAX_WORKERS], m = 0;
		for (uint32_t i = 0; i < n; i++)
			if (open_[i]) {
				fds[m].fd = rd[i];
				fds[m].events = POLLIN;
				fds[m].revents = 0;
				map[m++] = i;
			}
		if (m == 0)
			break;
		const int64_t left = deadline - knit_now_ns();
		if (left <= 0) {
			snprintf(why, kErrorMax,
				 "worker %u (\"%s\") did not report ready within %lld s", map[0],
				 h->worker_path, (long long)(kBootTimeoutNs / 1000000000));
			rc = -KNIT_ECRASHED; // a worker stayed silent
			break;
		}
		const int r = poll(fds, m, (int)(left / 1000000 + 1));
		if (r < 0 && errno != EINTR) {
			char text[128];
			snprintf(why, kErrorMax, "cannot wait for the workers' boot: poll: %s",
				 strerror_r(errno, text, sizeof text));
			rc = -KNIT_ESYSTEM;
			break;
		}
		for (uint32_t k = 0; k < m && r > 0; k++) {
			if (fds[k].revents == 0)
				continue;
			const uint32_t i = map[k];
			const ssize_t g = read(rd[i], msg[i] + got[i], sizeof msg[i] - 1 - got[i]);
			if (g > 0) {
				got[i] += (uint32_t)g;
				if (got[i] < sizeof msg[i] - 1 &&
				    memchr(msg[i], '\n', got[i]) == nullptr)
					continue;
			} else if (g < 0 && errno == EINTR) {
				continue;
			}
			// A whole line, a full buffer or EOF: the verdict.
			open_[i] = false;
			msg[i][got[i]] = 0;
			uint32_t ll = 0;
			if (verdict_ready(msg[i], got[i], h->boot.sandbox, &ll)) {
				landlock = ll < landlock ? ll : landlock;
				// A prefix program must stay the worker's parent (the
				// worker checked at its start, knit-worker(8)); one that
				// exited since, while its worker booted, forked it and
				// left: refused as the worker refuses it. One that exits
				// later is a crash (and the worker dies with it).
				struct pollfd f = {h->pidfd[i], POLLIN, 0};
				if (h->nprefix != 0 && poll(&f, 1, 0) == 1) {
					snprintf(why, kErrorMax,
						 "worker %u: the worker_prefix program \"%s\" "
						 "exited while its worker "
						 "booted: it must stay the worker's parent (not "
						 "fork and exit)",
						 i, h->prefix[0]);
					rc = -KNIT_EINVAL;
					break;
				}
				continue;
			}
			if (got[i] == 0) {
				boot_silent_end(h, i, why);
				rc = -KNIT_ECRASHED; // died (or exited) before its verdict
				break;
			}
			// "err CODE MESSAGE": the worker's words, from a process we
			// do not trust: printable ASCII only, bounded. Its code is
			// kept to the documented ones.
			char text[kBootVerdictMax];
			int code = 0;
			const char *words = msg[i];
			if (got[i] > 4 && memcmp(msg[i], "err ", 4) == 0) {
				char *end = nullptr;
				const long c = strtol(msg[i] + 4, &end, 10);
				code = c > 0 && c < KNIT_ERROR_MAX_ ? (int)c : 0;
				words = *end == ' ' ? end + 1 : end;
				error_sanitize(text, sizeof text, words,
					       got[i] - (size_t)(words - msg[i]));
				snprintf(why, kErrorMax, "worker %u failed its boot: %s", i, text);
			} else {
				error_sanitize(text, sizeof text, msg[i], got[i]);
				snprintf(why, kErrorMax,
					 "worker %u sent a malformed boot verdict: \"%s\"", i,
					 text);
			}
			rc = code == KNIT_EVERSION || code == KNIT_ENOMEM || code == KNIT_EINVAL ||
					     code == KNIT_ESYSTEM
				     ? -code
				     : -KNIT_EPROTO;
			break;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (rd[i] >= 0)
			close(rd[i]);
	if (rc != 0) {
		kill_all(p, n);
	} else if (h->boot.sandbox.ll_report != 0) {
		// What the stats say; every later worker (a respawn, a successor)
		// applies at least as much or refuses to boot, and says nothing.
		h->landlock_abi = landlock;
		if (landlock > h->boot.sandbox.ll_need)
			h->boot.sandbox.ll_need = landlock;
		h->boot.sandbox.ll_report = 0;
	}
	return rc;
}

// Take the dispatcher (the monitor is never on a call's path: it waits for
// a pass in progress to end).
void dispatcher_take(Pool *p)
{
	while (!dispatch_trylock(p)) {
		struct timespec ts = {0, 20 * 1000};
		nanosleep(&ts, nullptr);
	}
}

// Complete every call of the pool not completed yet with `status` (the
// pool failed).
void complete_all(Pool *p, int32_t status)
{
	pthread_mutex_lock(&p->mu);
	calls_fail_all_locked(p, status);
	pthread_mutex_unlock(&p->mu);
}

// The pool failed, for the reason `why` (knit_last_error() of the calls
// refused from now on): enqueues fail with -KNIT_ECRASHED from now on. Once
// (the first reason stays).
void mark_failed(Pool *p, const char *why)
{
	ProcHost *h = p->proc;
	if (knit_load_relaxed_32(&p->failed))
		return;
	snprintf(h->fail_why, sizeof h->fail_why, "%s", why);
	// Release: pairs with proc_failed_why's caller's acquire load (the
	// message is whole before anyone reads failed as 1 with acquire).
	knit_store_release_32(&p->failed, 1);
	pthread_mutex_lock(&p->mu);
	knit_store_relaxed_32(&p->closed, 1); // under mu, as knit_stop stores it
	pthread_mutex_unlock(&p->mu);
}

void pool_fail(Pool *p, const char *why)
{
	ProcHost *h = p->proc;
	mark_failed(p, why);
	complete_all(p, -KNIT_ECRASHED);
	// The completed calls leave the backlog too, so stats.backlog reads
	// what waits now (0). We do not hold the dispatcher here (on_death
	// released it), and no pass waits for this thread.
	backlog_drop_completed(p, -1);
	// S8 (src/syncline.h): knit_calls on the lines end too (-KNIT_ECRASHED,
	// ended_status): a stopping worker need not serve its line. seq_cst:
	// between the store of closed and the lines' CAS, pairs with the
	// caller's S1 fence (either it sees closed or we see its claim).
	knit_fence_seq_cst();
	line_cancel_all(p);
	request_worker_stop(p);
	// Lanes without a worker acknowledge on its behalf.
	for (uint32_t i = 0; i < p->nworkers; i++) {
		if (h->pidfd[i] >= 0)
			continue;
		knit_store_release_32(p->lanes[i].stop,
				      kStopAcknowledged); // pairs with knit_stop's acquire load
		knit_futex_wake(p->lanes[i].stop, INT_MAX, p->futex_shared);
	}
	host_event(p, true);
}

// The count an OOM kill of a worker raises: the pool's own cgroup's when
// it has one (src/cgroup.h; -1 where that has no memory controller), else
// the host's.
int64_t oom_kills(ProcHost *h)
{
	const int64_t n = cgroup_pool_oom_kills(h->sandbox.cgroup);
	return n >= 0 || h->sandbox.cgroup.path != nullptr ? n : cgroup_self_oom_kills();
}

// Why worker i died, as the caller is told (src/info.h; the monitor, in
// settle_death): a kill asked for (protocol, KNIT_CANCEL_KILL, hard
// timeout), else what
// the kernel says: an exit status, or a signal -- an OOM kill when it is
// a SIGKILL nobody here sent and the cgroup's oom_kill count grew.
DeathNote death_cause(ProcHost *h, const siginfo_t &si, uint32_t kill, int32_t pid)
{
	DeathNote d = {KNIT_DEATH_SIGNAL, si.si_status, pid};
	if ((kill & kKillProto) != 0) {
		d.cause = KNIT_DEATH_PROTOCOL;
		d.detail = SIGKILL;
	} else if ((kill & kKillCancel) != 0) {
		d.cause = KNIT_DEATH_CANCEL_KILL;
		d.detail = SIGKILL;
	} else if (kill != 0) {
		d.cause = KNIT_DEATH_HARD_TIMEOUT;
		d.detail = SIGKILL;
	} else if (si.si_code == CLD_EXITED) {
		d.cause = KNIT_DEATH_EXIT;
	} else if (si.si_status == SIGSYS && (h->sandbox.boot.flags & KNIT_SANDBOX_SECCOMP) != 0) {
		// Its seccomp filter (SECCOMP_RET_KILL_PROCESS). A task that
		// raises SIGSYS itself looks the same: a crash all the same.
		d.cause = KNIT_DEATH_SANDBOX;
	} else if (si.si_status == SIGKILL && h->oom_seen >= 0) {
		const int64_t n = oom_kills(h);
		if (n > h->oom_seen)
			d.cause = KNIT_DEATH_OOM;
		if (n >= 0)
			h->oom_seen = n;
	}
	return d;
}

// What on_death learns while it holds the dispatcher (settle_death).
struct Death {
	int32_t pid; // the dead worker's
	siginfo_t si;
	int64_t at;          // when it was reaped
	bool ending;         // the pool is stopping or failed: no successor
	bool budget;         // the death is within the respawn budget (or was asked for)
	bool later;          // its successor waits out a backoff (kLaneRespawnLater)
	bool recycled;       // it left on a recycle, as asked
	bool retire_asked;   // a recycle's retire was asked of it (counted in settle_death)
	char why[kErrorMax]; // !budget: why the pool fails
};

// How worker i ended, for a message: "exited with status 3", "was killed
// by signal 11", "was killed for a protocol error".
void death_words(const siginfo_t &si, bool proto, char *into, size_t n)
{
	if (proto)
		snprintf(into, n, "was killed for a protocol error");
	else if (si.si_code == CLD_EXITED)
		snprintf(into, n, "exited with status %d", si.si_status);
	else
		snprintf(into, n, "was killed by signal %d", si.si_status);
}

// A counted crash at `now` (settle_death): is it within the budget? With a
// window, the crashes still in it are the ring crash_at (oldest first); the
// crash that finds respawn_max there fails the pool, else it joins them.
// Without, the pool's lifetime count (h->crashes, this one included).
bool crash_within_budget(ProcHost *h, int64_t now)
{
	if (h->window_ns == 0)
		return knit_load_relaxed_64(&h->crashes) <= h->respawn_max;
	while (h->crash_n != 0 && h->crash_at[h->crash_head] <= now - h->window_ns) {
		h->crash_head = h->crash_head + 1 == h->respawn_max ? 0 : h->crash_head + 1;
		h->crash_n--;
	}
	if (h->crash_n >= h->respawn_max)
		return false;
	uint32_t at = h->crash_head + h->crash_n;
	if (at >= h->respawn_max)
		at -= h->respawn_max;
	h->crash_at[at] = now;
	h->crash_n++;
	return true;
}

// lane_lost's settle for a worker process (holding the dispatcher, after the
// reaps of what the worker published and of its claims): why it died, and
// so what its calls end with and whether a successor comes. The kill
// reason is taken here: after the last look at the dead worker's words
// (a bad frame in the last reap asks for a protocol kill) and before
// lane_lost wipes them. Kill requests come only from the dispatcher's
// holder, so one made after we release it is about the new worker, never
// a late one for this worker that would kill its successor.
void settle_death(Pool *p, uint32_t i, LaneLoss *loss)
{
	ProcHost *h = p->proc;
	Death *d = static_cast<Death *>(loss->arg);
	const siginfo_t &si = d->si;
	// acq_rel: pairs with proc_kill_worker's fetch_or (a kill asked for
	// this worker, and why, is seen here, whichever thread asked).
	const uint32_t kill = knit_xchg_acq_rel_32(&h->killed[i], 0);
	// A worker killed for a protocol error wrote what no honest worker
	// writes: its death counts as a crash (a task library that keeps
	// writing bad frames ends in a pool failure, not a respawn loop).
	const bool proto = (kill & kKillProto) != 0;
	const bool killed = kill != 0 && !proto;
	// Acquire: pairs with the worker's release store of ACKNOWLEDGED.
	const bool acked = knit_load_acquire_32(p->lanes[i].stop) == kStopAcknowledged;
	const bool ending =
		knit_load_relaxed_32(&p->workers_stopping) || knit_load_relaxed_32(&p->failed);
	// A clean exit counts only when the host asked for it: the stop word
	// is the worker's to write too, and one that stops on its own died
	// unasked (else a task library could respawn workers for free).
	const bool exited0 = si.si_code == CLD_EXITED && si.si_status == 0;
	// A recycled worker left as asked (lane_retire): no crash, and its
	// successor (booted, waiting) takes the lane over.
	const bool recycled = h->retiring[i] != 0 && !proto && !killed && acked && exited0;
	const bool clean = (!proto && ending && acked && exited0) || recycled;
	if (!killed && !clean)
		knit_add_relaxed_64(&h->crashes, 1);
	if (h->retiring[i] != 0 && !recycled)
		knit_add_relaxed_64(&h->recycle_failures, 1); // it died (or was killed) first
	if (recycled && !ending)
		knit_add_relaxed_64(&h->recycles[__builtin_ctz(h->retiring[i])], 1);
	d->recycled = recycled;
	// A sandboxed worker's trap record, read (and zeroed for its
	// successor) at every death: believed only for a violation.
	uint32_t sys = 0;
	if ((h->sandbox.boot.flags & KNIT_SANDBOX_SECCOMP) != 0)
		sys = sandbox_trap_take(p->lanes[i].block + kLaneOffTrap,
					si.si_code != CLD_EXITED && si.si_status == SIGSYS);
	if (!clean) {
		// Told to the calls it held (lane_lost), counted by cause.
		loss->death = death_cause(h, si, kill, d->pid);
		if (loss->death.cause == KNIT_DEATH_SANDBOX)
			loss->death.sys = sys;
		knit_add_relaxed_64(&h->deaths[loss->death.cause], 1);
	}
	const bool violation = !clean && loss->death.cause == KNIT_DEATH_SANDBOX;
	KNIT_TRACE_PROC_WORKER_EXIT(p, i,
				    proto                                 ? KNIT_TRACE_EXIT_PROTO
				    : killed                              ? KNIT_TRACE_EXIT_KILLED
				    : clean                               ? KNIT_TRACE_EXIT_STOPPED
				    : loss->death.cause == KNIT_DEATH_OOM ? KNIT_TRACE_EXIT_OOM
				    : violation                           ? KNIT_TRACE_EXIT_SANDBOX
									  : exit_cause(si, false),
				    violation ? (int32_t)loss->death.sys - 1 : si.si_status);
	const bool counted = !killed && !clean;
	const bool budget = !counted || ending || crash_within_budget(h, d->at);
	if (!budget) {
		char how[64];
		death_words(si, proto, how, sizeof how);
		if (h->window_ns == 0)
			snprintf(d->why, sizeof d->why,
				 "the process pool failed: worker %u %s, crash %llu of the pool's "
				 "life, past respawn_max %u (respawn_window_ms 0: the whole life)",
				 i, how, (unsigned long long)knit_load_relaxed_64(&h->crashes),
				 h->respawn_max);
		else
			snprintf(d->why, sizeof d->why,
				 "the process pool failed: worker %u %s, after %u crashes within "
				 "respawn_window_ms %lld (respawn_max %u)",
				 i, how, h->crash_n, (long long)(h->window_ns / 1000000),
				 h->respawn_max);
		mark_failed(p, d->why); // before the lane's calls complete: a caller
					// that sees their -KNIT_ECRASHED finds the pool failed
	}
	// Backoff (proc.h, "restarts"): a crash of a worker that lived less than
	// kBackoffResetFactor caps continues its lane's streak.
	uint32_t wait_ms = 0;
	if (counted && budget && !ending) {
		const int64_t cap_ns = (int64_t)h->backoff.max_ms * 1000000;
		if (d->at - h->spawned_at[i] >= (int64_t)kBackoffResetFactor * cap_ns)
			h->streak[i] = 0;
		if (h->streak[i] < UINT32_MAX)
			h->streak[i]++;
		// A successor booted already (a recycle was under way) takes
		// the lane over at once: there is nothing to wait for.
		wait_ms = h->spare_ready[i] ? 0 : backoff_wait_ms(h->backoff, h->streak[i]);
	}
	if (wait_ms != 0) {
		h->respawn_at[i] = d->at + (int64_t)wait_ms * 1000000;
		knit_store_relaxed_32(&h->backing_off, h->backing_off + 1);
		knit_add_relaxed_64(&h->backoffs, 1);
		knit_add_relaxed_64(&h->backoff_ms, wait_ms);
	} else if (!ending && budget && !recycled) {
		// Counted before lane_lost completes the lane's calls: a caller
		// that reaps the -KNIT_ECRASHED then reads the stats sees the
		// respawn it caused. (A respawn after a backoff counts when it
		// is spawned: respawn_due. A recycle is no respawn: its
		// successor counts in recycles_*.)
		knit_add_relaxed_64(&h->respawns, 1);
	}
	loss->status = proto ? -KNIT_EPROTO : -KNIT_ECRASHED;
	// RUNNING: the lane gets a new worker (now, or DOWN until its backoff
	// ends); else the pool is failing or stopping and the calls it never
	// started fail too.
	loss->fate = ending || !budget ? kLaneStopped
		     : wait_ms != 0    ? kLaneRespawnLater
				       : kLaneRespawn;
	d->ending = ending;
	d->budget = budget;
	d->later = wait_ms != 0;
}

// Spawn lane i's worker again after a death: with a status pipe whose
// verdict ends its BOOTING state (boot_rd). 0 or the spawn's code; why:
// kErrorMax bytes for the failure's message, or null.
int respawn_worker(Pool *p, uint32_t i, char *why)
{
	ProcHost *h = p->proc;
	int st[2] = {-1, -1};
	if (pipe2(st, O_CLOEXEC | O_NONBLOCK) != 0)
		st[0] = st[1] = -1; // no state for it: it still boots
	knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_BOOTING);
	const int rc = spawn_worker(p, i, st[1], why, true);
	if (st[1] >= 0)
		close(st[1]);
	if (rc != 0 && st[0] >= 0)
		close(st[0]);
	h->boot_rd[i] = rc == 0 ? st[0] : -1;
	if (rc == 0) {
		knit_store_relaxed_64(reinterpret_cast<uint64_t *>(&h->born[i]),
				      (uint64_t)knit_now_ns());
		knit_store_relaxed_32(&h->wpid[i], (uint32_t)h->pid[i]);
		if (h->boot_rd[i] < 0)
			knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_SERVING);
	}
	return rc;
}

// Spawn lane i's successor (the monitor): 0, or the pool failed.
int respawn(Pool *p, uint32_t i)
{
	ProcHost *h = p->proc;
	char why[kErrorMax];
	why[0] = 0;
	h->spawned_at[i] = knit_now_ns();
	const int rc = respawn_worker(p, i, why);
	if (rc != 0) {
		char msg[kErrorMax + 64];
		snprintf(msg, sizeof msg, "the process pool failed: cannot respawn worker %u: %s",
			 i, why[0] != 0 ? why : knit_strerror(rc));
		pool_fail(p, msg);
	}
	return rc;
}

// Lanes whose backoff ended (or that will get no successor: the pool stops
// or failed) now (the monitor). Returns the earliest due time left, or 0.
int64_t respawn_due(Pool *p, int64_t now)
{
	ProcHost *h = p->proc;
	int64_t next = 0;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		if (h->respawn_at[i] == 0)
			continue;
		const bool ending = knit_load_relaxed_32(&p->workers_stopping) ||
				    knit_load_relaxed_32(&p->failed);
		if (!ending && h->respawn_at[i] > now) {
			if (next == 0 || h->respawn_at[i] < next)
				next = h->respawn_at[i];
			continue;
		}
		h->respawn_at[i] = 0;
		knit_store_relaxed_32(&h->backing_off, h->backing_off - 1);
		dispatcher_take(p);
		if (ending) {
			lane_abandon(p, i); // knit_stop waits for nobody there
			dispatch_unlock(p);
			knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_NONE);
			continue;
		}
		lane_revive(p, i);
		dispatch_flush_backlog(p); // calls pinned to it, or waiting for room
		dispatch_unlock(p);
		// Stealing: the successor takes over consumer i (steal.h,
		// revival; reaped at the death).
		if (p->steal.on)
			steal_revive(p->steal.ctl, i);
		knit_add_relaxed_64(&h->respawns, 1);
		if (respawn(p, i) != 0)
			break; // the pool failed: pool_fail acknowledged every lane
	}
	return next;
}

// The KNIT_CANCEL_KILL requests (the monitor, woken by ctl): kill each
// worker whose running stamp names a requested call that it holds, under
// the dispatcher (so its lane goes DOWN in the same hold, and the kill is
// sent right after the last look at the stamp).
void cancel_kills(Pool *p)
{
	ProcHost *h = p->proc;
	uint64_t req[kCancelKillsMax];
	pthread_mutex_lock(&h->m);
	const uint32_t n = h->nkill_req;
	memcpy(req, h->kill_req, n * sizeof req[0]);
	h->nkill_req = 0;
	pthread_mutex_unlock(&h->m);
	if (n == 0)
		return;
	dispatcher_take(p);
	steal_track(p); // a claim made since the last reap names its worker
	for (uint32_t k = 0; k < n; k++) {
		const uint32_t index = (uint32_t)(req[k] >> 32), gen = (uint32_t)req[k];
		for (uint32_t i = 0; i < p->nworkers; i++) {
			Lane *l = &p->lanes[i];
			LaneStamp st;
			if (h->pidfd[i] < 0 || l->state != kLaneLive || !lane_read_stamp(l, &st) ||
			    st.ticket != index || st.gen != gen)
				continue;
			// The stamp is the worker's word: it counts only for the
			// call this worker holds (a forged one costs nothing but
			// the forger's own call, which its holder still answers).
			pthread_mutex_lock(&p->mu);
			const Call *c = p->tickets.lookup(index);
			const bool held = c != nullptr && c->live && c->gen == gen && c->lane == i;
			pthread_mutex_unlock(&p->mu);
			// Looked at again right before the signal: the worker may
			// have finished the call meanwhile (and it costs no worker
			// then). What is left is the window between this look and
			// the signal (tests/model/cancel_kill.pml, knit_cancel(3)).
			if (!held || !lane_read_stamp(l, &st) || st.ticket != index ||
			    st.gen != gen)
				continue;
			lane_set_state(p, l, kLaneDown); // nothing more placed on it
			// acq_rel: pairs with settle_death's exchange (reads why).
			knit_fetch_or_acq_rel_32(&h->killed[i],
						 kKillAsked | kKillSent | kKillCancel);
			knit_add_relaxed_64(&h->cancel_kills, 1);
			sys_pidfd_kill(h->pidfd[i], SIGKILL);
		}
	}
	dispatch_unlock(p);
}

// Lane i's successor is booted and waiting (spare_ready) and the lane is
// re-attached for it (lane_lost): it becomes the lane's worker and is let
// in with the line's open word (S11). A successor that died meanwhile
// fails the write or never reads it: its pidfd, the lane's now, reports
// the death, an ordinary crash of the lane's worker.
void spare_hand_over(Pool *p, uint32_t i)
{
	ProcHost *h = p->proc;
	const uint32_t nonce = knit_load_relaxed_32(&p->lanes[i].line_nonce);
	__atomic_store_n(&h->pid[i], h->spare_pid[i], __ATOMIC_RELAXED); // proc_pid reads it
	h->pidfd[i] = h->spare_pidfd[i];
	h->spare_pid[i] = 0;
	h->spare_pidfd[i] = -1;
	h->spare_ready[i] = false;
	// Its count starts now (lane_attach cleared retire_told): a new
	// mark of recycle_calls is its own. acq_rel: the exchange there is;
	// pairs with retire_due's fetch_or only to start from 0.
	(void)knit_xchg_acq_rel_32(&h->due[i], 0);
	knit_store_relaxed_64(reinterpret_cast<uint64_t *>(&h->born[i]), (uint64_t)knit_now_ns());
	h->spawned_at[i] = knit_now_ns(); // its life, for the backoff's streak
	knit_store_relaxed_32(&h->wpid[i], (uint32_t)h->pid[i]);
	knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_SERVING);
	// The monitor runs with SIGPIPE blocked: a dead reader is EPIPE here.
	(void)!write(h->spare_go[i], &nonce, sizeof nonce);
	close(h->spare_go[i]);
	h->spare_go[i] = -1;
}

void on_death(Pool *p, uint32_t i)
{
	ProcHost *h = p->proc;
	Death d;
	d.pid = (int32_t)h->pid[i];
	reap(h->pidfd[i], h->pid[i], &d.si);
	close(h->pidfd[i]);
	h->pidfd[i] = -1;
	__atomic_store_n(&h->pid[i], 0, __ATOMIC_RELAXED); // proc_pid reads it
	knit_store_relaxed_32(&h->wpid[i], 0);
	if (h->boot_rd[i] >= 0)
		close(h->boot_rd[i]);
	h->boot_rd[i] = -1;
	d.at = knit_now_ns();
	d.ending = d.budget = d.later = d.recycled = false;
	d.retire_asked = h->retiring[i] != 0;
	d.why[0] = 0;
	// A recycled worker answered every line call it took: let a caller
	// with its reply in hand finish before lane_lost steps the line.
	if (h->retiring[i] != 0)
		line_settle(p, &p->lanes[i]);
	dispatcher_take(p);
	// Reap what it published, its claims, its line; fail the calls it
	// started; reset and re-attach the lane (src/lane.h lane_lost).
	LaneLoss loss = {-KNIT_ECRASHED, kLaneStopped, settle_death, &d, {}, 0};
	lane_lost(p, i, &loss);
	if (loss.nagain != 0) {
		// Ahead of every call queued after them, and placed now (this lane
		// is empty again; its new worker finds them published when it
		// attaches): no host thread need call in for them to run.
		dispatch_backlog_requeue(p, loss.again, loss.nagain);
		dispatch_flush_backlog(p);
	} else if (loss.fate == kLaneRespawn) {
		// Calls that waited while the lane retired or was down (nothing
		// was placed on it) go to its next worker now, as the requeued
		// ones above would: their callers may be asleep (a knit_call's
		// waiter was seen to time out so), and a recycle keeps no call
		// waiting.
		dispatch_flush_backlog(p);
	}
	dispatch_unlock(p);
	h->retiring[i] = 0;
	if (!d.ending) {
		if (d.budget && !d.later) {
			// Stealing: the successor takes over consumer i (steal.h,
			// revival; reaped above). Harmless if the spawn fails: a
			// consumer with no claim and no intent blocks nobody. (A
			// lane backing off is revived by respawn_due.)
			if (p->steal.on)
				steal_revive(p->steal.ctl, i);
		}
		if (d.budget && h->spare_ready[i]) {
			// Booted already (a recycle, or a death while one was on its
			// way; settle_death chose no backoff): no call waits for a
			// boot.
			spare_hand_over(p, i);
		} else {
			// A successor still booting: its recycle ended otherwise
			// (the worker died first; counted once, in settle_death,
			// only for a retire already asked). A lane backing off has
			// no spare.
			spare_drop(p, i, h->spare_pidfd[i] >= 0 && !d.retire_asked);
			if (!d.budget)
				pool_fail(p, d.why);
			else if (d.later)
				knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_BACKING_OFF);
			else
				(void)respawn(p, i); // fails the pool if it cannot
		}
	} else {
		spare_drop(p, i, false);
		knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_NONE);
	}
	if (!d.ending && !d.budget)
		knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_NONE);
	host_event(p, true); // the -KNIT_ECRASHED completions
}

bool recycling(const Pool *p)
{
	return p->cfg.recycle_calls != 0 || p->cfg.recycle_rss_bytes != 0 ||
	       p->cfg.recycle_age_ms != 0;
}

// Resident memory of process pid, in bytes (the second field of
// /proc/PID/statm, in pages), or 0.
uint64_t rss_of(pid_t pid)
{
	if (pid <= 0)
		return 0;
	char path[64], buf[128];
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	if (sysfile_read(path, buf, sizeof buf) <= 0)
		return 0;
	const char *q = strchr(buf, ' ');
	return q != nullptr ? strtoull(q + 1, nullptr, 10) * region_page_size() : 0;
}

// Start lane i's successor for a recycle (why: kDue*): spawned with a status
// pipe (its "ok" after its table check) and a go pipe it waits on.
void spare_start(Pool *p, uint32_t i, uint32_t why)
{
	ProcHost *h = p->proc;
	int st[2], go[2];
	if (pipe2(st, O_CLOEXEC | O_NONBLOCK) != 0) {
		spare_drop(p, i, true);
		return;
	}
	if (pipe2(go, O_CLOEXEC) != 0) {
		close(st[0]);
		close(st[1]);
		spare_drop(p, i, true);
		return;
	}
	const int rc = spawn_worker(p, i, st[1], nullptr, false, go[0]);
	close(st[1]);
	close(go[0]);
	h->spare_rd[i] = st[0];
	h->spare_go[i] = go[1];
	h->spare_why[i] = why;
	h->spare_got[i] = 0;
	if (rc != 0)
		spare_drop(p, i, true);
}

// Lane i's successor reported ready: retire the lane's worker (src/lane.h,
// "Recycling"). Not when the pool is stopping or failed, or the worker is
// being killed (the lane is DOWN: its death hands the lane to the
// successor all the same).
void recycle_begin(Pool *p, uint32_t i)
{
	ProcHost *h = p->proc;
	dispatcher_take(p);
	const bool ending =
		knit_load_relaxed_32(&p->workers_stopping) || knit_load_relaxed_32(&p->failed);
	const bool ok = !ending && lane_retire(p, i);
	const bool down = p->lanes[i].state == kLaneDown;
	if (ok)
		h->retiring[i] = h->spare_why[i];
	dispatch_unlock(p);
	if (ok) {
		knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_RETIRING);
		// W1: pairs with the worker's W2 fence in worker_park() between
		// its store of parked and its re-check of the stop word.
		knit_fence_seq_cst();
		lane_wake(p, &p->lanes[i], false);
	} else if (!down || ending) {
		spare_drop(p, i, false);
	}
}

// Lane i's successor's boot status pipe is readable: its verdict.
void spare_verdict(Pool *p, uint32_t i)
{
	ProcHost *h = p->proc;
	char *v = h->spare_verdict[i];
	const ssize_t g = read(h->spare_rd[i], v + h->spare_got[i], 3 - h->spare_got[i]);
	if (g < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (g > 0) {
		h->spare_got[i] += (uint32_t)g;
		if (h->spare_got[i] < 3)
			return;
	}
	close(h->spare_rd[i]);
	h->spare_rd[i] = -1;
	if (h->spare_got[i] == 3 && memcmp(v, "ok\n", 3) == 0) {
		h->spare_ready[i] = true;
		recycle_begin(p, i);
	} else {
		spare_drop(p, i, true); // it refused (or died before) its verdict
	}
}

// Which serving workers are past a mark and get a successor now; returns
// the next time to look (absolute ns; INT64_MAX: only on an event).
int64_t recycle_scan(Pool *p, int64_t now)
{
	ProcHost *h = p->proc;
	const PoolConfig &cfg = p->cfg;
	int64_t next = INT64_MAX;
	if (!recycling(p) || knit_load_relaxed_32(&p->workers_stopping) ||
	    knit_load_relaxed_32(&p->failed))
		return next;
	const int64_t age = (int64_t)cfg.recycle_age_ms * 1000000;
	bool sample = false;
	if (cfg.recycle_rss_bytes != 0) {
		sample = now - h->rss_sampled >= kRecycleRssSampleNs;
		if (sample)
			h->rss_sampled = now;
		next = h->rss_sampled + kRecycleRssSampleNs;
	}
	for (uint32_t i = 0; i < p->nworkers; i++) {
		if (h->pidfd[i] < 0 || h->spare_pidfd[i] >= 0 || h->retiring[i] != 0 ||
		    h->boot_rd[i] >= 0)
			continue;
		if (now < h->spare_retry[i]) {
			next = min_of(next, h->spare_retry[i]);
			continue;
		}
		// Acquire: pairs with retire_due's fetch_or.
		uint32_t why = knit_load_acquire_32(&h->due[i]) & kDueCalls;
		const int64_t born =
			(int64_t)knit_load_relaxed_64(reinterpret_cast<uint64_t *>(&h->born[i]));
		if (age != 0) {
			if (now - born >= age)
				why |= kDueAge;
			else
				next = min_of(next, born + age);
		}
		if (sample && rss_of(h->pid[i]) >= cfg.recycle_rss_bytes)
			why |= kDueRss;
		if (why != 0)
			spare_start(p, i, why);
	}
	return next;
}

void *monitor_main(void *arg)
{
	Pool *p = static_cast<Pool *>(arg);
	ProcHost *h = p->proc;
	const int rc = boot_all(p, h->boot_msg);
	// Every worker mapped the named object (ready comes after the map):
	// without respawns or recycling nobody opens the name again, so it
	// goes now.
	if (rc == 0 && h->shm_linked && h->respawn_max == 0 && !recycling(p)) {
		shm_unlink(h->shm_name);
		h->shm_linked = false;
		janitor_done(h);
	}
	if (rc == 0) {
		const int64_t now = knit_now_ns();
		for (uint32_t i = 0; i < p->nworkers; i++) {
			knit_store_relaxed_64(reinterpret_cast<uint64_t *>(&h->born[i]),
					      (uint64_t)now);
			h->spawned_at[i] = now;
			knit_store_relaxed_32(&h->wpid[i], (uint32_t)h->pid[i]);
			knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_SERVING);
		}
		h->rss_sampled = now;
	}
	pthread_mutex_lock(&h->m);
	h->boot_rc = rc;
	h->boot_done = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->m);
	if (rc != 0)
		return nullptr;
	const uint32_t n = p->nworkers;
	int64_t respawn_next = 0; // the earliest respawn after a backoff, 0: none
	// What each polled descriptor is (tag) and whose (who).
	enum : uint8_t { kCtl, kBridge, kDeath, kSpareVerdict, kSpareDeath, kBootVerdict };
	constexpr uint32_t kMaxFds = 5 * KNIT_MAX_WORKERS + 1;
	while (!knit_load_acquire_32(&h->shutdown)) { // pairs with proc_shutdown's release store
		struct pollfd fds[kMaxFds];
		uint8_t tag[kMaxFds];
		uint32_t who[kMaxFds];
		uint32_t m = 0;
		// Successors started now are polled in this round.
		const int64_t now = knit_now_ns();
		const int64_t look = recycle_scan(p, now);
		const auto add = [&](int fd, uint8_t t, uint32_t i) {
			fds[m] = {fd, POLLIN, 0};
			tag[m] = t;
			who[m++] = i;
		};
		add(h->ctl, kCtl, 0);
		for (uint32_t i = 0; i < n; i++)
			add(h->bridge[i], kBridge, i);
		for (uint32_t i = 0; i < n; i++) {
			if (h->pidfd[i] >= 0)
				add(h->pidfd[i], kDeath, i);
			if (h->spare_rd[i] >= 0)
				add(h->spare_rd[i], kSpareVerdict, i);
			if (h->spare_pidfd[i] >= 0)
				add(h->spare_pidfd[i], kSpareDeath, i);
			if (h->boot_rd[i] >= 0)
				add(h->boot_rd[i], kBootVerdict, i);
		}
		// Without ring pages, once the completion fd is on, a bound on
		// how long a cleared header flag can hide a result from it; with
		// recycling by age or memory, the next look at the workers.
		const bool watch = knit_load_relaxed_32(&h->efd_watch) != 0;
		int timeout = watch ? (int)(kProcDoorbellWatchdogNs / 1000000) : -1;
		// A due respawn bounds the sleep too (none: no timer for it).
		const int64_t wake = respawn_next != 0 ? min_of(look, respawn_next) : look;
		if (wake != INT64_MAX) {
			const int64_t ms = wake > now ? (wake - now + 999999) / 1000000 : 0;
			if (timeout < 0 || ms < timeout)
				timeout = (int)min_of(ms, (int64_t)INT_MAX);
		}
		const int r = poll(fds, m, timeout);
		if (r == 0 && watch)
			efd_sync(p);
		if (respawn_next != 0 || knit_load_relaxed_32(&h->backing_off) != 0)
			respawn_next = respawn_due(p, knit_now_ns());
		if (r <= 0)
			continue;
		uint64_t v;
		if (fds[0].revents) {
			(void)!read(h->ctl, &v, sizeof v);
			// Kills asked for (the hard timeout, a protocol error):
			// asked -> asked|sent, once (acq_rel: pairs with
			// proc_kill_worker's fetch_or before its write of ctl).
			for (uint32_t i = 0; i < n; i++) {
				if (h->pidfd[i] < 0)
					continue;
				uint32_t v = knit_load_relaxed_32(&h->killed[i]);
				while ((v & (kKillAsked | kKillSent)) == kKillAsked) {
					const uint32_t seen = knit_cas_acq_rel_32(&h->killed[i], v,
										  v | kKillSent);
					if (seen == v) {
						sys_pidfd_kill(h->pidfd[i], SIGKILL);
						break;
					}
					v = seen;
				}
			}
			cancel_kills(p);
			// retire_due's asks are looked at by the next recycle_scan.
		}
		bool rung = false;
		for (uint32_t k = 1; k < m; k++)
			if (tag[k] == kBridge && fds[k].revents) {
				(void)!read(fds[k].fd, &v, sizeof v);
				rung = true;
			}
		if (rung)
			// A worker published results with the completion fd on: its
			// level is ours to keep (efd_sync after the progress).
			efd_sync(p);
		if (knit_load_acquire_32(&h->shutdown)) // pairs with proc_shutdown's release store
			break;
		for (uint32_t k = 1; k < m; k++) {
			if (fds[k].revents == 0)
				continue;
			const uint32_t i = who[k];
			switch (tag[k]) {
			case kDeath:
				on_death(p, i);
				break;
			case kSpareVerdict:
				if (h->spare_rd[i] == fds[k].fd)
					spare_verdict(p, i);
				break;
			case kSpareDeath:
				// A successor died before it was let in (a ready one
				// handed over meanwhile is the lane's now: its death
				// is the lane's, seen on the next round).
				if (h->spare_pidfd[i] == fds[k].fd)
					spare_drop(p, i, true);
				break;
			case kBootVerdict:
				if (h->boot_rd[i] == fds[k].fd) {
					char c[4];
					const ssize_t g = read(h->boot_rd[i], c, sizeof c);
					if (g < 0 && (errno == EINTR || errno == EAGAIN))
						break;
					close(h->boot_rd[i]);
					h->boot_rd[i] = -1;
					if (g > 0 && c[0] == 'o')
						knit_store_relaxed_32(&h->wstate[i],
								      KNIT_WORKER_SERVING);
				}
				break;
			default:
				break;
			}
		}
		if (knit_load_relaxed_32(&h->backing_off) != 0)
			respawn_next = respawn_due(p, knit_now_ns()); // new backoffs, or a stop
	}
	// Shutdown (destroy, after knit_stop): every worker acknowledged or is
	// dead; give each kExitGraceNs to exit, then kill, and reap them all.
	// A successor never let in holds nothing of the pool: killed at once.
	for (uint32_t i = 0; i < n; i++) {
		spare_drop(p, i, false);
		if (h->boot_rd[i] >= 0)
			close(h->boot_rd[i]);
		h->boot_rd[i] = -1;
		knit_store_relaxed_32(&h->wstate[i], KNIT_WORKER_NONE);
	}
	const int64_t end = knit_now_ns() + kExitGraceNs;
	for (uint32_t i = 0; i < n; i++) {
		if (h->pidfd[i] < 0)
			continue;
		const int64_t left = end - knit_now_ns();
		struct pollfd f = {h->pidfd[i], POLLIN, 0};
		const bool late = left <= 0 || poll(&f, 1, (int)(left / 1000000 + 1)) <= 0;
		if (late)
			sys_pidfd_kill(h->pidfd[i], SIGKILL);
		siginfo_t si;
		reap(h->pidfd[i], h->pid[i], &si);
		KNIT_TRACE_PROC_WORKER_EXIT(
			p, i, late ? KNIT_TRACE_EXIT_KILLED : exit_cause(si, true), si.si_status);
		close(h->pidfd[i]);
		h->pidfd[i] = -1;
		__atomic_store_n(&h->pid[i], 0, __ATOMIC_RELAXED); // proc_pid reads it
	}
	return nullptr;
}

} // namespace

namespace {

// Field `field` (3 or later) of /proc/PID/stat as a number, or 0.
uint64_t proc_stat_field(int pid, int field)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (sysfile_read(path, buf, sizeof buf) <= 0)
		return 0;
	// The command name (field 2) may hold anything: fields count from the
	// last ')'. Field 3 follows it.
	const char *q = strrchr(buf, ')');
	if (q == nullptr)
		return 0;
	for (int f = 2; f < field && q != nullptr; f++)
		q = strchr(q + 1, ' ');
	return q != nullptr ? strtoull(q + 1, nullptr, 10) : 0;
}

} // namespace

uint64_t proc_start_time(int pid) { return proc_stat_field(pid, 22); }

int proc_parent(int pid) { return (int)proc_stat_field(pid, 4); }

namespace {
uint32_t g_shm_seq; // atomic: part of every fresh shm name
} // namespace

int proc_region_create_named(Pool *p, uint64_t size)
{
	ProcHost *h = p->proc;
	p->region.base = nullptr;
	p->region.size = 0;
	p->region.fd = -1;
	if (size == 0 || size > kRegionMaxSize)
		return -KNIT_ENOMEM;
	const uint64_t bytes = align_up(size, region_page_size());
	int fd = -1;
	for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
		// acq_rel only because that is the fetch_add there is; it
		// pairs with nothing: the count only makes names distinct.
		const uint32_t seq = knit_fetch_add_acq_rel_32(&g_shm_seq, 1);
		const uint64_t salt =
			(uint64_t)knit_now_ns() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)p;
		snprintf(h->shm_name, sizeof h->shm_name, "/knitting-%d-%x-%08x", (int)getpid(),
			 seq, (uint32_t)(salt >> 32));
		// The janitor first: from our shm_open on, the name has one.
		if (spawn_janitor(h) != 0) {
			h->shm_name[0] = 0;
			return -KNIT_ESYSTEM;
		}
		// O_EXCL: a name someone else made (or planted) is never ours.
		fd = shm_open(h->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		const int e = errno;
		if (fd < 0)
			janitor_done(h); // that name is not ours: its janitor goes
		if (fd < 0 && e != EEXIST) {
			h->shm_name[0] = 0;
			return e == EMFILE || e == ENFILE || e == ENOSPC || e == ENOMEM
				       ? -KNIT_ENOMEM
				       : -KNIT_ESYSTEM;
		}
	}
	if (fd < 0) {
		h->shm_name[0] = 0;
		return -KNIT_ESYSTEM;
	}
	h->shm_linked = true;
	janitor_told(h);
	int rc = ftruncate(fd, (off_t)bytes) == 0 ? 0 : -KNIT_ENOMEM;
	if (rc == 0)
		rc = region_map_fd(fd, bytes, &p->region, false);
	close(fd); // the Region holds its own
	if (rc != 0) {
		shm_unlink(h->shm_name);
		h->shm_linked = false;
		h->shm_name[0] = 0;
		janitor_done(h);
	}
	return rc;
}

bool proc_isolation_possible(bool named)
{
	return !named && region_page_size() == kArenaAlign && futex_waitv_works();
}

int proc_isolate(Pool *p, uint64_t lanes_off, uint64_t stride, uint64_t steal_off)
{
	ProcHost *h = p->proc;
	for (uint32_t i = 0; i < p->nworkers; i++) {
		int rc = region_memfd(stride, "knit-lane", &h->lane_fd[i]);
		if (rc == 0)
			rc = region_overlay(&p->region, lanes_off + (uint64_t)i * stride, stride,
					    h->lane_fd[i], true);
		if (rc != 0)
			return error_set(rc, "cannot make worker %u's own pages (a memfd): %s", i,
					 knit_strerror(rc));
	}
	for (uint32_t i = 0; steal_off != 0 && i < p->nworkers; i++) {
		int rc = region_memfd(kStealPageBytes, "knit-steal", &h->steal_fd[i]);
		if (rc == 0)
			rc = region_overlay(&p->region, steal_off + steal_page_offset(i),
					    kStealPageBytes, h->steal_fd[i], true);
		if (rc == 0) {
			// The peers' descriptor: a new open file description,
			// read-only, of the same memfd.
			char path[64];
			snprintf(path, sizeof path, "/proc/self/fd/%d", h->steal_fd[i]);
			h->steal_ro[i] = open(path, O_RDONLY | O_CLOEXEC);
			if (h->steal_ro[i] < 0)
				rc = -KNIT_ESYSTEM;
		}
		if (rc != 0)
			return error_set(rc, "cannot make worker %u's steal page (a memfd): %s", i,
					 knit_strerror(rc));
	}
	// Our mapping is made: from now on the shared memfd maps read-only
	// for everyone (F_SEAL_FUTURE_WRITE).
	const int rc = region_seal_readonly(p->region.fd);
	if (rc != 0)
		return error_set(
			rc, "cannot seal the pool's shared memory read-only (F_SEAL_FUTURE_WRITE)");
	p->isolated = true;
	return 0;
}

int proc_host_new(Pool *p, void *dl)
{
	ProcHost *h = static_cast<ProcHost *>(calloc(1, sizeof(ProcHost)));
	if (h == nullptr) {
		dlclose(dl);
		return -KNIT_ENOMEM;
	}
	p->proc = h;
	h->dl = dl;
	h->ctl = -1;
	h->janitor_w = -1;
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++) {
		h->pidfd[i] = h->bridge[i] = h->lane_fd[i] = h->steal_fd[i] = h->steal_ro[i] = -1;
		h->spare_pidfd[i] = h->spare_rd[i] = h->spare_go[i] = h->boot_rd[i] = -1;
	}
	h->sandbox.cgroup.procs_fd = h->sandbox.boot.fd_cgroup = -1; // src/sandbox.h
	pthread_mutex_init(&h->m, nullptr);
	pthread_cond_init(&h->cv, nullptr);
	return 0;
}

int proc_resolve(Pool *p, const knit_pool_options_t *opts)
{
	ProcHost *h = p->proc;
	h->inherit_env = (opts->proc_flags & KNIT_PROC_INHERIT_ENV) != 0;
	h->respawn_max = respawn_budget(opts->respawn_max);
	h->window_ns = (int64_t)opts->respawn_window_ms * 1000000;
	h->backoff = respawn_backoff(opts->respawn_backoff_ms, opts->respawn_backoff_max_ms);
	if (h->window_ns != 0 && h->respawn_max != 0) {
		// options_resolve bounded it (KNIT_RESPAWN_WINDOW_MAX).
		h->crash_at = static_cast<int64_t *>(calloc(h->respawn_max, sizeof(int64_t)));
		if (h->crash_at == nullptr)
			return error_set(-KNIT_ENOMEM, "out of memory for the restart window");
	}
	if (const int rc = sandbox_take(opts->sandbox, &h->sandbox); rc != 0)
		return rc; // the message recorded
	h->lib_path = dup_str(opts->task_library);
	const char *env = getenv("KNIT_WORKER_PATH");
	const char *from; // where the worker path came from, for the message
	if (opts->worker_path != nullptr) {
		h->worker_path = dup_str(opts->worker_path);
		from = "the worker_path option";
	} else if (env != nullptr && env[0] != 0) {
		h->worker_path = dup_str(env);
		from = "KNIT_WORKER_PATH";
	} else {
		h->worker_path = default_worker_path();
		from = "the default beside libknitting";
	}
	if (h->lib_path == nullptr)
		return error_set(-KNIT_ENOMEM, "out of memory for the task library path");
	if (h->worker_path == nullptr)
		return error_set(
			-KNIT_ENOMEM, "%s",
			opts->worker_path != nullptr || (env != nullptr && env[0] != 0)
				? "out of memory for the knit-worker path"
				: "cannot make the default knit-worker path (set worker_path "
				  "or KNIT_WORKER_PATH)");
	// options_resolve checked the prefix: 1..kPrefixMax words.
	if (opts->worker_prefix != nullptr) {
		uint32_t n = 0;
		while (opts->worker_prefix[n] != nullptr)
			n++;
		h->prefix = static_cast<char **>(calloc(n, sizeof(char *)));
		if (h->prefix == nullptr)
			return error_set(-KNIT_ENOMEM, "out of memory for worker_prefix");
		h->nprefix = n;
		for (uint32_t i = 0; i < n; i++)
			if ((h->prefix[i] = dup_str(opts->worker_prefix[i])) == nullptr)
				return error_set(-KNIT_ENOMEM, "out of memory for worker_prefix");
	}
	// Not an executable file: a clear error now, not a spawn failure later.
	if (const int rc = proc_file_check("knit-worker", h->worker_path, true); rc != 0) {
		char why[kErrorMax];
		snprintf(why, sizeof why, "%s", knit_last_error());
		return error_set(rc, "%s (from %s; set worker_path or KNIT_WORKER_PATH)", why,
				 from);
	}
	return 0;
}

int proc_prepare(Pool *p, const PoolConfig &cfg, uint64_t region_size, uint64_t lanes_off,
		 uint64_t stride, uint64_t abort_off, uint64_t steal_off)
{
	ProcHost *h = p->proc;
	h->ctl = knit_sys_eventfd2(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->ctl < 0)
		return error_set_errno(-KNIT_ESYSTEM, -h->ctl, "cannot make the monitor's eventfd");
	// One bridge per lane, handed to that lane's worker alone (proc.h).
	for (uint32_t i = 0; i < p->nworkers; i++)
		if ((h->bridge[i] = knit_sys_eventfd2(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
			return error_set_errno(-KNIT_ESYSTEM, -h->bridge[i],
					       "cannot make worker %u's bridge eventfd", i);
	h->efd_flag = word_at(p->region.base, kPoolOffEfdFlag);
	// Ring pages (wake.h, "process pools"): one memfd per worker, mapped
	// here and handed to that worker alone, so no worker can write another
	// worker's doorbell words. Only where the host can sleep on all of them
	// at once (futex_waitv, Linux 5.16+; not under qemu-user, which answers
	// ENOSYS) and can hand each worker a descriptor (not with
	// KNIT_PROC_NAMED_SHM); else the pool header's words and the
	// kProcDoorbellWatchdogNs cap, as before.
	if (h->shm_name[0] == 0 && futex_waitv_works()) {
		for (uint32_t i = 0; i < p->nworkers; i++) {
			const int rc = region_create(RegionKind::kMemfd, kRingBytes, "knit-ring",
						     &h->ring[i]);
			if (rc != 0)
				return error_set(rc,
						 "cannot make worker %u's ring page (a memfd): %s",
						 i, knit_strerror(rc));
			Lane *l = &p->lanes[i];
			l->ring_armed = word_at(h->ring[i].base, kRingOffArmed);
			l->ring_seq = word_at(h->ring[i].base, kRingOffSeq);
			l->ring_fd = h->ring[i].fd;
		}
		p->rings = true;
		// Host events now wake sleepers through a word no worker maps.
		p->db_seq = &p->host_seq;
	}
	KNIT_DCHECK(!p->isolated || p->rings); // isolation needs futex_waitv, as the ring pages do
	if (p->isolated && !p->rings)
		return error_set(-KNIT_ESYSTEM, "an isolated process pool without ring pages");
	// A worker's words may say anything (Pool::untrusted_workers); the
	// calls a worker never started run again after its death (Lane::rerun:
	// on the lanes topology on its successor, stealing on any worker).
	p->untrusted_workers = true;
	for (uint32_t i = 0; i < p->nworkers; i++)
		p->lanes[i].rerun = true;
	ProcBoot &b = h->boot;
	memset(&b, 0, sizeof b);
	b.magic = kBootMagic;
	b.version = kBootVersion;
	b.size = sizeof(ProcBoot);
	b.config_size = sizeof(PoolConfig);
	b.nworkers = p->nworkers;
	b.ntasks = p->ntasks;
	b.ticket_cap = p->tickets.capacity();
	b.ppid = (int32_t)getpid();
	b.host_pool = (uint64_t)(uintptr_t)p; // what the host's probes name it
	b.region_size = region_size;
	b.lanes_off = lanes_off;
	b.stride = stride;
	b.abort_off = abort_off;
	b.steal_off = steal_off;
	if (p->isolated) {
		const uint64_t cap = align_up(cfg.payload_max_bytes, kArenaGranule);
		b.ext_off = lane_block_bytes(cap, cap); // the lane's tail (pool.h)
	}
	b.table_hash = task_table_hash(p->tasks, p->ntasks);
	b.host_start = proc_start_time(getpid());
	memcpy(b.shm_name, h->shm_name, sizeof b.shm_name);
	b.cfg = cfg;
	b.sandbox = h->sandbox.boot;
	// Each worker places itself from b.cfg (src/proc_worker.cpp) and
	// refuses to boot unless it got exactly this: the stats can say so now.
	if (cfg.place)
		for (uint32_t i = 0; i < p->nworkers; i++) {
			cpu_set_t set;
			p->lanes[i].cpu = worker_cpus(cfg, i, &set);
		}
	return 0;
}

int proc_start(Pool *p)
{
	ProcHost *h = p->proc;
	// The monitor runs with every async signal blocked (they belong to the
	// application's threads), and so do the children until their exec
	// (posix_spawn resets their mask).
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	const int e = pthread_create(&h->monitor, nullptr, monitor_main, p);
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (e != 0)
		return error_set_errno(-KNIT_ESYSTEM, e,
				       "cannot start the process pool's monitor thread");
	h->monitor_started = true;
	pthread_setname_np(h->monitor, "knit-monitor");
	pthread_mutex_lock(&h->m);
	while (!h->boot_done)
		pthread_cond_wait(&h->cv, &h->m);
	const int rc = h->boot_rc;
	pthread_mutex_unlock(&h->m);
	if (rc != 0) {
		pthread_join(h->monitor, nullptr); // it killed and reaped every child
		h->monitor_started = false;
		error_set(rc, "%s", h->boot_msg);
	}
	return rc;
}

void proc_shutdown(Pool *p)
{
	ProcHost *h = p->proc;
	if (h == nullptr)
		return;
	if (h->monitor_started) {
		// Release: pairs with the monitor's acquire load of shutdown.
		knit_store_release_32(&h->shutdown, 1);
		uint64_t one = 1;
		(void)!write(h->ctl, &one, sizeof one);
		pthread_join(h->monitor, nullptr);
		h->monitor_started = false;
	}
	kill_all(p, KNIT_MAX_WORKERS);     // nothing left unless the monitor never ran
	cgroup_remove(&h->sandbox.cgroup); // every worker reaped (src/cgroup.h)
	if (h->shm_linked) {
		shm_unlink(h->shm_name);
		h->shm_linked = false;
	}
	janitor_done(h);
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++)
		region_destroy(&h->ring[i]); // zero-filled (never created): nothing
	close_lane_fds(h);
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++)
		if (h->bridge[i] >= 0)
			close(h->bridge[i]);
	if (h->ctl >= 0)
		close(h->ctl);
	if (h->dl != nullptr)
		dlclose(h->dl);
	free(h->lib_path);
	free(h->worker_path);
	free(h->crash_at);
	free_prefix(h);
	sandbox_free(&h->sandbox);
	pthread_mutex_destroy(&h->m);
	pthread_cond_destroy(&h->cv);
	free(h);
	p->proc = nullptr;
}

void proc_forget(Pool *p)
{
	ProcHost *h = p->proc;
	if (h == nullptr)
		return;
	// A fork child: the workers, the monitor and the pidfds' children are
	// the parent's. Close our copies of the descriptors, signal nothing.
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++)
		if (h->pidfd[i] >= 0)
			close(h->pidfd[i]);
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++)
		region_destroy(&h->ring[i]); // our copies (the pages are the parent's workers')
	close_lane_fds(h);
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++)
		if (h->bridge[i] >= 0)
			close(h->bridge[i]);
	if (h->ctl >= 0)
		close(h->ctl);
	free(h->lib_path);
	free(h->worker_path);
	free(h->crash_at);
	free_prefix(h); // the name (if any) is the parent's to unlink
	sandbox_free(&h->sandbox);
	free(h); // the library handle and the mutex may be mid-use in a parent thread: left alone
	p->proc = nullptr;
}

void proc_efd_enabled(Pool *p)
{
	if (p->proc == nullptr)
		return;
	ProcHost *h = p->proc;
	// Release: pairs with the worker's acquire load in worker_ring (the
	// bridge exists before the flag says so; it always does). Every ring
	// page's flag (the worker of that lane reads it, and so will any
	// worker respawned on the lane: the page outlives it) and the
	// header's (workers without a ring page read that one).
	if (p->rings)
		for (uint32_t i = 0; i < p->nworkers; i++)
			knit_store_release_32(word_at(h->ring[i].base, kRingOffEfd), 1);
	knit_store_release_32(h->efd_flag, 1);
	// Dekker with worker_ring's fence between its publish and its load of
	// the flag: either it writes the bridge, or the efd_sync that
	// knit_completion_fd runs next sees its results.
	knit_fence_seq_cst();
	if (!p->rings) {
		// Any worker can clear the header's flag: from now on the
		// monitor also syncs the fd on a timer (proc.h). Kick it out of
		// its untimed poll.
		knit_store_relaxed_32(&h->efd_watch, 1);
		uint64_t one = 1;
		(void)!write(h->ctl, &one, sizeof one);
	}
}

void proc_kill_worker(Pool *p, uint32_t lane, bool proto)
{
	ProcHost *h = p->proc;
	if (h == nullptr || lane >= p->nworkers)
		return;
	// The pidfd is the monitor's; it stays open until the monitor reaped
	// the child, and a killed flag set for a worker that dies anyway only
	// spares the crash count (or, for a protocol error, makes its calls
	// fail with -KNIT_EPROTO). Relaxed reads of an int the monitor writes
	// would race, so the kill goes by the flag: the monitor sends it.
	// Its lane takes no new call until the monitor recovered it (calls
	// placed there now would only fail with it). We hold the dispatcher.
	lane_set_state(p, &p->lanes[lane], kLaneDown);
	// acq_rel: pairs with the monitor's CAS asked -> asked|sent (it sends
	// the kill) and its exchange to 0 in on_death (reads the reason). A
	// second reason for a kill already asked only adds its bit.
	const uint32_t old =
		knit_fetch_or_acq_rel_32(&h->killed[lane], kKillAsked | (proto ? kKillProto : 0));
	if (old == 0) {
		if (!proto)
			knit_add_relaxed_64(&h->hard_kills, 1);
		uint64_t one = 1;
		(void)!write(h->ctl, &one, sizeof one);
	}
}

void proc_stop_word_check(Pool *p, uint32_t lane)
{
	if (p->proc == nullptr || lane >= p->nworkers)
		return;
	// A lane waiting out a backoff gets no successor now: the monitor
	// acknowledges its stop on its behalf (respawn_due) once it looks (at
	// the latest when the backoff ends); make it look now
	// (request_worker_stop stored workers_stopping before).
	if (lane_state(&p->lanes[lane]) == kLaneDown &&
	    knit_load_relaxed_32(&p->proc->backing_off) != 0) {
		uint64_t one = 1;
		(void)!write(p->proc->ctl, &one, sizeof one);
		return;
	}
	dispatcher_take(p);
	Lane *l = &p->lanes[lane];
	// Relaxed: under the dispatcher lane_lost() is not half-way, so a
	// word of neither value is the worker's own doing, however stale.
	const uint32_t s = knit_load_relaxed_32(l->stop);
	if (s != kStopRequested && s != kStopAcknowledged && l->state != kLaneDown) {
		knit_add_relaxed_64(&p->st_proto_errors, 1);
		proc_kill_worker(p, lane, true);
	}
	dispatch_unlock(p);
}

int proc_cancel_kill(Pool *p, uint32_t index, uint32_t gen)
{
	ProcHost *h = p->proc;
	if (h == nullptr)
		return -KNIT_EINVAL;
	pthread_mutex_lock(&h->m);
	const bool room = h->nkill_req < kCancelKillsMax;
	if (room)
		h->kill_req[h->nkill_req++] = (uint64_t)index << 32 | gen;
	pthread_mutex_unlock(&h->m);
	if (!room)
		return -KNIT_EAGAIN;
	uint64_t one = 1;
	(void)!write(h->ctl, &one, sizeof one); // the monitor looks (cancel_kills)
	return 0;
}

void proc_stats(Pool *p, knit_pool_stats_t *s)
{
	ProcHost *h = p->proc;
	if (h == nullptr)
		return; // zero, as the caller cleared them
	s->spawns = knit_load_relaxed_64(&h->spawns);
	s->crashes = knit_load_relaxed_64(&h->crashes);
	s->respawns = knit_load_relaxed_64(&h->respawns);
	s->hard_kills = knit_load_relaxed_64(&h->hard_kills);
	s->respawn_backoffs = knit_load_relaxed_64(&h->backoffs);
	s->respawn_backoff_ms = knit_load_relaxed_64(&h->backoff_ms);
	s->cancel_kills = knit_load_relaxed_64(&h->cancel_kills);
	s->landlock_abi = h->landlock_abi; // set before create returned
}

// ---- the process backend of the worker seam (src/workers.h) -----------------------------

namespace {

int proc_check(const knit_task_t *tasks, size_t ntasks)
{
	if (tasks != nullptr || ntasks != 0)
		return error_set(
			-KNIT_EINVAL,
			"process workers take their tasks from task_library: tasks must be "
			"NULL and ntasks 0 (they are %s and %zu)",
			tasks != nullptr ? "set" : "NULL", ntasks);
	return 0;
}

int proc_tasks(Pool *p, const knit_pool_options_t *opts, const knit_task_t *, size_t)
{
	void *dl = nullptr;
	int rc = proc_load_tasks(p, opts->task_library, &dl); // records its message
	if (rc == 0 && (rc = proc_host_new(p, dl)) != 0)      // owns dl from here on
		error_set(rc, "out of memory for the process pool's host state");
	// The paths and the prefix before the region: a named one's janitor
	// (knit-worker) runs before its name exists. Records its message.
	if (rc == 0)
		rc = proc_resolve(p, opts);
	return rc;
}

bool proc_isolated(const knit_pool_options_t *opts)
{
	return proc_isolation_possible((opts->proc_flags & KNIT_PROC_NAMED_SHM) != 0);
}

int proc_region(Pool *p, const knit_pool_options_t *opts, const RegionPlan &plan, const char **what)
{
	if ((opts->proc_flags & KNIT_PROC_NAMED_SHM) != 0) {
		*what = ", a named shm object";
		return proc_region_create_named(p, plan.total); // unlinked by proc_shutdown
	}
	*what = ", a memfd";
	// Isolated (proc.h): the shared memfd is sealed read-only once the
	// lanes' own memfds are mapped over it (proc_isolate).
	int rc = region_create(RegionKind::kMemfd, plan.total, "knitting", &p->region,
			       !plan.lane_tail);
	if (rc == 0 && plan.lane_tail) {
		*what = ", memfds";
		rc = proc_isolate(p, plan.lanes_off, plan.stride, plan.steal_off);
	}
	return rc;
}

int proc_start_all(Pool *p, const knit_pool_options_t *opts, const RegionPlan &plan)
{
	// Both record their message (src/proc.h).
	(void)opts; // taken by proc_resolve (proc_tasks)
	// The pool's cgroup (knit_sandbox_t.cgroup) before any worker, which
	// enters it before it loads the task library.
	if (const int crc = cgroup_create(&p->proc->sandbox.cgroup); crc != 0)
		return crc;
	// Before any worker exists: an OOM kill is a growth past this count.
	p->proc->oom_seen = oom_kills(p->proc);
	int rc = proc_prepare(p, p->cfg, p->region.size, plan.lanes_off, plan.stride,
			      plan.abort_off, plan.steal_off);
	if (rc == 0)
		rc = proc_start(p);
	return rc;
}

void proc_distrust(Pool *p, uint32_t w) { proc_kill_worker(p, w, true); }

bool proc_hard_kill(Pool *p, uint32_t w)
{
	proc_kill_worker(p, w, false);
	return true;
}

const char *proc_failed_why(Pool *p) { return p->proc != nullptr ? p->proc->fail_why : ""; }

int32_t proc_pid(Pool *p, uint32_t w)
{
	ProcHost *h = p->proc;
	if (h == nullptr || w >= p->nworkers)
		return 0;
	// Relaxed: pairs with nothing; the monitor's stores of pid are atomic
	// (a reader may see the worker before or after a respawn).
	return (int32_t)__atomic_load_n(&h->pid[w], __ATOMIC_RELAXED);
}

void proc_stats_of(Pool *p, knit_pool_stats_t *s)
{
	proc_stats(p, s);
	if (p->proc != nullptr)
		for (uint32_t k = 0; k < KNIT_DEATH_CAUSE_MAX; k++)
			s->deaths[k] = knit_load_relaxed_64(&p->proc->deaths[k]);
	ProcHost *h = p->proc;
	if (h == nullptr)
		return;
	s->recycles_calls = knit_load_relaxed_64(&h->recycles[0]);
	s->recycles_rss = knit_load_relaxed_64(&h->recycles[1]);
	s->recycles_age = knit_load_relaxed_64(&h->recycles[2]);
	s->recycle_failures = knit_load_relaxed_64(&h->recycle_failures);
	const int64_t now = knit_now_ns();
	for (uint32_t i = 0; i < p->nworkers && i < KNIT_MAX_WORKERS; i++) {
		knit_worker_stats_t &w = s->worker[i];
		const uint32_t pid = knit_load_relaxed_32(&h->wpid[i]);
		w.state = knit_load_relaxed_32(&h->wstate[i]);
		w.pid = w.state == KNIT_WORKER_NONE ? 0 : (int64_t)pid;
		w.rss_bytes = rss_of((pid_t)w.pid);
		const int64_t born =
			(int64_t)knit_load_relaxed_64(reinterpret_cast<uint64_t *>(&h->born[i]));
		w.age_ns = w.pid != 0 && born != 0 && now > born ? (uint64_t)(now - born) : 0;
	}
}

// Lane w's worker served recycle_calls (lane_served): the monitor starts
// its successor (recycle_scan). The holder or a line's claim holder: one
// fetch_or and, the first time, one eventfd write.
void proc_retire_due(Pool *p, uint32_t w)
{
	ProcHost *h = p->proc;
	if (h == nullptr || w >= p->nworkers)
		return;
	// acq_rel: pairs with recycle_scan's acquire load.
	if ((knit_fetch_or_acq_rel_32(&h->due[w], kDueCalls) & kDueCalls) == 0) {
		uint64_t one = 1;
		(void)!write(h->ctl, &one, sizeof one);
	}
}

} // namespace

const WorkerOps kProcWorkers = {
	.check = proc_check,
	.tasks = proc_tasks,
	.isolated = proc_isolated,
	.region = proc_region,
	.start = proc_start_all,
	.stop_check = proc_stop_word_check,
	.distrust = proc_distrust,
	.hard_kill = proc_hard_kill,
	.shutdown = proc_shutdown,
	.forget = proc_forget,
	.stats = proc_stats_of,
	.completion_fd_on = proc_efd_enabled,
	// A worker may rewrite its stop word with no wake.
	.stop_poll_ns = kProcDoorbellWatchdogNs,
	.destroy_stop_ns = kExitGraceNs,
	.line_spill = true,
	.futex_shared = true,
	.pid = proc_pid,
	.cancel_kill = proc_cancel_kill,
	.failed_why = proc_failed_why,
	.retire_due = proc_retire_due,
};

} // namespace knit::detail
