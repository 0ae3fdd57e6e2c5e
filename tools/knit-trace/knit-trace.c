// SPDX-License-Identifier: MIT
/*
 * knit-trace - how long do libknitting's parked workers take to wake?
 *
 * The user-space half of knit-trace(8): finds the libknitting.so a process
 * has mapped (or takes a library path), checks it carries the "knitting"
 * USDT probes, loads knit-trace.bpf.c through its skeleton, attaches one
 * USDT program per probe plus the sched_wakeup / sched_switch tp_btf
 * programs, then every interval (or once, at the end) reads the per pool /
 * per lane counters and log2 histograms, prints them (text or --json) and
 * clears them. With -p it also follows the process's worker processes
 * (process pools): the BPF side takes in each one that starts, and every
 * ~100 ms the children of the process are looked at for those that were
 * running already or map another copy of the library.
 *
 * Exit status: 0 after a normal run (Ctrl-C, -d elapsed, count reached or
 * the traced process exited), 1 on any error, with one line on stderr that
 * says what is wrong and what to do, 64 (argp) on a usage error.
 */
#define _GNU_SOURCE /* sigabbrev_np */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "knit-trace.h"
#include "knit-trace.skel.h"
#include "src/trace.h"

_Static_assert(KT_REASON_RUNG == KNIT_TRACE_WAKE_RUNG, "reason codes drifted from src/trace.h");
_Static_assert(KT_REASON_WATCHDOG == KNIT_TRACE_WAKE_WATCHDOG, "reason codes drifted");
_Static_assert(KT_REASON_SPURIOUS == KNIT_TRACE_WAKE_SPURIOUS, "reason codes drifted");
_Static_assert(KT_REASON_STOP == KNIT_TRACE_WAKE_STOP, "reason codes drifted");
_Static_assert(KT_EXIT_STOPPED == KNIT_TRACE_EXIT_STOPPED &&
		       KT_EXIT_SIGNAL == KNIT_TRACE_EXIT_SIGNAL &&
		       KT_EXIT_STATUS == KNIT_TRACE_EXIT_STATUS &&
		       KT_EXIT_KILLED == KNIT_TRACE_EXIT_KILLED &&
		       KT_EXIT_PROTO == KNIT_TRACE_EXIT_PROTO &&
		       KT_EXIT_OOM == KNIT_TRACE_EXIT_OOM &&
		       KT_EXIT_SANDBOX == KNIT_TRACE_EXIT_SANDBOX,
	       "exit causes drifted from src/trace.h");
_Static_assert(KT_LINE_ID_BASE == KNIT_TRACE_LINE_ID_BASE, "line ids drifted from src/trace.h");

#define PROVIDER "knitting"
#define BTF_PATH "/sys/kernel/btf/vmlinux"

/* Units of the text output (JSON is always in nanoseconds). */
enum units { UNITS_NS, UNITS_US, UNITS_MS };
static const char *const units_name[] = {"nsecs", "usecs", "msecs"};
static const char *const units_short[] = {"ns", "us", "ms"};
static const double units_div[] = {1.0, 1e3, 1e6};

static struct env {
	pid_t pid;
	const char *lib;
	long interval; /* seconds; 0 = one report at the end */
	long times;    /* reports; 0 = unlimited */
	long duration; /* seconds; 0 = until Ctrl-C / process exit */
	bool filter_lane;
	bool no_follow; /* -p: only the host, not its worker processes */
	unsigned lane;
	__u64 pool;
	bool json;
	bool by_pool;
	bool timestamp;
	bool verbose;
	unsigned hist_views; /* bitmask of enum kt_view printed as histograms */
	int units;           /* enum units: of the text histograms and summary */
} env = {
	.hist_views = 1u << KT_VIEW_WAKE_ONCPU,
	.units = UNITS_US,
};

static volatile sig_atomic_t exiting;

/* View names (CLI, JSON) and titles (text histograms). */
static const char *const view_name[KT_NR_VIEWS] = {
	[KT_VIEW_WAKE_ONCPU] = "wake_cpu", [KT_VIEW_WAKE_PROBE] = "wake_probe",
	[KT_VIEW_PARK] = "park",           [KT_VIEW_QUEUE] = "queue",
	[KT_VIEW_SERVICE] = "service",     [KT_VIEW_CALL] = "call",
	[KT_VIEW_STOP] = "stop",           [KT_VIEW_DOORBELL] = "doorbell",
};
static const char *const view_title[KT_NR_VIEWS] = {
	[KT_VIEW_WAKE_ONCPU] = "wake latency: host ring -> rung worker running on a CPU",
	[KT_VIEW_WAKE_PROBE] = "wake latency: host ring -> worker_wake probe",
	[KT_VIEW_PARK] = "park duration: worker_park -> worker_wake",
	[KT_VIEW_QUEUE] = "queue wait: task_enqueue -> task_start",
	[KT_VIEW_SERVICE] = "service time: task_start -> task_done",
	[KT_VIEW_CALL] = "call latency: task_enqueue -> task_complete",
	[KT_VIEW_STOP] = "stop acknowledgement: stop_request -> stop_ack",
	[KT_VIEW_DOORBELL] = "host doorbell sleep: doorbell_arm -> doorbell_wake",
};
static const char *const event_name[KT_NR_EVENTS] = {
	[KT_EV_WORKER_PARK] = "worker_park",
	[KT_EV_WAKE_RUNG] = "wake_rung",
	[KT_EV_WAKE_WATCHDOG] = "wake_watchdog",
	[KT_EV_WAKE_SPURIOUS] = "wake_spurious",
	[KT_EV_WAKE_STOP] = "wake_stop",
	[KT_EV_WAKE_OTHER] = "wake_other",
	[KT_EV_HOST_RING] = "host_ring",
	[KT_EV_RING_RUNNING] = "ring_found_running",
	[KT_EV_RING_AFTER_WAKE] = "ring_after_wake",
	[KT_EV_DOORBELL_ARM] = "doorbell_arm",
	[KT_EV_DOORBELL_RING] = "doorbell_ring",
	[KT_EV_DOORBELL_WAKE] = "doorbell_wake",
	[KT_EV_TASK_ENQUEUE] = "task_enqueue",
	[KT_EV_TASK_START] = "task_start",
	[KT_EV_TASK_DONE] = "task_done",
	[KT_EV_TASK_FAILED] = "task_failed",
	[KT_EV_TASK_COMPLETE] = "task_complete",
	[KT_EV_STOP_REQUEST] = "stop_request",
	[KT_EV_STOP_ACK] = "stop_ack",
	[KT_EV_PROC_START] = "proc_worker_start",
	[KT_EV_SYNC_ENQUEUE] = "sync_enqueue",
	[KT_EV_SYNC_COMPLETE] = "sync_complete",
	[KT_EV_PROC_STOPPED] = "proc_exit_stopped",
	[KT_EV_PROC_SIGNAL] = "proc_died_signal",
	[KT_EV_PROC_STATUS] = "proc_died_status",
	[KT_EV_PROC_KILLED] = "proc_killed",
	[KT_EV_PROC_PROTO] = "proc_killed_protocol",
	[KT_EV_PROC_OOM] = "proc_killed_oom",
	[KT_EV_PROC_SANDBOX] = "proc_killed_sandbox",
	[KT_EV_PROC_OTHER] = "proc_exit_other",
};

/* ---- command line -------------------------------------------------------- */

const char *argp_program_version =
	"knit-trace " KT_VERSION; /* -DKT_VERSION: the Makefile, from knitting.h */
