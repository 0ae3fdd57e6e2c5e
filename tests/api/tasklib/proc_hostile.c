/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_hostile.c - hostile tasks for the process-pool
 * tests (build/tests/lib/proc_hostile.so): tasks that write over the
 * pool's shared memory from inside their worker process, as a corrupted
 * or malicious task library could.
 *
 * name       what it does
 * echo       result = arg
 * pid        result I64 getpid() of the worker process
 * scribble   arg I64 seed: writes random words (seeded) over its own lane's
 *            block (signal words, both locks' control words and slots, the
 *            arenas), its lane's running stamp and, stealing, its words of
 *            the steal control block (ACK/CLAIM, WANT), in bursts, then
 *            returns
 * forge      arg I64 a ticket: forges its lane's running stamp to name that
 *            call (a call it does not hold), then waits (bounded, 5 s)
 * disarm     arg I64 ms: keeps every doorbell armed word it can reach
 *            cleared that long -- the pool header's (where honest workers
 *            ring without ring pages) and its own ring page's (where they
 *            have them; another worker's page it cannot map) -- so that
 *            the host is never rung through them; returns arg
 * hide       arg I64 ms: for that long keeps every "completion fd on" flag it
 *            can reach cleared (the pool header's and its own ring page's)
 *            and drains the bridge eventfd it was given, so that no result
 *            raises the host's completion fd through them; returns arg
 * sleep      arg I64 ms: sleeps that long, returns arg
 * selfstop   writes REQUESTED into its own lane's stop word (a stop the
 *            host never asked for), returns arg: its worker acknowledges
 *            and exits cleanly
 * unstop     arg STR a path: creates that file, then keeps its lane's stop
 *            word at RUNNING for 20 s (a stop is never seen, never
 *            acknowledged), returns arg
 * liar       arg I64 mode, then _exit(9)s: mode 0 clears its lane's started
 *            mask (itself looks never started), mode 1 sets every bit of it
 *            and stores the request lock's A into its B (every frame looks
 *            started and retired)
 *
 * Where the words are: the worker's boot record (its argv, hex) gives the
 * lane block's offset and stride (struct boot below mirrors the head of
 * ProcBoot, src/proc.h, and is checked by its magic, version and size);
 * the fixed pool-header offsets below mirror src/runtime.h (kPoolOffDoorbellArmed,
 * kPoolOffLaneExt, kLaneExtBytes), the steal control block's src/layout.h.
 * The mapping is this process's own mapping of the pool's memfd, found in
 * /proc/self/maps.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "knitting.h"

#define POOL_OFF_ARMED 128u     /* kPoolOffDoorbellArmed */
#define POOL_OFF_LANE_EXT 256u  /* kPoolOffLaneExt */
#define LANE_EXT_BYTES 256u     /* kLaneExtBytes */
#define LANE_OFF_STOP 256u      /* kLaneOffStop */
#define LANE_OFF_REQ_LOCK 1024u /* kLaneOffReqLock */
#define LOCK_OFF_A 0u           /* kLockOffA */
#define LOCK_OFF_B 128u         /* kLockOffB */
#define EXT_OFF_STARTED 32u     /* kLaneExtOffStarted */
#define STOP_RUNNING 0u         /* kStopRunning */
#define STOP_REQUESTED 1u       /* kStopRequested */
#define STEAL_PAGE 4096u        /* kStealPageBytes: steal_page_offset(c) = 4096 * (1 + c) */
#define STEAL_OFF_ACK 4096u     /* steal_ack_offset(0): ACK[c] | CLAIM[c] << 32 */
#define STEAL_OFF_WANT 4224u    /* steal_want_offset(0) */
#define BOOT_MAGIC 0x6B6E6974u  /* kBootMagic */
#define BOOT_VERSION 14u        /* kBootVersion: bump with src/proc.h's ProcBoot */
#define POOL_OFF_EFD 64u        /* kPoolOffEfdFlag */
#define RING_OFF_EFD 256u       /* kRingOffEfd */
#define FD_BRIDGE 5             /* kBootFdBridge */

