/* SPDX-License-Identifier: MIT */
/*
 * tests/api/helpers/kt.c - the test tasks and helpers declared in tests/api/kt.h.
 */
#include "api/kt.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* ---- time ------------------------------------------------------------------ */

int64_t kt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void kt_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void kt_sleep_us(int us)
{
	struct timespec ts = {0, (long)us * 1000L};
	nanosleep(&ts, NULL);
}

#define KT_BOUND_NS ((int64_t)(KT_BOUND_S * 1e9))

/* ---- gate, counters, record log ----------------------------------------- */

static atomic_int kt_gate; /* 0 closed, 1 open */
atomic_int kt_started;
struct kt_record kt_records[KT_RECORD_MAX];
atomic_int kt_nrecords;

void kt_gate_close(void) { atomic_store(&kt_gate, 0); }

void kt_gate_open(void) { atomic_store(&kt_gate, 1); }

int kt_wait_started(int n)
{
	int64_t end = kt_now_ns() + KT_BOUND_NS;
	while (atomic_load(&kt_started) < n) {
		if (kt_now_ns() > end)
			return 0;
		kt_sleep_us(200);
	}
	return 1;
}

/* ---- hashing ----------------------------------------------------------------- */

uint64_t kt_fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int64_t kt_value_hash(const knit_value_t *v)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t type = v ? v->type : KNIT_VALUE_NONE;
	h = kt_fnv1a(&type, sizeof type, h);
	if (!v)
		return (int64_t)h;
	switch (type) {
	case KNIT_VALUE_BOOL:
	case KNIT_VALUE_I64:
		h = kt_fnv1a(&v->i64, sizeof v->i64, h);
		break;
	case KNIT_VALUE_F64:
		h = kt_fnv1a(&v->f64, sizeof v->f64, h);
		break;
	case KNIT_VALUE_ERROR:
		h = kt_fnv1a(&v->code, sizeof v->code, h);
		/* fall through */
	case KNIT_VALUE_BYTES:
	case KNIT_VALUE_STRING:
		h = kt_fnv1a(&v->len, sizeof v->len, h);
		if (v->len)
			h = kt_fnv1a(v->data, v->len, h);
		break;
	default:
		break;
	}
	return (int64_t)h;
}

/* ---- the tasks ---------------------------------------------------------------- */

static int64_t arg_i64(const knit_value_t *arg)
{
	return arg && (arg->type == KNIT_VALUE_I64 || arg->type == KNIT_VALUE_BOOL) ? arg->i64 : 0;
}

static int t_echo(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = *arg;
	return 0;
}

static int t_block(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	atomic_fetch_add(&kt_started, 1);
	int64_t end = kt_now_ns() + KT_BOUND_NS;
	while (!atomic_load(&kt_gate) && kt_now_ns() < end)
		kt_sleep_us(200);
	*ret = *arg;
	return 0;
}

static int t_sleep(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	kt_sleep_ms((int)arg_i64(arg));
	*ret = *arg;
	return 0;
}

atomic_int kt_abort_seen;
atomic_int kt_abort_done;

int kt_wait_abort_done(int n)
{
	int64_t end = kt_now_ns() + KT_BOUND_NS;
	while (atomic_load(&kt_abort_done) < n) {
		if (kt_now_ns() >= end)
			return 0;
		kt_sleep_us(200);
	}
	return 1;
}

static int t_abort_loop(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	atomic_fetch_add(&kt_started, 1);
	int64_t end = kt_now_ns() + KT_BOUND_NS;
	int seen = 0;
	while (kt_now_ns() < end) {
		if (knit_ctx_aborted(ctx) == 1) {
			seen = 1;
			break;
		}
		kt_sleep_us(100);
	}
	atomic_fetch_add(&kt_abort_seen, seen);
	atomic_fetch_add(&kt_abort_done, 1);
	*ret = kt_i64(seen);
	return 0;
}

static int t_aborted(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	*ret = kt_i64(knit_ctx_aborted(ctx));
	return 0;
}

static int t_alloc(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	size_t n = (size_t)arg_i64(arg);
	uint8_t *p = knit_ctx_alloc(ctx, n);
	if (!p)
		return 99;
	for (size_t i = 0; i < n; i++)
		p[i] = kt_pat(i);
	*ret = kt_bytes(p, n);
	return 0;
}

static int t_alloc_probe(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	void *p = knit_ctx_alloc(ctx, (size_t)arg_i64(arg));
	*ret = kt_i64(p == NULL);
	return 0;
}

/* Buffers handed back by bytes/string: they must live until the task returns;
 * freed at the next call on the same thread. */