static const char argp_program_doc[] =
	"Show how long libknitting's parked workers take to wake, per pool and lane.\n"
	"\n"
	"USAGE: knit-trace [-p PID | -l PATH] [-d SECONDS] [--lane N] [--json]\n"
	"                  [-H VIEWS] [interval] [count]\n"
	"\n"
	"Views: wake_cpu (host ring -> worker on a CPU), wake_probe (ring -> worker\n"
	"wake probe), park, queue, service, call, stop, doorbell. All are summarised\n"
	"(count, min, p50, p99, max); -H picks which get a full log2 histogram.\n"
	"Times print in microseconds (-m: milliseconds, -n: nanoseconds), histograms\n"
	"and summary alike. p50/p99 are read off the log2 histogram: interpolated\n"
	"within the bucket holding them (and within min..max), so estimates, marked ~.\n"
	"\n"
	"EXAMPLES:\n"
	"    knit-trace -p 1234            # trace pid 1234 until Ctrl-C or it exits\n"
	"    knit-trace -p 1234 1 10       # print 1 second summaries, 10 times\n"
	"    knit-trace -p 1234 -d 5       # trace for 5 seconds, then report\n"
	"    knit-trace -p 1234 --lane 0   # only lane 0 of every pool\n"
	"    knit-trace -p 1234 -H all     # histograms for every view\n"
	"    knit-trace -p 1234 -m         # times in milliseconds\n"
	"    knit-trace -p 1234 --json     # one JSON object per report\n"
	"    knit-trace -p 1234 --no-follow # not its pools' worker processes\n"
	"    knit-trace -l /usr/lib/x86_64-linux-gnu/libknitting.so.1\n"
	"                                  # every process using that library\n";

enum {
	OPT_LANE = 1000,
	OPT_JSON,
	OPT_POOL,
	OPT_BY_POOL,
	OPT_NO_FOLLOW,
};

static const struct argp_option opts[] = {
	{"pid", 'p', "PID", 0,
	 "Trace the libknitting.so mapped by process PID and "
	 "its pools' worker processes",
	 0},
	{"lib", 'l', "PATH", 0,
	 "Trace this library (with -p: in that process and its workers; "
	 "alone: in every process)",
	 0},
	{"duration", 'd', "SECONDS", 0, "Stop after SECONDS", 0},
	{"no-follow", OPT_NO_FOLLOW, NULL, 0,
	 "With -p: only that process, not its pools' "
	 "worker processes",
	 0},
	{"lane", OPT_LANE, "N", 0, "Only lane N (pool-wide doorbell probes stay)", 0},
	{"pool", OPT_POOL, "ADDR", 0, "Only the pool at address ADDR (as reported)", 0},
	{"json", OPT_JSON, NULL, 0, "Print one JSON object per report", 0},
	{"hist", 'H', "VIEWS", 0,
	 "Histograms to print: comma list of views, 'all' or "
	 "'none' (default wake_cpu)",
	 0},
	{"by-pool", OPT_BY_POOL, NULL, 0, "Merge the lanes of each pool in histograms", 0},
	{"timestamp", 'T', NULL, 0, "Print a timestamp with each report", 0},
	{"milliseconds", 'm', NULL, 0, "Text output in milliseconds", 0},
	{"microseconds", 'u', NULL, 0, "Text output in microseconds (the default)", 0},
	{"nanoseconds", 'n', NULL, 0, "Text output in nanoseconds", 0},
	{"verbose", 'v', NULL, 0, "Show libbpf's debug output", 0},
	{NULL, 'h', NULL, OPTION_HIDDEN, "Show this help", 0},
	{0},
};

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_views(const char *arg, unsigned *mask)
{
	char buf[256], *tok, *save;
	int v;

	if (!strcmp(arg, "all")) {
		*mask = (1u << KT_NR_VIEWS) - 1;
		return true;
	}
	*mask = 0;
	if (!strcmp(arg, "none"))
		return true;
	if (strlen(arg) >= sizeof(buf))
		return false;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (v = 0; v < KT_NR_VIEWS; v++)
			if (!strcmp(tok, view_name[v]))
				break;
		if (v == KT_NR_VIEWS)
			return false;
		*mask |= 1u << v;
	}
	return true;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	static int pos_args;
	long v;

	switch (key) {
	case 'h':
		argp_state_help(state, stderr, ARGP_HELP_STD_HELP);
		break;
	case 'p':
		if (!parse_long(arg, 1, INT_MAX, &v))
			argp_error(state, "invalid PID: %s", arg);
		env.pid = (pid_t)v;
		break;
	case 'l':
		env.lib = arg;
		break;
	case 'd':
		if (!parse_long(arg, 1, INT_MAX, &v))
			argp_error(state, "invalid duration: %s", arg);
		env.duration = v;
		break;
	case OPT_LANE:
		if (!parse_long(arg, 0, 0xfffffffe, &v))
			argp_error(state, "invalid lane: %s", arg);
		env.filter_lane = true;
		env.lane = (unsigned)v;
		break;
	case OPT_POOL: {
		char *end;
		errno = 0;
		env.pool = strtoull(arg, &end, 0);
		if (errno || end == arg || *end || !env.pool)
			argp_error(state, "invalid pool address: %s", arg);
		break;
	}
	case OPT_JSON:
		env.json = true;
		break;
	case 'H':
		if (!parse_views(arg, &env.hist_views))
			argp_error(state, "invalid view list: %s", arg);
		break;
	case OPT_BY_POOL:
		env.by_pool = true;
		break;
	case OPT_NO_FOLLOW:
		env.no_follow = true;
		break;
	case 'T':
		env.timestamp = true;
		break;
	case 'm':
		env.units = UNITS_MS;
		break;
	case 'u':
		env.units = UNITS_US;
		break;
	case 'n':
		env.units = UNITS_NS;
		break;
	case 'v':
		env.verbose = true;
		break;
	case ARGP_KEY_ARG:
		if (pos_args == 0) {
			if (!parse_long(arg, 1, INT_MAX, &v))
				argp_error(state, "invalid interval: %s", arg);
			env.interval = v;
		} else if (pos_args == 1) {
			if (!parse_long(arg, 1, INT_MAX, &v))
				argp_error(state, "invalid count: %s", arg);
			env.times = v;
		} else {
			argp_error(state, "unrecognized positional argument: %s", arg);
		}
		pos_args++;
		break;
	case ARGP_KEY_END:
		if (!env.pid && !env.lib)
			argp_error(state, "say what to trace: -p PID or -l PATH");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int libbpf_print_fn(enum libbpf_print_level level, const char *format, va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	return vfprintf(stderr, format, args);
}

static void sig_handler(int sig)
{
	(void)sig;
	exiting = 1;
}

/* ---- finding the library and its probes --------------------------------- */

/* Find the libknitting.so that `pid` has mapped executable; write its path
 * (as the process sees it) to `out`. Returns 0, -ESRCH (no such process),
 * -EACCES, or -ENOENT (no libknitting mapped). */
static int find_mapped_lib(pid_t pid, char *out, size_t outsz)
{
	char maps[64], line[PATH_MAX + 256];
	int found = -ENOENT;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		char perms[8] = "", *path, *base, *nl;

		if (sscanf(line, "%*s %7s", perms) != 1 || !strchr(perms, 'x'))
			continue;
		path = strchr(line, '/');
		if (!path)
			continue;
		nl = strchr(path, '\n');
		if (nl)
			*nl = '\0';
		base = strrchr(path, '/') + 1;
		if (strncmp(base, "libknitting.so", 14) && strncmp(base, "libknitting-", 12))
			continue;
		if (strlen(path) >= outsz)
			continue;
		strcpy(out, path);
		found = 0;
		break;
	}
	fclose(f);
	return found;
}