struct boot {
	uint32_t magic, version, size, config_size, lane, nworkers, ntasks, ticket_cap;
	int32_t fd_status, ppid;
	uint64_t host_pool, region_size, lanes_off, stride, abort_off, steal_off;
	uint64_t ext_off; /* isolated pools: the lane's extension, from its lane block */
};

struct where {
	uint8_t *base;
	uint64_t size, lanes_off, stride, steal_off;
	uint32_t lane;
	uint8_t *ext; /* its lane's extension (running stamp, started mask, counters) */
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The boot record from argv[2] ("knit-worker --knit-boot HEX LIB"). */
static int read_boot(struct boot *b)
{
	static char buf[65536];
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *a = buf;
	for (int i = 0; i < 2 && a < buf + n; i++)
		a += strlen(a) + 1;
	if (a >= buf + n || strlen(a) < 2 * sizeof *b)
		return -1;
	uint8_t *o = (uint8_t *)b;
	for (size_t i = 0; i < sizeof *b; i++) {
		int hi = hexval(a[2 * i]), lo = hexval(a[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		o[i] = (uint8_t)(hi << 4 | lo);
	}
	return b->magic == BOOT_MAGIC && b->version == BOOT_VERSION && b->size >= sizeof *b ? 0
											    : -1;
}

/* This process's mapping of the pool: the range of region_size bytes that
 * starts with the pool's memfd ("/memfd:knitting" at file offset 0; an
 * isolated pool maps its own lane's and the steal control pages' memfds
 * over parts of it, so /proc/self/maps shows it in pieces). */
static int find(struct where *w)
{
	struct boot b;
	if (read_boot(&b) != 0)
		return -1;
	FILE *f = fopen("/proc/self/maps", "r");
	if (f == NULL)
		return -1;
	char line[512];
	int rc = -1;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi, off;
		char perms[8];
		if (strstr(line, "/memfd:knitting") == NULL ||
		    sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) != 4 || off != 0)
			continue;
		if (b.lanes_off + (uint64_t)(b.lane + 1) * b.stride > b.region_size)
			continue;
		w->base = (uint8_t *)(uintptr_t)lo;
		w->ext = b.ext_off != 0
				 ? w->base + b.lanes_off + (uint64_t)b.lane * b.stride + b.ext_off
				 : w->base + POOL_OFF_LANE_EXT + (uint64_t)b.lane * LANE_EXT_BYTES;
		w->size = b.region_size;
		w->lanes_off = b.lanes_off;
		w->stride = b.stride;
		w->steal_off = b.steal_off < b.region_size ? b.steal_off : 0;
		w->lane = b.lane;
		rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

/* Can this process write the byte at p (a writable mapping covers it)? */
static int writable(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (f == NULL)
		return 0;
	char line[512];
	int w = 0;
	const unsigned long a = (unsigned long)(uintptr_t)p;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
			w = perms[1] == 'w';
			break;
		}
	}
	fclose(f);
	return w;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void nap_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

static int t_pid(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)getpid();
	return 0;
}

/* A word a scribbler writes: mostly values that look plausible (small
 * counts, the lock words' neighbours, all ones), some pure noise. */
static uint64_t junk(uint64_t *s)
{
	const uint64_t r = rnd(s);
	switch (r & 7) {
	case 0:
		return 0;
	case 1:
		return ~0ull;
	case 2:
	case 3:
		return (r >> 8) & 0xff;
	case 4:
		return (r >> 8) & 0xffffffffu;
	default:
		return rnd(s);
	}
}

static int t_scribble(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct where w;
	if (find(&w) != 0)
		return 7; /* the test sees a status it does not expect */
	uint64_t s = (uint64_t)arg->i64 * 0x9E3779B97F4A7C15ull + 1;
	uint8_t *lane = w.base + w.lanes_off + (uint64_t)w.lane * w.stride;
	uint8_t *ext = w.ext;
	/* The fixed part (signal words, both locks: control words, arena
	 * tables, slots) is where the protocol lives: most writes go there. */
	const uint64_t fixed = w.stride < 43520 ? w.stride : 43520;
	const int bursts = 1 + (int)(rnd(&s) % 8);
	for (int b = 0; b < bursts; b++) {
		const int n = 1 + (int)(rnd(&s) % 64);
		for (int i = 0; i < n; i++) {
			const uint64_t r = rnd(&s);
			uint64_t *at;
			if ((r & 15) == 2 && w.steal_off != 0)
				/* stealing: our ACK/CLAIM pair or our WANT word */
				at = (uint64_t *)(w.base + w.steal_off +
						  ((r >> 8) & 1 ? STEAL_OFF_WANT : STEAL_OFF_ACK) +
						  (uint64_t)w.lane * STEAL_PAGE);
			else if ((r & 15) == 0)
				at = (uint64_t *)(ext +
						  8 * ((r >> 8) % (LANE_EXT_BYTES /
								   16))); /* the stamp block */
			else if ((r & 15) == 1)
				at = (uint64_t *)(lane + 8 * ((r >> 8) % (w.stride / 8)));
			else
				at = (uint64_t *)(lane + 8 * ((r >> 8) % (fixed / 8)));
			__atomic_store_n(at, junk(&s), __ATOMIC_RELAXED);
		}
		nap_us((long)(rnd(&s) % 500));
	}
	ret->type = KNIT_VALUE_I64;
	ret->i64 = arg->i64;
	return 0;
}

static int t_forge(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	struct where w;
	if (find(&w) != 0 || knit_ctx_lane(ctx) != (int)w.lane)
		return 7;
	/* The running stamp (src/runtime.h): seqlock u32 seq, u32 ticket,
	 * u32 generation, u32 pad, u64 start. Written as the worker writes
	 * it, only naming another call, started long ago. */
	uint8_t *ext = w.ext;
	uint32_t *sw = (uint32_t *)ext;
	uint64_t *start = (uint64_t *)(ext + 16);
	const uint64_t t = (uint64_t)arg->i64;
	uint32_t seq = __atomic_load_n(&sw[0], __ATOMIC_RELAXED) | 1;
	__atomic_store_n(&sw[0], seq, __ATOMIC_RELAXED);
	/* Release stores keep the odd sequence ahead of the fields (as the
	 * worker's fence does; a fence would not build under TSan). */
	__atomic_store_n(&sw[1], (uint32_t)t, __ATOMIC_RELEASE);
	__atomic_store_n(&sw[2], (uint32_t)(t >> 32), __ATOMIC_RELEASE);
	__atomic_store_n(start, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&sw[0], seq + 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 5000; i++)
		nap_us(1000); /* a killed worker ends here */
	ret->type = KNIT_VALUE_I64;
	ret->i64 = 0;
	return 0;
}

/* This process's ring page (src/proc.h kRingOffArmed: its first word), or
 * NULL when the pool gave it none (no futex_waitv). */
static uint32_t *find_ring(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (f == NULL)
		return NULL;
	char line[512];
	uint32_t *r = NULL;
	while (r == NULL && fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		if (strstr(line, "/memfd:knit-ring") != NULL &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			r = (uint32_t *)(uintptr_t)lo;
	}
	fclose(f);
	return r;
}

static int t_disarm(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	struct where w;
	if (find(&w) != 0)
		return 7;
	/* The pool header's word only where this worker may write it (an
	 * isolated pool maps the header read-only: honest workers ring
	 * through their own pages there). */
	uint32_t *armed = (uint32_t *)(w.base + POOL_OFF_ARMED);
	if (!writable(armed))
		armed = NULL;
	uint32_t *own = find_ring();
	const int64_t end = now_ns() + arg->i64 * 1000000;
	for (uint32_t i = 0;; i++) {
		if (armed != NULL)
			__atomic_store_n(armed, 0, __ATOMIC_RELAXED);
		if (own != NULL)
			__atomic_store_n(own, 0, __ATOMIC_RELAXED);
		if ((i & 63) == 0) {
			if (now_ns() >= end)
				break;
			nap_us(10);
		}
	}
	*ret = *arg;
	return 0;
}

static int t_hide(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct where w;
	if (find(&w) != 0)
		return 7;
	uint32_t *shared = (uint32_t *)(w.base + POOL_OFF_EFD);
	if (!writable(shared))
		shared = NULL; /* read-only here (isolated pool) */
	uint32_t *ring = find_ring();
	uint32_t *own = ring != NULL ? (uint32_t *)((uint8_t *)ring + RING_OFF_EFD) : NULL;
	const int64_t end = now_ns() + arg->i64 * 1000000;
	for (uint32_t i = 0;; i++) {
		if (shared != NULL)
			__atomic_store_n(shared, 0, __ATOMIC_RELAXED);
		if (own != NULL)
			__atomic_store_n(own, 0, __ATOMIC_RELAXED);
		uint64_t v;
		(void)!read(FD_BRIDGE, &v, sizeof v); /* non-blocking: EAGAIN when empty */
		if ((i & 63) == 0) {
			if (now_ns() >= end)
				break;
			nap_us(10);
		}
	}
	*ret = *arg;
	return 0;
}

static int t_sleep(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	nap_us((long)arg->i64 * 1000);
	*ret = *arg;
	return 0;
}

static int t_selfstop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct where w;
	if (find(&w) != 0)
		return 7;
	uint32_t *stop =
		(uint32_t *)(w.base + w.lanes_off + (uint64_t)w.lane * w.stride + LANE_OFF_STOP);
	__atomic_store_n(stop, STOP_REQUESTED, __ATOMIC_RELEASE);
	*ret = *arg;
	return 0;
}

static int t_unstop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct where w;
	char path[256];
	if (arg->type != KNIT_VALUE_STRING || arg->len >= sizeof path || find(&w) != 0)
		return 7;
	memcpy(path, arg->data, arg->len);
	path[arg->len] = 0;
	uint32_t *stop =
		(uint32_t *)(w.base + w.lanes_off + (uint64_t)w.lane * w.stride + LANE_OFF_STOP);
	__atomic_store_n(stop, STOP_RUNNING, __ATOMIC_RELAXED);
	FILE *f = fopen(path, "w"); /* tells the test we run */
	if (f == NULL)
		return 7;
	fclose(f);
	const int64_t end = now_ns() + 20ll * 1000 * 1000 * 1000;
	for (uint32_t i = 0;; i++) {
		__atomic_store_n(stop, STOP_RUNNING, __ATOMIC_RELAXED);
		if ((i & 255) == 0 && now_ns() >= end)
			break;
	}
	*ret = *arg;
	return 0;
}

