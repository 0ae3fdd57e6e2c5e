// SPDX-License-Identifier: MIT
// src/proc.h - the room for process workers (KNIT_WORKERS_PROCESSES):
// loading a task library, spawning knit-worker processes over the pool's
// sealed memfd, watching them (pidfds), handing a worker's death to the
// lane (lane_lost), respawning it, and shutting the processes down. It is
// the process backend of the worker seam (src/workers.h: kProcWorkers).
// Host side: src/proc.cpp; worker side (the knit-worker executable's one
// entry): src/proc_worker.cpp.
//
// A worker process runs the SAME loop as a worker thread (worker_main in
// src/worker.cpp), on a Pool and a Lane it builds from its boot record and
// its own mapping of the memfd: only shared words are common, nothing of the
// host's private memory. Futexes on the mapping are shared ones
// (Pool::futex_shared), so wakes cross the process boundary both ways.
//
// The completion fd (knit_completion_fd) stays the host's: a worker cannot
// evaluate its level (that needs the host's private counts). Once it exists
// the host sets a flag every worker reads (kRingOffEfd in each worker's
// ring page, kPoolOffEfdFlag in the pool header); a worker that publishes
// results then writes its lane's bridge eventfd (its descriptor
// kBootFdBridge), and the host's monitor thread, woken by it, brings the
// completion fd up to date (efd_sync), exactly as a worker thread would.
// Flag and bridge are per worker for the reason the ring pages are
// (src/wake.h, "process pools"): a hostile worker that clears the shared
// flag or drains a shared eventfd would keep every honest worker's
// results from raising the fd. Now it can only hide its own. Without ring
// pages the flag is the header's, which any worker can clear: the monitor
// then also syncs the fd every kProcDoorbellWatchdogNs while it is on,
// the bound the doorbell keeps there too.
//
// Isolation (Pool::isolated): a worker process can write only memory that
// is its own. The pool's region is one range of addresses on both sides,
// backed by several memfds (src/region.h):
//   memfd        range                               host   its worker  other workers
//   shared       everything not below                rw     read-only   read-only
//   lane i       lanes_off + i * stride, + stride:    rw     rw          not mapped
//                its lane block (signal words, request
//                and return locks, both arenas) and its
//                tail (extension: stamp, started mask,
//                counters; line; spill slot, pool.h)
//   steal page c steal_off + steal_page_offset(c),  rw     rw          read-only
//                4 KiB: consumer c's claim, want,
//                wake and parked words (layout.h)
//   ring page i  (its own mapping, src/wake.h)        rw     rw          not mapped
// The shared memfd carries F_SEAL_FUTURE_WRITE, added once the host mapped
// it: the submit lock and its arena, the pool header, the abort bitmap can
// be mapped read-only and nothing else, through any descriptor. A worker is
// handed the shared memfd, its own lane's and ring page's memfds (and the
// steal control memfd), never another lane's: a write through its
// read-only mapping is a SIGSEGV, an honest crash of that worker. A lane's
// memfd is reused by the worker respawned on the lane: the dead worker,
// reaped, holds no mapping any more, a child a task forked inherits none
// (the worker maps the pool MADV_DONTFORK), and the worker closed the
// descriptor after mapping it; lane_lost (src/lane.h) resets the words.
// A recycled worker's successor (src/lane.h, "Recycling") maps its lane's
// memfd while its predecessor still serves the lane, and runs its init
// there, but reads and writes nothing of the lane until it is let in after
// the predecessor's exit: both are the lane's workers, running the same
// library, and neither can reach another lane's memory; stealing, the
// same holds for its consumer page.
// Stealing: every worker maps every consumer page, its own read-write and
// its peers' read-only, from read-only descriptors (a mapping of an
// O_RDONLY descriptor can never be made writable; the worker maps all of
// them and closes the descriptors before it loads the task library, so no
// code of the application ever holds one it could reopen). The control
// block's host page (DEAD, the submit arena's PB) is shared memory, read-
// only to every worker: a worker never frees a submit allocation (the
// host does once the lane is retired) and never wakes a peer (the host
// wakes one parked worker at each publish). A page's memfd is
// reused by the worker respawned on its consumer id, as a lane's: the
// host resets its words first (steal_revive), the peers' read-only
// mappings stay valid.
// Without isolation (KNIT_PROC_NAMED_SHM, no futex_waitv, pages that are
// not 4 KiB) every worker maps the whole region read-write, as before.
//
// The monitor thread (one per process pool, never on a call's path) spawns
// the workers (so PR_SET_PDEATHSIG, which follows the spawning thread, lasts
// as long as the pool), polls their pidfds, their bridges and a control
// eventfd, and hands a death to lane_lost (src/lane.h) under the dispatcher
// lock: it reaps what the dead worker published (validated as always),
// fails the calls it started with -KNIT_ECRASHED (none can run twice),
// gives back the ones it never started (the started mask, Lane::rerun),
// resets the lane's locks to their initial (zero) state and re-attaches the
// host's endpoints; the monitor puts those calls back ahead of the backlog
// and spawns a new worker on the same lane. Calls still in the backlog are
// untouched and go to the new worker. Stealing (src/steal.h): the calls the dead worker
// had claimed from the shared submit lock (steal_reap_dead retires its
// unacknowledged claim on its behalf) fail the same way; calls still
// pending there are untouched and run on the other workers; the new worker
// takes over the dead one's consumer id (steal_revive).
#ifndef KNIT_SRC_PROC_H
#define KNIT_SRC_PROC_H

