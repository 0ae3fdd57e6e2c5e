/* SPDX-License-Identifier: MIT */
/*
 * tests/api/tasklib/proc_forge.c - tasks that reach for other workers'
 * calls from inside a worker process (build/tests/lib/proc_forge.so), for
 * tests/api/test_proc_isolation.c. They know nothing of the layout: they
 * find the pool's memory by name in /proc/self/maps ("/memfd:knit..."),
 * as a task that goes looking would.
 *
 * name       what it does
 * slow       arg I64 ms: sleeps that long, returns arg
 * twice      arg I64 x: returns 2 * x (a result that shows the argument it ran on)
 * pid        returns I64 getpid()
 * forge      arg I64 (x ^ FORGE_KEY): sleeps 100 ms, then rewrites every
 *            aligned 8-byte word equal to x in every mapping of the pool's
 *            memory it can read (writing them, whatever their protection)
 *            to x + FORGE_DELTA; returns I64 the number of words rewritten.
 *            Its own argument is not x, so its own frame does not count.
 * scribble   arg I64 seed: writes random words at random places of every
 *            writable mapping of the pool's memory this worker has (its
 *            lane, its ring page) but a steal pool's control pages (every
 *            worker writes those: src/proc.h, "isolation"), in bursts,
 *            then, for one seed in 8, one word into a read-only one;
 *            returns arg
 * upgrade    tries to get write access to the pool's shared memory it maps
 *            read-only: mprotect of its mapping, and for every descriptor
 *            it holds that shows that memfd, a writable shared mmap of it
 *            and of a read-write reopen through /proc/self/fd; returns I64
 *            the number of ways that worked (-1: it maps nothing read-only)
 * scribble_exit  arg I64 seed: for a steal pool, where any worker may run
 *            any call: waits (bounded, 2 s) until the host has reaped every
 *            result this worker published (its return lock's A == B), so
 *            that no call it ran before is left in its memory, then
 *            scribbles its own words of the steal control pages (ACK/CLAIM,
 *            WANT, wake, parked, never a peer's) and, as scribble does,
 *            every other writable mapping, and _exit(0)s: it never serves
 *            another call. First it appends one byte to
 *            /tmp/knit-scribble-PID (PID: its parent, the host), so the
 *            test knows how many workers a scribble ended. Needs the boot record (struct boot below
 *            mirrors the head of src/proc.h's ProcBoot) and a few layout
 *            offsets (src/layout.h), checked by the record's magic and
 *            version.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "knitting.h"

#define FORGE_KEY 0x5bd1e9955bd1e995ull
#define BOOT_MAGIC 0x6B6E6974u   /* kBootMagic */
#define BOOT_VERSION 14u         /* kBootVersion */
#define LANE_OFF_RET_LOCK 22272u /* kLaneOffRetLock */
#define LOCK_OFF_B 128u          /* kLockOffB (kLockOffA is 0) */
#define BLOCK 128u               /* kBlock */
#define STEAL_PAGE 4096u         /* steal_page_offset(c) = STEAL_PAGE * (1 + c): ACK/CLAIM, WANT, */
				 /* wake, parked, peer wakes, one block each */

struct boot {
	uint32_t magic, version, size, config_size, lane, nworkers, ntasks, ticket_cap;
	int32_t fd_status, ppid;
	uint64_t host_pool, region_size, lanes_off, stride, abort_off, steal_off;
};
#define FORGE_DELTA 1000000

struct map {
	uint8_t *lo, *hi;
	int writable;
	int steal_ctl; /* a steal pool's control pages ("/memfd:knit-steal") */
};