static int t_liar(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)ret;
	struct where w;
	if (find(&w) != 0)
		return 7;
	uint8_t *lock = w.base + w.lanes_off + (uint64_t)w.lane * w.stride + LANE_OFF_REQ_LOCK;
	uint32_t *started = (uint32_t *)(w.ext + EXT_OFF_STARTED);
	if (arg->i64 == 0) {
		__atomic_store_n(started, 0, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(started, ~0u, __ATOMIC_RELAXED);
		__atomic_store_n((uint32_t *)(lock + LOCK_OFF_B),
				 __atomic_load_n((uint32_t *)(lock + LOCK_OFF_A), __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
	}
	_exit(9);
}

static const knit_task_t tasks[] = {
	{"echo", t_echo, 0, 0},         {"pid", t_pid, 0, 0},       {"scribble", t_scribble, 0, 0},
	{"forge", t_forge, 0, 0},       {"disarm", t_disarm, 0, 0}, {"sleep", t_sleep, 0, 0},
	{"selfstop", t_selfstop, 0, 0}, {"unstop", t_unstop, 0, 0}, {"liar", t_liar, 0, 0},
	{"hide", t_hide, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	sizeof(knit_task_library_t), KNIT_TASK_LIBRARY_VERSION, tasks,
	sizeof tasks / sizeof tasks[0]};
