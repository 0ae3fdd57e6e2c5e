/* SPDX-License-Identifier: MIT */
/*
 * knitting.h - libknitting's public C ABI.
 *
 * libknitting hands tasks from a host to a pool of parked workers through
 * shared memory and hands the results back. Everything here is plain C
 * (C99 and later, and C++ through extern "C"): opaque handles, flat structs
 * that start with a `size` field so they can grow, and negative error codes.
 * See libknitting(7).
 */
#ifndef KNITTING_H
#define KNITTING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KNIT_API __attribute__((visibility("default")))
#else
#define KNIT_API
#endif

/* Under C++ every function is declared noexcept: none of them throws, and a
 * task must not throw or longjmp out of its task function either (the
 * library cannot unwind its own state; see knit_pool_create(3)). */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define KNIT_NOEXCEPT noexcept
#else
#define KNIT_NOEXCEPT
#endif

#define KNIT_VERSION_MAJOR 1
#define KNIT_VERSION_MINOR 2
#define KNIT_VERSION_PATCH 0
/* (major << 16) | (minor << 8) | patch, comparable as an integer. */
#define KNIT_VERSION_NUMBER                                                                        \
	((KNIT_VERSION_MAJOR << 16) | (KNIT_VERSION_MINOR << 8) | KNIT_VERSION_PATCH)
/* Whether a library reporting version v (knit_version()) can serve a program
 * compiled with this header: the same major version, and not older than the
 * header (an older one may lack functions, flags or struct members the
 * program uses). A program checks it once at start-up; see knit_version(3). */
#define KNIT_VERSION_COMPATIBLE(v)                                                                 \
	((((uint32_t)(v)) >> 16) == (uint32_t)KNIT_VERSION_MAJOR &&                                \
	 ((uint32_t)(v)) >= (uint32_t)KNIT_VERSION_NUMBER)

/*
 * Error codes. Every function that can fail returns 0 (or a count) on
 * success and the negative of one of these on failure. They are libknitting's
 * own numbers, not errno values.
 */
enum knit_error {
	KNIT_OK = 0,
	KNIT_EINVAL = 1,     /* an argument is NULL, out of range, or malformed */
	KNIT_ENOMEM = 2,     /* memory or address space could not be had */
	KNIT_EAGAIN = 3,     /* no room right now (backlog full): try again later */
	KNIT_ENOTASK = 4,    /* no task has that id or name */
	KNIT_ETOOBIG = 5,    /* payload larger than the pool's per-call limit */
	KNIT_ECLOSED = 6,    /* the pool is stopping or stopped */
	KNIT_ETIMEDOUT = 7,  /* a deadline passed */
	KNIT_ECANCELED = 8,  /* the call was cancelled */
	KNIT_ECRASHED = 9,   /* the worker running the call died */
	KNIT_EPROTO = 10,    /* a malformed frame in shared memory */
	KNIT_ETASK = 11,     /* the task reported an error (see the result value) */
	KNIT_ESYSTEM = 12,   /* the operating system refused (thread, mmap, futex) */
	KNIT_EVERSION = 13,  /* a struct's size field is not one this library knows */
	KNIT_ENOTFOUND = 14, /* no such ticket (already completed or never issued) */
	KNIT_EBUSY = 15,     /* 1.2: called from a task of the same pool, where it would wait
				on itself (see libknitting(7), "Calls from a task") */
	KNIT_ENOENT = 16,    /* 1.2: a file the pool was told to use (task library,
				knit-worker, worker_prefix program) does not exist */
	KNIT_EACCES = 17,    /* 1.2: such a file exists but may not be used (not
				executable, not readable, not a regular file) */
	KNIT_ERROR_MAX_ = 18
};

/*
 * A tagged value: a task's argument or result. Flat so every FFI can build
 * one. Scalars travel inside the queue slot; bytes, strings and error
 * messages up to a few hundred bytes travel in the slot's inline area, longer
 * ones in the pool's payload arena. Bytes handed to the library are copied
 * before the call returns; bytes the library hands out are owned by it and
 * stay valid for the documented lifetime (until knit_completion_release for
 * a result, until the task function returns for an argument).
 */
typedef enum knit_value_type {
	KNIT_VALUE_NONE = 0,   /* no value */
	KNIT_VALUE_BOOL = 1,   /* i64 is 0 or 1 */
	KNIT_VALUE_I64 = 2,    /* i64 */
	KNIT_VALUE_F64 = 3,    /* f64 */
	KNIT_VALUE_BYTES = 4,  /* data, len: opaque bytes */
	KNIT_VALUE_STRING = 5, /* data, len: UTF-8 text, len excludes the NUL that
				  the library always appends to strings it hands out */
	KNIT_VALUE_ERROR = 6   /* code: the task's error code; data, len: message */
} knit_value_type_t;

typedef struct knit_value {
	uint32_t type;    /* knit_value_type_t */
	int32_t code;     /* KNIT_VALUE_ERROR only: a task-defined code */
	int64_t i64;      /* KNIT_VALUE_BOOL, KNIT_VALUE_I64 */
	double f64;       /* KNIT_VALUE_F64 */
	const void *data; /* KNIT_VALUE_BYTES, _STRING, _ERROR */
	size_t len;       /* bytes at data */
} knit_value_t;

/* ------------------------------------------------------------------------ */
/* Handles and tasks                                                         */
/* ------------------------------------------------------------------------ */

typedef struct knit_pool knit_pool_t; /* opaque */
typedef struct knit_ctx knit_ctx_t;   /* opaque: a running task's context */

/* Identifies one enqueued call; never 0, never reused within a pool. */
typedef uint64_t knit_ticket_t;

/* Passed where a zero would otherwise mean "use the default" but a real zero
 * is wanted (e.g. spin_us = KNIT_ZERO: never spin). */