#include "src/common.h"

#include <signal.h>
#include <sys/types.h>

#include "src/error.h"
#include "src/lane.h"
#include "src/region.h"
#include "src/runtime.h"
#include "src/sandbox.h"
#include "src/trace.h"
#include "src/workers.h"

namespace knit::detail {

// A shared word in the pool header's first block (beside the doorbell
// sequence, on its second cache line): 1 once the completion fd exists
// (read by workers without a ring page; the others read kRingOffEfd).
inline constexpr uint64_t kPoolOffEfdFlag = 64;

// Most words in a worker_prefix (options_resolve refuses more).
inline constexpr uint32_t kPrefixMax = 64;
// Longest name of a named shared-memory object (KNIT_PROC_NAMED_SHM), with
// its leading slash and terminating zero.
inline constexpr uint32_t kShmNameMax = 48;

// Crashes a process pool survives by default (respawn_max 0).
inline constexpr uint32_t kRespawnDefault = 5;

// Restarts. A crash (a worker that died unasked, or was killed for a
// protocol error) counts against respawn_max: over the pool's whole life
// (respawn_window_ms 0), or within the last respawn_window_ms (the monitor
// keeps the time of each counted crash still in the window, at most
// KNIT_RESPAWN_WINDOW_MAX): the crash that finds respawn_max of them there
// already fails the pool (pool_fail), and knit_last_error() on the calls
// refused from then on says which crash and how many in how long. A kill
// the host asked for (hard timeout, KNIT_CANCEL_KILL) counts nothing and
// respawns at once.
//
// Backoff, per lane: the first crash respawns its worker at once; the next
// crash of a successor that lived less than kBackoffResetFactor times the
// cap waits base, then 2 * base, 4 * base ... at most the cap (a worker
// that lived longer starts the sequence over). Meanwhile the lane is DOWN
// (lane_lost, kLaneRespawnLater): the calls its worker never started and
// every new call go to the other lanes (or the steal pool's other
// consumers), or wait in the backlog within their deadlines; nothing ticks
// while nothing waits: the monitor's poll sleeps until the earliest due
// respawn only while one is due (an idle pool has no timer). A stop or a
// failure during the wait acknowledges the lane's stop on its behalf.
inline constexpr uint32_t kBackoffBaseDefaultMs = 10;
inline constexpr uint32_t kBackoffMaxDefaultMs = 1000;
inline constexpr uint32_t kBackoffLongestMs = 3600u * 1000; // an option's upper bound
inline constexpr uint32_t kBackoffResetFactor = 10;

// respawn_max as the options give it -> the crashes survived.
inline uint32_t respawn_budget(uint32_t opt)
{
	return opt == 0 ? kRespawnDefault : opt == KNIT_ZERO ? 0 : opt;
}
struct RespawnBackoff {
	uint32_t base_ms; // 0: none
	uint32_t max_ms;
};
// respawn_backoff_ms, respawn_backoff_max_ms as the options give them.
inline RespawnBackoff respawn_backoff(uint32_t base, uint32_t max)
{
	RespawnBackoff b;
	b.base_ms = base == 0 ? kBackoffBaseDefaultMs : base == KNIT_ZERO ? 0 : base;
	b.max_ms = max != 0                           ? max
		   : b.base_ms > kBackoffMaxDefaultMs ? b.base_ms
						      : kBackoffMaxDefaultMs;
	return b;
}
// The wait before the respawn that follows the streak-th crash in a row of
// one lane's workers (streak >= 1), in ms: 0, base, 2 * base, ..., max.
inline uint32_t backoff_wait_ms(const RespawnBackoff &b, uint32_t streak)
{
	if (b.base_ms == 0 || streak < 2)
		return 0;
	uint64_t w = b.base_ms;
	for (uint32_t k = 2; k < streak && w < b.max_ms; k++)
		w *= 2;
	return w < b.max_ms ? (uint32_t)w : b.max_ms;
}

// KNIT_CANCEL_KILL requests waiting for the monitor (knit_cancel ->
// proc_cancel_kill): at most this many at once (-KNIT_EAGAIN beyond).
inline constexpr uint32_t kCancelKillsMax = KNIT_MAX_WORKERS;
// How long knit_pool_create waits for every worker to report ready, and
// knit_pool_destroy for a worker to exit after its stop (then SIGKILL).
inline constexpr int64_t kBootTimeoutNs = 10ll * 1000 * 1000 * 1000;
inline constexpr int64_t kExitGraceNs = 1000ll * 1000 * 1000;
// The longest boot verdict line a worker writes on its status pipe, its
// newline included ("ok", or "err CODE MESSAGE": the host reads no more
// and hands MESSAGE to knit_last_error(), sanitised).
inline constexpr size_t kBootVerdictMax = 512;

// The boot record: the host hex-encodes it into the worker's argv. The
// same library build is on both sides (the version and the sizes say so).
inline constexpr uint32_t kBootMagic = 0x6B6E6974u; // "knit"
// 5: the ring page (fd_ring); 6: the completion-fd flag in the ring page,
// and a bridge eventfd per lane; 8: isolation (ext_off, fd_lane, fd_steal).
// 9: a page per steal consumer (fd_steal + c). 10: the successor of a
// recycled worker (fd_go). 11: the sandbox (its names after the task
// library on the command line). 12: its namespaces and cgroup (fd_cgroup).
// 13: Landlock (its paths after the names; "ok landlock=N" when asked,
// SandboxBoot::ll_report). 14: fd_go right after the steal pages
// (boot_fd_go) and fd_cgroup right after it (boot_fd_cgroup), no longer at
// fixed numbers above every possible one.
inline constexpr uint32_t kBootVersion = 14;
inline constexpr int kBootFdRegion = 3; // the memfd, in the worker
inline constexpr int kBootFdStatus = 4; // the boot status pipe (first boot only)
inline constexpr int kBootFdBridge = 5; // the lane's bridge eventfd
inline constexpr int kBootFdRing = 6;   // the worker's own ring page (fd_ring)
inline constexpr int kBootFdLane = 7;   // isolation: the worker's own lane pages (fd_lane)
// Isolation, stealing: consumer c's page of the steal control block at
// kBootFdSteal + c (c < nworkers): its own read-write, its peers' read-only.
inline constexpr int kBootFdSteal = 8;
// A recycled worker's successor: the go pipe (fd_go), the first number
// after the descriptors it is given (the consumer pages, steal_pages of
// them: the pool's workers with stealing under isolation, else none), so
// the spawn leaves no gap below it to close number by number (each such
// close is a file action, and a syscall in the child, on every recycle).
inline constexpr int boot_fd_go(uint32_t steal_pages) { return kBootFdSteal + (int)steal_pages; }
// The pool's cgroup (knit_sandbox_t.cgroup): its cgroup.procs, which the
// worker writes itself into before it loads the task library
// (src/cgroup.h): the number after the go pipe (after the consumer pages
// when there is none), for the same reason.
inline constexpr int boot_fd_cgroup(uint32_t steal_pages, bool go)
{
	return boot_fd_go(steal_pages) + (go ? 1 : 0);
}
// A worker's ring page (src/wake.h, "process pools"): its own doorbell
// words, in a memfd of their own that only the host and that worker map.
inline constexpr uint64_t kRingBytes = 4096;
inline constexpr uint64_t kRingOffArmed = 0;        // u32 ArmState (host arms, worker claims)
inline constexpr uint64_t kRingOffSeq = kBlock;     // u32 ring sequence (worker bumps, host waits)
inline constexpr uint64_t kRingOffEfd = 2 * kBlock; // u32 1: the completion fd exists (host sets)
struct ProcBoot {
	uint32_t magic;
	uint32_t version;
	uint32_t size;        // sizeof(ProcBoot)
	uint32_t config_size; // sizeof(PoolConfig)
	uint32_t lane;
	uint32_t nworkers;
	uint32_t ntasks;
	uint32_t ticket_cap;
	int32_t fd_status;  // kBootFdStatus, or -1 (a respawn: nobody reads it)
	int32_t ppid;       // the host's pid: the worker exits if it is not its parent
	uint64_t host_pool; // the host's pool id in its probes (src/trace.h), never dereferenced
	uint64_t region_size;
	uint64_t lanes_off;
	uint64_t stride;
	uint64_t abort_off;
	// The steal area (steal control block, submit lock, its arena:
	// src/steal.h), or 0 for the lanes topology.
	uint64_t steal_off;
	// Isolation: the lane's extension, from its lane block (the lane's
	// tail, src/pool.h); 0: the pool header's.
	uint64_t ext_off;
	// Isolation: kBootFdLane (the memfd of this worker's lane, mapped
	// read-write over its lane's range) and, stealing, kBootFdSteal (the
	// steal control pages); -1: one memfd mapped read-write (fd 3).
	int32_t fd_lane;
	int32_t fd_steal;
	uint64_t table_hash;
	// The host's start time (clock ticks since boot, /proc/PID/stat field
	// 22): with a wrapper between host and worker, the worker watches the
	// host's pid and this tells it the pid still names the host.
	uint64_t host_start;
	// kBootFdRing when the worker rings through a ring page of its own,
	// else -1 (the pool header's doorbell words, and the host's watchdog).
	int32_t fd_ring;
	// The line's open word this worker waits for before it serves its line
	// (src/syncline.h S11), or 0: serve it from the start (first boot).
	uint32_t line_nonce;
	// KNIT_PROC_NAMED_SHM: the object to open (else empty: fd kBootFdRegion).
	char shm_name[kShmNameMax];
	// boot_fd_go() for the successor of a worker being recycled, else -1. It
	// loads the task library, checks the table, reports "ok" on its status
	// pipe and then waits, mapping nothing of the pool, until the host
	// writes its line's open word (4 bytes, S11) on this pipe: the lane is
	// its from then on. EOF instead: it is not wanted, and exits 0.
	int32_t fd_go;
	uint32_t reserved;
	SandboxBoot sandbox; // src/sandbox.h; on 0: none
	PoolConfig cfg;
};

// Tracers read these from a worker's argv (src/trace.h).
static_assert(offsetof(ProcBoot, magic) == KNIT_TRACE_BOOT_OFF_MAGIC, "boot record: trace ABI");
static_assert(offsetof(ProcBoot, lane) == KNIT_TRACE_BOOT_OFF_LANE, "boot record: trace ABI");
static_assert(offsetof(ProcBoot, ppid) == KNIT_TRACE_BOOT_OFF_PPID, "boot record: trace ABI");
static_assert(offsetof(ProcBoot, host_pool) == KNIT_TRACE_BOOT_OFF_HOST_POOL,
	      "boot record: trace ABI");
static_assert(kBootMagic == KNIT_TRACE_BOOT_MAGIC, "boot record: trace ABI");

// The host side of a process pool (Pool::proc).
// ---- the host's record of a process pool (src/proc.cpp, src/proc_files.cpp,
// src/proc_spawn.cpp) --------------------------------------------------------------
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
	SandboxHost sandbox; // the options' sandbox (src/sandbox.h), boot.on 0: none
	// The Landlock ABI the first workers applied (the least; the monitor
	// sets it before create returns), 0: none.
	uint32_t landlock_abi;
	uint32_t respawn_max; // crashes survived (0: none)
	// Restarts (above; the monitor only, after boot).
	int64_t window_ns;                    // respawn_window_ms, 0: the pool's life
	RespawnBackoff backoff;               // resolved
	int64_t *crash_at;                    // with a window: the counted crashes' times
	uint32_t crash_head, crash_n;         // ... a ring of respawn_max entries
	int64_t spawned_at[KNIT_MAX_WORKERS]; // when lane i's worker was spawned
	uint32_t streak[KNIT_MAX_WORKERS];    // crashes in a row of lane i's workers
	int64_t respawn_at[KNIT_MAX_WORKERS]; // lane i is DOWN until then (backoff), 0: not
	uint32_t backing_off;                 // atomic: lanes with a due respawn
	char fail_why[kErrorMax];             // why the pool failed (written before
					      // Pool::failed's release store)
	// KNIT_CANCEL_KILL requests (under m): ticket index << 32 | generation.
	uint64_t kill_req[kCancelKillsMax];
	uint32_t nkill_req;
	int bridge[KNIT_MAX_WORKERS];  // each lane's eventfd: its worker writes it (completion fd
				       // on)
	int ctl;                       // eventfd that wakes the monitor (shutdown)
	Region ring[KNIT_MAX_WORKERS]; // Pool::rings: each worker's ring page (wake.h)
	int lane_fd[KNIT_MAX_WORKERS]; // isolation: each lane's memfd (its worker's pages), or -1
	// Isolation, stealing: consumer i's page of the steal control block
	// (layout.h): its memfd (read-write: the host's and worker i's
	// mapping), and a read-only descriptor of it (reopened O_RDONLY: a
	// mapping of it cannot be made writable) for worker i's peers; or -1.
	int steal_fd[KNIT_MAX_WORKERS];
	int steal_ro[KNIT_MAX_WORKERS];
	uint32_t *efd_flag; // the pool header's: 1 once the completion fd exists
	uint32_t efd_watch; // atomic: the fd is on and the flag is the header's (no ring
			    // pages): the monitor syncs it every kProcDoorbellWatchdogNs
	ProcBoot boot;      // the template (lane and fd_status set per spawn)
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
	uint64_t backoffs, backoff_ms, cancel_kills;
	uint64_t deaths[KNIT_DEATH_CAUSE_MAX]; // by enum knit_death_cause
	// The memory cgroup's oom_kill count at the last look (the monitor's;
	// -1: unreadable): a SIGKILL nobody here sent, seen with the count
	// grown, is an OOM kill (death_cause in src/proc.cpp).
	int64_t oom_seen;
	// Recycling (src/lane.h "Recycling"; the monitor only, unless noted).
	// Each lane's successor while one is on its way: its pid and pidfd, the
	// read end of its boot status pipe until its verdict, the write end of
	// its go pipe (boot_fd_go), and whether it reported ready.
	pid_t spare_pid[KNIT_MAX_WORKERS];
	int spare_pidfd[KNIT_MAX_WORKERS];
	int spare_rd[KNIT_MAX_WORKERS];
	int spare_go[KNIT_MAX_WORKERS];
	bool spare_ready[KNIT_MAX_WORKERS];
	uint32_t spare_why[KNIT_MAX_WORKERS]; // the kDue* reason it was started for
	uint32_t spare_got[KNIT_MAX_WORKERS]; // verdict bytes read so far
	char spare_verdict[KNIT_MAX_WORKERS][4];
	int64_t spare_retry[KNIT_MAX_WORKERS]; // no new successor before this (a failed one)
	uint32_t due[KNIT_MAX_WORKERS];        // atomic: kDue* bits (retire_due sets kDueCalls)
	uint32_t retiring[KNIT_MAX_WORKERS];   // the kDue* reason of the retire asked, 0: none
	// A respawned worker's boot status pipe (read end) until its verdict:
	// its state is BOOTING until then.
	int boot_rd[KNIT_MAX_WORKERS];
	int64_t rss_sampled; // the last memory sample (recycle_rss_bytes)
	// For knit_pool_stats (the monitor stores, any thread loads; relaxed):
	// the serving worker's pid, since when it serves, its state
	// (knit_worker_state).
	uint32_t wpid[KNIT_MAX_WORKERS];
	int64_t born[KNIT_MAX_WORKERS];
	uint32_t wstate[KNIT_MAX_WORKERS];
	uint64_t recycles[3]; // by reason: calls, memory, age
	uint64_t recycle_failures;
};