/* The mappings of the pool's memory in this process ("/memfd:knit..."). */
static int pool_maps(struct map *m, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (f == NULL)
		return 0;
	char line[512];
	int n = 0;
	while (n < max && fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		char perms[8];
		if (strstr(line, "/memfd:knit") == NULL ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r')
			continue;
		m[n].lo = (uint8_t *)(uintptr_t)lo;
		m[n].hi = (uint8_t *)(uintptr_t)hi;
		m[n].writable = perms[1] == 'w';
		m[n].steal_ctl = strstr(line, "/memfd:knit-steal") != NULL;
		n++;
	}
	fclose(f);
	return n;
}

static void nap_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	nanosleep(&ts, NULL);
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

static int t_slow(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	nap_us((long)arg->i64 * 1000);
	*ret = *arg;
	return 0;
}

static int t_twice(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = 2 * arg->i64;
	return 0;
}

static int t_pid(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	ret->type = KNIT_VALUE_I64;
	ret->i64 = (int64_t)getpid();
	return 0;
}

static int t_forge(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	const uint64_t x = (uint64_t)arg->i64 ^ FORGE_KEY;
	nap_us(100 * 1000);
	struct map m[64];
	const int n = pool_maps(m, 64);
	int64_t rewritten = 0;
	for (int k = 0; k < n; k++)
		for (uint64_t *w = (uint64_t *)m[k].lo; w < (uint64_t *)m[k].hi; w++)
			if (__atomic_load_n(w, __ATOMIC_RELAXED) == x) {
				/* A read-only mapping ends this worker here. */
				__atomic_store_n(w, x + FORGE_DELTA, __ATOMIC_RELAXED);
				rewritten++;
			}
	ret->type = KNIT_VALUE_I64;
	ret->i64 = rewritten;
	return 0;
}

/* A word a scribbler writes: plausible values (0, all ones, small counts)
 * and noise. */
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

/* The scribble of both tasks: bursts of random words over the touched
 * pages of every writable mapping of the pool but the steal control
 * pages, then, now and then, one word into a read-only mapping. */
static void scribble_writable(uint64_t s)
{
	struct map m[64];
	const int n = pool_maps(m, 64);
	int nw = 0, ro = -1;
	for (int k = 0; k < n; k++) {
		if (m[k].writable && !m[k].steal_ctl)
			m[nw++] = m[k];
		else if (ro < 0)
			ro = k; /* kept in place: k >= nw */
	}
	struct map readonly = ro >= 0 ? m[ro] : (struct map){0};
	/* Where the protocol lives: the pages of those mappings that were
	 * ever touched (mincore), and in them mostly words that are not 0. */
	static uint8_t *pages[16384];
	int np = 0;
	for (int k = 0; k < nw; k++) {
		static unsigned char vec[65536];
		const uint64_t len = (uint64_t)(m[k].hi - m[k].lo);
		for (uint64_t off = 0; off < len && np < 16384; off += 65536ull * 4096) {
			const uint64_t chunk =
				len - off < 65536ull * 4096 ? len - off : 65536ull * 4096;
			if (mincore(m[k].lo + off, chunk, vec) != 0)
				break;
			for (uint64_t pg = 0; pg < chunk / 4096 && np < 16384; pg++)
				if (vec[pg] & 1)
					pages[np++] = m[k].lo + off + pg * 4096;
		}
	}
	if (np > 0) {
		const int bursts = 1 + (int)(rnd(&s) % 8);
		for (int b = 0; b < bursts; b++) {
			const int count = 1 + (int)(rnd(&s) % 64);
			for (int i = 0; i < count; i++) {
				uint64_t *w = NULL;
				for (int tries = 0; tries < 8; tries++) {
					w = (uint64_t *)(pages[rnd(&s) % (uint64_t)np] +
							 8 * (rnd(&s) % 512));
					if (__atomic_load_n(w, __ATOMIC_RELAXED) != 0)
						break;
				}
				__atomic_store_n(w, junk(&s), __ATOMIC_RELAXED);
			}
			nap_us((long)(rnd(&s) % 500));
		}
	}
	if (readonly.lo != NULL && (rnd(&s) & 7) == 0) {
		uint64_t *w =
			(uint64_t *)(readonly.lo +
				     8 * (rnd(&s) % ((uint64_t)(readonly.hi - readonly.lo) / 8)));
		__atomic_store_n(w, junk(&s), __ATOMIC_RELAXED); /* SIGSEGV where it is read-only */
	}
}

static int t_scribble(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	scribble_writable((uint64_t)arg->i64 * 0x9E3779B97F4A7C15ull + 1);
	*ret = *arg;
	return 0;
}

static int t_upgrade(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx, (void)arg;
	struct map m[64];
	const int n = pool_maps(m, 64);
	int64_t worked = 0, ro = 0;
	for (int k = 0; k < n; k++)
		if (!m[k].writable) {
			ro++;
			if (mprotect(m[k].lo, 4096, PROT_READ | PROT_WRITE) == 0)
				worked++;
		}
	for (int fd = 0; fd < 1024; fd++) {
		char path[64], target[256];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		const ssize_t len = readlink(path, target, sizeof target - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (strstr(target, "memfd:knitting") == NULL)
			continue;
		void *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (w != MAP_FAILED)
			worked++, munmap(w, 4096);
		const int rw = open(path, O_RDWR | O_CLOEXEC);
		if (rw >= 0) {
			w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
			if (w != MAP_FAILED)
				worked++, munmap(w, 4096);
			if (write(rw, "x", 1) == 1)
				worked++;
			close(rw);
		}
	}
	ret->type = KNIT_VALUE_I64;
	ret->i64 = ro == 0 ? -1 : worked;
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The boot record from argv[2] ("knit-worker --knit-boot HEX LIB"). */
static int read_boot(struct boot *b)
{
	static char buf[65536];
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (f == NULL)
		return -1;
	const size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *a = buf;
	for (int i = 0; i < 2 && a < buf + n; i++)
		a += strlen(a) + 1;
	if (a >= buf + n || strlen(a) < 2 * sizeof *b)
		return -1;
	uint8_t *o = (uint8_t *)b;
	for (size_t i = 0; i < sizeof *b; i++) {
		const int hi = hexval(a[2 * i]), lo = hexval(a[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		o[i] = (uint8_t)(hi << 4 | lo);
	}
	return b->magic == BOOT_MAGIC && b->version == BOOT_VERSION ? 0 : -1;
}

/* The start of the pool's range: the memfd "knitting" at file offset 0. */
static uint8_t *pool_base(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (f == NULL)
		return NULL;
	char line[512];
	uint8_t *base = NULL;
	while (base == NULL && fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi, off;
		char perms[8];
		if (strstr(line, "/memfd:knitting") != NULL &&
		    sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) == 4 && off == 0)
			base = (uint8_t *)(uintptr_t)lo;
	}
	fclose(f);
	return base;
}

static int t_scribble_exit(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	struct boot b;
	uint8_t *base = pool_base();
	if (read_boot(&b) != 0 || base == NULL || b.steal_off == 0)
		return 7; /* the test sees a status it does not expect */
	uint8_t *lane = base + b.lanes_off + (uint64_t)b.lane * b.stride;
	const uint32_t *ra = (const uint32_t *)(lane + LANE_OFF_RET_LOCK);
	const uint32_t *rb = (const uint32_t *)(lane + LANE_OFF_RET_LOCK + LOCK_OFF_B);
	for (int i = 0; i < 2000 && __atomic_load_n(ra, __ATOMIC_ACQUIRE) !=
					    __atomic_load_n(rb, __ATOMIC_ACQUIRE);
	     i++)
		nap_us(1000);
	char path[64];
	snprintf(path, sizeof path, "/tmp/knit-scribble-%d", (int)getppid());
	const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)!write(fd, "x", 1);
		close(fd);
	}
	uint64_t s = (uint64_t)arg->i64 * 0x9E3779B97F4A7C15ull + 1;
	uint8_t *ctl = base + b.steal_off;
	uint8_t *page = ctl + STEAL_PAGE * (1 + (uint64_t)b.lane);
	uint64_t *own[5] = {(uint64_t *)page, (uint64_t *)(page + BLOCK),
			    (uint64_t *)(page + 2 * BLOCK), (uint64_t *)(page + 3 * BLOCK),
			    (uint64_t *)(page + 4 * BLOCK)};
	for (int i = 0, n = 1 + (int)(rnd(&s) % 8); i < n; i++)
		__atomic_store_n(own[rnd(&s) % 5], junk(&s), __ATOMIC_RELAXED);
	scribble_writable(s);
	(void)ret;
	_exit(0);
}

static const knit_task_t tasks[] = {
	{"slow", t_slow, 0, 0},         {"twice", t_twice, 0, 0},
	{"pid", t_pid, 0, 0},           {"forge", t_forge, 0, 0},
	{"scribble", t_scribble, 0, 0}, {"scribble_exit", t_scribble_exit, 0, 0},
	{"upgrade", t_upgrade, 0, 0},
};

__attribute__((visibility("default"))) const knit_task_library_t knit_task_library = {
	sizeof(knit_task_library_t), KNIT_TASK_LIBRARY_VERSION, tasks,
	sizeof tasks / sizeof tasks[0]};