#define KNIT_ZERO UINT32_MAX

/*
 * A task: a named C function run by a worker. It reads `arg` (valid until it
 * returns) and fills `ret` (preset to KNIT_VALUE_NONE). Bytes that `ret`
 * points to must stay valid until the function returns; the worker copies
 * them then (or, when they were obtained from knit_ctx_alloc(), ships them
 * without a copy). Return 0 on success. Any other return value completes the
 * call with status -KNIT_ETASK; the result is then `ret` if the task made it
 * a KNIT_VALUE_ERROR, else an error value whose code is the returned value.
 */
typedef int (*knit_task_fn)(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret);

enum knit_task_flags {
	KNIT_TASK_ABORTABLE = 1u << 0 /* calls get an abort bit (knit_ctx_aborted) */
};

typedef struct knit_task {
	const char *name;     /* unique, non-empty; the pool copies it */
	knit_task_fn fn;      /* must not be NULL */
	uint32_t timeout_ms;  /* default per-call timeout; 0 = none */
	uint32_t flags;       /* knit_task_flags */
	void *data;           /* the task's own state: knit_ctx_task_data() */
	uint64_t reserved[2]; /* must be 0: room for members a later release
				 gives meaning to (zero keeps today's behaviour) */
} knit_task_t;

/* ------------------------------------------------------------------------ */
/* Pool options (zero-initialise, set size, set what you need)               */
/* ------------------------------------------------------------------------ */

enum knit_topology {
	KNIT_TOPOLOGY_AUTO = 0,  /* steal for 2..31 workers with no balancer and no
				    inline lane, lanes otherwise (threads and
				    processes alike) */
	KNIT_TOPOLOGY_LANES = 1, /* one request queue per worker */
	KNIT_TOPOLOGY_STEAL = 2  /* one shared submit queue all workers claim from */
};

enum knit_balancer {
	KNIT_BALANCE_DEFAULT = 0, /* round robin */
	KNIT_BALANCE_ROUND_ROBIN = 1,
	KNIT_BALANCE_FIRST_IDLE = 2, /* first lane with nothing in flight,
					else round robin */
	KNIT_BALANCE_RANDOM = 3,
	KNIT_BALANCE_FIRST_IDLE_OR_RANDOM = 4 /* first idle lane, else random */
};

enum knit_inline_lane {
	KNIT_INLINE_OFF = 0,
	KNIT_INLINE_FIRST = 1, /* the host lane comes first in the balancer's rotation */
	KNIT_INLINE_LAST = 2   /* the host lane comes last in the rotation; either way
				  its index (stats, knit_ctx_lane) is `workers` */
};

enum knit_doorbell {
	KNIT_DOORBELL_DEFAULT = 0, /* on */
	KNIT_DOORBELL_ON = 1,
	KNIT_DOORBELL_OFF = 2 /* waiting polls with a bounded sleep ladder */
};

#define KNIT_MAX_WORKERS 64

/* Worker CPU placement: a fixed bitmask (bit c % 64 of word c / 64 is CPU c),
 * wide enough for CPUs 0..1023 (glibc's CPU_SETSIZE). */
#define KNIT_CPU_MASK_WORDS 16

enum knit_cpu_flags {
	KNIT_CPU_ONE_PER_WORKER = 1u << 0 /* worker w alone on the (w mod n)-th CPU
					     of cpu_mask (ascending), not on all of it */
};

/* 1.2: a worker thread's start or stop callback (knit_pool_options_t). */
typedef void (*knit_worker_hook_fn)(void *arg, uint32_t worker);

