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
#include "src/task.h"
#include "src/syncline.h"
#include "src/wake.h"
#include "src/workers.h"

extern char **environ;

namespace knit::detail {

struct ProcHost {
	void *dl;          // the host's handle of the task library
	char *lib_path;    // as given (workers dlopen the same path)
	char *worker_path; // the knit-worker that is run
	char **prefix;     // worker_prefix, copied (nprefix words), or null
	uint32_t nprefix;
	// KNIT_PROC_NAMED_SHM: the object's name while it exists (linked).
	char shm_name[kShmNameMax];
	bool shm_linked;
	// The janitor (knit-worker --knit-janitor): unlinks the name when the
	// host exits without unlinking it (killed). 0: none.
	pid_t janitor;
	int janitor_w; // our end of its pipe until it is told the name is made, or -1
	bool inherit_env;
	uint32_t respawn_max;          // crashes survived (0: none)
	int bridge[KNIT_MAX_WORKERS];  // each lane's eventfd: its worker writes it (completion fd
				       // on)
	int ctl;                       // eventfd that wakes the monitor (shutdown)
	Region ring[KNIT_MAX_WORKERS]; // Pool::rings: each worker's ring page (wake.h)
	int lane_fd[KNIT_MAX_WORKERS]; // isolation: each lane's memfd (its worker's pages), or -1
	int steal_fd;                  // isolation, stealing: the steal control pages' memfd, or -1
	uint32_t *efd_flag;            // the pool header's: 1 once the completion fd exists
	uint32_t efd_watch;            // atomic: the fd is on and the flag is the header's (no ring
				       // pages): the monitor syncs it every kProcDoorbellWatchdogNs
	ProcBoot boot;                 // the template (lane and fd_status set per spawn)
	pthread_t monitor;
	bool monitor_started;
	pthread_mutex_t m; // boot_done / boot_rc / boot_msg handoff to knit_pool_create
	pthread_cond_t cv;
	bool boot_done;
	int boot_rc;
	char boot_msg[kErrorMax]; // why boot_rc is not 0 (the monitor writes it before boot_done)
	uint32_t shutdown;        // atomic: the monitor leaves (destroy)
	// Per worker lane (the monitor thread only, after boot).
	pid_t pid[KNIT_MAX_WORKERS];
	int pidfd[KNIT_MAX_WORKERS];
	uint32_t killed[KNIT_MAX_WORKERS]; // atomic: kKill* bits, a death the host asked for
	// Statistics (relaxed).
	uint64_t spawns, crashes, respawns, hard_kills;
};

namespace {

// ProcHost::killed: a kill was asked for (the hard timeout or a protocol
// error), the monitor sent it, and why (a protocol error: the lane's calls
// fail with -KNIT_EPROTO and the death counts against the budget).
constexpr uint32_t kKillAsked = 1;
constexpr uint32_t kKillSent = 2;
constexpr uint32_t kKillProto = 4;

uint64_t fnv(uint64_t h, const void *d, size_t n)
{
	const uint8_t *b = static_cast<const uint8_t *>(d);
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001B3ull;
	return h;
}

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
	if (h->steal_fd >= 0)
		close(h->steal_fd);
	h->steal_fd = -1;
}

char *dup_str(const char *s)
{
	const size_t n = strlen(s) + 1;
	char *d = static_cast<char *>(malloc(n));
	if (d != nullptr)
		memcpy(d, s, n);
	return d;
}

// The install's place of knit-worker, compiled in by the Makefile from its
// install variables: KNIT_WORKER_REL is $(pkglibexecdir)/knit-worker
// relative to $(libdir); KNIT_WORKER_ABS is its absolute path, given only to
// the objects of the installed libknitting.a (empty in the shared library).
#ifndef KNIT_WORKER_REL
#define KNIT_WORKER_REL "knitting/knit-worker"
#endif
#ifndef KNIT_WORKER_ABS
#define KNIT_WORKER_ABS ""
#endif

// The default knit-worker (malloc'd; null only when out of memory): the first
// executable file of
//  1. KNIT_WORKER_REL from the directory of the library file, its links
//     resolved: an installed library finds its own worker, in place, staged
//     (DESTDIR) or moved with its libdir alike;
//  2. ../libexec/knitting/knit-worker from there: the build tree;
//  3. KNIT_WORKER_ABS: a program linked with libknitting.a has no library
//     file to start from, only the install path.
// With none, the first candidate, so the caller names what is missing.
char *default_worker_path()
{
	static const char kBuildRel[] = "../libexec/knitting/knit-worker";
	static const char kInstalled[] = KNIT_WORKER_ABS;
	Dl_info info;
	struct link_map *lm = nullptr;
	char *file = nullptr;
	// The main program's link map has an empty name: linked from the archive.
	if (dladdr1(reinterpret_cast<void *>(&task_table_hash), &info,
		    reinterpret_cast<void **>(&lm), RTLD_DL_LINKMAP) != 0 &&
	    lm != nullptr && lm->l_name != nullptr && lm->l_name[0] != 0) {
		file = realpath(lm->l_name, nullptr);
		if (file == nullptr && (file = dup_str(lm->l_name)) == nullptr)
			return nullptr;
	}
	const char *cand[3];
	char *owned[2] = {nullptr, nullptr};
	size_t n = 0;
	if (file != nullptr) {
		const char *slash = strrchr(file, '/');
		const size_t dir = slash ? (size_t)(slash - file) : 1;
		const char *rel[2] = {KNIT_WORKER_REL, kBuildRel};
		for (int i = 0; i < 2; i++) {
			const size_t len = strlen(rel[i]);
			char *out = static_cast<char *>(malloc(dir + 1 + len + 1));
			if (out == nullptr)
				break;
			memcpy(out, slash ? file : ".", dir);
			out[dir] = '/';
			memcpy(out + dir + 1, rel[i], len + 1);
			cand[n++] = owned[i] = out;
		}
		free(file);
		if (n < 2) {
			free(owned[0]);
			return nullptr;
		}
	}
	if (kInstalled[0] != 0 || n == 0)
		cand[n++] = kInstalled;
	size_t pick = 0;
	for (size_t i = 0; i < n; i++)
		if (access(cand[i], X_OK) == 0) {
			pick = i;
			break;
		}
	char *out = pick < 2 && owned[pick] != nullptr ? owned[pick] : dup_str(cand[pick]);
	for (int i = 0; i < 2; i++)
		if (owned[i] != out)
			free(owned[i]);
	return out;
}

void hex_encode(const void *d, size_t n, char *out)
{
	static const char kHex[] = "0123456789abcdef";
	const uint8_t *b = static_cast<const uint8_t *>(d);
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = kHex[b[i] >> 4];
		out[2 * i + 1] = kHex[b[i] & 15];
	}
	out[2 * n] = 0;
}