// ProcHost::due and ::retiring: why a worker is recycled.
constexpr uint32_t kDueCalls = 1; // recycle_calls served
constexpr uint32_t kDueRss = 2;   // recycle_rss_bytes reached
constexpr uint32_t kDueAge = 4;   // recycle_age_ms passed
// How often the monitor samples the workers' memory (recycle_rss_bytes).
inline constexpr int64_t kRecycleRssSampleNs = 50ll * 1000 * 1000;
// After a successor failed to boot, the next try waits this long.
inline constexpr int64_t kRecycleRetryNs = 1000ll * 1000 * 1000;

// ProcHost::killed: a kill was asked for (the hard timeout or a protocol
// error), the monitor sent it, and why (a protocol error: the lane's calls
// fail with -KNIT_EPROTO and the death counts against the budget).
constexpr uint32_t kKillAsked = 1;
constexpr uint32_t kKillSent = 2;
constexpr uint32_t kKillProto = 4;
// KNIT_CANCEL_KILL: the monitor killed it while it ran a cancelled call
// (asked and sent at once, under the dispatcher; counts in cancel_kills).
constexpr uint32_t kKillCancel = 8;

// ---- files (src/proc_files.cpp) -------------------------------------------------------
// A malloc'd copy of s (null: out of memory).
char *dup_str(const char *s);
// The default knit-worker (malloc'd; null only when out of memory): the
// install's place, relative to the library's file, then the absolute one.
char *default_worker_path();
// Whether `path` names a regular file we may read (exec: execute): 0, or
// -KNIT_ENOENT / -KNIT_EACCES / -KNIT_EINVAL with knit_last_error() naming
// `what` and the path.
int proc_file_check(const char *what, const char *path, bool exec);

