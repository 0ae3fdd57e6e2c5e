// SPDX-License-Identifier: MIT
// src/proc_spawn.cpp - the children of a process pool: knit-worker for each
// lane and the janitor of a named pool, started with posix_spawn and handed
// exactly the descriptors they are given (every other host descriptor is
// closed in the child); their pidfds, kill and reap (src/proc.h).
#include "src/common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/error.h"
#include "src/lane.h"
#include "src/proc.h"

extern char **environ;

namespace knit::detail {

namespace {

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

int sys_pidfd_open(pid_t pid) { return knit_sys_pidfd_open(pid, 0); }

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

} // namespace

int sys_pidfd_kill(int pidfd, int sig)
{
	return knit_sys_pidfd_send_signal(pidfd, sig, nullptr, 0);
}

void free_prefix(ProcHost *h)
{
	for (uint32_t i = 0; i < h->nprefix; i++)
		free(h->prefix[i]);
	free(h->prefix);
	h->prefix = nullptr;
	h->nprefix = 0;
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
int spawn_worker(Pool *p, uint32_t lane, int status_w, char *why, bool respawn, int go_r)
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
	// A successor (go_r) learns it on its go pipe.
	b.line_nonce = respawn ? knit_load_relaxed_32(&p->lanes[lane].line_nonce) : 0;
	// The consumer pages it is given (below), and the go pipe right after.
	const uint32_t steal_pages =
		p->isolated && p->steal.on
			? (p->nworkers < kMaxStealConsumers ? p->nworkers : kMaxStealConsumers)
			: 0;
	b.fd_go = go_r >= 0 ? boot_fd_go(steal_pages) : -1;
	b.sandbox.fd_cgroup =
		h->sandbox.cgroup.procs_fd >= 0 ? boot_fd_cgroup(steal_pages, go_r >= 0) : -1;
	char hex[2 * sizeof(ProcBoot) + 1];
	hex_encode(&b, sizeof b, hex);
	char arg0[] = "knit-worker";
	char arg1[] = "--knit-boot";
	// With a prefix: PREFIX... WORKER --knit-boot HEX LIB, the prefix's
	// first word run (searched in $PATH as execvp does).
	char *argv[kPrefixMax + 5 + kSandboxArgsMax];
	uint32_t k = 0;
	for (uint32_t i = 0; i < h->nprefix; i++)
		argv[k++] = h->prefix[i];
	argv[k++] = h->nprefix != 0 ? h->worker_path : arg0;
	argv[k++] = arg1;
	argv[k++] = hex;
	argv[k++] = h->lib_path;
	// The sandbox's syscall names (b.sandbox.nallow of them, src/sandbox.h).
	for (uint32_t i = 0; i < h->sandbox.boot.nallow; i++)
		argv[k++] = h->sandbox.allow[i];
	// Then Landlock's paths (nro read-only, nrw read-write).
	for (uint32_t i = 0; i < h->sandbox.boot.nro + h->sandbox.boot.nrw; i++)
		argv[k++] = h->sandbox.paths[i];
	argv[k] = nullptr;
	char *empty_env[] = {nullptr};
	// What the worker is given, at the numbers it finds them on (proc.h).
	// A named region goes by its name (the boot record), not by fd 3.
	// The ring page goes to its own lane's worker only (wake.h).
	HandOver give[7 + kMaxStealConsumers] = {
		{h->shm_name[0] != 0 ? -1 : p->region.fd, kBootFdRegion},
		{status_w, kBootFdStatus},
		{h->bridge[lane], kBootFdBridge},
		{p->rings ? p->lanes[lane].ring_fd : -1, kBootFdRing},
		// Isolation: its own lane's memfd, never another lane's, and
		// every consumer's steal page: its own read-write, its peers'
		// read-only (proc.h).
		{p->isolated ? h->lane_fd[lane] : -1, kBootFdLane},
	};
	uint32_t ngive = 5;
	for (uint32_t c = 0; c < steal_pages; c++)
		give[ngive++] = {c == lane ? h->steal_fd[c] : h->steal_ro[c],
				 kBootFdSteal + (int)c};
	if (go_r >= 0)
		give[ngive++] = {go_r, b.fd_go};
	if (h->sandbox.cgroup.procs_fd >= 0)
		give[ngive++] = {h->sandbox.cgroup.procs_fd, b.sandbox.fd_cgroup};
	int tmp[7 + kMaxStealConsumers];
	int err = 0; // the errno of a failure, for the message
	int rc = hand_over_dup(give, ngive, tmp, &err);
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
		int e = hand_over_actions(&fa, give, tmp, ngive);
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
			} else if (go_r >= 0) {
				h->spare_pid[lane] = pid;
				h->spare_pidfd[lane] = fd;
			} else {
				// Atomic: proc_pid reads it from any thread.
				__atomic_store_n(&h->pid[lane], pid, __ATOMIC_RELAXED);
				h->pidfd[lane] = fd;
			}
		}
	}
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	for (uint32_t i = 0; i < ngive; i++)
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

} // namespace knit::detail