void free_prefix(ProcHost *h)
{
	for (uint32_t i = 0; i < h->nprefix; i++)
		free(h->prefix[i]);
	free(h->prefix);
	h->prefix = nullptr;
	h->nprefix = 0;
}

int sys_pidfd_open(pid_t pid) { return knit_sys_pidfd_open(pid, 0); }
int sys_pidfd_kill(int pidfd, int sig)
{
	return knit_sys_pidfd_send_signal(pidfd, sig, nullptr, 0);
}

// Reap the child behind pidfd (it exited). Returns the siginfo code/status
// or, when someone else reaped it (SIGCHLD ignored, a waitpid(-1) of the
// application), CLD_KILLED with status 0.
void reap(int pidfd, pid_t pid, siginfo_t *si)
{
	memset(si, 0, sizeof *si);
	// P_PIDFD (3) needs glibc 2.36 headers; the kernel has it since 5.4.
	if (knit_sys_waitid(3, pidfd, si, WEXITED, nullptr) != 0) {
		if (waitpid(pid, nullptr, WNOHANG) <= 0) {
			si->si_code = CLD_KILLED;
			si->si_status = 0;
		}
	}
}

// One descriptor handed to a child (a worker, the janitor): ours (src; -1: none this time) and
// the number it gets there (to).
struct HandOver {
	int src;
	int to;
};

// Duplicate every src of give[0..n) above every target number (close-on-
// exec, so only the spawn's dup2 carries it over), so that one dup2 never
// clobbers the source of another: tmp[i] or -1. 0, or -KNIT_ESYSTEM (*err:
// the errno; the copies made are closed).
int hand_over_dup(const HandOver *give, uint32_t n, int *tmp, int *err)
{
	int above = 2;
	for (uint32_t i = 0; i < n; i++)
		above = give[i].to > above ? give[i].to : above;
	for (uint32_t i = 0; i < n; i++)
		tmp[i] = -1;
	for (uint32_t i = 0; i < n; i++) {
		if (give[i].src < 0)
			continue;
		tmp[i] = fcntl(give[i].src, F_DUPFD_CLOEXEC, above + 1);
		if (tmp[i] < 0) {
			*err = errno;
			for (uint32_t k = 0; k < i; k++)
				if (tmp[k] >= 0)
					close(tmp[k]);
			return -KNIT_ESYSTEM;
		}
	}
	return 0;
}

