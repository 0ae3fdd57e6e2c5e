// SPDX-License-Identifier: MIT
// src/proc_worker.cpp - the worker side of process pools: knit__worker_main,
// the whole body of the knit-worker executable (src/proc.h has the contract).
//
// argv: knit-worker --knit-boot HEX LIBRARY. The boot record (HEX) names
// this worker's lane and the pool's geometry; fd 3 is the pool's memfd, fd 4
// (first boot only) the status pipe the host reads until "ok", fd 5 the
// bridge eventfd. The worker dies with the thread that spawned it
// (PR_SET_PDEATHSIG) and checks right after that its parent is still the
// host, so a host killed before the prctl leaves no orphan.
//
// A worker_prefix program may sit between host and worker. One that execs
// (env) keeps the pid: nothing changes. One that forks leaves the worker's
// parent-death signal tied to the wrapper, which need not die with the host.
// Then (our parent is not the host) the worker opens a pidfd on the host's
// pid, checks by the start time in the boot record that the pid still names
// the host (not a reused pid, not a process of another pid namespace), and
// a watcher thread exits the worker when the host exits. A worker that
// cannot watch its host refuses to start, and so does one whose line of
// parents does not lead to the host (a wrapper that forked and exited:
// nothing of the host's would end it).
//
// KNIT_PROC_NAMED_SHM: the boot record names a POSIX shm object; fd 3 is
// not used.
#include "src/common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <new>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/namespaces.h"
#include "src/proc.h"
#include "src/spin.h"
#include "src/syncline.h"
#include "src/tick.h"

using namespace knit::detail;