static __thread uint8_t *t_buf;

static int t_bytes(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	size_t n = (size_t)arg_i64(arg);
	free(t_buf);
	t_buf = kt_pattern(n);
	*ret = kt_bytes(t_buf, n);
	return 0;
}

static int t_string(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	size_t n = (size_t)arg_i64(arg);
	free(t_buf);
	t_buf = kt_pattern(n);
	*ret = kt_str((const char *)t_buf, n);
	return 0;
}

static int t_block_bytes(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	t_block(ctx, arg, ret);
	return t_bytes(ctx, arg, ret);
}

static int t_deadline(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	*ret = kt_i64(knit_ctx_deadline_ns(ctx));
	return 0;
}

static __thread char t_msg[64];

static int t_error(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	int32_t c = (int32_t)arg_i64(arg);
	snprintf(t_msg, sizeof t_msg, "task error %d", (int)c);
	*ret = kt_err(c, t_msg);
	return 1;
}

/* The last long message of this thread: its bytes must live until the
 * library copied the result, which happens before the thread runs another. */
static __thread char *t_long_msg;

static int t_error_long(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	size_t n = (size_t)arg_i64(arg);
	free(t_long_msg);
	t_long_msg = malloc(n + 1);
	if (t_long_msg == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		t_long_msg[i] = (char)kt_pat(i);
	t_long_msg[n] = 0;
	*ret = kt_err(4242, t_long_msg);
	ret->len = n;
	return 3;
}

static int t_fail(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	(void)ret;
	return (int)arg_i64(arg);
}

static int t_fail_set(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = kt_i64(77);
	return (int)arg_i64(arg);
}

static int t_inspect(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	*ret = kt_i64(kt_value_hash(arg));
	return 0;
}

static int t_lane(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	*ret = kt_i64(knit_ctx_lane(ctx));
	return 0;
}

static int t_record(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	int i = atomic_fetch_add(&kt_nrecords, 1);
	if (i < KT_RECORD_MAX) {
		kt_records[i].arg = arg_i64(arg);
		kt_records[i].thread = pthread_self();
		kt_records[i].lane = knit_ctx_lane(ctx);
	}
	*ret = *arg;
	return 0;
}

static int t_str_nul(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)ctx;
	int ok = arg->type == KNIT_VALUE_STRING && arg->data != NULL &&
		 ((const char *)arg->data)[arg->len] == '\0';
	*ret = kt_bool(ok);
	return 0;
}

/* The state the "task_data" task carries in its knit_task_t.data. */
int kt_task_data_cookie;

static int t_task_data(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)
{
	(void)arg;
	*ret = kt_i64((int64_t)(intptr_t)knit_ctx_task_data(ctx));
	return 0;
}

/* Deliberately not in name order: ids must come from the sorted names. */
const knit_task_t kt_tasks[] = {
	{"echo", t_echo, 0, 0},
	{"block", t_block, 0, 0},
	{"block_t50", t_block, 50, 0},
	{"block_bytes", t_block_bytes, 0, 0},
	{"sleep", t_sleep, 0, 0},
	{"sleep_t50", t_sleep, 50, 0},
	{"abort_loop", t_abort_loop, 0, KNIT_TASK_ABORTABLE},
	{"abort_plain", t_abort_loop, 0, 0},
	{"aborted", t_aborted, 0, 0},
	{"aborted_abortable", t_aborted, 0, KNIT_TASK_ABORTABLE},
	{"alloc", t_alloc, 0, 0},
	{"alloc_probe", t_alloc_probe, 0, 0},
	{"bytes", t_bytes, 0, 0},
	{"string", t_string, 0, 0},
	{"deadline", t_deadline, 0, 0},
	{"error", t_error, 0, 0},
	{"error_long", t_error_long, 0, 0},
	{"fail", t_fail, 0, 0},
	{"fail_set", t_fail_set, 0, 0},
	{"inspect", t_inspect, 0, 0},
	{"lane", t_lane, 0, 0},
	{"record", t_record, 0, 0},
	{"str_nul", t_str_nul, 0, 0},
	{"task_data", t_task_data, 0, 0, &kt_task_data_cookie, {0, 0}},
};
const size_t KT_NTASKS = sizeof kt_tasks / sizeof kt_tasks[0];

/* ---- pools ------------------------------------------------------------------- */

void kt_opts(knit_pool_options_t *o, uint32_t workers)
{
	memset(o, 0, sizeof *o);
	o->size = sizeof *o;
	o->workers = workers;
	o->park_ms = KT_PARK_MS;
}