/* Every probe of provider "knitting" this tool knows, with its program. */
struct probe_ent {
	const char *name;
	size_t prog_off; /* offsetof the program in skel->progs */
};
#define PROBE(n)                                                                                   \
	{                                                                                          \
#n, offsetof(struct knit_trace_bpf, progs.n)                                       \
	}
static const struct probe_ent probe_table[] = {
	PROBE(worker_park),       PROBE(worker_wake),      PROBE(host_ring),    PROBE(doorbell_arm),
	PROBE(doorbell_ring),     PROBE(doorbell_wake),    PROBE(task_enqueue), PROBE(task_start),
	PROBE(task_done),         PROBE(task_complete),    PROBE(stop_request), PROBE(stop_ack),
	PROBE(proc_worker_start), PROBE(proc_worker_exit),
};
#define NPROBES (sizeof(probe_table) / sizeof(probe_table[0]))

/* Read the ELF note section .note.stapsdt of `path`; set the bit (by index in
 * probe_table) of each of our probes present in *present. Returns the number
 * of provider-"knitting" notes found (0: none), -1 with `why` set when the
 * file is not ELF or has no .note.stapsdt section at all, -2 with `why` set
 * when it cannot be opened. */
static int scan_probes(const char *path, unsigned *present, const char **why)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, n = 0;
	bool have_note = false;
	Elf *elf;

	*present = 0;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		*why = "libelf is unusable";
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = strerror(errno);
		return -2;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx)) {
		*why = "not an ELF file";
		n = -1;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *name;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt"))
			continue;
		have_note = true;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const char *desc = (const char *)data->d_buf + desc_off;
			size_t addrs = 3 * (gelf_getclass(elf) == ELFCLASS32 ? 4 : 8);
			const char *prov, *pname;

			/* NT_STAPSDT == 3, owner "stapsdt"; desc: pc, base,
			 * semaphore, then provider\0 name\0 args\0. Bounds-check
			 * everything: the file is not trusted. */
			if (nh.n_type != 3 || nh.n_namesz != 8 ||
			    memcmp((const char *)data->d_buf + name_off, "stapsdt", 8))
				continue;
			if (nh.n_descsz <= addrs ||
			    !memchr(desc + addrs, '\0', nh.n_descsz - addrs))
				continue;
			prov = desc + addrs;
			pname = prov + strlen(prov) + 1;
			if ((size_t)(pname - desc) >= nh.n_descsz ||
			    !memchr(pname, '\0', nh.n_descsz - (size_t)(pname - desc)))
				continue;
			if (strcmp(prov, PROVIDER))
				continue;
			n++;
			for (size_t i = 0; i < NPROBES; i++)
				if (!strcmp(pname, probe_table[i].name))
					*present |= 1u << i;
		}
	}
	if (!have_note) {
		*why = "no .note.stapsdt section";
		n = -1;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return n;
}

/* ---- attaching, and following a host's worker processes ----------------- */

static bool lacks_admin_cap(void);

/* The library files our probes are attached in, by device and inode: a
 * worker process may map another copy of libknitting than its host. */
#define MAX_LIBS 8
static struct {
	dev_t dev;
	ino_t ino;
} libs[MAX_LIBS];
static int nlibs;
static struct bpf_link *links[MAX_LIBS * NPROBES];
static int nlinks;

/* Attach the programs of the probes in `present` (scan_probes) to `path`,
 * in process `pid` or (-1) in every process mapping the file. Returns the
 * number attached, 0 when the file is attached already, or -errno with the
 * message printed. */
static int attach_lib(struct knit_trace_bpf *skel, const char *path, pid_t pid, unsigned present)
{
	struct stat st;
	int n = 0;

	if (stat(path, &st))
		return -errno;
	for (int i = 0; i < nlibs; i++)
		if (libs[i].dev == st.st_dev && libs[i].ino == st.st_ino)
			return 0;
	if (nlibs == MAX_LIBS) {
		fprintf(stderr, "knit-trace: more than %d libknitting files; %s not traced\n",
			MAX_LIBS, path);
		return -ENOSPC;
	}
	for (size_t i = 0; i < NPROBES; i++) {
		struct bpf_program *prog =
			*(struct bpf_program **)((char *)skel + probe_table[i].prog_off);
		struct bpf_link *link;
		int err;

		if (!(present & (1u << i))) {
			if (env.verbose)
				fprintf(stderr, "knit-trace: %s has no probe %s:%s\n", path,
					PROVIDER, probe_table[i].name);
			continue;
		}
		link = bpf_program__attach_usdt(prog, pid, path, PROVIDER, probe_table[i].name,
						NULL);
		if (!link) {
			err = -errno;
			fprintf(stderr, "knit-trace: cannot attach to %s:%s in %s: %s\n", PROVIDER,
				probe_table[i].name, path, strerror(-err));
			/* Some kernels want more than CAP_PERFMON for a uprobe perf
			 * event; say so rather than leave a bare EACCES. */
			if ((err == -EACCES || err == -EPERM) && lacks_admin_cap())
				fprintf(stderr, "knit-trace: this kernel refused the uprobe "
						"without CAP_SYS_ADMIN: run it as root\n");
			return err;
		}
		links[nlinks++] = link;
		n++;
	}
	libs[nlibs].dev = st.st_dev;
	libs[nlibs].ino = st.st_ino;
	nlibs++;
	return n;
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Is `pid` a knit-worker (argv: knit-worker --knit-boot HEX LIBRARY)? Then
 * *host_pool gets the host's pool id and *lane its lane from its boot record
 * (src/trace.h, KNIT_TRACE_BOOT_*). A child that has not exec'd knit-worker yet still
 * shows its parent's command line: not a worker, yet. */
static bool knit_worker_pool(pid_t pid, __u64 *host_pool, __u32 *lane)
{
	unsigned char raw[KNIT_TRACE_BOOT_OFF_HOST_POOL + 8];
	char path[64], buf[8192], *a1, *a2;
	uint32_t magic;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	a1 = buf + strlen(buf) + 1;
	if (a1 >= buf + n || strcmp(a1, "--knit-boot"))
		return false;
	a2 = a1 + strlen(a1) + 1;
	if (a2 >= buf + n || strlen(a2) < 2 * sizeof(raw))
		return false;
	for (size_t i = 0; i < sizeof(raw); i++) {
		int hi = hex_nibble(a2[2 * i]), lo = hex_nibble(a2[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		raw[i] = (unsigned char)(hi << 4 | lo);
	}
	memcpy(&magic, raw + KNIT_TRACE_BOOT_OFF_MAGIC, sizeof(magic));
	memcpy(host_pool, raw + KNIT_TRACE_BOOT_OFF_HOST_POOL, sizeof(*host_pool));
	memcpy(lane, raw + KNIT_TRACE_BOOT_OFF_LANE, sizeof(*lane));
	return magic == KNIT_TRACE_BOOT_MAGIC && *host_pool;
}

/* The children of process `host` (every thread's: the thread that spawns
 * the workers is the pool's, not the main one). From the
 * /proc/PID/task/TID/children lists, or, on a kernel without them, by the
 * parent pid in every /proc/PID/stat. Returns how many were stored. */
static int host_children(pid_t host, pid_t *out, int max)
{
	char path[300], buf[4096];
	struct dirent *de;
	int n = 0, lists = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)host);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		FILE *f;
		long c;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)host, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		lists++;
		while (n < max && fscanf(f, "%ld", &c) == 1)
			out[n++] = (pid_t)c;
		fclose(f);
	}
	closedir(d);
	if (lists)
		return n;
	d = opendir("/proc");
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		char *rp;
		ssize_t got;
		int fd, ppid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (got <= 0)
			continue;
		buf[got] = '\0';
		rp = strrchr(buf, ')');
		if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == host)
			out[n++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return n;
}