// ---- children (src/proc_spawn.cpp) ----------------------------------------------------
void free_prefix(ProcHost *h);
int sys_pidfd_kill(int pidfd, int sig);
// Reap the child behind pidfd (it exited). Returns the siginfo code/status
// or, when someone else reaped it (SIGCHLD ignored, a waitpid(-1) of the
// application), CLD_KILLED with status 0.
void reap(int pidfd, pid_t pid, siginfo_t *si);
// Start the janitor of the named region h->shm_name before the name
// exists; janitor_told once it is made; janitor_done once it is gone.
int spawn_janitor(ProcHost *h);
void janitor_told(ProcHost *h);
void janitor_done(ProcHost *h);
// Spawn the worker of lane `lane`. status_w: the write end of the boot
// status pipe it gets (or -1); why: room for the failure's message (or
// null). respawn: it takes the lane over from a dead worker (its boot
// record carries the line's open word). go_r >= 0: the read end of the go
// pipe of a recycled worker's successor (fd_go), recorded as the lane's
// spare (spare_pid, spare_pidfd), else as its worker (pid, pidfd).
int spawn_worker(Pool *p, uint32_t lane, int status_w, char *why, bool respawn = false,
		 int go_r = -1);

// The hash both sides compare: the name-sorted table's names, timeouts and
// flags.
uint64_t task_table_hash(const TaskEntry *t, uint32_t n);