// The file actions of a worker's spawn: standard input from /dev/null,
// each given descriptor dup2'd onto its number, and every other descriptor
// above 2 closed -- the numbers below the highest given one that are not
// given this time (a respawn has no status pipe, a named region no fd 3)
// one by one, the rest in one closefrom: nothing of the host's or the
// application's reaches the worker, whatever it left open without
// O_CLOEXEC. 0 or the errno of the action that could not be added.
int hand_over_actions(posix_spawn_file_actions_t *fa, const HandOver *give, const int *tmp,
		      uint32_t n)
{
	int e = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
	int high = 2;
	for (uint32_t i = 0; i < n && e == 0; i++)
		if (tmp[i] >= 0) {
			e = posix_spawn_file_actions_adddup2(fa, tmp[i], give[i].to);
			high = give[i].to > high ? give[i].to : high;
		}
	for (int fd = 3; fd < high && e == 0; fd++) {
		bool given = false;
		for (uint32_t i = 0; i < n; i++)
			given = given || (tmp[i] >= 0 && give[i].to == fd);
		// glibc's child ignores EBADF here: a number we never had.
		if (!given)
			e = posix_spawn_file_actions_addclose(fa, fd);
	}
	if (e == 0)
		e = posix_spawn_file_actions_addclosefrom_np(fa, high + 1);
	return e;
}

// Start the janitor of the named region h->shm_name, before the name
// exists: a knit-worker in its own session (a terminal's signals to our
// process group do not reach it) that outlives us by design. It watches
// our pid and, when we exit, removes the name (if it still names the
// object we told it we made, once we did). Told of nothing (we were killed
// right after our shm_open made the name), it removes the name it was
// given if it exists: a fresh name of ours, made with O_EXCL. So a host
// killed at any moment while the name is linked leaves no name behind.
// We tell it through a pipe on its descriptor 3: "+" once the name is made
// (janitor_told). 0 or -KNIT_ESYSTEM.
int spawn_janitor(ProcHost *h)
{
	char pid[16];
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	char arg0[] = "knit-worker";
	char arg1[] = "--knit-janitor";
	char *argv[] = {arg0, arg1, h->shm_name, pid, nullptr};
	char *empty_env[] = {nullptr};
	int told[2];
	if (pipe2(told, O_CLOEXEC) != 0)
		return -KNIT_ESYSTEM;
	const HandOver give[] = {{told[0], 3}};
	int tmp[1];
	int err = 0;
	if (hand_over_dup(give, 1, tmp, &err) != 0) {
		close(told[0]);
		close(told[1]);
		return -KNIT_ESYSTEM;
	}
	close(told[0]);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int e = posix_spawn_file_actions_init(&fa);
	if (e == 0 && (e = posix_spawnattr_init(&attr)) != 0)
		posix_spawn_file_actions_destroy(&fa);
	if (e != 0) {
		close(tmp[0]);
		close(told[1]);
		return -KNIT_ESYSTEM;
	}
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	e = hand_over_actions(&fa, give, tmp, 1);
	if (e == 0)
		e = posix_spawnattr_setsigmask(&attr, &none);
	if (e == 0)
		e = posix_spawnattr_setsigdefault(&attr, &all);
	if (e == 0)
		e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
							    POSIX_SPAWN_SETSID);
	pid_t child = 0;
	if (e == 0)
		e = posix_spawn(&child, h->worker_path, &fa, &attr, argv, empty_env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(tmp[0]);
	if (e != 0) {
		close(told[1]);
		return -KNIT_ESYSTEM;
	}
	h->janitor = child;
	h->janitor_w = told[1];
	return 0;
}

// Tell the janitor the name is made (its object is the one to watch).
void janitor_told(ProcHost *h)
{
	if (h->janitor_w < 0)
		return;
	(void)!write(h->janitor_w, "+", 1);
	close(h->janitor_w);
	h->janitor_w = -1;
}

// The name is gone (unlinked by us): the janitor has nothing left to do.
// Our child, unreaped until here, so its pid names nobody else.
void janitor_done(ProcHost *h)
{
	if (h->janitor <= 0)
		return;
	kill(h->janitor, SIGKILL);
	while (waitpid(h->janitor, nullptr, 0) < 0 && errno == EINTR) {
	}
	h->janitor = 0;
	if (h->janitor_w >= 0)
		close(h->janitor_w);
	h->janitor_w = -1;
}