/* Worker processes of the traced host that we know of (procs entries). */
#define MAX_FOLLOWED 1024
static pid_t followed[MAX_FOLLOWED];
/* The pools of the worker processes found running (follow_workers): process
 * pools even when none of their workers started or ended while we traced. */
#define MAX_PROC_POOLS 64
static __u64 proc_pools[MAX_PROC_POOLS];
static int nproc_pools;

static void note_proc_pool(__u64 pool)
{
	for (int i = 0; i < nproc_pools; i++)
		if (proc_pools[i] == pool)
			return;
	if (nproc_pools < MAX_PROC_POOLS)
		proc_pools[nproc_pools++] = pool;
}
static int nfollowed;

/* Find the host's worker processes (called every ~100 ms: workers are
 * respawned after a crash). The BPF side already follows every worker that
 * starts while we trace (proc_worker_start); this catches those that were
 * running before we attached, and attaches the probes of a library file a
 * worker maps that we have not attached yet. */
static void follow_workers(struct knit_trace_bpf *skel)
{
	pid_t kids[MAX_FOLLOWED];
	int nk = host_children(env.pid, kids, MAX_FOLLOWED), keep = 0;
	int pfd = bpf_map__fd(skel->maps.procs);

	/* Forget workers that are gone (the BPF side dropped them at exit). */
	for (int i = 0; i < nfollowed; i++) {
		bool alive = false;

		for (int k = 0; k < nk && !alive; k++)
			alive = kids[k] == followed[i];
		if (alive)
			followed[keep++] = followed[i];
	}
	nfollowed = keep;
	for (int k = 0; k < nk && nfollowed < MAX_FOLLOWED; k++) {
		char mapped[PATH_MAX], rooted[PATH_MAX + 32];
		struct kt_proc pv = {.host_tgid = (__u32)env.pid};
		const char *lib = mapped, *why = NULL;
		__u32 tgid = (__u32)kids[k];
		unsigned present;
		bool known = false;

		for (int i = 0; i < nfollowed && !known; i++)
			known = followed[i] == kids[k];
		if (known || !knit_worker_pool(kids[k], &pv.host_pool, &pv.lane))
			continue;
		/* Not mapped yet (the loader is still at work): next round. */
		if (find_mapped_lib(kids[k], mapped, sizeof(mapped)))
			continue;
		if (access(mapped, R_OK)) {
			snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", (int)kids[k], mapped);
			lib = rooted;
		}
		if (scan_probes(lib, &present, &why) > 0)
			attach_lib(skel, lib, -1, present);
		else if (env.verbose)
			fprintf(stderr, "knit-trace: worker %d: no probes in %s\n", (int)kids[k],
				lib);
		/* NOEXIST: an entry the worker's own start probe made knows
		 * its view already. */
		bpf_map_update_elem(pfd, &tgid, &pv, BPF_NOEXIST);
		/* Its lane's tid, for the host's rings: a process lane's ring
		 * probe has none (the worker's tid is not the host's to know),
		 * and a worker that parked before we attached taught us none.
		 * NOEXIST: what the BPF side learnt is newer. */
		{
			struct kt_lane_key lk = {.pool = pv.host_pool, .lane = pv.lane};

			bpf_map_update_elem(bpf_map__fd(skel->maps.lanetid), &lk, &tgid,
					    BPF_NOEXIST);
		}
		followed[nfollowed++] = kids[k];
		note_proc_pool(pv.host_pool);
		if (env.verbose)
			fprintf(stderr, "knit-trace: following worker process %d (pool 0x%llx)\n",
				(int)kids[k], pv.host_pool);
	}
}

/* ---- reading the maps ---------------------------------------------------- */

struct lane_rec {
	__u64 pool;
	uint32_t lane; /* or KT_LANE_POOL */
	bool have_counts;
	struct kt_counts counts;
	unsigned have_hist; /* bitmask by view */
	struct kt_hist hist[KT_NR_VIEWS];
};

static struct lane_rec *recs;
static size_t nrecs, caprecs;

static struct lane_rec *rec_get(__u64 pool, uint32_t lane)
{
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].pool == pool && recs[i].lane == lane)
			return &recs[i];
	if (nrecs == caprecs) {
		size_t nc = caprecs ? caprecs * 2 : 16;
		struct lane_rec *n = realloc(recs, nc * sizeof(*n));
		if (!n)
			return NULL;
		recs = n;
		caprecs = nc;
	}
	memset(&recs[nrecs], 0, sizeof(recs[0]));
	recs[nrecs].pool = pool;
	recs[nrecs].lane = lane;
	return &recs[nrecs++];
}

static int rec_cmp(const void *a, const void *b)
{
	const struct lane_rec *x = a, *y = b;

	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	return 0;
}

/* Copy `counts` and `hists` into recs[], then delete what was read, so the
 * next interval starts from zero. */
static int collect(struct knit_trace_bpf *skel)
{
	int cfd = bpf_map__fd(skel->maps.counts), hfd = bpf_map__fd(skel->maps.hists);
	struct kt_lane_key lk, lnext, *lprev = NULL;
	struct kt_hist_key hk, hnext, *hprev = NULL;
	struct lane_rec *r;

	nrecs = 0;
	while (!bpf_map_get_next_key(cfd, lprev, &lnext)) {
		lk = lnext;
		lprev = &lk;
		r = rec_get(lk.pool, lk.lane);
		if (!r)
			return -ENOMEM;
		if (bpf_map_lookup_elem(cfd, &lk, &r->counts))
			continue;
		r->have_counts = true;
	}
	while (!bpf_map_get_next_key(hfd, hprev, &hnext)) {
		hk = hnext;
		hprev = &hk;
		if (hk.view >= KT_NR_VIEWS)
			continue;
		r = rec_get(hk.pool, hk.lane);
		if (!r)
			return -ENOMEM;
		if (bpf_map_lookup_elem(hfd, &hk, &r->hist[hk.view]))
			continue;
		r->have_hist |= 1u << hk.view;
	}
	for (size_t i = 0; i < nrecs; i++) {
		struct kt_lane_key k = {.pool = recs[i].pool, .lane = recs[i].lane};

		if (recs[i].have_counts)
			bpf_map_delete_elem(cfd, &k);
		for (uint32_t v = 0; v < KT_NR_VIEWS; v++) {
			struct kt_hist_key h = {
				.pool = recs[i].pool, .lane = recs[i].lane, .view = v};
			if (recs[i].have_hist & (1u << v))
				bpf_map_delete_elem(hfd, &h);
		}
	}
	qsort(recs, nrecs, sizeof(recs[0]), rec_cmp);
	return 0;
}

static void hist_merge(struct kt_hist *into, const struct kt_hist *h)
{
	for (int i = 0; i < KT_MAX_SLOTS; i++)
		into->slots[i] += h->slots[i];
	if (h->count && (!into->count || h->min_ns < into->min_ns))
		into->min_ns = h->min_ns;
	if (h->max_ns > into->max_ns)
		into->max_ns = h->max_ns;
	into->count += h->count;
	into->sum_ns += h->sum_ns;
}

/* The q-quantile (0 < q <= 1) estimated from the log2 histogram: the bucket
 * holding the sample of rank q*count is found exactly; within it the value is
 * interpolated linearly over the bucket's range narrowed to [min, max] (all
 * the histogram knows). So the estimate is always inside the true value's
 * bucket and inside [min, max], and is exact when that range is one value
 * (e.g. a single sample). Not a measured value: printed marked "~". */