// Load the task library at `path` (dlopen) and build p's task table from it
// (names copied and sorted as for thread pools). *handle gets the dlopen
// handle. 0, -KNIT_ENOENT (no such file; a bare name: not found in the
// library path), -KNIT_EACCES (not a readable regular file), -KNIT_EINVAL
// (cannot load, no or bad knit_task_library, bad table), -KNIT_ENOMEM;
// the message recorded (src/error.h) on failure.
//
// hooks (may be null: the host, which never runs them): the library's
// init and fini (version 2; null for version 1 or when not set).
struct LibraryHooks {
	int (*init)(uint32_t worker, char *msg, size_t msg_size);
	void (*fini)(uint32_t worker);
};
int proc_load_tasks(Pool *p, const char *path, void **handle, LibraryHooks *hooks = nullptr);

// knit_pool_create, right after proc_load_tasks: the host state (p->proc),
// which owns the library handle from now on (pool_free -> proc_shutdown
// closes it). 0 or -KNIT_ENOMEM (the handle closed).
int proc_host_new(Pool *p, void *dl);
// Can a process pool be isolated (below)? Not with KNIT_PROC_NAMED_SHM
// (`named`: nothing is handed over, and a name can be reopened writable),
// and only where the host can sleep on every worker's own ring page
// (futex_waitv, Linux 5.16+: the pool header's doorbell words would have
// to stay writable by every worker) and pages are 4 KiB (the layout's
// granule).
bool proc_isolation_possible(bool named);
// knit_pool_create, isolation: p->region is the shared memfd, mapped
// read-write and not sealed yet. Back each worker lane's range [lanes_off
// + i * stride, + stride) by a memfd of its own and, stealing, consumer
// i's page of the steal control block by another (both mapped over the
// range, read-write; the control block's host page stays in the shared
// memfd), then seal the shared memfd read-only
// (region_seal_readonly). Sets p->isolated. 0, -KNIT_ENOMEM,
// -KNIT_ESYSTEM (the message recorded).
int proc_isolate(Pool *p, uint64_t lanes_off, uint64_t stride, uint64_t steal_off);
// knit_pool_create, next, before the region: take the options' paths and
// prefix, resolve the worker path and check it is an executable file. 0,
// -KNIT_ENOENT (no knit-worker there), -KNIT_EACCES (not an executable
// regular file), -KNIT_ENOMEM; the message recorded (src/error.h).
int proc_resolve(Pool *p, const knit_pool_options_t *opts);
// knit_pool_create, KNIT_PROC_NAMED_SHM, after proc_resolve: create the
// pool's region as a named shm object (O_EXCL, mode 0600, a fresh name)
// instead of a memfd. Its janitor runs before the name exists, so a host
// killed at any point after leaves no name. The name lives until
// proc_shutdown (or is unlinked at once if anything fails). 0,
// -KNIT_ESYSTEM (no janitor) or what region_create returns.
int proc_region_create_named(Pool *p, uint64_t size);