// Spawn the worker of lane `lane`. status_w: the write end of the boot
// status pipe, or -1 (a respawn). 0, -KNIT_ESYSTEM, or (nothing to run: the
// prefix program or the worker not found, not executable) -KNIT_ENOENT,
// -KNIT_EACCES, -KNIT_EINVAL. why: kErrorMax bytes for the message of a
// failure, or null.
int spawn_worker(Pool *p, uint32_t lane, int status_w, char *why)
{
	ProcHost *h = p->proc;
	ProcBoot b = h->boot;
	b.lane = lane;
	b.fd_status = status_w >= 0 ? kBootFdStatus : -1;
	b.fd_ring = p->rings ? kBootFdRing : -1;
	b.fd_lane = p->isolated ? kBootFdLane : -1;
	b.fd_steal = p->isolated && p->steal.on ? kBootFdSteal : -1;
	// A respawn waits for its line's open word (S11; lane_lost stored
	// it, on this thread); the first workers serve theirs from the start.
	b.line_nonce = status_w >= 0 ? 0 : knit_load_relaxed_32(&p->lanes[lane].line_nonce);
	char hex[2 * sizeof(ProcBoot) + 1];
	hex_encode(&b, sizeof b, hex);
	char arg0[] = "knit-worker";
	char arg1[] = "--knit-boot";
	// With a prefix: PREFIX... WORKER --knit-boot HEX LIB, the prefix's
	// first word run (searched in $PATH as execvp does).
	char *argv[kPrefixMax + 5];
	uint32_t k = 0;
	for (uint32_t i = 0; i < h->nprefix; i++)
		argv[k++] = h->prefix[i];
	argv[k++] = h->nprefix != 0 ? h->worker_path : arg0;
	argv[k++] = arg1;
	argv[k++] = hex;
	argv[k++] = h->lib_path;
	argv[k] = nullptr;
	char *empty_env[] = {nullptr};
	// What the worker is given, at the numbers it finds them on (proc.h).
	// A named region goes by its name (the boot record), not by fd 3.
	// The ring page goes to its own lane's worker only (wake.h).
	const HandOver give[] = {
		{h->shm_name[0] != 0 ? -1 : p->region.fd, kBootFdRegion},
		{status_w, kBootFdStatus},
		{h->bridge[lane], kBootFdBridge},
		{p->rings ? p->lanes[lane].ring_fd : -1, kBootFdRing},
		// Isolation: its own lane's memfd and the steal control pages',
		// never another lane's (proc.h).
		{p->isolated ? h->lane_fd[lane] : -1, kBootFdLane},
		{p->isolated && p->steal.on ? h->steal_fd : -1, kBootFdSteal},
	};
	constexpr uint32_t kGive = sizeof give / sizeof give[0];
	int tmp[kGive];
	int err = 0; // the errno of a failure, for the message
	int rc = hand_over_dup(give, kGive, tmp, &err);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	bool fa_ok = false, attr_ok = false;
	if (rc == 0) {
		fa_ok = posix_spawn_file_actions_init(&fa) == 0;
		attr_ok = posix_spawnattr_init(&attr) == 0;
		if (!fa_ok || !attr_ok)
			rc = -KNIT_ESYSTEM, err = ENOMEM;
	}
	if (rc == 0) {
		int e = hand_over_actions(&fa, give, tmp, kGive);
		sigset_t none, all;
		sigemptyset(&none);
		sigfillset(&all);
		if (e == 0)
			e = posix_spawnattr_setsigmask(&attr, &none);
		if (e == 0)
			e = posix_spawnattr_setsigdefault(&attr, &all);
		if (e == 0)
			e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
								    POSIX_SPAWN_SETSIGDEF);
		pid_t pid = 0;
		// Counted before the worker exists: it may serve calls before
		// posix_spawn returns here, and the stats must show it by then.
		if (e == 0)
			knit_add_relaxed_64(&h->spawns, 1);
		if (e == 0)
			e = h->nprefix != 0 ? posix_spawnp(&pid, h->prefix[0], &fa, &attr, argv,
							   h->inherit_env ? environ : empty_env)
					    : posix_spawn(&pid, h->worker_path, &fa, &attr, argv,
							  h->inherit_env ? environ : empty_env);
		err = e;
		if (e == ENOENT || e == ENOTDIR) {
			// Nothing to run: the prefix program (or, had it gone
			// since proc_prepare looked, the worker) is not there,
			// may not be executed, or is no executable format.
			rc = -KNIT_ENOENT;
		} else if (e == EACCES) {
			rc = -KNIT_EACCES;
		} else if (e == ENOEXEC || e == ELOOP) {
			rc = -KNIT_EINVAL;
		} else if (e != 0) {
			rc = -KNIT_ESYSTEM;
		} else {
			// The pidfd before anything can reap it: only we wait for
			// our children (an application's waitpid(-1) is documented
			// as not allowed with process pools).
			const int fd = sys_pidfd_open(pid);
			if (fd < 0) {
				err = -fd;
				kill(pid, SIGKILL);
				waitpid(pid, nullptr, 0);
				rc = -KNIT_ESYSTEM;
			} else {
				h->pid[lane] = pid;
				h->pidfd[lane] = fd;
			}
		}
	}
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	for (uint32_t i = 0; i < kGive; i++)
		if (tmp[i] >= 0)
			close(tmp[i]);
	if (rc != 0 && why != nullptr) {
		char text[128];
		const char *etext = strerror_r(err, text, sizeof text);
		if (rc == -KNIT_ESYSTEM)
			snprintf(why, kErrorMax, "cannot spawn worker %u: %s", lane, etext);
		else if (h->nprefix != 0)
			snprintf(why, kErrorMax,
				 "worker_prefix program \"%s\" (run for worker %u): %s",
				 h->prefix[0], lane, etext);
		else
			snprintf(why, kErrorMax, "knit-worker \"%s\" (run for worker %u): %s",
				 h->worker_path, lane, etext);
	}
	return rc;
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