static __u64 hist_quantile(const struct kt_hist *h, double q)
{
	__u64 total = 0, cum = 0;
	double rank;

	for (int i = 0; i < KT_MAX_SLOTS; i++)
		total += h->slots[i];
	if (!total)
		return 0;
	rank = q * (double)total;
	if (rank < 1)
		rank = 1;
	for (int i = 0; i < KT_MAX_SLOTS; i++) {
		double lo, hi, frac;

		if (!h->slots[i] || (double)(cum + h->slots[i]) < rank) {
			cum += h->slots[i];
			continue;
		}
		lo = i ? (double)(1ULL << i) : 0;
		hi = i == KT_MAX_SLOTS - 1 ? (double)h->max_ns : (double)((2ULL << i) - 1);
		if (lo < (double)h->min_ns)
			lo = (double)h->min_ns;
		if (hi > (double)h->max_ns)
			hi = (double)h->max_ns;
		if (hi < lo) /* min/max raced with the buckets: stay inside min..max */
			hi = lo;
		frac = (rank - (double)cum) / (double)h->slots[i];
		return (__u64)(lo + frac * (hi - lo) + 0.5);
	}
	return h->max_ns;
}

/* ---- text output --------------------------------------------------------- */

static void print_stars(__u64 val, __u64 max, int width)
{
	int n = max ? (int)((val * (__u64)width + max - 1) / max) : 0;

	if (n > width)
		n = width;
	for (int i = 0; i < width; i++)
		putchar(i < n ? '*' : ' ');
}

static void print_hist(const struct kt_hist *h)
{
	int first = -1, last = -1;
	__u64 max = 0;

	for (int i = 0; i < KT_MAX_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
		if (h->slots[i] > max)
			max = h->slots[i];
	}
	if (first < 0) {
		printf("     (no samples)\n");
		return;
	}
	printf("%25s : %-10s distribution\n", units_name[env.units], "count");
	for (int i = first; i <= last; i++) {
		__u64 lo = i ? 1ULL << i : 0, hi = (2ULL << i) - 1;

		/* Buckets are log2 of nanoseconds; other units show their edges
		 * scaled, with the decimals that keeps them exact. */
		if (env.units == UNITS_NS)
			printf("%11llu -> %-10llu : %-10llu |", lo, hi, h->slots[i]);
		else
			printf("%11.*f -> %-10.*f : %-10llu |", env.units == UNITS_US ? 3 : 6,
			       lo / units_div[env.units], env.units == UNITS_US ? 3 : 6,
			       hi / units_div[env.units], h->slots[i]);
		print_stars(h->slots[i], max, 40);
		printf("|\n");
	}
}

static const char *lane_str(uint32_t lane, char *buf, size_t n)
{
	if (lane == KT_LANE_POOL)
		snprintf(buf, n, "pool");
	else
		snprintf(buf, n, "%u", lane);
	return buf;
}

static void print_summary_row(__u64 pool, const char *lane, int view, const struct kt_hist *h)
{
	const double d = units_div[env.units];
	const int prec = env.units == UNITS_NS ? 0 : env.units == UNITS_US ? 1 : 3;

	printf("0x%-14llx %-5s %-11s %8llu %10.*f %10.*f %10.*f %10.*f\n", pool, lane,
	       view_name[view], h->count, prec, h->min_ns / d, prec, hist_quantile(h, 0.5) / d,
	       prec, hist_quantile(h, 0.99) / d, prec, h->max_ns / d);
}

/* The counts of pool recs[first].pool, summed over its lanes and pool level. */
static void pool_totals(size_t first, struct kt_counts *tot)
{
	memset(tot, 0, sizeof(*tot));
	for (size_t j = first; j < nrecs && recs[j].pool == recs[first].pool; j++) {
		for (int k = 0; k < KT_NR_EVENTS; k++)
			tot->ev[k] += recs[j].counts.ev[k];
		tot->signals |= recs[j].counts.signals;
	}
}

/* What kind of pool the counts show: "processes" when a worker process of
 * it started, ended or was found running; "threads" when its workers' own
 * probes fired with none of that; "unknown" when only the host's probes
 * fired (a process pool traced with --no-follow, or an idle pool). */
static const char *pool_kind(__u64 pool, const struct kt_counts *tot)
{
	const __u64 *e = tot->ev;

	for (int i = 0; i < nproc_pools; i++)
		if (proc_pools[i] == pool)
			return "processes";
	for (int k = KT_EV_PROC_STOPPED; k <= KT_EV_PROC_OTHER; k++)
		if (e[k])
			return "processes";
	if (e[KT_EV_PROC_START])
		return "processes";
	if (e[KT_EV_WORKER_PARK] || e[KT_EV_WAKE_RUNG] || e[KT_EV_WAKE_WATCHDOG] ||
	    e[KT_EV_WAKE_SPURIOUS] || e[KT_EV_WAKE_STOP] || e[KT_EV_TASK_START] ||
	    e[KT_EV_STOP_ACK])
		return "threads";
	return "unknown";
}

/* "1 call", "2 calls": n and the singular or the plural. */
static const char *plural(__u64 n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* The signals of a signal mask as "SIGKILL, SIGSEGV" into buf. */
static const char *signal_names(__u64 mask, char *buf, size_t n)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int sig = 1; sig <= 64 && at < n; sig++) {
		const char *abbrev;

		if (!(mask & (1ULL << (sig - 1))))
			continue;
		abbrev = sigabbrev_np(sig);
		at += (size_t)snprintf(buf + at, n - at, "%s%s%s", at ? ", " : "",
				       abbrev ? "SIG" : "signal ", abbrev ? abbrev : "");
		if (!abbrev && at < n)
			at += (size_t)snprintf(buf + at, n - at, "%d", sig);
	}
	return buf;
}

/* One line per pool: its kind, its calls (synchronous and ticketed apart),
 * the doorbell, and for a process pool its workers' starts and ends. */
static void print_pool_line(size_t first)
{
	const __u64 pool = recs[first].pool;
	struct kt_counts tot;
	const __u64 *pl = NULL;
	const char *kind;

	pool_totals(first, &tot);
	for (size_t j = first; j < nrecs && recs[j].pool == pool; j++)
		if (recs[j].lane == KT_LANE_POOL)
			pl = recs[j].counts.ev;
	kind = pool_kind(pool, &tot);
	printf("pool 0x%llx%s", pool,
	       !strcmp(kind, "threads")     ? " (thread pool)"
	       : !strcmp(kind, "processes") ? " (process pool)"
					    : "");
	{
		const __u64 done = tot.ev[KT_EV_TASK_COMPLETE], sync = tot.ev[KT_EV_SYNC_COMPLETE];
		const __u64 shared = pl ? pl[KT_EV_TASK_ENQUEUE] : 0;

		printf(": %llu %s completed (%llu synchronous, %llu ticketed", done,
		       plural(done, "call", "calls"), sync, done - sync);
		if (shared) /* steal: the ticketed calls' enqueues at pool level */
			printf("; %llu %s through the shared submit queue", shared,
			       plural(shared, "call", "calls"));
		printf("), %llu doorbell %s, %llu doorbell %s", tot.ev[KT_EV_DOORBELL_ARM],
		       plural(tot.ev[KT_EV_DOORBELL_ARM], "arm", "arms"),
		       tot.ev[KT_EV_DOORBELL_WAKE],
		       plural(tot.ev[KT_EV_DOORBELL_WAKE], "wake", "wakes"));
	}
	if (!strcmp(kind, "processes")) {
		const __u64 *e = tot.ev;
		const __u64 started = e[KT_EV_PROC_START];
		const __u64 died = e[KT_EV_PROC_SIGNAL] + e[KT_EV_PROC_STATUS] +
				   e[KT_EV_PROC_PROTO] + e[KT_EV_PROC_OOM] + e[KT_EV_PROC_SANDBOX];
		char sigs[256];
		const char *sep = "";

		printf("; %llu worker %s started, %llu died", started,
		       plural(started, "process", "processes"), died);
		if (died) {
			printf(" (");
			if (e[KT_EV_PROC_SIGNAL]) {
				printf("%llu killed by %s", e[KT_EV_PROC_SIGNAL],
				       signal_names(tot.signals, sigs, sizeof(sigs)));
				sep = ", ";
			}
			if (e[KT_EV_PROC_STATUS]) {
				printf("%s%llu exited on %s own", sep, e[KT_EV_PROC_STATUS],
				       plural(e[KT_EV_PROC_STATUS], "its", "their"));
				sep = ", ";
			}
			if (e[KT_EV_PROC_PROTO]) {
				printf("%s%llu killed for a protocol error", sep,
				       e[KT_EV_PROC_PROTO]);
				sep = ", ";
			}
			if (e[KT_EV_PROC_OOM]) {
				printf("%s%llu killed by the kernel's OOM killer", sep,
				       e[KT_EV_PROC_OOM]);
				sep = ", ";
			}
			if (e[KT_EV_PROC_SANDBOX])
				printf("%s%llu killed by the sandbox (a forbidden syscall)", sep,
				       e[KT_EV_PROC_SANDBOX]);
			printf(")");
		}
		if (e[KT_EV_PROC_KILLED])
			printf(", %llu killed by the pool", e[KT_EV_PROC_KILLED]);
		if (e[KT_EV_PROC_OTHER])
			printf(", %llu ended for a reason this knit-trace does not know",
			       e[KT_EV_PROC_OTHER]);
		printf(", %llu stopped when asked", e[KT_EV_PROC_STOPPED]);
	}
	printf("\n");
}