typedef struct knit_pool_options {
	uint32_t size;                  /* sizeof(knit_pool_options_t) */
	uint32_t workers;               /* worker threads; 0 = 1; at most KNIT_MAX_WORKERS */
	uint32_t topology;              /* enum knit_topology */
	uint32_t balancer;              /* enum knit_balancer (lanes topology) */
	uint32_t inline_lane;           /* enum knit_inline_lane */
	uint32_t inline_batch;          /* inline tasks run per dispatcher pass; 0 = 1 */
	uint32_t steal_region_lanes;    /* lanes per steal claim; 0 = widest allowed */
	uint32_t stall_free_loops;      /* fruitless reap passes before sleeping;
					   0 = 1 with the doorbell, 128 without */
	uint32_t max_backoff_ms;        /* doorbell off: longest sleep between polls; 0 = 10 */
	uint32_t doorbell;              /* enum knit_doorbell */
	uint32_t spin_us;               /* worker spin before parking; 0 = 50 (at most
					   CPUs - 1 workers spin); KNIT_ZERO = none */
	uint32_t park_ms;               /* worker park watchdog; 0 = none */
	uint32_t abort_capacity;        /* abort bits for abortable calls; 0 = 258 */
	uint32_t hard_timeout_ms;       /* 0 = none; see knit_pool_create(3) */
	uint32_t max_pending;           /* most calls waiting for a free slot; an
					   enqueue finding that many fails with
					   -KNIT_EAGAIN; 0 = 65536 */
	uint32_t reserved0;             /* must be 0 */
	uint64_t payload_max_bytes;     /* arena size per queue direction per lane;
					   0 = 64 MiB; reserved, committed on use */
	uint64_t payload_initial_bytes; /* arena bytes committed at creation; 0 = none */
	uint64_t max_payload_bytes;     /* per-call payload cap; 0 = payload_max_bytes / 8;
					   at most payload_max_bytes / 8 */
	/* Worker CPU placement, applied before a worker runs anything. All zero
	 * (or a shorter, older struct) = none: workers inherit the creating
	 * thread's affinity. Every CPU must be one the process may use. */
	uint64_t cpu_mask[KNIT_CPU_MASK_WORDS]; /* the workers' CPUs */
	uint32_t cpu_flags;                     /* enum knit_cpu_flags */
	uint32_t reserved1;                     /* must be 0 */
	/* Process workers (see knit_pool_create(3), libknitting(7)). A shorter,
	 * older struct gets thread workers. */
	uint32_t worker_kind;             /* enum knit_worker_kind; 0 = threads */
	uint32_t proc_flags;              /* enum knit_proc_flags (processes only) */
	const char *task_library;         /* processes: the task library's path (a
					     shared object exporting knit_task_library);
					     required with processes, NULL with threads */
	const char *worker_path;          /* processes: the knit-worker executable; NULL =
					     $KNIT_WORKER_PATH, else the one installed
					     beside the library */
	uint32_t respawn_max;             /* processes: worker crashes the pool survives
					     (each respawns the worker); one more fails
					     the pool; 0 = 5; KNIT_ZERO = no respawn */
	uint32_t reserved2;               /* must be 0 */
	const char *const *worker_prefix; /* processes: a NULL-terminated argv run
					before the knit-worker command line (a
					sandbox: bwrap, systemd-run ...); its
					first word searched in $PATH; NULL =
					none; a shorter, older struct = none */
	/* 1.2: thread workers only (process workers have the task library's
	 * init and fini). worker_start(worker_hook_arg, w) runs on worker thread
	 * w (named knit-wW) before it takes its first call; worker_stop on it
	 * once it left its loop for good (a stop, or its lane distrusted),
	 * before knit_pool_destroy returns. NULL = none. */
	knit_worker_hook_fn worker_start;
	knit_worker_hook_fn worker_stop;
	void *worker_hook_arg;
	/* 1.2 (a shorter, older struct = 0 for both). */
	uint32_t info_flags;   /* enum knit_pool_info_flags; 0 = none */
	uint32_t info_records; /* completion infos kept for knit_completion_info:
				  0 = 1024 with KNIT_POOL_INFO_TIMING, else 64;
				  at most 1 << 20 */
	/* 1.2, processes: worker recycling (see knit_pool_create(3), "Worker
	 * recycling"). Each is a mark; zero (or a shorter struct) = off. A
	 * worker past any mark is replaced without a gap: its successor boots
	 * first, then it finishes what it runs and exits. */
	uint64_t recycle_calls;     /* retire a worker once it served this many calls */
	uint64_t recycle_rss_bytes; /* retire a worker whose resident memory reached
				       this many bytes (sampled every 50 ms) */
	uint32_t recycle_age_ms;    /* retire a worker this many ms after its start */
	uint32_t reserved3;         /* must be 0 */
	/* 1.2: processes only: the workers' sandbox (knit_sandbox_t, read at
	 * create; see libknitting(7), "Sandboxing"). NULL = none. */
	const struct knit_sandbox *sandbox;
	/* 1.2: restart intensity and backoff (processes; a shorter, older
	 * struct = 0 for each). See knit_pool_create(3), "Restarts". */
	uint32_t respawn_window_ms;      /* processes: respawn_max counts the crashes
					    of the last respawn_window_ms only (at most
					    respawn_max respawns within any window that
					    long; one more fails the pool); 0 = the
					    pool's whole life; with a window,
					    respawn_max is at most
					    KNIT_RESPAWN_WINDOW_MAX */
	uint32_t respawn_backoff_ms;     /* processes: the wait before the second
					    respawn in a row of one worker, doubled for
					    each further one; 0 = 10; KNIT_ZERO = none
					    (every respawn at once) */
	uint32_t respawn_backoff_max_ms; /* processes: the longest such wait; 0 =
					    1000; at least respawn_backoff_ms */
	uint32_t reserved4;              /* must be 0 */
} knit_pool_options_t;

/* 1.2: what a pool records for knit_completion_info(3). A call's death is
 * always recorded; the rest only when asked, so a pool that does not ask
 * reads no clock for it. */
enum knit_pool_info_flags {
	KNIT_POOL_INFO_TIMING = 1u << 0, /* every call's lane, pid, wait and run
					    time (monotonic clock readings) */
	KNIT_POOL_INFO_CPU = 1u << 1     /* TIMING and the worker thread's CPU time
					    per call (two system calls a call) */
};

/* The largest respawn_max with a respawn_window_ms (the pool keeps the time
 * of each counted crash in the window). Since 1.2. */
#define KNIT_RESPAWN_WINDOW_MAX 1024

/*
 * 1.2: a process pool's sandbox, applied in each worker process after the
 * task library's init and before its first task (see knit_pool_create(3),
 * libknitting(7) "Sandboxing"). Zero-initialise, set size, set what you
 * need: every zero member is off. Giving one at all sets no_new_privs and
 * a zero core-dump limit in every worker.
 */
enum knit_sandbox_flags {
	KNIT_SANDBOX_SECCOMP = 1u << 0, /* the seccomp allow-list: the default policy,
					  plus seccomp_sets and seccomp_allow; any
					  other syscall kills the worker (SIGSYS) */
	/* Landlock: the worker opens files beneath landlock_ro and landlock_rw
	 * only (every file right of the kernel's ABI), and cannot ptrace its
	 * host (ABI 6: nor signal it); a kernel without Landlock, or below
	 * landlock_abi: create fails with -KNIT_ESYSTEM. */
	KNIT_SANDBOX_LANDLOCK = 1u << 1,
	/* With LANDLOCK: such a kernel applies what it has, or nothing; the
	 * pool runs, and knit_pool_stats_t.landlock_abi says which. */
	KNIT_SANDBOX_LANDLOCK_BEST_EFFORT = 1u << 2
};

/* The highest Landlock ABI this library uses the rights of (landlock_abi's
 * largest value). Since 1.2. */
#define KNIT_LANDLOCK_ABI_MAX 7

/* Most paths in landlock_ro and in landlock_rw, and the longest one. */
#define KNIT_LANDLOCK_PATHS_MAX 64
#define KNIT_LANDLOCK_PATH_MAX 4096