// Kill (SIGKILL) and reap every child still there.
void kill_all(Pool *p, uint32_t n)
{
	ProcHost *h = p->proc;
	for (uint32_t i = 0; i < n; i++) {
		if (h->pidfd[i] < 0)
			continue;
		sys_pidfd_kill(h->pidfd[i], SIGKILL);
		siginfo_t si;
		reap(h->pidfd[i], h->pid[i], &si);
		KNIT_TRACE_PROC_WORKER_EXIT(p, i, KNIT_TRACE_EXIT_KILLED, si.si_status);
		close(h->pidfd[i]);
		h->pidfd[i] = -1;
		h->pid[i] = 0;
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
			if (got[i] >= 3 && memcmp(msg[i], "ok\n", 3) == 0) {
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
	if (rc != 0)
		kill_all(p, n);
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

// The pool failed: enqueues fail with -KNIT_ECRASHED from now on.
void mark_failed(Pool *p)
{
	knit_store_relaxed_32(&p->failed, 1);
	pthread_mutex_lock(&p->mu);
	knit_store_relaxed_32(&p->closed, 1); // under mu, as knit_stop stores it
	pthread_mutex_unlock(&p->mu);
}

void pool_fail(Pool *p)
{
	ProcHost *h = p->proc;
	mark_failed(p);
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

// What on_death learns while it holds the dispatcher (settle_death).
struct Death {
	siginfo_t si;
	bool ending; // the pool is stopping or failed: no successor
	bool budget; // the death is within the respawn budget (or was asked for)
};

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
	const bool clean =
		!proto && ending && acked && si.si_code == CLD_EXITED && si.si_status == 0;
	if (!killed && !clean)
		knit_add_relaxed_64(&h->crashes, 1);
	KNIT_TRACE_PROC_WORKER_EXIT(p, i,
				    proto    ? KNIT_TRACE_EXIT_PROTO
				    : killed ? KNIT_TRACE_EXIT_KILLED
				    : clean  ? KNIT_TRACE_EXIT_STOPPED
					     : exit_cause(si, false),
				    si.si_status);
	const bool budget = killed || knit_load_relaxed_64(&h->crashes) <= h->respawn_max;
	if (!ending && !budget)
		mark_failed(p); // before the lane's calls complete: a caller that
				// sees their -KNIT_ECRASHED finds the pool failed
	// Counted before lane_lost completes the lane's calls: a caller that
	// reaps the -KNIT_ECRASHED then reads the stats sees the respawn it
	// caused.
	if (!ending && budget)
		knit_add_relaxed_64(&h->respawns, 1);
	loss->status = proto ? -KNIT_EPROTO : -KNIT_ECRASHED;
	// RUNNING: the lane gets a new worker; else the pool is failing or
	// stopping and the calls it never started fail too.
	loss->fate = ending || !budget ? kLaneStopped : kLaneRespawn;
	d->ending = ending;
	d->budget = budget;
}

void on_death(Pool *p, uint32_t i)
{
	ProcHost *h = p->proc;
	Death d;
	reap(h->pidfd[i], h->pid[i], &d.si);
	close(h->pidfd[i]);
	h->pidfd[i] = -1;
	h->pid[i] = 0;
	d.ending = d.budget = false;
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
	}
	dispatch_unlock(p);
	if (!d.ending) {
		if (d.budget) {
			// Stealing: the successor takes over consumer i (steal.h,
			// revival; reaped above). Harmless if the spawn fails: a
			// consumer with no claim and no intent blocks nobody.
			if (p->steal.on)
				steal_revive(p->steal.ctl, i);
		}
		if (!d.budget || spawn_worker(p, i, -1, nullptr) != 0)
			pool_fail(p);
	}
	host_event(p, true); // the -KNIT_ECRASHED completions
}

void *monitor_main(void *arg)
{
	Pool *p = static_cast<Pool *>(arg);
	ProcHost *h = p->proc;
	const int rc = boot_all(p, h->boot_msg);
	// Every worker mapped the named object (ready comes after the map):
	// without respawns nobody opens the name again, so it goes now.
	if (rc == 0 && h->shm_linked && h->respawn_max == 0) {
		shm_unlink(h->shm_name);
		h->shm_linked = false;
		janitor_done(h);
	}
	pthread_mutex_lock(&h->m);
	h->boot_rc = rc;
	h->boot_done = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->m);
	if (rc != 0)
		return nullptr;
	const uint32_t n = p->nworkers;
	while (!knit_load_acquire_32(&h->shutdown)) { // pairs with proc_shutdown's release store
		struct pollfd fds[2 * KNIT_MAX_WORKERS + 1];
		uint32_t map[2 * KNIT_MAX_WORKERS + 1];
		uint32_t m = 0;
		fds[m] = {h->ctl, POLLIN, 0};
		map[m++] = UINT32_MAX;
		for (uint32_t i = 0; i < n; i++) {
			fds[m] = {h->bridge[i], POLLIN, 0};
			map[m++] = UINT32_MAX - 1;
		}
		const uint32_t deaths = m;
		for (uint32_t i = 0; i < n; i++)
			if (h->pidfd[i] >= 0) {
				fds[m] = {h->pidfd[i], POLLIN, 0};
				map[m++] = i;
			}
		// Without ring pages, once the completion fd is on, a bound on
		// how long a cleared header flag can hide a result from it.
		const bool watch = knit_load_relaxed_32(&h->efd_watch) != 0;
		const int r = poll(fds, m, watch ? (int)(kProcDoorbellWatchdogNs / 1000000) : -1);
		if (r == 0 && watch)
			efd_sync(p);
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
		}
		bool rung = false;
		for (uint32_t k = 1; k < deaths; k++)
			if (fds[k].revents) {
				(void)!read(fds[k].fd, &v, sizeof v);
				rung = true;
			}
		if (rung)
			// A worker published results with the completion fd on: its
			// level is ours to keep (efd_sync after the progress).
			efd_sync(p);
		if (knit_load_acquire_32(&h->shutdown)) // pairs with proc_shutdown's release store
			break;
		for (uint32_t k = deaths; k < m; k++)
			if (fds[k].revents)
				on_death(p, map[k]);
	}
	// Shutdown (destroy, after knit_stop): every worker acknowledged or is
	// dead; give each kExitGraceNs to exit, then kill, and reap them all.
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
		h->pid[i] = 0;
	}
	return nullptr;
}

} // namespace