static void print_text(void)
{
	char lb[16];

	if (!nrecs) {
		printf("no probe fired\n");
		return;
	}
	/* Histograms, per lane (or per pool with --by-pool). */
	for (int v = 0; v < KT_NR_VIEWS; v++) {
		if (!(env.hist_views & (1u << v)))
			continue;
		for (size_t i = 0; i < nrecs; i++) {
			struct kt_hist merged;
			size_t j;

			if (!env.by_pool) {
				if (!(recs[i].have_hist & (1u << v)))
					continue;
				printf("\npool 0x%llx lane %s: %s\n", recs[i].pool,
				       lane_str(recs[i].lane, lb, sizeof(lb)), view_title[v]);
				print_hist(&recs[i].hist[v]);
				continue;
			}
			if (i && recs[i - 1].pool == recs[i].pool)
				continue;
			memset(&merged, 0, sizeof(merged));
			for (j = i; j < nrecs && recs[j].pool == recs[i].pool; j++)
				if (recs[j].have_hist & (1u << v))
					hist_merge(&merged, &recs[j].hist[v]);
			if (!merged.count)
				continue;
			printf("\npool 0x%llx (all lanes): %s\n", recs[i].pool, view_title[v]);
			print_hist(&merged);
		}
	}

	/* Latency summary: every view with samples, per lane and per pool. */
	{
		char h[4][16];
		const char *u = units_short[env.units];

		snprintf(h[0], sizeof(h[0]), "MIN(%s)", u);
		snprintf(h[1], sizeof(h[1]), "~P50(%s)", u);
		snprintf(h[2], sizeof(h[2]), "~P99(%s)", u);
		snprintf(h[3], sizeof(h[3]), "MAX(%s)", u);
		printf("\n%-16s %-5s %-11s %8s %10s %10s %10s %10s\n", "POOL", "LANE", "VIEW",
		       "COUNT", h[0], h[1], h[2], h[3]);
	}
	for (size_t i = 0; i < nrecs; i++) {
		size_t end = i;

		while (end < nrecs && recs[end].pool == recs[i].pool)
			end++;
		for (size_t j = i; j < end; j++)
			for (int v = 0; v < KT_NR_VIEWS; v++)
				if (recs[j].have_hist & (1u << v))
					print_summary_row(recs[j].pool,
							  lane_str(recs[j].lane, lb, sizeof(lb)), v,
							  &recs[j].hist[v]);
		for (int v = 0; v < KT_NR_VIEWS; v++) {
			struct kt_hist merged;
			int lanes = 0;

			memset(&merged, 0, sizeof(merged));
			for (size_t j = i; j < end; j++)
				if (recs[j].lane != KT_LANE_POOL &&
				    (recs[j].have_hist & (1u << v))) {
					hist_merge(&merged, &recs[j].hist[v]);
					lanes++;
				}
			if (lanes > 1)
				print_summary_row(recs[i].pool, "all", v, &merged);
		}
		i = end - 1;
	}

	/* Probe counts. */
	/* ENQ: every call placed on the lane; SYNC: of those, the knit_calls
	 * served on its synchronous line (under steal, ENQ holds only those:
	 * the ticketed calls go through the shared submit queue). */
	printf("\n%-16s %-5s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n", "POOL", "LANE",
	       "PARK", "RUNG", "WDOG", "SPUR", "STOPW", "RING", "RUNNING", "DBRING", "ENQ", "SYNC",
	       "DONE", "FAIL", "STOPACK");
	for (size_t i = 0; i < nrecs; i++) {
		const __u64 *e = recs[i].counts.ev;

		if (!recs[i].have_counts || recs[i].lane == KT_LANE_POOL)
			continue;
		printf("0x%-14llx %-5u %7llu %7llu %7llu %7llu"
		       " %7llu %7llu %7llu %7llu %7llu %7llu"
		       " %7llu %7llu %7llu\n",
		       recs[i].pool, recs[i].lane, e[KT_EV_WORKER_PARK], e[KT_EV_WAKE_RUNG],
		       e[KT_EV_WAKE_WATCHDOG], e[KT_EV_WAKE_SPURIOUS], e[KT_EV_WAKE_STOP],
		       e[KT_EV_HOST_RING], e[KT_EV_RING_RUNNING], e[KT_EV_DOORBELL_RING],
		       e[KT_EV_TASK_ENQUEUE], e[KT_EV_SYNC_ENQUEUE], e[KT_EV_TASK_DONE],
		       e[KT_EV_TASK_FAILED], e[KT_EV_STOP_ACK]);
	}
	for (size_t i = 0; i < nrecs; i++) {
		if (i && recs[i - 1].pool == recs[i].pool)
			continue;
		print_pool_line(i);
	}
}

/* ---- JSON output --------------------------------------------------------- */

static void json_hist(const struct kt_hist *h)
{
	bool first = true;

	printf("{\"count\":%llu,\"min_ns\":%llu,\"mean_ns\":%llu"
	       ",\"p50_ns\":%llu,\"p99_ns\":%llu,\"max_ns\":%llu,\"hist\":[",
	       h->count, h->min_ns, h->count ? h->sum_ns / h->count : 0, hist_quantile(h, 0.5),
	       hist_quantile(h, 0.99), h->max_ns);
	for (int i = 0; i < KT_MAX_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		printf("%s[%llu,%llu,%llu]", first ? "" : ",", i ? 1ULL << i : 0, (2ULL << i) - 1,
		       h->slots[i]);
		first = false;
	}
	printf("]}");
}

static void json_latency(const struct lane_rec *r)
{
	bool first = true;

	printf("\"latency\":{");
	for (int v = 0; v < KT_NR_VIEWS; v++) {
		if (!(r->have_hist & (1u << v)))
			continue;
		printf("%s\"%s\":", first ? "" : ",", view_name[v]);
		json_hist(&r->hist[v]);
		first = false;
	}
	printf("}");
}