enum knit_seccomp_sets {
	KNIT_SECCOMP_FILES = 1u << 0,    /* open, stat, directories, rename, unlink ... */
	KNIT_SECCOMP_NETWORK = 1u << 1,  /* sockets, epoll, select */
	KNIT_SECCOMP_PROCESSES = 1u << 2 /* fork, exec, wait; kill, never of the host */
};

typedef struct knit_sandbox {
	uint32_t size;                    /* sizeof(knit_sandbox_t) */
	uint32_t flags;                   /* enum knit_sandbox_flags */
	uint32_t seccomp_sets;            /* enum knit_seccomp_sets (with SECCOMP) */
	uint32_t reserved0;               /* must be 0 */
	const char *const *seccomp_allow; /* NULL-terminated syscall names allowed
					     besides (with SECCOMP); NULL = none */
	uint64_t rlimit_as;               /* RLIMIT_AS, bytes (the pool's mapping
					     counts); 0 = unchanged */
	uint64_t rlimit_cpu;              /* RLIMIT_CPU, seconds; 0 = unchanged */
	uint64_t rlimit_nofile;           /* RLIMIT_NOFILE; 0 = unchanged */
	uint64_t rlimit_nproc;            /* RLIMIT_NPROC (per user; root ignores
					     it); 0 = unchanged */
	/* 1.2: namespaces and a cgroup (knit_pool_create(3), "Namespaces and
	 * cgroup"); a shorter struct = none of them. */
	uint32_t namespaces;           /* enum knit_sandbox_namespaces; 0 = none */
	uint32_t reserved1;            /* must be 0 */
	const char *cgroup;            /* a cgroup v2 directory (delegated, writable):
					  the pool's workers run in a child of it
					  made at create, removed at destroy; NULL =
					  none */
	uint64_t cgroup_memory_max;    /* the child's memory.max, bytes; 0 = unset */
	uint64_t cgroup_pids_max;      /* the child's pids.max; 0 = unset */
	uint32_t cgroup_cpu_max_us;    /* the child's cpu.max quota, µs per period;
					  0 = unset */
	uint32_t cgroup_cpu_period_us; /* cpu.max's period, µs (1000..1000000);
					  0 = 100000 */
	/* 1.2: Landlock (with KNIT_SANDBOX_LANDLOCK; a shorter struct = none). Each
	 * list is NULL-terminated, of existing absolute paths, each a file or
	 * a directory (and all beneath it); NULL = none. */
	const char *const *landlock_ro; /* read (files, directories) and execute */
	const char *const *landlock_rw; /* as ro, and write: create, remove, rename,
					   truncate, make directories, ioctl on
					   devices */
	uint32_t landlock_abi;          /* the least Landlock ABI the kernel must have
					   (its rights used, see knit_pool_create(3));
					   0 = 1; at most KNIT_LANDLOCK_ABI_MAX */
	uint32_t reserved2;             /* must be 0 */
} knit_sandbox_t;

/* 1.2: knit_sandbox_t.namespaces: each worker process in new namespaces of
 * its own, entered before the task library loads (its constructors and
 * init run inside). Where the kernel refuses, knit_pool_create fails with
 * -KNIT_ESYSTEM, knit_last_error() saying why. */
enum knit_sandbox_namespaces {
	KNIT_SANDBOX_NEWNET = 1u << 0, /* a network namespace: no interface but a
					  loopback that is down */
	KNIT_SANDBOX_NEWIPC = 1u << 1  /* an IPC namespace: the host's SysV IPC and
					  POSIX message queues out of reach */
};

enum knit_worker_kind {
	KNIT_WORKERS_THREADS = 0,  /* worker threads in this process; tasks given
				      as function pointers */
	KNIT_WORKERS_PROCESSES = 1 /* one knit-worker process per worker, sharing
				      one sealed memfd with the host; tasks from
				      task_library; either topology */
};

enum knit_proc_flags {
	KNIT_PROC_INHERIT_ENV = 1u << 0, /* workers get the host's environment (else
					    an empty one) */
	KNIT_PROC_NAMED_SHM = 1u << 1    /* the shared memory is a named POSIX shm
					    object (unsealed), for wrappers that
					    cannot pass a descriptor */
};

/*
 * A task library (process workers): a shared object exporting one symbol,
 *
 *     const knit_task_library_t knit_task_library = {
 *         .size = sizeof(knit_task_library_t),
 *         .version = KNIT_TASK_LIBRARY_VERSION,
 *         .tasks = tasks, .ntasks = ntasks,
 *         .init = init, .fini = fini }; // both optional
 *
 * (designated: a positional initializer of the first four members meets
 * -Wmissing-field-initializers since the hooks exist)
 *
 * The host and every worker process load it; task ids are the indexes of
 * the tasks in name order on both sides, and a worker whose table (names,
 * timeouts, flags) differs from the host's refuses to start.
 *
 * Version 2 (1.2) adds the worker hooks, which run in the worker processes
 * only, never in the host. init(worker, msg, msg_size) runs once in each
 * worker process (worker is its lane, 0 ..), after the pool's memory is
 * mapped and before the first task (and before a sandbox closes, see
 * knit_sandbox_t): it may open files, warm caches, drop privileges. It
 * returns 0, or anything else to refuse to start: the worker then writes
 * msg (NUL-terminated, msg_size bytes at most; "" = no reason) to the host,
 * and knit_pool_create fails with -KNIT_EINVAL, knit_last_error() carrying
 * it (a respawned worker whose init fails dies: a crash). fini(worker) runs
 * in the worker once it acknowledged a clean stop, before it exits (it has
 * about one second: knit_pool_destroy kills a worker that stays). Either
 * may be NULL. A version 1 structure (the first four members only, size
 * KNIT_TASK_LIBRARY_V1_SIZE) still loads, with no hooks.
 */