uint64_t task_table_hash(const TaskEntry *t, uint32_t n)
{
	uint64_t h = fnv(0xCBF29CE484222325ull, &n, sizeof n);
	for (uint32_t i = 0; i < n; i++) {
		h = fnv(h, t[i].name, strlen(t[i].name) + 1);
		h = fnv(h, &t[i].timeout_ms, sizeof t[i].timeout_ms);
		h = fnv(h, &t[i].flags, sizeof t[i].flags);
	}
	return h;
}

namespace {

// Whether `path` names a regular file we may read (exec: execute): 0, or
// -KNIT_ENOENT / -KNIT_EACCES / -KNIT_EINVAL with the message recorded,
// which names `what`, the path and, for a relative path, the working
// directory it was resolved against.
int proc_file_check(const char *what, const char *path, bool exec)
{
	struct stat st;
	const bool found = stat(path, &st) == 0;
	const int e = found ? 0 : errno;
	if (!found || !S_ISREG(st.st_mode) || access(path, exec ? X_OK : R_OK) != 0) {
		const int code = found || e == EACCES          ? -KNIT_EACCES
				 : e == ENOENT || e == ENOTDIR ? -KNIT_ENOENT
							       : -KNIT_EINVAL;
		const int why = !found ? e : !S_ISREG(st.st_mode) ? 0 : errno;
		const char *not_what = !found                 ? ""
				       : !S_ISREG(st.st_mode) ? ": not a regular file"
				       : exec                 ? ": not executable"
							      : ": not readable";
		if (path[0] != '/') {
			char cwd[PATH_MAX];
			if (getcwd(cwd, sizeof cwd) == nullptr)
				strcpy(cwd, "(unknown)");
			return error_set_errno(
				code, why, "relative %s path \"%s\" resolved against cwd \"%s\"%s",
				what, path, cwd, not_what);
		}
		return error_set_errno(code, why, "%s \"%s\"%s", what, path, not_what);
	}
	return 0;
}

} // namespace