static void json_counts(const struct kt_counts *c)
{
	const __u64 *e = c->ev;

	printf("\"counts\":{");
	for (int k = 0; k < KT_NR_EVENTS; k++)
		printf("\"%s\":%llu,", event_name[k], e[k]);
	printf("\"worker_wake\":%llu},\"death_signals\":[",
	       e[KT_EV_WAKE_RUNG] + e[KT_EV_WAKE_WATCHDOG] + e[KT_EV_WAKE_SPURIOUS] +
		       e[KT_EV_WAKE_STOP] + e[KT_EV_WAKE_OTHER]);
	for (int sig = 1, first = 1; sig <= 64; sig++)
		if (c->signals & (1ULL << (sig - 1))) {
			printf("%s%d", first ? "" : ",", sig);
			first = 0;
		}
	printf("]");
}

static void print_json(const char *lib, double secs)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("{\"time\":%lld.%09ld,\"seconds\":%.3f,\"pid\":%d,\"library\":\"",
	       (long long)ts.tv_sec, ts.tv_nsec, secs, (int)env.pid);
	for (const char *c = lib; *c; c++) /* paths: escape what JSON needs */
		if (*c == '"' || *c == '\\')
			printf("\\%c", *c);
		else if ((unsigned char)*c < 0x20)
			printf("\\u%04x", *c);
		else
			putchar(*c);
	/* p50_ns/p99_ns are estimates (hist_quantile), say so once per report. */
	printf("\",\"quantiles\":\"log2-bucket-interpolated\",\"pools\":[");
	for (size_t i = 0; i < nrecs;) {
		size_t end = i;
		struct kt_counts tot;
		bool first = true;

		while (end < nrecs && recs[end].pool == recs[i].pool)
			end++;
		pool_totals(i, &tot);
		printf("%s{\"pool\":\"0x%llx\",\"kind\":\"%s\",\"lanes\":[", i ? "," : "",
		       recs[i].pool, pool_kind(recs[i].pool, &tot));
		for (size_t j = i; j < end; j++) {
			if (recs[j].lane == KT_LANE_POOL)
				continue;
			printf("%s{\"lane\":%u,", first ? "" : ",", recs[j].lane);
			json_counts(&recs[j].counts);
			printf(",");
			json_latency(&recs[j]);
			printf("}");
			first = false;
		}
		printf("],\"pool_level\":{");
		{
			struct lane_rec empty = {0};
			const struct lane_rec *pr = &empty;

			for (size_t j = i; j < end; j++)
				if (recs[j].lane == KT_LANE_POOL)
					pr = &recs[j];
			json_counts(&pr->counts);
			printf(",");
			json_latency(pr);
		}
		printf("},\"totals\":{");
		json_counts(&tot);
		printf(",\"latency\":{");
		first = true;
		for (int v = 0; v < KT_NR_VIEWS; v++) {
			struct kt_hist merged;

			memset(&merged, 0, sizeof(merged));
			for (size_t j = i; j < end; j++)
				if (recs[j].have_hist & (1u << v))
					hist_merge(&merged, &recs[j].hist[v]);
			if (!merged.count)
				continue;
			printf("%s\"%s\":", first ? "" : ",", view_name[v]);
			json_hist(&merged);
			first = false;
		}
		printf("}}}");
		i = end;
	}
	printf("]}\n");
}

/* ---- detaching ----------------------------------------------------------- */

/*
 * Removing a uprobe waits in the kernel for a grace period, under a mutex
 * all uprobe perf events share: about 0.1 s per probe location, one after
 * the other even from several threads, so the two dozen places our probes
 * sit in cost seconds after the report. Whoever drops the last reference to
 * a perf event pays for it. So every probe is disabled here (it stops
 * firing at once) and a child holding the same perf events, its stdio on
 * /dev/null and in a session of its own, waits for our exit and then exits
 * itself: the removals happen in it, and we return as soon as the report
 * is out. Where the child cannot be made, the removal is ours.
 */
static void detach_all(void)
{
	int pfd[2];

	if (!nlinks)
		return;
	fflush(stdout);
	fflush(stderr);
	if (pipe(pfd) == 0) {
		pid_t pid = fork();

		if (pid == 0) {
			int null = open("/dev/null", O_RDWR);
			char c;

			close(pfd[1]);
			if (null >= 0) {
				dup2(null, 0);
				dup2(null, 1);
				dup2(null, 2);
				if (null > 2)
					close(null);
			}
			setsid();
			/* EOF: the parent exited (its write end went with it). */
			while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		close(pfd[0]);
		if (pid < 0)
			close(pfd[1]);
		/* Else the write end stays open until we exit. */
	}
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]); /* disables, then closes our reference */
	nlinks = 0;
}

/* ---- main ---------------------------------------------------------------- */

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The traced process has exited: no such pid, or only its zombie is left
 * (a parent that does not reap it must not keep us tracing). */
static bool process_gone(void)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	if (!env.pid)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)env.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	rp = strrchr(buf, ')'); /* the command name may hold anything but ends at the last ')' */
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

static int report(struct knit_trace_bpf *skel, const char *lib, double secs)
{
	int err = collect(skel);

	if (err) {
		fprintf(stderr, "knit-trace: reading the BPF maps failed: %s\n", strerror(-err));
		return err;
	}
	if (env.json) {
		print_json(lib, secs);
	} else {
		if (env.timestamp) {
			char tsbuf[32];
			time_t t = time(NULL);
			strftime(tsbuf, sizeof(tsbuf), "%H:%M:%S", localtime(&t));
			printf("\n%s", tsbuf);
		}
		printf("\n--- %.1f s ---\n", secs);
		print_text();
	}
	fflush(stdout);
	return 0;
}

/* Capability numbers from linux/capability.h, spelled out because older
 * headers lack CAP_PERFMON and CAP_BPF (Linux 5.8). */
enum { KT_CAP_SYS_PTRACE = 19, KT_CAP_SYS_ADMIN = 21, KT_CAP_PERFMON = 38, KT_CAP_BPF = 39 };

/* The effective capability set, from CapEff in /proc/self/status (no libcap). */
static int cap_effective(uint64_t *eff)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %" SCNx64, eff) == 1;
	fclose(f);
	return found ? 0 : -ENOENT;
}

static bool has_cap(uint64_t eff, int cap) { return eff >> cap & 1; }

/* The capability missing to load the BPF programs and place the uprobes:
 * CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, which implies both (and is all
 * that kernels before 5.8 know). NULL when nothing is missing or the set
 * cannot be read (then the kernel has the last word). */
static const char *missing_bpf_cap(void)
{
	uint64_t eff;

	if (cap_effective(&eff) || has_cap(eff, KT_CAP_SYS_ADMIN))
		return NULL;
	if (!has_cap(eff, KT_CAP_BPF))
		return "CAP_BPF";
	if (!has_cap(eff, KT_CAP_PERFMON))
		return "CAP_PERFMON";
	return NULL;
}

static bool lacks_admin_cap(void)
{
	uint64_t eff;

	return !cap_effective(&eff) && !has_cap(eff, KT_CAP_SYS_ADMIN);
}