// The start time of process `pid` (field 22 of /proc/PID/stat), or 0.
uint64_t proc_start_time(int pid);
// The parent of process `pid` (field 4 of /proc/PID/stat), or 0.
int proc_parent(int pid);

// knit_pool_create, after the region and lanes are built: make the
// eventfds and ring pages, fill the boot record. 0, -KNIT_ENOMEM,
// -KNIT_ESYSTEM; the message recorded (src/error.h).
int proc_prepare(Pool *p, const PoolConfig &cfg, uint64_t region_size, uint64_t lanes_off,
		 uint64_t stride, uint64_t abort_off, uint64_t steal_off);
// Then start the monitor thread, which spawns every worker, and wait
// until each reported ready. 0, -KNIT_ESYSTEM (no thread or spawn),
// -KNIT_ENOENT / -KNIT_EACCES (the worker_prefix program not found, not
// executable), -KNIT_EINVAL (a worker could not be placed on its cpu_mask
// CPUs), -KNIT_EPROTO (a worker refused to start), -KNIT_ECRASHED (a worker
// died or stayed silent before ready). The message recorded (src/error.h)
// carries a refusing worker's own, sanitised. On failure every child is
// gone.
int proc_start(Pool *p);

// knit_pool_destroy, after knit_stop: stop the monitor, which waits for
// every child to exit (kExitGraceNs, then SIGKILL) and reaps it; then free
// the host state (fds, the library handle). Safe on a partly built pool.
void proc_shutdown(Pool *p);