int proc_load_tasks(Pool *p, const char *path, void **handle)
{
	*handle = nullptr;
	// A path with a slash names a file (relative ones from the working
	// directory): whether it is there and readable is ours to say. A bare
	// name is searched in the library path by dlopen.
	const bool bare = strchr(path, '/') == nullptr;
	if (!bare) {
		const int rc = proc_file_check("task library", path, false);
		if (rc != 0)
			return rc;
	}
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (dl == nullptr) {
		const char *why = dlerror();
		if (why == nullptr)
			why = "unknown error";
		if (!bare)
			return error_set(-KNIT_EINVAL, "task library \"%s\": dlopen: %s", path,
					 why);
		// glibc's message for a name not found in the search path:
		// "NAME: cannot open shared object file: <strerror(ENOENT)>";
		// one that starts with another name is a dependency's.
		char buf[128];
		const char *enoent = strerror_r(ENOENT, buf, sizeof buf);
		const size_t n = strlen(path), w = strlen(why), m = strlen(enoent);
		const bool ours = strncmp(why, path, n) == 0 && why[n] == ':' && w >= m &&
				  strcmp(why + w - m, enoent) == 0;
		return error_set(ours ? -KNIT_ENOENT : -KNIT_EINVAL,
				 "task library \"%s\": dlopen: %s (a name without a slash is "
				 "searched in the library "
				 "path, not in the working directory)",
				 path, why);
	}
	const knit_task_library_t *lib =
		static_cast<const knit_task_library_t *>(dlsym(dl, KNIT_TASK_LIBRARY_SYMBOL));
	int rc = 0;
	if (lib == nullptr) {
		rc = error_set(-KNIT_EINVAL,
			       "task library \"%s\" has no symbol " KNIT_TASK_LIBRARY_SYMBOL, path);
	} else if (lib->size > sizeof(knit_task_library_t)) {
		// As every size field: a larger one is a newer library's
		// structure, whose fields past ours we would ignore.
		rc = error_set(-KNIT_EVERSION,
			       "task library \"%s\": " KNIT_TASK_LIBRARY_SYMBOL
			       " has size %u, larger than this library "
			       "knows (%zu): built against a newer libknitting",
			       path, lib->size, sizeof(knit_task_library_t));
	} else if (lib->size < sizeof(knit_task_library_t) ||
		   lib->version != KNIT_TASK_LIBRARY_VERSION) {
		rc = error_set(-KNIT_EINVAL,
			       "task library \"%s\": " KNIT_TASK_LIBRARY_SYMBOL
			       " has size %u and version %u (this "
			       "library knows size %zu, version %d)",
			       path, lib->size, lib->version, sizeof(knit_task_library_t),
			       KNIT_TASK_LIBRARY_VERSION);
	} else if (lib->tasks == nullptr || lib->ntasks == 0 || lib->ntasks > 65535) {
		rc = error_set(-KNIT_EINVAL,
			       "task library \"%s\": " KNIT_TASK_LIBRARY_SYMBOL
			       " has %s tasks and ntasks %zu (1..65535)",
			       path, lib->tasks == nullptr ? "NULL" : "its", lib->ntasks);
	} else {
		rc = task_table_build(p, lib->tasks, lib->ntasks);
		if (rc != 0) {
			char why[kErrorMax];
			snprintf(why, sizeof why, "%s", knit_last_error());
			error_set(rc, "task library \"%s\": its task table is invalid: %s", path,
				  why);
		}
	}
	if (rc != 0) {
		dlclose(dl);
		return rc;
	}
	*handle = dl;
	return 0;
}