knit_pool_t *kt_pool(const knit_pool_options_t *o)
{
	knit_pool_t *pool = NULL;
	int rc = knit_pool_create(o, kt_tasks, KT_NTASKS, &pool);
	cr_assert_eq(rc, 0, "knit_pool_create: %d (%s)", rc, knit_strerror(rc));
	cr_assert_not_null(pool);
	return pool;
}

knit_pool_t *kt_pool_n(uint32_t workers)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	return kt_pool(&o);
}

knit_pool_t *kt_pool_lanes(uint32_t workers)
{
	knit_pool_options_t o;
	kt_opts(&o, workers);
	o.topology = KNIT_TOPOLOGY_LANES;
	return kt_pool(&o);
}

uint32_t kt_id(knit_pool_t *pool, const char *name)
{
	int id = knit_pool_task_id(pool, name);
	cr_assert_geq(id, 0, "knit_pool_task_id(%s): %d", name, id);
	return (uint32_t)id;
}

void kt_stats(knit_pool_t *pool, knit_pool_stats_t *s)
{
	memset(s, 0, sizeof *s);
	s->size = sizeof *s;
	int rc = knit_pool_stats(pool, s, sizeof *s);
	cr_assert_eq(rc, 0, "knit_pool_stats: %d", rc);
}

void kt_destroy(knit_pool_t *pool)
{
	knit_pool_stats_t s;
	kt_stats(pool, &s);
	for (uint32_t i = 0; i < s.lanes && i < KNIT_MAX_WORKERS + 1; i++)
		cr_expect_eq(s.lane[i].watchdog_expiries, 0, "lane %u: watchdog_expiries %llu", i,
			     (unsigned long long)s.lane[i].watchdog_expiries);
	kt_gate_open(); /* let any block task finish so destroy can join */
	int rc = knit_pool_destroy(pool);
	cr_assert_eq(rc, 0, "knit_pool_destroy: %d", rc);
}

/* ---- values ------------------------------------------------------------------- */

knit_value_t kt_none(void)
{
	knit_value_t v;
	memset(&v, 0, sizeof v);
	v.type = KNIT_VALUE_NONE;
	return v;
}

knit_value_t kt_bool(int b)
{
	knit_value_t v = kt_none();
	v.type = KNIT_VALUE_BOOL;
	v.i64 = b;
	return v;
}

knit_value_t kt_i64(int64_t x)
{
	knit_value_t v = kt_none();
	v.type = KNIT_VALUE_I64;
	v.i64 = x;
	return v;
}

knit_value_t kt_f64(double x)
{
	knit_value_t v = kt_none();
	v.type = KNIT_VALUE_F64;
	v.f64 = x;
	return v;
}

knit_value_t kt_bytes(const void *p, size_t n)
{
	knit_value_t v = kt_none();
	v.type = KNIT_VALUE_BYTES;
	v.data = p;
	v.len = n;
	return v;
}

knit_value_t kt_str(const char *p, size_t n)
{
	knit_value_t v = kt_none();
	v.type = KNIT_VALUE_STRING;
	v.data = p;
	v.len = n;
	return v;
}

knit_value_t kt_err(int32_t code, const char *msg)
{
	knit_value_t v = kt_none();
	v.type = KNIT_VALUE_ERROR;
	v.code = code;
	v.data = msg;
	v.len = msg ? strlen(msg) : 0;
	return v;
}

uint8_t *kt_pattern(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		abort();
	for (size_t i = 0; i < n; i++)
		p[i] = kt_pat(i);
	return p;
}

int kt_is_pattern(const void *p, size_t n)
{
	const uint8_t *b = p;
	if (n && !p)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (b[i] != kt_pat(i))
			return 0;
	return 1;
}

/* ---- calls and completions ------------------------------------------------ */

void kt_fill_reqs(knit_request_t *r, knit_value_t *v, int n, uint32_t task, int64_t base)
{
	memset(r, 0, (size_t)n * sizeof *r);
	for (int i = 0; i < n; i++) {
		v[i] = kt_i64(base + i);
		r[i].task = task;
		r[i].arg = &v[i];
		r[i].user_data = (void *)(intptr_t)(i + 1);
	}
}

knit_ticket_t kt_enq(knit_pool_t *pool, uint32_t task, knit_value_t arg, void *ud)
{
	knit_ticket_t t = 0;
	int rc = knit_enqueue(pool, task, &arg, ud, &t);
	cr_assert_eq(rc, 0, "knit_enqueue: %d (%s)", rc, knit_strerror(rc));
	cr_assert_neq(t, 0, "ticket 0");
	return t;
}