#define KNIT_TASK_LIBRARY_SYMBOL "knit_task_library"
#define KNIT_TASK_LIBRARY_VERSION 2
typedef struct knit_task_library {
	uint32_t size;    /* sizeof(knit_task_library_t); larger: -KNIT_EVERSION */
	uint32_t version; /* KNIT_TASK_LIBRARY_VERSION (1: the first four members) */
	const struct knit_task *tasks;
	size_t ntasks;
	/* Version 2 (1.2): worker processes only; NULL = none. */
	int (*init)(uint32_t worker, char *msg, size_t msg_size);
	void (*fini)(uint32_t worker);
} knit_task_library_t;
/* The size of a version 1 structure (tasks and ntasks only). */
#define KNIT_TASK_LIBRARY_V1_SIZE (offsetof(knit_task_library_t, init))

/* ------------------------------------------------------------------------ */
/* Per-call options and completions                                          */
/* ------------------------------------------------------------------------ */

enum knit_call_flags {
	KNIT_CALL_ABORTABLE = 1u << 0,  /* give this call an abort bit */
	KNIT_CALL_LANE = 1u << 1,       /* run on `lane` (lanes topology) */
	KNIT_CALL_NO_TIMEOUT = 1u << 2, /* ignore the task's default timeout */
	/* 1.2: the call's priority class (neither: normal; both: -KNIT_EINVAL).
	 * A waiting call is placed before waiting calls of a lower class that
	 * could take the same lane, FIFO within a class; see knit_enqueue(3). */
	KNIT_CALL_HIGH = 1u << 3,
	KNIT_CALL_LOW = 1u << 4
};

typedef struct knit_call_options {
	uint32_t size;       /* sizeof(knit_call_options_t) */
	uint32_t flags;      /* knit_call_flags */
	uint32_t timeout_ms; /* 0 = the task's default */
	uint32_t lane;       /* with KNIT_CALL_LANE */
} knit_call_options_t;

/* One call of a burst (knit_enqueue_many): an array element, so its size
 * is frozen for the major version; it grows by meaning (opts, reserved),
 * never by size. */
typedef struct knit_request {
	uint32_t task;                   /* task id */
	uint32_t reserved;               /* must be 0 (-KNIT_EINVAL otherwise) */
	const knit_value_t *arg;         /* NULL = KNIT_VALUE_NONE */
	void *user_data;                 /* comes back in the completion */
	const knit_call_options_t *opts; /* NULL = the defaults */
} knit_request_t;

typedef struct knit_completion {
	knit_ticket_t ticket;
	void *user_data;      /* as given to knit_enqueue */
	int32_t status;       /* 0, or -KNIT_ETASK, -KNIT_ETIMEDOUT, -KNIT_ECANCELED,
				 -KNIT_ECLOSED, -KNIT_ECRASHED, -KNIT_ETOOBIG,
				 -KNIT_EPROTO, -KNIT_ENOMEM */
	uint32_t task;        /* task id */
	knit_value_t result;  /* status 0: the result; -KNIT_ETASK: an error value;
				 else KNIT_VALUE_NONE */
	uint64_t reserved[2]; /* library use */
} knit_completion_t;

/*
 * 1.2: why a worker died. A call whose worker died running it (or that the
 * pool killed it for) says so in its completion's info
 * (knit_completion_info), and knit_pool_stats counts deaths by cause
 * (knit_pool_stats_t.deaths). Values are only ever appended; a program
 * treats one it does not know as "died". Only process workers die without
 * taking the whole program with them: a thread pool has no death to report.
 */
enum knit_death_cause {
	KNIT_DEATH_NONE = 0,         /* no death (the info's death fields are empty) */
	KNIT_DEATH_SIGNAL = 1,       /* killed by a signal the pool did not send
					(death_detail: the signal number) */
	KNIT_DEATH_EXIT = 2,         /* exited unasked (death_detail: the exit status) */
	KNIT_DEATH_HARD_TIMEOUT = 3, /* killed by the pool: a call ran past
					hard_timeout_ms (death_detail: SIGKILL) */
	KNIT_DEATH_PROTOCOL = 4,     /* killed by the pool: it wrote what no honest
					worker writes (death_detail: SIGKILL) */
	KNIT_DEATH_OOM = 5,          /* SIGKILL from the kernel's OOM killer, where the
					worker's memory cgroup counted an oom_kill for
					it (death_detail: SIGKILL); see
					knit_completion_info(3) */
	KNIT_DEATH_SANDBOX = 6,      /* killed by its sandbox's seccomp filter: a
					forbidden syscall (death_detail: SIGSYS;
					the syscall: KNIT_INFO_SYSCALL; see
					knit_sandbox_t) */
	KNIT_DEATH_CANCEL_KILL = 7   /* killed by the pool: knit_cancel with
					KNIT_CANCEL_KILL of the call it ran
					(death_detail: SIGKILL) */
};
/* Room for causes in knit_pool_stats_t.deaths: causes appended later keep
 * the struct's size. */
#define KNIT_DEATH_CAUSE_MAX 16

/* 1.2: which groups of a knit_completion_info_t hold values. */
enum knit_info_flags {
	KNIT_INFO_LANE = 1u << 0,   /* lane and pid */
	KNIT_INFO_TIMING = 1u << 1, /* wait_ns, run_ns (pools created with
				       KNIT_POOL_INFO_TIMING or _CPU) */
	KNIT_INFO_DEATH = 1u << 2,  /* death, death_detail (pid: the dead worker's) */
	KNIT_INFO_CPU = 1u << 3,    /* cpu_ns (pools created with KNIT_POOL_INFO_CPU) */
	KNIT_INFO_SYSCALL = 1u << 4 /* syscall_nr, syscall_arch, syscall_name: the
				       syscall a KNIT_DEATH_SANDBOX death was
				       for, as its worker reported it */
};