namespace {

// Field `field` (3 or later) of /proc/PID/stat as a number, or 0.
uint64_t proc_stat_field(int pid, int field)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	const ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
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
	if (steal_off != 0) {
		int rc = region_memfd(kStealLockOff, "knit-steal", &h->steal_fd);
		if (rc == 0)
			rc = region_overlay(&p->region, steal_off, kStealLockOff, h->steal_fd,
					    true);
		if (rc != 0)
			return error_set(rc, "cannot make the steal control pages (a memfd): %s",
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
	h->steal_fd = -1;
	h->janitor_w = -1;
	for (uint32_t i = 0; i < KNIT_MAX_WORKERS; i++)
		h->pidfd[i] = h->bridge[i] = h->lane_fd[i] = -1;
	pthread_mutex_init(&h->m, nullptr);
	pthread_cond_init(&h->cv, nullptr);
	return 0;
}

int proc_resolve(Pool *p, const knit_pool_options_t *opts)
{
	ProcHost *h = p->proc;
	h->inherit_env = (opts->proc_flags & KNIT_PROC_INHERIT_ENV) != 0;
	h->respawn_max = opts->respawn_max == 0           ? kRespawnDefault
			 : opts->respawn_max == KNIT_ZERO ? 0
							  : opts->respawn_max;
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
	// A worker's words may say anything (Pool::untrusted_workers); a
	// worker's successor on the lanes topology runs the calls it never
	// started (Lane::rerun).
	p->untrusted_workers = true;
	for (uint32_t i = 0; i < p->nworkers; i++)
		p->lanes[i].rerun = !p->steal.on;
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
	kill_all(p, KNIT_MAX_WORKERS); // nothing left unless the monitor never ran
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
	free_prefix(h);
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
	free_prefix(h); // the name (if any) is the parent's to unlink
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

void proc_stats(Pool *p, uint64_t *spawns, uint64_t *crashes, uint64_t *respawns,
		uint64_t *hard_kills)
{
	ProcHost *h = p->proc;
	if (h == nullptr) {
		*spawns = *crashes = *respawns = *hard_kills = 0;
		return;
	}
	*spawns = knit_load_relaxed_64(&h->spawns);
	*crashes = knit_load_relaxed_64(&h->crashes);
	*respawns = knit_load_relaxed_64(&h->respawns);
	*hard_kills = knit_load_relaxed_64(&h->hard_kills);
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
	int rc = proc_prepare(p, p->cfg, p->region.size, plan.lanes_off, plan.stride,
			      plan.abort_off, plan.steal_off);
	if (rc == 0)
		rc = proc_start(p);
	return rc;
}

bool proc_stop_wait(Pool *p, uint32_t w, int64_t deadline)
{
	Lane *l = &p->lanes[w];
	while (lane_state(l) != kLaneRetired) {
		// Acquire: pairs with the worker's release store of
		// ACKNOWLEDGED in acknowledge_stop() (or lane_lost's exchange
		// for a worker that died).
		const uint32_t s = knit_load_acquire_32(l->stop);
		if (s == kStopAcknowledged) {
			// It left its loop for good: survivors may ignore its WANT.
			steal_worker_gone(p, w);
			break;
		}
		// A worker process may rewrite its stop word and never
		// acknowledge: it is killed, and its lane_lost acknowledges.
		// Its wake may never come either (the word can change with no
		// wake): look again every watchdog interval.
		if (s != kStopRequested)
			proc_stop_word_check(p, w);
		const int64_t cap = knit_now_ns() + kProcDoorbellWatchdogNs;
		const int64_t until = deadline >= 0 && deadline < cap ? deadline : cap;
		if (deadline >= 0 && knit_now_ns() >= deadline)
			return false;
		knit_futex_wait(l->stop, s, until, p->futex_shared);
	}
	return true;
}

void proc_distrust(Pool *p, uint32_t w) { proc_kill_worker(p, w, true); }

bool proc_hard_kill(Pool *p, uint32_t w)
{
	proc_kill_worker(p, w, false);
	return true;
}

void proc_stats_of(Pool *p, knit_pool_stats_t *s)
{
	proc_stats(p, &s->spawns, &s->crashes, &s->respawns, &s->hard_kills);
}

} // namespace

const WorkerOps kProcWorkers = {
	proc_check,     proc_tasks,       proc_isolated,  proc_region,   proc_start_all,
	proc_stop_wait, proc_distrust,    proc_hard_kill, proc_shutdown, proc_forget,
	proc_stats_of,  proc_efd_enabled, kExitGraceNs,   true,          true,
};

} // namespace knit::detail