namespace {

int g_status_fd = -1;

// Refuse to start: the message on stderr (inherited from the host) and, on
// a first boot, "err CODE message" on the status pipe, one line of less
// than kBootVerdictMax bytes (the host hands the message to the caller of
// knit_pool_create: knit_last_error()).
int boot_fail(int code, const char *fmt, ...)
{
	char msg[kBootVerdictMax - 16];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	for (char *c = msg; *c != 0; c++) // one line
		if (*c == '\n')
			*c = ' ';
	fprintf(stderr, "knit-worker: %s\n", msg);
	if (g_status_fd >= 0) {
		char line[kBootVerdictMax];
		const int n = snprintf(line, sizeof line, "err %d %s\n", code, msg);
		if (n > 0)
			(void)!write(g_status_fd, line,
				     (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	}
	return 1;
}

int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool hex_decode(const char *s, void *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return false;
	uint8_t *b = static_cast<uint8_t *>(out);
	for (size_t i = 0; i < n; i++) {
		const int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

// The watcher thread: the host's pidfd turns readable when the host exits.
void *watch_host(void *arg)
{
	struct pollfd f = {(int)(intptr_t)arg, POLLIN, 0};
	while (poll(&f, 1, -1) <= 0 || (f.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) == 0)
		f.revents = 0;
	_exit(1); // the host is gone: so are we
}

// A wrapper sits between host and us (getppid() is not the host): watch the
// host by its pid. 0, or a message for boot_fail.
const char *watch_host_start(const ProcBoot &b)
{
	const int fd = knit_sys_pidfd_open((int)b.ppid, 0);
	if (fd < 0)
		return "cannot watch the host: its pid is gone or in another pid namespace";
	// The pidfd first, the start time second: if the start time matches,
	// the pidfd names the host (a reused pid would show another time).
	if (b.host_start == 0 || proc_start_time(b.ppid) != b.host_start)
		return "cannot watch the host: its pid names another process (another pid "
		       "namespace or /proc?)";
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	const int e = pthread_create(&t, nullptr, watch_host, (void *)(intptr_t)fd);
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	if (e != 0)
		return "cannot start the host watcher thread";
	pthread_detach(t);
	return nullptr;
}

// Does the line of parents from `pid` up reach `host` (within a bound:
// wrappers nest a few deep, not more)?
bool host_is_ancestor(pid_t pid, int32_t host)
{
	for (int depth = 0; depth < 16 && pid > 1; depth++) {
		if (pid == host)
			return true;
		pid = proc_parent(pid);
	}
	return false;
}

// The identity of a named object: 0 and *id, or -1 (no such name).
int shm_identity(const char *name, struct stat *id)
{
	const int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	const int rc = fstat(fd, id);
	close(fd);
	return rc;
}

// knit-worker --knit-janitor NAME HOSTPID (spawn_janitor in src/proc.cpp),
// started before the host makes NAME: wait for the host to exit, then
// remove NAME. Descriptor 3 is the host's pipe: "+" on it says the host
// made the name, and we note which object it names then; at the end we
// remove NAME only if it still names that object (a name the host
// unlinked and someone created again is not ours). Told nothing (the host
// was killed right after its shm_open, before it could say so), we remove
// NAME if it exists: a fresh name of the host's, made with O_EXCL. The
// host kills us once it unlinked the name itself, or when its shm_open
// found the name taken.
int janitor_main(const char *name, const char *pid_text)
{
	char *end = nullptr;
	const long host = strtol(pid_text, &end, 10);
	if (name[0] != '/' || strlen(name) >= kShmNameMax || strchr(name + 1, '/') != nullptr ||
	    end == pid_text || *end != 0 || host <= 1 || host > INT_MAX) {
		fprintf(stderr, "knit-worker: bad janitor arguments\n");
		return 2;
	}
	struct stat made;
	bool known = false;
	// The pidfd first, then the parent check: a host that died before the
	// pidfd existed shows as a changed parent.
	const int fd = knit_sys_pidfd_open((int)host, 0);
	struct pollfd f[2] = {{fd, POLLIN, 0}, {3, POLLIN, 0}};
	bool waiting = fd >= 0 && getppid() == (pid_t)host;
	while (waiting) {
		if (poll(f, 2, -1) < 0)
			continue;
		if (f[1].revents != 0) {
			char c = 0;
			const ssize_t r = read(3, &c, 1);
			if (r == 1 && c == '+' && !known) {
				if (shm_identity(name, &made) != 0)
					return 0; // unlinked already: nothing to watch for
				known = true;
			}
			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
				f[1].fd = -1; // the host closed it (or none was given): poll
					      // ignores it
		}
		waiting = f[0].revents == 0;
		f[0].revents = f[1].revents = 0;
	}
	struct stat now;
	if (shm_identity(name, &now) == 0 &&
	    (!known || (now.st_dev == made.st_dev && now.st_ino == made.st_ino)))
		shm_unlink(name);
	return 0;
}

// Placement (cpu_mask, cpu_flags): the worker places itself, before any
// task code runs (the task library's constructors included) and before it
// starts a thread (which inherits the set). The kernel silently drops the
// CPUs the process may not use from a wider set, so the set is read back
// and must be exactly what was asked, as for a worker thread. 0 (*cpu: the
// one CPU, or -1) or a code for boot_fail, *why its message.
int place_self(const ProcBoot &b, int32_t *cpu, const char **why)
{
	*cpu = -1;
	if (!b.cfg.place)
		return 0;
	uint64_t any = 0;
	for (uint32_t i = 0; i < KNIT_CPU_MASK_WORDS; i++)
		any |= b.cfg.cpu_mask[i];
	if (any == 0) {
		*why = "boot record out of range"; // placement on no CPU at all
		return KNIT_EPROTO;
	}
	cpu_set_t want, got;
	const int32_t c = worker_cpus(b.cfg, b.lane, &want);
	if (sched_setaffinity(0, sizeof want, &want) != 0) {
		*why = errno == EINVAL
			       ? "cpu_mask: no CPU of this worker's set is one the process may use"
			       : "cannot set this worker's CPU affinity";
		return errno == EINVAL ? KNIT_EINVAL : KNIT_ESYSTEM;
	}
	CPU_ZERO(&got);
	if (sched_getaffinity(0, sizeof got, &got) != 0) {
		*why = "cannot read this worker's CPU affinity back";
		return KNIT_ESYSTEM;
	}
	if (!CPU_EQUAL(&want, &got)) {
		*why = "cpu_mask: a CPU of this worker's set is one the process may not use";
		return KNIT_EINVAL;
	}
	*cpu = c;
	return 0;
}

} // namespace

extern "C" KNIT_API int knit__worker_main(int argc, char **argv) KNIT_NOEXCEPT
{
	// The janitor of a named region outlives the host on purpose.
	if (argc == 4 && strcmp(argv[1], "--knit-janitor") == 0)
		return janitor_main(argv[2], argv[3]);
	// First: die with the host's spawning thread, then make sure it did not
	// die already (the prctl came too late for that).
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	tick_init(); // the host's tick (src/tick.h), before any task runs
	if (argc < 4 || strcmp(argv[1], "--knit-boot") != 0) {
		fprintf(stderr,
			"knit-worker: started by libknitting only (a process pool's worker)\n");
		return 2;
	}
	ProcBoot b;
	memset(&b, 0, sizeof b);
	int32_t cpu = -1; // the one CPU placement pinned us to
	// The version words first: a record of another layout is reported as
	// such, not as garbage.
	uint32_t head[4];
	const bool head_ok = strlen(argv[2]) >= 2 * sizeof head && [&] {
		char tmp[2 * sizeof head + 1];
		memcpy(tmp, argv[2], 2 * sizeof head);
		tmp[2 * sizeof head] = 0;
		return hex_decode(tmp, head, sizeof head);
	}();
	if (head_ok && head[0] == kBootMagic && head[1] == kBootVersion &&
	    head[2] == sizeof(ProcBoot) && head[3] == sizeof(PoolConfig) &&
	    hex_decode(argv[2], &b, sizeof b)) {
		g_status_fd = b.fd_status;
		// Our documented name (knit-worker(8)): knit-wLANE, as the
		// worker threads'; ps and top show it.
		char comm[16];
		snprintf(comm, sizeof comm, "knit-w%u", b.lane % 100u);
		prctl(PR_SET_NAME, comm);
		// The pool's cgroup and namespaces first of all: before our CPU
		// placement (a cgroup may narrow the CPUs), any thread (a user
		// namespace wants none) and the task library (src/namespaces.h).
		{
			char why_ns[kBootVerdictMax - 64];
			if (b.sandbox.fd_cgroup != -1 &&
			    b.sandbox.fd_cgroup !=
				    boot_fd_cgroup(b.fd_steal >= 0 ? b.nworkers : 0, b.fd_go >= 0))
				return boot_fail(KNIT_EPROTO, "boot record out of range (cgroup)");
			int nrc = 0;
			if (b.sandbox.fd_cgroup >= 0)
				nrc = cgroup_enter(b.sandbox.fd_cgroup, why_ns, sizeof why_ns);
			if (nrc == 0)
				nrc = namespaces_enter(b.sandbox.namespaces, why_ns, sizeof why_ns);
			if (nrc != 0)
				return boot_fail(nrc, "sandbox: %s", why_ns);
		}
		const char *why = nullptr;
		const int prc = place_self(b, &cpu, &why);
		if (prc != 0)
			return boot_fail(prc, "%s (lane %u)", why, b.lane);
		const pid_t parent = getppid();
		if (b.ppid != (int32_t)parent) {
			// A forking wrapper, or the host is gone already.
			why = watch_host_start(b);
			if (why != nullptr)
				return boot_fail(KNIT_EPROTO, "%s (pid %d)", why, (int)b.ppid);
			// The wrapper must stay between the host and us: our
			// parent-death signal (set above, before this look) ends us
			// with our parent, and the host's kill of the wrapper reaches
			// us so. One that forked us and exited (setsid --fork, a
			// daemonizing wrapper) left us to init or a subreaper:
			// nothing the host does would end us.
			if (!host_is_ancestor(parent, b.ppid))
				return boot_fail(KNIT_EINVAL,
						 "the worker is not the host's descendant (its "
						 "parent is pid %d; the "
						 "host is %d): a worker_prefix program must stay "
						 "the worker's parent, not "
						 "fork and exit",
						 (int)parent, (int)b.ppid);
		}
	} else {
		// No status fd we could trust: the well-known one if it is open.
		g_status_fd = kBootFdStatus;
		return boot_fail(
			KNIT_EVERSION,
			"boot record of another libknitting version (protocol %u, this is %u)",
			head_ok ? head[1] : 0, kBootVersion);
	}
	if (b.sandbox.nallow > kSandboxAllowMax || b.sandbox.nro > KNIT_LANDLOCK_PATHS_MAX ||
	    b.sandbox.nrw > KNIT_LANDLOCK_PATHS_MAX ||
	    (uint32_t)argc != 4 + b.sandbox.nallow + b.sandbox.nro + b.sandbox.nrw)
		return boot_fail(KNIT_EPROTO, "boot record out of range (command line)");
	if (b.nworkers == 0 || b.nworkers > KNIT_MAX_WORKERS || b.lane >= b.nworkers ||
	    b.lanes_off > b.region_size || b.stride > b.region_size ||
	    (uint64_t)(b.lane + 1) * b.stride > b.region_size - b.lanes_off)
		return boot_fail(KNIT_EPROTO, "boot record out of range");

	void *mem = nullptr;
	if (posix_memalign(&mem, alignof(knit_pool), sizeof(knit_pool)) != 0)
		return boot_fail(KNIT_ENOMEM, "out of memory");
	memset(mem, 0, sizeof(knit_pool));
	knit_pool *kp = new (mem) knit_pool();
	Pool *p = &kp->p;
	p->cfg = b.cfg;
	p->efd = -1;
	p->tfd = -1;
	p->epfd = -1;
	p->region.fd = -1;
	// The task library is loaded only once every descriptor of the pool's
	// memory is mapped and closed (below): none of the application's code
	// (its constructors included) ever holds one it could reopen writable.
	int rc = 0;
	LibraryHooks hooks;
	if (b.shm_name[0] != 0) {
		// Named: unsealed, so only the size is checked (region_map_fd
		// refuses an object shorter than the pool).
		if (b.shm_name[0] != '/' || memchr(b.shm_name, 0, sizeof b.shm_name) == nullptr)
			return boot_fail(KNIT_EPROTO, "boot record out of range");
		const int fd = shm_open(b.shm_name, O_RDWR | O_CLOEXEC, 0);
		if (fd < 0)
			return boot_fail(KNIT_EPROTO, "cannot open the pool's memory %s",
					 b.shm_name);
		rc = region_map_fd(fd, b.region_size, &p->region, false);
		close(fd);
	} else {
		// Isolated (src/proc.h): the shared memfd read-only (it is
		// sealed so: nothing else would map), our own pages over it.
		const bool iso = b.fd_lane >= 0;
		const bool steal_iso = iso && p->cfg.topology == KNIT_TOPOLOGY_STEAL;
		if (iso &&
		    (b.fd_lane != kBootFdLane || b.fd_steal != (steal_iso ? kBootFdSteal : -1) ||
		     b.fd_ring < 0 || (steal_iso && b.nworkers > kMaxStealConsumers)))
			return boot_fail(KNIT_EPROTO, "boot record out of range");
		rc = region_map_fd(kBootFdRegion, b.region_size, &p->region, true, !iso);
		if (rc == 0)
			close(kBootFdRegion); // the Region holds its own duplicate
		if (rc == 0 && iso) {
			rc = region_overlay(&p->region, b.lanes_off + (uint64_t)b.lane * b.stride,
					    b.stride, kBootFdLane, true);
			// Stealing: every consumer's page, ours writable, the
			// peers' read-only (their descriptors are O_RDONLY).
			if (rc == 0 && steal_iso &&
			    (b.steal_off > b.region_size ||
			     kStealLockOff > b.region_size - b.steal_off))
				rc = -KNIT_EPROTO;
			for (uint32_t c = 0; rc == 0 && steal_iso && c < b.nworkers; c++)
				rc = region_overlay(&p->region, b.steal_off + steal_page_offset(c),
						    kStealPageBytes, kBootFdSteal + (int)c,
						    c == b.lane);
			close(kBootFdLane); // the mappings keep the memory
			for (uint32_t c = 0; steal_iso && c < b.nworkers; c++)
				close(kBootFdSteal + (int)c);
			// A child a task forks gets none of it: a process that
			// outlived us must not write our lane under the worker
			// respawned on it (which maps the same lane memfd).
			if (rc == 0 &&
			    madvise(p->region.base, (size_t)p->region.size, MADV_DONTFORK) != 0)
				rc = -KNIT_ESYSTEM;
		}
	}
	if (rc != 0)
		return boot_fail(KNIT_EPROTO, "cannot map the pool's memory (%s)",
				 knit_strerror(rc));
	// The mapping is all we use: its descriptor goes, so a task finds no
	// descriptor of the pool's memory (knit-worker(8) lists what it finds).
	close(p->region.fd);
	p->region.fd = -1;

	uint8_t *base = p->region.base;
	p->db_seq = word_at(base, kPoolOffDoorbellSeq);
	p->db_armed = word_at(base, kPoolOffDoorbellArmed);
	p->efd_flag = word_at(base, kPoolOffEfdFlag);
	// Our ring page (wake.h, "process pools"): our doorbell words, which
	// no other worker maps. worker_ring and worker_park ring through them.
	if (b.fd_ring >= 0) {
		static Region ring; // for the process's life
		if (b.fd_ring != kBootFdRing)
			return boot_fail(KNIT_EPROTO, "boot record out of range");
		rc = region_map_fd(kBootFdRing, kRingBytes, &ring);
		if (rc != 0)
			return boot_fail(KNIT_EPROTO, "cannot map the ring page (%s)",
					 knit_strerror(rc));
		close(kBootFdRing); // the Region holds its own duplicate
		close(ring.fd);     // and the mapping is all we use
		ring.fd = -1;
		if (b.fd_lane >= 0) // isolated: as the pool's range (above)
			(void)madvise(ring.base, (size_t)ring.size, MADV_DONTFORK);
		p->db_armed = word_at(ring.base, kRingOffArmed);
		p->db_seq = word_at(ring.base, kRingOffSeq);
		// The completion fd's flag too: the header's can be cleared by
		// any worker, this one only by us (src/proc.h).
		p->efd_flag = word_at(ring.base, kRingOffEfd);
	}
	void *dl = nullptr;
	rc = proc_load_tasks(p, argv[3], &dl, &hooks);
	if (rc != 0)
		return boot_fail(rc == -KNIT_ENOMEM ? KNIT_ENOMEM : KNIT_EPROTO, "%s",
				 knit_last_error());
	if (p->ntasks != b.ntasks || task_table_hash(p->tasks, p->ntasks) != b.table_hash)
		return boot_fail(KNIT_EPROTO,
				 "the task library's table differs from the host's (%s)", argv[3]);
	// The go pipe follows the consumer pages we were given (fd_steal:
	// stealing under isolation, one per worker), as the host numbers it.
	if (b.fd_go >= 0 &&
	    (b.fd_go != boot_fd_go(b.fd_steal >= 0 ? b.nworkers : 0) || g_status_fd < 0))
		return boot_fail(KNIT_EPROTO, "boot record out of range");
	p->abort_words = word_at(base, b.abort_off);
	p->abort_nwords = (p->cfg.abort_capacity + 31) / 32;
	p->futex_shared = 1;
	p->efd_bridge = kBootFdBridge; // our lane's own bridge
	// Lanes: ours. Stealing, every worker's too, for their signal words
	// only (read: the claim protocol's; no worker of a process pool wakes
	// a peer); nothing else of a peer's lane is looked at.
	const bool steal = p->cfg.topology == KNIT_TOPOLOGY_STEAL;
	const uint64_t cap = align_up(p->cfg.payload_max_bytes, kArenaGranule);
	if (steal &&
	    (b.steal_off % kArenaAlign != 0 ||
	     b.steal_off < b.lanes_off + (uint64_t)b.nworkers * b.stride ||
	     b.steal_off > b.region_size || steal_area_bytes(cap) > b.region_size - b.steal_off))
		return boot_fail(KNIT_EPROTO, "boot record out of range");
	const uint32_t nl = steal ? b.nworkers : 1;
	void *lmem = nullptr;
	if (posix_memalign(&lmem, alignof(Lane), (size_t)nl * sizeof(Lane)) != 0)
		return boot_fail(KNIT_ENOMEM, "out of memory");
	memset(lmem, 0, (size_t)nl * sizeof(Lane));
	p->lanes = static_cast<Lane *>(lmem);
	p->nworkers = nl;
	p->nlanes = nl;
	for (uint32_t i = 0; i < nl; i++) {
		Lane *pl = new (&p->lanes[i]) Lane();
		pl->pool = p;
		pl->index = steal ? i : b.lane;
		pl->cpu = -1;
		pl->block = base + b.lanes_off + (uint64_t)pl->index * b.stride;
		pl->wake_seq = word_at(pl->block, kLaneOffWake);
		pl->parked = word_at(pl->block, kLaneOffParked);
		pl->stop = word_at(pl->block, kLaneOffStop);
		pl->ext = b.ext_off != 0 ? pl->block + b.ext_off : lane_ext(p, pl->index);
		pl->peer_wakes = lane_counter(pl->ext, kWcPeerWakes);
		if (steal) {
			// Every worker's signal words are the control block's
			// (layout.h): a peer's lane is not mapped here.
			uint8_t *ctl = base + b.steal_off;
			pl->wake_seq = word_at(ctl, steal_wake_offset(pl->index));
			pl->parked = word_at(ctl, steal_parked_offset(pl->index));
			pl->peer_wakes =
				reinterpret_cast<uint64_t *>(ctl + steal_peerw_offset(pl->index));
		}
	}
	Lane *l = &p->lanes[steal ? b.lane : 0];
	l->cpu = cpu;
	l->rerun = true; // our unstarted calls run again if we die (Lane::rerun)
	// Our line and its spill slot (the host's plan, pool.cpp): within the
	// region, before the lane blocks. A respawned worker serves its line
	// only once the host reopened it for it (src/syncline.h S11: the open
	// word equals b.line_nonce; it adopts the host's base then), so a
	// request still being published into it by a caller who lost to S10
	// never runs.
	{
		const uint32_t awords = (p->cfg.abort_capacity + 31) / 32;
		const uint64_t spill_off = line_spill_off(b.abort_off, awords);
		const uint64_t sstride = line_spill_stride(p->cfg);
		if (line_area_off(b.nworkers) + (uint64_t)b.nworkers * kLineBytes > b.abort_off ||
		    spill_off > b.lanes_off || sstride > (b.lanes_off - spill_off) / b.nworkers)
			return boot_fail(KNIT_EPROTO, "boot record out of range");
		l->line = base + line_area_off(b.nworkers) + (uint64_t)b.lane * kLineBytes;
		l->line_spill_area = base + spill_off + (uint64_t)b.lane * sstride;
		if (b.ext_off != 0) {
			// Isolated: the lane's tail (src/pool.h), in our own pages.
			const uint64_t cap = align_up(p->cfg.payload_max_bytes, kArenaGranule);
			if (b.ext_off != lane_block_bytes(cap, cap) ||
			    b.ext_off + lane_tail_bytes(sstride) > b.stride)
				return boot_fail(KNIT_EPROTO, "boot record out of range");
			l->line = l->block + b.ext_off + kLaneExtBytes;
			l->line_spill_area = l->line + kLineBytes;
		}
		l->line_wait = b.line_nonce;
	}
	// Our endpoints over the lane's words (and, stealing, the submit lock
	// as consumer `lane`: its ACK mirror comes from the shared word, so
	// only after the host revived the id for us). 0 or boot_fail's.
	const auto attach_lane = [&]() -> int {
		uint8_t *req_lock = l->block + kLaneOffReqLock;
		uint8_t *ret_lock = l->block + kLaneOffRetLock;
		ArenaShared req_sh =
			lock_arena_shared(req_lock, l->block + lane_req_arena_offset(), cap);
		ArenaShared ret_sh =
			lock_arena_shared(ret_lock, l->block + lane_ret_arena_offset(cap), cap);
		ConsumerLimits wl = {p->ntasks + 1, b.ticket_cap, kReqFlagsMask};
		if (l->wreq.attach(req_lock, req_sh, wl) != 0 ||
		    l->wret.attach(ret_lock, ret_sh, p->cfg.max_payload_bytes) != 0)
			return boot_fail(KNIT_EPROTO, "lane geometry refused");
		if (steal) {
			// The submit lock we claim from, as consumer `lane` (the host
			// revived the id for us if a predecessor died: steal_revive).
			p->steal.ctl = base + b.steal_off;
			p->steal.lock = p->steal.ctl + kStealLockOff;
			ArenaShared sh = steal_submit_arena(p->steal.ctl, p->steal.lock, cap);
			// Its frames' flags carry the call's sending too (kFrameAttemptMask).
			ConsumerLimits sl = {p->ntasks + 1, b.ticket_cap,
					     kReqFlagsMask | kFrameAttemptMask};
			if (l->sc.attach(p->steal.lock, sh, sl, p->steal.ctl, b.nworkers, b.lane,
					 p->cfg.steal_g) != 0)
				return boot_fail(KNIT_EPROTO, "steal geometry refused");
			l->sc.set_take_max(1); // one call per claim, always (take_one below)
			// The submit arena's PB and our peers' pages are not ours to
			// write (layout.h): the host frees what we copied out, and we
			// wake no peer (Pool::steal_no_peer_wake).
			l->sc.set_frees(false);
			p->steal_no_peer_wake = true;
			l->sc.set_stop_word(l->stop);
			p->steal.on = true;
		}
		l->local = static_cast<WorkerLocal *>(calloc(1, sizeof(WorkerLocal)));
		if (l->local == nullptr)
			return boot_fail(KNIT_ENOMEM, "out of memory");
		// A worker process claims one call at a time: the results of
		// calls claimed together are staged in its own memory until the
		// batch ends, so a hostile call among them could rewrite results
		// of calls it did not run (src/spin.h "claims and wakes").
		l->local->take_one = true;
		return 0;
	};
	// A recycled worker's successor (fd_go) attaches only once it is let
	// in: its predecessor serves the lane until then.
	if (b.fd_go < 0 && (rc = attach_lane()) != 0)
		return rc;
	// The task library's init: once, with the pool mapped and none of its
	// descriptors left but our own lane's bridge, before our first task
	// (and before "ok", so a refusal fails knit_pool_create with its
	// words). A respawned worker's refusal is its death (a crash).
	if (hooks.init != nullptr) {
		char why_init[kBootVerdictMax - 64];
		why_init[0] = 0;
		const int irc = hooks.init(b.lane, why_init, sizeof why_init);
		why_init[sizeof why_init - 1] = 0; // whatever init wrote
		if (irc != 0)
			return boot_fail(KNIT_EINVAL, "the task library's init returned %d: %s",
					 irc, why_init[0] != 0 ? why_init : "(no message)");
	}
	// The sandbox closes after init and before our first task (and our
	// "ok": a worker that cannot enter it refuses to start). What the
	// worker loop reads of the system (the online CPUs: /sys) it reads
	// now, while it still may.
	(void)spin_cap_of_machine();
	uint32_t landlock_abi = 0;
	{
		char why_sb[kBootVerdictMax - 64];
		const int src = sandbox_enter(b.sandbox, argv + 4, b.ppid, &landlock_abi, why_sb,
					      sizeof why_sb);
		if (src != 0)
			return boot_fail(src, "sandbox: %s", why_sb);
	}
	if (g_status_fd >= 0) {
		// "ok\n", or with Landlock asked (its first workers) the ABI it
		// applied: "ok landlock=N\n".
		char ok[32];
		const int n = b.sandbox.ll_report != 0
				      ? snprintf(ok, sizeof ok, "ok landlock=%u\n", landlock_abi)
				      : snprintf(ok, sizeof ok, "ok\n");
		(void)!write(g_status_fd, ok, (size_t)n);
		close(g_status_fd);
		g_status_fd = -1;
	}
	if (b.fd_go >= 0) {
		// The successor of a worker being recycled (src/lane.h): booted,
		// mapped and past its init, it waits until the host hands it the
		// lane (the line's open word, S11) after its predecessor left.
		// Its init ran beside that predecessor: the lane's pages are
		// mapped here already, but nothing of the lane is read or written
		// before the hand-over.
		uint32_t nonce = 0;
		size_t got = 0;
		while (got < sizeof nonce) {
			const ssize_t n = read(b.fd_go, reinterpret_cast<char *>(&nonce) + got,
					       sizeof nonce - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				// Not wanted (EOF): it never served; a clean end.
				if (hooks.fini != nullptr)
					hooks.fini(b.lane);
				exit(0);
			}
			got += (size_t)n;
		}
		close(b.fd_go);
		l->line_wait = nonce;
		if ((rc = attach_lane()) != 0)
			return rc;
	}
	// The lane is ours now: a sandbox violation is reported in its trap
	// record (src/sandbox.h).
	sandbox_trap_arm(l->block + kLaneOffTrap);
	// Our probes name our view of the pool; this one tells a tracer whose
	// pool the view is (before any other probe of ours).
	KNIT_TRACE_PROC_WORKER_START(p, b.lane, b.host_pool);
	worker_main(l);
	// Stop acknowledged: the task library's fini, then leave (the host
	// reaps us, or kills us kExitGraceNs after the stop). exit, not
	// _exit: the task library's destructors run.
	if (hooks.fini != nullptr)
		hooks.fini(b.lane);
	exit(0);
}