knit_ticket_t kt_enq_ex(knit_pool_t *pool, uint32_t task, knit_value_t arg, void *ud,
			uint32_t flags, uint32_t timeout_ms, uint32_t lane)
{
	knit_call_options_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.flags = flags;
	o.timeout_ms = timeout_ms;
	o.lane = lane;
	knit_ticket_t t = 0;
	int rc = knit_enqueue_ex(pool, task, &arg, ud, &o, &t);
	cr_assert_eq(rc, 0, "knit_enqueue_ex: %d (%s)", rc, knit_strerror(rc));
	cr_assert_neq(t, 0, "ticket 0");
	return t;
}

int kt_reap(knit_pool_t *pool, knit_completion_t *out, int n)
{
	int got = 0;
	int64_t end = kt_now_ns() + KT_BOUND_NS;
	while (got < n && kt_now_ns() < end) {
		unsigned max = (unsigned)(n - got);
		if (max > 256)
			max = 256;
		int rc = knit_complete(pool, out + got, max, 100 * 1000 * 1000);
		cr_assert(rc >= 0, "knit_complete: %d (%s) after %d of %d", rc, knit_strerror(rc),
			  got, n);
		cr_assert(rc <= (int)max, "knit_complete returned %d > max %u", rc, max);
		got += rc;
	}
	return got;
}

void kt_reap1(knit_pool_t *pool, knit_completion_t *out)
{
	int got = kt_reap(pool, out, 1);
	cr_assert_eq(got, 1, "no completion within %.0f s", KT_BOUND_S);
}

int kt_quiet(knit_pool_t *pool, int ms)
{
	int seen = 0;
	int64_t end = kt_now_ns() + (int64_t)ms * 1000000;
	knit_completion_t c;
	while (kt_now_ns() < end) {
		int rc = knit_complete(pool, &c, 1, 10 * 1000 * 1000);
		if (rc < 0)
			break;
		if (rc > 0) {
			seen += rc;
			knit_completion_release(pool, &c);
		}
	}
	return seen;
}

/* ---- failure report ------------------------------------------------------------ */
/* The Makefile runs the tests with -q, which silences Criterion's own report;
 * these hooks (run in the runner process) still print what failed, so the
 * harness log says which test and which assertion. */

ReportHook(POST_FINI)(struct criterion_test_stats *st)
{
	if (st->test_status != CR_STATUS_FAILED && !st->timed_out && !st->crashed)
		return;
	fprintf(stdout, "FAILED %s::%s%s\n", st->test->category, st->test->name,
		st->timed_out ? " (timed out)" : "");
	int shown = 0;
	for (struct criterion_assert_stats *a = st->asserts; a; a = a->next)
		if (!a->passed && shown++ < 10)
			fprintf(stdout, "  %s:%u: %s\n", a->file ? a->file : "?", a->line,
				a->message ? a->message : "");
}

ReportHook(TEST_CRASH)(struct criterion_test_stats *st)
{
	fprintf(stdout, "CRASHED %s::%s (signal %d, exit %d)\n", st->test->category, st->test->name,
		st->signal, st->exit_code);
}

#if KT_TSAN
/* Criterion cannot start under ThreadSanitizer: its inheritable arena fails
 * to map ("Could not initialize inheritable arena: Resource temporarily
 * unavailable", Snaipe/Criterion issue 274). This main() replaces
 * Criterion's, so each API test program reports a skip instead of a crash.
 * The runtime's TSan coverage comes from tests/stress (pool_exactly_once,
 * pool_no_lost_wake) and tests/unit. */
int main(void)
{
	printf("SKIP: Criterion cannot run under ThreadSanitizer (Snaipe/Criterion#274); "
	       "TSan covers the pool through tests/stress\n");
	return 77;
}
#endif

void kt_proc_opts(knit_pool_options_t *o, uint32_t workers)
{
	kt_opts(o, workers);
	o->worker_kind = KNIT_WORKERS_PROCESSES;
	o->task_library = KT_PROC_LIB;
}

knit_completion_t kt_proc_call(knit_pool_t *p, const char *task, knit_value_t arg)
{
	knit_completion_t c;
	int rc = knit_call(p, kt_id(p, task), &arg, &c, (int64_t)(KT_BOUND_S * 1e9));
	cr_assert_eq(rc, 0, "knit_call(%s): %s", task, knit_strerror(rc));
	return c;
}

int kt_count_children(void)
{
	char path[300];
	/* Children may hang off any thread: walk every task. */
	DIR *d = opendir("/proc/self/task");
	cr_assert(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		int pid;
		while (fscanf(f, "%d", &pid) == 1)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}