static bool lacks_ptrace_cap(void)
{
	uint64_t eff;

	return !cap_effective(&eff) && !has_cap(eff, KT_CAP_SYS_PTRACE);
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		.options = opts,
		.parser = parse_arg,
		.doc = argp_program_doc,
	};
	char mapped[PATH_MAX], rooted[PATH_MAX + 32];
	const char *lib, *why = NULL;
	struct knit_trace_bpf *skel = NULL;
	double start, last, now;
	int err, n, attached = 0;
	unsigned present = 0;
	bool follow;
	long reports = 0;

	err = argp_parse(&argp, argc, argv, 0, NULL, NULL);
	if (err)
		return 1;
	follow = env.pid && !env.no_follow;
	for (int k = 0; k < KT_NR_EVENTS; k++)
		if (!event_name[k]) {
			fprintf(stderr, "knit-trace: internal error: event %d has no name\n", k);
			return 1;
		}

	const char *cap = missing_bpf_cap();
	if (cap) {
		fprintf(stderr,
			"knit-trace: missing capability %s (loading BPF programs and "
			"placing uprobes needs CAP_BPF and CAP_PERFMON, or root): try "
			"sudo knit-trace ...\n",
			cap);
		return 1;
	}
	if (access(BTF_PATH, R_OK)) {
		fprintf(stderr,
			"knit-trace: this kernel has no BTF (%s: %s); knit-trace "
			"needs a kernel built with CONFIG_DEBUG_INFO_BTF=y\n",
			BTF_PATH, strerror(errno));
		return 1;
	}

	lib = env.lib;
	if (env.pid && !lib) {
		err = find_mapped_lib(env.pid, mapped, sizeof(mapped));
		if (err == -ESRCH) {
			fprintf(stderr, "knit-trace: no process %d\n", (int)env.pid);
			return 1;
		}
		if (err == -ENOENT) {
			fprintf(stderr,
				"knit-trace: process %d has no libknitting.so mapped (not "
				"linked with -lknitting, or not loaded yet?); give the "
				"library with -l PATH\n",
				(int)env.pid);
			return 1;
		}
		if (err == -EACCES && lacks_ptrace_cap()) {
			fprintf(stderr,
				"knit-trace: missing capability CAP_SYS_PTRACE (reading "
				"/proc/%d/maps of another user's process needs it)\n",
				(int)env.pid);
			return 1;
		}
		if (err) {
			fprintf(stderr, "knit-trace: cannot read /proc/%d/maps: %s\n", (int)env.pid,
				strerror(-err));
			return 1;
		}
		lib = mapped;
		/* The path is the process's view: reach it through its root
		 * (containers) when ours differs. */
		if (access(lib, R_OK)) {
			snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", (int)env.pid, mapped);
			lib = rooted;
		}
	}
	if (process_gone()) {
		fprintf(stderr, "knit-trace: no process %d\n", (int)env.pid);
		return 1;
	}
	n = scan_probes(lib, &present, &why);
	if (n == -2) {
		fprintf(stderr, "knit-trace: cannot open %s: %s\n", lib, why);
		return 1;
	}
	if (n < 0) {
		fprintf(stderr,
			"knit-trace: %s has no USDT probes to attach to (%s); was "
			"libknitting built with -DKNIT_NO_TRACE?\n",
			lib, why);
		return 1;
	}
	if (n == 0) {
		fprintf(stderr,
			"knit-trace: %s has USDT probes but none from provider '%s': "
			"not a libknitting with probes\n",
			lib, PROVIDER);
		return 1;
	}

	libbpf_set_print(libbpf_print_fn);
	skel = knit_trace_bpf__open();
	if (!skel) {
		fprintf(stderr, "knit-trace: cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->filter_tgid = env.pid != 0;
	skel->rodata->targ_pool = env.pool;
	skel->rodata->filter_lane = env.filter_lane;
	skel->rodata->targ_lane = env.lane;

	err = knit_trace_bpf__load(skel);
	if (err) {
		fprintf(stderr,
			"knit-trace: the kernel refused the BPF programs (%s); run with "
			"-v for the verifier's log\n",
			strerror(-err));
		goto cleanup;
	}

	/* Scheduler side: every wake we measure goes through these two. */
	skel->links.kt_sched_wakeup = bpf_program__attach(skel->progs.kt_sched_wakeup);
	skel->links.kt_sched_switch = bpf_program__attach(skel->progs.kt_sched_switch);
	if (!skel->links.kt_sched_wakeup || !skel->links.kt_sched_switch) {
		err = -errno;
		fprintf(stderr,
			"knit-trace: cannot attach to the sched_wakeup/sched_switch "
			"tracepoints (tp_btf): %s\n",
			strerror(errno));
		goto cleanup;
	}
	if (env.pid) {
		__u32 host = (__u32)env.pid, one = 1;

		err = bpf_map_update_elem(bpf_map__fd(skel->maps.hosts), &host, &one, BPF_ANY);
		if (err) {
			err = -errno;
			fprintf(stderr,
				"knit-trace: cannot fill the BPF map of traced processes: %s\n",
				strerror(-err));
			goto cleanup;
		}
	}
	if (follow) {
		/* The end of a worker process drops its procs entry. */
		skel->links.kt_sched_process_exit =
			bpf_program__attach(skel->progs.kt_sched_process_exit);
		if (!skel->links.kt_sched_process_exit) {
			err = -errno;
			fprintf(stderr,
				"knit-trace: cannot attach to the sched_process_exit "
				"tracepoint (tp_btf): %s\n",
				strerror(errno));
			goto cleanup;
		}
	}
	/* Following worker processes: the probes go in every process that maps
	 * the library (the BPF side counts only the host and its workers), so a
	 * respawned worker is traced from its first probe on. */
	attached = attach_lib(skel, lib, follow || !env.pid ? -1 : env.pid, present);
	if (attached < 0) {
		err = attached;
		goto cleanup;
	}
	if (follow)
		follow_workers(skel);

	signal(SIGINT, sig_handler);
	signal(SIGTERM, sig_handler);
	/* Worker processes are named only where the host has some now (its
	 * process pools); those it starts later are followed all the same. */
	if (follow && nfollowed)
		fprintf(stderr,
			"knit-trace: attached %d probes in %s (pid %d and its %d worker %s)",
			attached, lib, (int)env.pid, nfollowed,
			plural((__u64)nfollowed, "process", "processes"));
	else if (env.pid)
		fprintf(stderr, "knit-trace: attached %d probes in %s (pid %d%s)", attached, lib,
			(int)env.pid, env.no_follow ? " only, not its worker processes" : "");
	else
		fprintf(stderr, "knit-trace: attached %d probes in %s (every process)", attached,
			lib);
	/* Say what ends the trace: -d, or interval x count, or Ctrl-C; with -p
	 * also the process exiting. */
	if (env.duration)
		fprintf(stderr, "; tracing for %ld s%s. Hit Ctrl-C to end early.\n", env.duration,
			env.pid ? " or until it exits" : "");
	else if (env.interval && env.times)
		fprintf(stderr,
			"; tracing for %ld reports every %ld s%s. Hit Ctrl-C to end early.\n",
			env.times, env.interval, env.pid ? " or until it exits" : "");
	else
		fprintf(stderr, "; tracing%s. Hit Ctrl-C to end.\n",
			env.pid ? " until it exits" : "");

	start = last = mono_now();
	for (;;) {
		bool gone, done_dur, due;
		struct timespec nap = {0, 100 * 1000 * 1000};

		nanosleep(&nap, NULL);
		if (follow)
			follow_workers(skel);
		now = mono_now();
		gone = process_gone();
		done_dur = env.duration && now - start >= env.duration;
		due = env.interval && now - last >= env.interval;
		if (due || exiting || gone || done_dur) {
			if (due || !env.interval || now - last > 0.05) {
				err = report(skel, lib, now - last);
				if (err)
					break;
				reports++;
			}
			last = now;
		}
		if (exiting || gone || done_dur || (env.times && reports >= env.times))
			break;
	}
	if (process_gone() && !env.json)
		fprintf(stderr, "knit-trace: process %d exited\n", (int)env.pid);

cleanup:
	detach_all();
	knit_trace_bpf__destroy(skel);
	free(recs);
	return err != 0;
}