/*
 * 1.2: what the pool knows about one completion beyond the completion
 * itself, filled by knit_completion_info(3) (size-prefixed: the caller sets
 * size, the library fills the members it covers and may grow at the end).
 */
typedef struct knit_completion_info {
	uint32_t size;        /* in: sizeof(knit_completion_info_t) */
	uint32_t flags;       /* out: enum knit_info_flags */
	uint32_t lane;        /* lane that ran the call (the inline lane's
				 index is the worker count) */
	int32_t pid;          /* process pools: the worker process that ran it
				 (with KNIT_INFO_DEATH the dead one); else 0 */
	int64_t wait_ns;      /* enqueue to the task's start */
	int64_t run_ns;       /* the task's start to its end */
	int64_t cpu_ns;       /* CPU time the worker thread spent in the task
				  (KNIT_INFO_CPU) */
	uint32_t death;       /* enum knit_death_cause */
	int32_t death_detail; /* signal number or exit status, by cause */
	/* KNIT_INFO_SYSCALL (a sandbox violation): the syscall's number and
	   AUDIT_ARCH_* value as the kernel gave them to the worker, and its
	   name ("" when this library's build does not know the number) */
	int32_t syscall_nr;
	uint32_t syscall_arch;
	char syscall_name[32];
} knit_completion_info_t;

enum knit_cancel_flags {
	KNIT_CANCEL_NOW = 1u << 0,    /* complete now with -KNIT_ECANCELED */
	KNIT_CANCEL_SIGNAL = 1u << 1, /* only raise the task's abort bit */
	/* 1.2, process pools: as NOW, and the worker process running the call
	 * (if it started) is killed and replaced; alone or with NOW; a thread
	 * pool refuses it (-KNIT_EINVAL). See knit_cancel(3). */
	KNIT_CANCEL_KILL = 1u << 2
};

enum knit_stop_flags {
	KNIT_STOP_DRAIN = 1u << 0, /* finish every call already enqueued */
	KNIT_STOP_CANCEL = 1u << 1 /* complete waiting calls with -KNIT_ECLOSED */
};

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */
/* ------------------------------------------------------------------------ */

typedef struct knit_lane_stats {
	uint64_t calls;             /* calls this lane ran */
	uint64_t parks;             /* times the worker went to sleep */
	uint64_t wakes_sent;        /* futex wakes sent to it (the host's; steal,
				       threads: also a peer worker's) */
	uint64_t wakes_received;    /* times it woke because it was rung */
	uint64_t watchdog_expiries; /* times it woke only because park_ms passed */
	uint64_t spins;             /* idle spin rounds that found work */
	uint64_t doorbell_rings;    /* times it rang the host's doorbell */
	uint64_t steal_claims;      /* regions claimed (steal topology) */
	uint64_t steal_conflicts;   /* claims withdrawn or waited for */
	uint64_t spurious_wakes;    /* woke neither rung nor by the watchdog */
	uint64_t arena_trims;       /* times this lane's request or return arena
				       gave committed pages back after idling */
	int64_t cpu;                /* the CPU the worker is pinned to, -1 if not
				       pinned to exactly one */
} knit_lane_stats_t;

/* A worker's state in knit_pool_stats_t.worker[] (knit_pool_stats(3)). */
enum knit_worker_state {
	KNIT_WORKER_NONE = 0,        /* no worker: the lane is retired, or the pool ended */
	KNIT_WORKER_BOOTING = 1,     /* a worker process started and not ready yet */
	KNIT_WORKER_SERVING = 2,     /* running calls */
	KNIT_WORKER_RETIRING = 3,    /* recycled: its successor is ready; it takes no new
					call, finishes what it runs, and exits */
	KNIT_WORKER_BACKING_OFF = 4, /* no worker for now: its lane's workers kept
					crashing and its respawn waits out a backoff
					(respawn_backoff_ms); the other lanes take
					its calls */
};

/* One worker as a supervisor sees it (knit_pool_stats_t.worker[]). */
typedef struct knit_worker_stats {
	int64_t pid;        /* the worker process, 0 for a worker thread or none */
	uint64_t calls;     /* calls it served since it took its lane over */
	uint64_t rss_bytes; /* a worker process's resident memory now (0 for threads) */
	uint64_t age_ns;    /* since it started (threads: since the pool's creation) */
	uint32_t state;     /* enum knit_worker_state */
	uint32_t reserved;  /* 0 */
} knit_worker_stats_t;