// knit_pool_destroy in a child of fork(2): close the child's copies of the
// pool's descriptors and free the host state; no child is signalled or
// waited for (they are the parent's).
void proc_forget(Pool *p);

// The completion fd now exists (knit_completion_fd, after its release store
// of efd_on): tell the workers to write the bridge.
void proc_efd_enabled(Pool *p);

// Kill worker `lane`'s process; the monitor respawns it. Dispatcher holder
// only: the lane is marked down (nothing placed) until it is recovered.
// proto false: the hard timeout caught it in a task (its call is completed
// already; the kill counts in hard_kills, not as a crash). proto true: it
// wrote what no honest worker writes (lane_distrust): the calls its
// lane still holds fail with -KNIT_EPROTO and the death counts as a crash
// (against respawn_max).
void proc_kill_worker(Pool *p, uint32_t lane, bool proto);

// knit_stop found worker `lane`'s stop word neither REQUESTED nor
// ACKNOWLEDGED after asking it to stop. Takes the dispatcher and looks
// again (a lane being recovered is consistent only under it); if the word
// is still neither, the worker rewrote it (it would never acknowledge):
// counted as a protocol error and killed as lane_distrust kills, once.
// The monitor's recovery then acknowledges on its behalf (the pool is
// stopping) and wakes the stop word.
void proc_stop_word_check(Pool *p, uint32_t lane);

// knit_cancel(KNIT_CANCEL_KILL), holding mu, for the call (ticket index
// `index`, generation `gen`) it completes with -KNIT_ECANCELED before it
// releases mu (any host thread): ask the monitor to kill the worker
// process that runs it (the monitor looks under mu, after that completion:
// the dead worker's loss never fails the call a second time). The monitor, holding
// the dispatcher, kills a worker only while its running stamp names that
// call and the call is the one it holds (a call not started, or finished
// meanwhile, costs no worker); the lane is DOWN until its successor,
// spawned at once, takes it over (lane_lost: the calls it never started run
// again there or, stealing, on the others). 0, or -KNIT_EAGAIN:
// kCancelKillsMax requests wait already (nothing asked: the caller leaves
// the call as it is).
int proc_cancel_kill(Pool *p, uint32_t index, uint32_t gen);

// Fill the process counters of the stats.
void proc_stats(Pool *p, knit_pool_stats_t *s);

} // namespace knit::detail

// The knit-worker executable's whole body (private ABI, KNITTING_PRIVATE).
extern "C" KNIT_API int knit__worker_main(int argc, char **argv) KNIT_NOEXCEPT;

#endif