typedef struct knit_pool_stats {
	uint32_t size;                  /* in: the size argument (see knit_pool_stats(3)) */
	uint32_t lanes;                 /* out: lanes filled in below */
	uint32_t topology;              /* out: enum knit_topology actually used */
	uint32_t workers;               /* out: worker threads */
	uint64_t enqueued;              /* calls accepted */
	uint64_t completed;             /* completions handed out */
	uint64_t pending;               /* calls not yet completed */
	uint64_t backlog;               /* calls waiting for a free slot now */
	uint64_t backlog_high_water;    /* most ever waiting at once */
	uint64_t doorbell_arms;         /* times a waiting host armed the doorbell */
	uint64_t doorbell_wakes;        /* times it was woken by a ring */
	uint64_t inline_calls;          /* calls run on the inline lane */
	uint64_t proto_errors;          /* frames from workers failing validation */
	uint64_t late_drops;            /* results for calls completed already */
	uint64_t arena_committed_bytes; /* payload arena bytes committed now: every
					   lane, both directions, the submit arena */
	uint64_t sync_calls;            /* knit_call calls completed on the fast path
					   (counted in enqueued and completed too) */
	knit_lane_stats_t lane[KNIT_MAX_WORKERS + 1];
	/* Process workers (0 for thread pools; a shorter struct omits them). */
	uint64_t spawns;     /* worker processes started, respawns included */
	uint64_t crashes;    /* worker processes that died unasked */
	uint64_t respawns;   /* workers started again after a crash or a
				hard-timeout kill */
	uint64_t hard_kills; /* workers killed for the hard timeout */
	/* 1.1: after the process fields (a shorter struct omits it). */
	uint64_t backlogged; /* calls that waited in the backlog for a
				free slot (a call put back after its worker
				process died counts again) */
	/* 1.2: per priority class, [0] KNIT_CALL_HIGH, [1] normal, [2]
	   KNIT_CALL_LOW (a shorter struct omits them). */
	uint64_t class_enqueued[3];   /* calls accepted */
	uint64_t class_backlogged[3]; /* calls that waited in the backlog, as
					 backlogged counts them */
	/* 1.2: worker deaths by enum knit_death_cause ([0] unused; a shorter
	   struct omits them). A pool that asked a worker to stop and saw it
	   exit cleanly counts nothing. */
	uint64_t deaths[KNIT_DEATH_CAUSE_MAX];
	/* 1.2, process workers: recycling by reason (recycle_calls,
	   recycle_rss_bytes, recycle_age_ms), each a worker retired after its
	   successor booted; and recycles begun that ended otherwise (the
	   successor failed to boot, or the old worker died first). */
	uint64_t recycles_calls;
	uint64_t recycles_rss;
	uint64_t recycles_age;
	uint64_t recycle_failures;
	/* 1.2: the supervisor's view, worker[i] for worker lane i < workers. */
	knit_worker_stats_t worker[KNIT_MAX_WORKERS];
	/* 1.2, process workers: restarts and kills (a shorter struct omits
	   them; see knit_pool_stats(3)). */
	uint64_t respawn_backoffs;   /* respawns that waited out a backoff first */
	uint64_t respawn_backoff_ms; /* those waits summed, as the backoff chose
					them (ms; not a measured time) */
	uint64_t cancel_kills;       /* workers killed by knit_cancel
					(KNIT_CANCEL_KILL) while they ran the call */
	/* 1.2, process workers with KNIT_SANDBOX_LANDLOCK (a shorter struct
	   omits them): the Landlock ABI the workers' sandbox applied, the least
	   of the first workers' (a respawn applies at least as much); 0 = none
	   (KNIT_SANDBOX_LANDLOCK_BEST_EFFORT on a kernel without Landlock, or
	   Landlock not asked). */
	uint32_t landlock_abi;
	uint32_t reserved5; /* 0 */
	/* 1.2 (a shorter struct omits them): knit_enqueue_many's calls that
	   shared a frame with others of their burst (see knit_enqueue_many(3)),
	   and the frames that carried them. */
	uint64_t shared_calls;
	uint64_t shared_frames;
} knit_pool_stats_t;

/* 1.2: knit_map's options (zero-initialise, set size, set what you need;
 * opt NULL = all defaults). See knit_map(3). */
typedef struct knit_map_options {
	uint32_t size;              /* sizeof(knit_map_options_t) */
	uint32_t chunk;             /* items enqueued per burst, and most items in
				       flight at once beyond it; 0 = automatic */
	uint32_t timeout_ms;        /* per item, from its enqueue; 0 = the task's
				       default */
	uint32_t flags;             /* knit_call_flags given to every item's call
				       (KNIT_CALL_LANE: -KNIT_EINVAL) */
	const volatile int *cancel; /* NULL = none; another thread sets *cancel
				       non-zero to end the map: items not started
				       end with -KNIT_ECANCELED */
	uint64_t reserved[2];       /* must be 0 */
} knit_map_options_t;

/* ------------------------------------------------------------------------ */
/* Functions                                                                 */
/* ------------------------------------------------------------------------ */

/* Create a pool running `ntasks` tasks (sorted by name: task ids are indexes
 * in name order). opts may be NULL. */
KNIT_API int knit_pool_create(const knit_pool_options_t *opts, const knit_task_t *tasks,
			      size_t ntasks, knit_pool_t **out) KNIT_NOEXCEPT;

/* Id of the task named `name`, or -KNIT_ENOTASK. */
KNIT_API int knit_pool_task_id(const knit_pool_t *pool, const char *name) KNIT_NOEXCEPT;

/* Enqueue a call. Thread-safe. arg may be NULL (KNIT_VALUE_NONE). */
KNIT_API int knit_enqueue(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
			  void *user_data, knit_ticket_t *ticket) KNIT_NOEXCEPT;
KNIT_API int knit_enqueue_ex(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
			     void *user_data, const knit_call_options_t *opts,
			     knit_ticket_t *ticket) KNIT_NOEXCEPT;

/* Enqueue a burst: reqs[0 .. n-1] in order, as knit_enqueue_ex would one by
 * one, publishing to the workers once per burst. Thread-safe. Returns k,
 * 0 < k <= n: reqs[0 .. k-1] were enqueued (tickets[0 .. k-1] filled when
 * tickets is not NULL; each ends in exactly one completion), the rest were
 * not (nothing of them kept; enqueue again from reqs[k] to learn why). A
 * negative code when reqs[0] is refused: nothing enqueued. Since 1.1. */
KNIT_API int knit_enqueue_many(knit_pool_t *pool, const knit_request_t *reqs, uint32_t n,
			       knit_ticket_t *tickets) KNIT_NOEXCEPT;

/* Reap up to max completions. timeout_ns: 0 = poll, < 0 = wait until at
 * least one arrives (or the pool is stopped and drained). Returns the count. */
KNIT_API int knit_complete(knit_pool_t *pool, knit_completion_t *out, unsigned max,
			   int64_t timeout_ns) KNIT_NOEXCEPT;

/* Reap up to max completions, but only of the calls tickets[0 .. n-1] name,
 * in the order of the list; every other completion stays queued for
 * knit_complete or another caller. timeout_ns as knit_complete's. Returns
 * the count (0: none completed in time), or -KNIT_ENOTFOUND when no ticket
 * of the list names a call of this pool still to be reaped (unknown,
 * reaped already, a knit_call's, another pool's). Thread-safe beside
 * knit_complete: each completion goes to exactly one reaper. See
 * knit_complete_tickets(3). Since 1.2. */
KNIT_API int knit_complete_tickets(knit_pool_t *pool, const knit_ticket_t *tickets, unsigned n,
				   knit_completion_t *out, unsigned max,
				   int64_t timeout_ns) KNIT_NOEXCEPT;

/* Wait until every call enqueued before this call began has been reaped
 * (by any thread; this function reaps nothing), without stopping the pool.
 * timeout_ns: 0 = check, < 0 = no limit. 0 when idle, -KNIT_ETIMEDOUT.
 * See knit_wait_idle(3). Since 1.2. */
KNIT_API int knit_wait_idle(knit_pool_t *pool, int64_t timeout_ns) KNIT_NOEXCEPT;

/* Free what a completion's result owns; the completion is then empty. */
KNIT_API int knit_completion_release(knit_pool_t *pool, knit_completion_t *c) KNIT_NOEXCEPT;

/* What the pool knows about completion *c beyond it (info->size set by the
 * caller; the members it covers are filled): the lane and worker that ran
 * the call, its timing (pools created with KNIT_POOL_INFO_TIMING), and why
 * its worker died. 0, -KNIT_EINVAL (NULL), -KNIT_EVERSION (info->size),
 * -KNIT_ENOTFOUND (none recorded, or no longer kept: the pool keeps the
 * last info_records, and knit_completion_release(c) drops c's). See
 * knit_completion_info(3). Since 1.2. */
KNIT_API int knit_completion_info(knit_pool_t *pool, const knit_completion_t *c,
				  knit_completion_info_t *info) KNIT_NOEXCEPT;

/* A pollable descriptor (never read it), readable while knit_complete(..., 0)
 * would return something: results, and calls whose deadline passed. Owned by
 * the pool. */
KNIT_API int knit_completion_fd(knit_pool_t *pool) KNIT_NOEXCEPT;

/* One synchronous round trip. Returns 0 when *out holds the completion (look
 * at out->status), or a negative code when the call could not be made. */
/* knit_call with per-call options (opts may be NULL) and, when ticket is not
 * NULL, the call's ticket stored there (atomically, before the wait) so
 * another thread can knit_cancel() it. */
KNIT_API int knit_call_ex(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
			  const knit_call_options_t *opts, knit_ticket_t *ticket,
			  knit_completion_t *out, int64_t timeout_ns) KNIT_NOEXCEPT;
KNIT_API int knit_call(knit_pool_t *pool, uint32_t task, const knit_value_t *arg,
		       knit_completion_t *out, int64_t timeout_ns) KNIT_NOEXCEPT;

KNIT_API int knit_cancel(knit_pool_t *pool, knit_ticket_t ticket, uint32_t flags) KNIT_NOEXCEPT;

/* Run task once per item of args[0 .. n-1] (NULL items are not allowed;
 * args may be NULL when n is 0) and fill out[i] with item i's completion,
 * in input order: each item its own status and result, released with
 * knit_completion_release. Returns 0 when every out[i] holds a completion,
 * or a negative code and no completion: -KNIT_EINVAL (NULL pool, NULL args
 * or out with n > 0, a bad flag or reserved member), -KNIT_EVERSION
 * (opt->size), -KNIT_ENOTASK, -KNIT_EBUSY (from a task of the same pool),
 * -KNIT_ECLOSED. See knit_map(3). Since 1.2. */
KNIT_API int knit_map(knit_pool_t *pool, uint32_t task, const knit_value_t *args, size_t n,
		      knit_completion_t *out, const knit_map_options_t *opt) KNIT_NOEXCEPT;

/* Stop with acknowledgement from every worker. */
KNIT_API int knit_stop(knit_pool_t *pool, uint32_t flags, int64_t timeout_ns) KNIT_NOEXCEPT;

/* Stop (cancelling) if needed, join the workers, free everything. */
KNIT_API int knit_pool_destroy(knit_pool_t *pool) KNIT_NOEXCEPT;

KNIT_API int knit_pool_stats(knit_pool_t *pool, knit_pool_stats_t *stats,
			     size_t size) KNIT_NOEXCEPT;

/* Worker side: only valid inside a task function, on its own ctx. */
KNIT_API int knit_ctx_aborted(const knit_ctx_t *ctx) KNIT_NOEXCEPT;
KNIT_API int64_t knit_ctx_deadline_ns(const knit_ctx_t *ctx) KNIT_NOEXCEPT;
KNIT_API void *knit_ctx_alloc(knit_ctx_t *ctx, size_t size) KNIT_NOEXCEPT;
KNIT_API int knit_ctx_lane(const knit_ctx_t *ctx) KNIT_NOEXCEPT;
KNIT_API void *knit_ctx_task_data(const knit_ctx_t *ctx) KNIT_NOEXCEPT;

/* The library's version as KNIT_VERSION_NUMBER would spell it. */
KNIT_API uint32_t knit_version(void) KNIT_NOEXCEPT;

/* A static, human-readable description of a code (positive or negative);
 * never NULL. */
KNIT_API const char *knit_strerror(int code) KNIT_NOEXCEPT;

/* Why the calling thread's last knit_pool_create (or knit_pool_stats)
 * failed, naming the cause and the value: "" when it succeeded; never NULL.
 * No other function sets or clears it. See knit_last_error(3). Since 1.2. */
KNIT_API const char *knit_last_error(void) KNIT_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* KNITTING_H */
