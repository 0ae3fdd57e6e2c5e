// SPDX-License-Identifier: MIT
// tools/knit-bench/main.cpp - knit-bench: libknitting against its floors and
// its peers, side by side in one run.
//
//   knit-bench [--passes N] [--case NAME]... [--json FILE] [--plot FILE.png]
//              [--quick] [--list]
//   knit-bench --plot-from FILE.json --plot FILE.png
//
// Usage and output: knit-bench(1) (man/man1/knit-bench.1).
//
// Method: the host is pinned to one CPU, workers and peer threads to
// another (libknitting through its own placement option). Each pass runs
// every case in two parts, alternating with its floor (floor, case, floor,
// case) so drift hits both alike, with a cache-line mode probe before every
// part: this machine kind switches between two speeds on its own, and a
// pass whose floor and case ran in different modes is flagged. Figures are
// medians over passes; ratios are taken per pass, then their median.
//
// --quick is the smoke test `make check` runs: tiny sizes, one pass, and
// the exit status says whether every count checked out (every call
// completed exactly once, the pool's counters agree). It never judges times.
#include "tools/knit-bench/bench.h"

#include <cmath>
#include <cstdarg>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <getopt.h>
#include <sys/utsname.h>

#include <knitting.h>

// The commit knit-bench was built from (`git describe --always --dirty`),
// written by the Makefile; "unknown" outside a git checkout.
#if __has_include("knit-bench-commit.h")
#include "knit-bench-commit.h"
#endif
#ifndef KB_COMMIT
#define KB_COMMIT "unknown"
#endif
#if defined(__clang__)
#define KB_COMPILER __VERSION__ // "Clang 14.0.6 ..."
#elif defined(__GNUC__)
#define KB_COMPILER "gcc " __VERSION__
#else
#define KB_COMPILER __VERSION__
#endif

namespace kb {

Placement g_place;
bool g_quick = false;
bool g_yield = false;
int g_check_failures = 0;

void check(bool ok, const char *fmt, ...)
{
	if (ok)
		return;
	g_check_failures++;
	if (g_check_failures > 20)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "knit-bench: CHECK FAILED: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

std::vector<Case> &cases()
{
	static std::vector<Case> v;
	return v;
}
void add_case(Case c) { cases().push_back(std::move(c)); }
// knit.cpp: a case without a floor alternates with the peer its target
// names when that peer was built, else with the SPSC echo ceiling.
std::string comparison(const std::string &preferred, const std::string &fallback)
{
	for (auto &c : cases())
		if (c.name == preferred)
			return preferred;
	return fallback;
}
std::vector<std::string> &left_out()
{
	static std::vector<std::string> v;
	return v;
}

std::map<std::string, double> metrics_of(const Meas &m)
{
	std::map<std::string, double> r;
	if (!m.samples.empty()) {
		r["p50"] = quantile(m.samples, 0.5);
		r["p99"] = quantile(m.samples, 0.99);
		r["max"] = *std::max_element(m.samples.begin(), m.samples.end());
		double s = 0;
		for (double x : m.samples)
			s += x;
		r["mean"] = s / (double)m.samples.size();
	}
	if (m.ops > 0 && m.ns > 0)
		r["tput"] = m.ops / m.ns * 1e9;
	for (auto &kv : m.extra)
		r[kv.first] = kv.second;
	if (m.calls)
		for (auto &kv : m.counts)
			r[kv.first + "/call"] = kv.second / (double)m.calls;
	return r;
}

namespace {

struct PassResult {
	Meas m, floor;
	bool has_floor = false;
	bool mixed = false; // floor and case parts ran in different modes
};
struct CaseResult {
	const Case *c;
	std::vector<PassResult> passes;
};

std::string fmt_value(double v, const std::string &unit)
{
	char b[64];
	if (unit == "ns") {
		if (v >= 1e6)
			snprintf(b, sizeof b, "%.2f ms", v / 1e6);
		else if (v >= 1e4)
			snprintf(b, sizeof b, "%.1f us", v / 1e3);
		else if (v >= 1e3)
			snprintf(b, sizeof b, "%.2f us", v / 1e3);
		else
			snprintf(b, sizeof b, "%.0f ns", v);
	} else if (unit == "calls/s") {
		if (v >= 1e5)
			snprintf(b, sizeof b, "%.2f M/s", v / 1e6);
		else
			snprintf(b, sizeof b, "%.2f k/s", v / 1e3); // long calls
	} else if (unit == "x") {
		snprintf(b, sizeof b, "%.3fx", v);
	} else if (unit == "%") {
		snprintf(b, sizeof b, "%.2f %%", v);
	} else if (unit == "ms") {
		snprintf(b, sizeof b, "%.1f ms", v);
	} else {
		snprintf(b, sizeof b, "%.3g %s", v, unit.c_str());
	}
	return b;
}

std::string json_str(const std::string &s)
{
	std::string o = "\"";
	for (char ch : s) {
		if (ch == '"' || ch == '\\')
			o += '\\', o += ch;
		else if ((unsigned char)ch < 0x20)
			o += ' ';
		else
			o += ch;
	}
	return o + "\"";
}
std::string json_num(double v)
{
	if (!std::isfinite(v))
		return "null";
	char b[64];
	snprintf(b, sizeof b, "%.6g", v);
	return b;
}

struct Row {
	std::string cs, metric, unit, floor_name, peer_name, note;
	double value = NAN, floor_value = NAN, ratio = NAN, peer_value = NAN, peer_ratio = NAN;
	std::vector<double> per_pass, per_pass_ratio;
	std::vector<std::string> modes;
	std::vector<bool> mixed;
	Better better = Better::Lower;
};

std::string read_model()
{
	std::ifstream f("/proc/cpuinfo");
	std::string line;
	while (std::getline(f, line))
		if (line.rfind("model name", 0) == 0) {
			auto p = line.find(':');
			return p == std::string::npos ? line : line.substr(p + 2);
		}
	return "unknown";
}

const char kUsage[] = "usage: knit-bench [--passes N] [--case NAME]... [--json FILE] [--plot "
		      "FILE.png] [--quick]\n"
		      "       knit-bench --list\n"
		      "       knit-bench --plot-from FILE.json --plot FILE.png\n";

void help()
{
	printf("%s", kUsage);
	printf("\nlibknitting against its floors (the least its protocol can cost) and its peers\n"
	       "(other libraries doing the same job), side by side in one run.\n\n"
	       "  -p, --passes N          passes over every case, 1..1000 (default 3; 1 with "
	       "--quick);\n"
	       "                          figures are medians over the passes\n"
	       "  -c, --case NAME         run only the case NAME, or every case NAME prefixes;\n"
	       "                          repeatable; a libknitting case brings the peers of its\n"
	       "                          scenario along (its best-peer comparison)\n"
	       "  -j, --json FILE         write every result, with the run's metadata, as JSON\n"
	       "  -P, --plot FILE.png     draw libknitting's time per call relative to its floor\n"
	       "                          and to the best peer, per case (needs gnuplot)\n"
	       "  -F, --plot-from FILE.json\n"
	       "                          draw --plot from a saved --json file; runs nothing\n"
	       "  -q, --quick             the smoke test: tiny sizes, one pass, every count "
	       "checked;\n"
	       "                          the times mean nothing\n"
	       "  -l, --list              list the cases and exit\n"
	       "  -h, --help              this text\n"
	       "  -V, --version           knit-bench's and the loaded libknitting's version\n\n"
	       "Exit status: 0 done, 1 a count check or the plot failed, 2 a usage error.\n"
	       "See knit-bench(1).\n");
}

[[noreturn]] void usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "knit-bench: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%sTry 'knit-bench --help' for more.\n", kUsage);
	exit(2);
}

// A whole decimal number in [lo, hi], nothing else: "3" yes, "abc",
// "3x", "-1", "" no.
unsigned long parse_count(const char *opt, const char *s, unsigned long lo, unsigned long hi)
{
	char *end = nullptr;
	errno = 0;
	if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ')
		usage_error("%s wants a number from %lu to %lu, not '%s'", opt, lo, hi, s);
	const unsigned long v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		usage_error("%s wants a number from %lu to %lu, not '%s'", opt, lo, hi, s);
	return v;
}

std::string version_string(uint32_t v)
{
	char b[32];
	snprintf(b, sizeof b, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
	return b;
}

// Now, as ISO 8601 in UTC.
std::string utc_now()
{
	char b[32];
	time_t t = time(nullptr);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return b;
}

} // namespace
} // namespace kb

using namespace kb;

int main(int argc, char **argv)
{
	int passes = 3;
	bool passes_set = false, list = false;
	std::vector<std::string> only; // --case, repeatable
	std::string json, plot, plot_from;
	static const option longopts[] = {
		{"passes", required_argument, nullptr, 'p'},
		{"case", required_argument, nullptr, 'c'},
		{"json", required_argument, nullptr, 'j'},
		{"plot", required_argument, nullptr, 'P'},
		{"plot-from", required_argument, nullptr, 'F'},
		{"quick", no_argument, nullptr, 'q'},
		{"list", no_argument, nullptr, 'l'},
		{"help", no_argument, nullptr, 'h'},
		{"version", no_argument, nullptr, 'V'},
		{nullptr, 0, nullptr, 0},
	};
	opterr = 0; // our messages, not getopt's
	for (;;) {
		const int prev = optind;
		const int o = getopt_long(argc, argv, ":p:c:j:P:F:qlhV", longopts, nullptr);
		if (o == -1)
			break;
		const char *arg_name = prev < argc ? argv[prev] : "";
		switch (o) {
		case 'p':
			passes = (int)parse_count("--passes", optarg, 1, 1000);
			passes_set = true;
			break;
		case 'c':
			if (!*optarg)
				usage_error("--case wants a case name (see --list)");
			only.push_back(optarg);
			break;
		case 'j':
			json = optarg;
			break;
		case 'P':
			plot = optarg;
			break;
		case 'F':
			plot_from = optarg;
			break;
		case 'q':
			g_quick = true;
			break;
		case 'l':
			list = true;
			break;
		case 'h':
			help();
			return 0;
		case 'V':
			// First line: the version it was built as (knitting.h), as
			// every tool of libknitting prints it.
			printf("knit-bench %d.%d.%d\nlibknitting %s loaded, commit %s\n",
			       KNIT_VERSION_MAJOR, KNIT_VERSION_MINOR, KNIT_VERSION_PATCH,
			       version_string(knit_version()).c_str(), KB_COMMIT);
			return 0;
		case ':':
			usage_error("%s needs a value", arg_name);
		default:
			usage_error("unknown option '%s'", arg_name);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (!plot_from.empty()) {
		if (plot.empty())
			usage_error(
				"--plot-from FILE.json needs --plot FILE.png (where to draw it)");
		if (!only.empty() || !json.empty() || g_quick || passes_set || list)
			usage_error("--plot-from runs nothing: it takes only --plot");
		if (plot_from_json(plot_from, plot) != 0)
			return 1;
		printf("wrote %s\n", plot.c_str());
		return 0;
	}
	if (g_quick && !passes_set)
		passes = 1;

	// Placement: host on the first CPU we may use, workers on the second.
	cpu_set_t s;
	CPU_ZERO(&s);
	sched_getaffinity(0, sizeof s, &s);
	std::vector<int> cpus;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &s))
			cpus.push_back(c);
	g_place.ncpu_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
	g_place.cpus = cpus;
	if (cpus.size() >= 2) {
		g_place.host = cpus[0];
		g_place.worker = cpus[1];
		pin_self(g_place.host);
	} else {
		g_yield = true;
	}

	register_floors();
	register_peers();
	register_protocol_floors();
	register_knit();
	if (list) {
		for (auto &c : cases())
			printf("%-36s %s\n", c.name.c_str(), c.note.c_str());
		return 0;
	}
	std::map<std::string, const Case *> by_name;
	for (auto &c : cases())
		by_name[c.name] = &c;
	std::vector<CaseResult> results;
	// --case NAME: that case if one has the name, else every case it
	// prefixes; repeated, every case any of them selects (in --list order).
	for (auto &o : only) {
		bool any = false;
		for (auto &c : cases())
			any = any || c.name == o || c.name.rfind(o, 0) == 0;
		if (!any) {
			fprintf(stderr, "knit-bench: no case matches '%s' (see --list)\n",
				o.c_str());
			return 2;
		}
	}
	std::set<std::string> picked, brought;
	for (auto &c : cases()) {
		bool sel = only.empty();
		for (auto &o : only)
			sel = sel || c.name == o ||
			      (by_name.count(o) == 0 && c.name.rfind(o, 0) == 0);
		if (sel)
			picked.insert(c.name);
	}
	// A libknitting case is judged against the best peer of its scenario:
	// those peers run too (the floor runs alternated with it anyway).
	if (!only.empty())
		for (auto &c : cases())
			if (c.kind == "knit" && picked.count(c.name))
				for (auto &o : cases())
					if (o.kind == "peer" && o.group == c.group &&
					    !picked.count(o.name))
						brought.insert(o.name);
	for (auto &c : cases())
		if (picked.count(c.name) || brought.count(c.name))
			results.push_back({&c, {}});

	utsname u;
	uname(&u);
	const std::string model = read_model();
	printf("knit-bench: %d CPUs online (%s), kernel %s\n", g_place.ncpu_online, model.c_str(),
	       u.release);
	if (g_place.host >= 0)
		printf("placement: host on CPU %d, workers and peer threads on CPU %d\n",
		       g_place.host, g_place.worker);
	else
		printf("placement: only one usable CPU: nothing pinned, host and workers share "
		       "it\n");
	for (auto &l : left_out())
		printf("peer left out: %s\n", l.c_str());
	for (auto &b : brought)
		printf("also running %s: a peer of a selected case's scenario\n", b.c_str());
	const std::string lib_version = version_string(knit_version()), date = utc_now();
	const double probe_ns = mode_probe();
	printf("libknitting %s (commit %s), built with %s, %s\n", lib_version.c_str(), KB_COMMIT,
	       KB_COMPILER, date.c_str());
	printf("mode probe: %.0f ns (%s mode: slow above %.0f ns)\n", probe_ns,
	       probe_ns > kSlowModeNs ? "slow" : "fast", kSlowModeNs);
	printf("passes: %d%s\n\n", passes,
	       g_quick ? " (quick: counts only, the times mean nothing)" : "");

	const uint64_t t_start = now_ns();
	for (int p = 0; p < passes; p++) {
		printf("pass %d/%d\n", p + 1, passes);
		for (auto &r : results) {
			const Case &c = *r.c;
			const Case *fl = c.floor.empty() ? nullptr : by_name[c.floor];
			PassResult pr;
			std::string modes;
			const uint64_t c0 = now_ns();
			for (int part = 0; part < 2; part++) {
				if (fl) {
					double mp = mode_probe();
					Meas f = fl->run();
					f.modes.push_back(mp);
					pr.floor.merge(f);
					pr.has_floor = true;
				}
				double mp = mode_probe();
				Meas m = c.run();
				m.modes.push_back(mp);
				pr.m.merge(m);
			}
			std::set<bool> sides;
			for (double x : pr.m.modes)
				sides.insert(x > kSlowModeNs);
			for (double x : pr.floor.modes)
				sides.insert(x > kSlowModeNs);
			pr.mixed = sides.size() > 1;
			for (double x : pr.m.modes)
				modes += (x > kSlowModeNs ? "S" : "F");
			if (fl) {
				modes += "/";
				for (double x : pr.floor.modes)
					modes += (x > kSlowModeNs ? "S" : "F");
			}
			char probe[64];
			snprintf(probe, sizeof probe, "%.0f ns",
				 pr.m.modes.empty() ? 0.0 : pr.m.modes[0]);
			printf("  %-36s mode probe %-8s modes %-6s %6.2f s%s\n", c.name.c_str(),
			       probe, modes.c_str(), (double)(now_ns() - c0) / 1e9,
			       pr.mixed ? "  MIXED: its parts (or its comparison's) ran in "
					  "different modes"
					: "");
			fflush(stdout);
			r.passes.push_back(std::move(pr));
		}
	}
	const double secs = (double)(now_ns() - t_start) / 1e9;

	// Rows: one per case and metric.
	std::map<std::string, CaseResult *> res_by_name;
	for (auto &r : results)
		res_by_name[r.c->name] = &r;
	auto value_of = [&](const CaseResult &r, const std::string &metric,
			    std::vector<double> *per_pass) {
		std::vector<double> v;
		for (auto &pr : r.passes) {
			auto mm = metrics_of(pr.m);
			v.push_back(mm.count(metric) ? mm[metric] : NAN);
		}
		if (per_pass)
			*per_pass = v;
		return median(v);
	};
	std::vector<Row> rows;
	for (auto &r : results) {
		const Case &c = *r.c;
		for (auto &ms : c.metrics) {
			Row row;
			row.cs = c.name;
			row.metric = ms.name;
			row.unit = ms.unit;
			row.better = ms.better;
			row.note = c.note;
			row.value = value_of(r, ms.name, &row.per_pass);
			for (auto &pr : r.passes) {
				std::string m;
				for (double x : pr.m.modes)
					m += x > kSlowModeNs ? "S" : "F";
				row.modes.push_back(m);
				row.mixed.push_back(pr.mixed);
			}
			if (ms.compared && !c.floor.empty()) {
				row.floor_name = c.floor;
				std::vector<double> fv;
				for (auto &pr : r.passes) {
					auto fm = metrics_of(pr.floor);
					auto cm = metrics_of(pr.m);
					double f = fm.count(ms.name) ? fm[ms.name] : NAN;
					fv.push_back(f);
					row.per_pass_ratio.push_back(
						cm.count(ms.name) ? cm[ms.name] / f : NAN);
				}
				row.floor_value = median(fv);
				row.ratio = median(row.per_pass_ratio);
			}
			// The best peer of the same group: for libknitting's cases,
			// and for a floor that alternates with a peer (the lock2
			// echo: the protocol's ceiling beside what users pick).
			const Case *cmp = c.floor.empty() || !by_name.count(c.floor)
						  ? nullptr
						  : by_name[c.floor];
			const bool vs_peers = c.kind == "knit" ||
					      (c.kind == "floor" && cmp && cmp->kind == "peer");
			if (ms.compared && vs_peers) {
				for (auto &o : results) {
					if (o.c->kind != "peer" || o.c->group != c.group)
						continue;
					double pv = value_of(o, ms.name, nullptr);
					if (std::isnan(pv))
						continue;
					bool better =
						std::isnan(row.peer_value) ||
						(ms.better == Better::Lower ? pv < row.peer_value
									    : pv > row.peer_value);
					if (better) {
						row.peer_value = pv;
						row.peer_name = o.c->name;
					}
				}
				if (!row.peer_name.empty())
					row.peer_ratio = row.value / row.peer_value;
			}
			rows.push_back(row);
		}
	}

	// The table.
	printf("\n%-36s %-18s %12s  %-30s %12s %8s  %-32s %12s %8s  %s\n", "case", "metric",
	       "value", "compared with (alternated)", "its value", "ratio", "best peer",
	       "peer value", "ratio", "per pass (modes)");
	for (size_t ri = 0; ri < rows.size(); ri++) {
		const Row &row = rows[ri];
		if (row.unit == "/call") {
			// Counters per call: one compact line under the case.
			if (ri > 0 && rows[ri - 1].unit == "/call" && rows[ri - 1].cs == row.cs)
				continue;
			std::string line;
			for (size_t k = ri;
			     k < rows.size() && rows[k].cs == row.cs && rows[k].unit == "/call";
			     k++) {
				char b[64];
				std::string n = rows[k].metric.substr(0, rows[k].metric.size() - 5);
				snprintf(b, sizeof b, "%s%s %.3g", line.empty() ? "" : ", ",
					 n.c_str(), rows[k].value);
				line += b;
			}
			printf("%-36s   per call: %s\n", "", line.c_str());
			continue;
		}
		std::string pp;
		for (size_t i = 0; i < row.per_pass.size(); i++) {
			if (i)
				pp += " ";
			pp += fmt_value(row.per_pass[i], row.unit);
			if (i < row.per_pass_ratio.size() && std::isfinite(row.per_pass_ratio[i])) {
				char b[32];
				snprintf(b, sizeof b, " (%.2fx)", row.per_pass_ratio[i]);
				pp += b;
			}
			pp += "[" + row.modes[i] + (row.mixed[i] ? "!" : "") + "]";
		}
		char ratio[32] = "", pratio[32] = "";
		if (std::isfinite(row.ratio))
			snprintf(ratio, sizeof ratio, "%.2fx", row.ratio);
		if (std::isfinite(row.peer_ratio))
			snprintf(pratio, sizeof pratio, "%.2fx", row.peer_ratio);
		printf("%-36s %-18s %12s  %-30s %12s %8s  %-32s %12s %8s  %s\n", row.cs.c_str(),
		       (row.metric + (row.better == Better::Lower ? " (-)" : " (+)")).c_str(),
		       fmt_value(row.value, row.unit).c_str(), row.floor_name.c_str(),
		       std::isfinite(row.floor_value) ? fmt_value(row.floor_value, row.unit).c_str()
						      : "",
		       ratio, row.peer_name.c_str(),
		       std::isfinite(row.peer_value) ? fmt_value(row.peer_value, row.unit).c_str()
						     : "",
		       pratio, pp.c_str());
	}
	printf("\n(-) lower is better, (+) higher is better; ratio = value / the case it "
	       "alternated with (its floor, or "
	       "the peer its target names), per pass then median; best peer ratio = value / best "
	       "peer's median.\nmodes: F fast, S slow cache-line mode before each part "
	       "(case/comparison); ! = a pass whose "
	       "parts ran in different modes.\nran %d pass(es) in %.1f s\n",
	       passes, secs);

	if (!json.empty()) {
		std::ofstream f(json);
		f << "{\n  \"library_version\": " << json_str(lib_version)
		  << ",\n  \"library_header_version\": "
		  << json_str(version_string(KNIT_VERSION_NUMBER))
		  << ",\n  \"commit\": " << json_str(KB_COMMIT)
		  << ",\n  \"compiler\": " << json_str(KB_COMPILER)
		  << ",\n  \"date\": " << json_str(date) << ",\n  \"seconds\": " << json_num(secs)
		  << ",\n  \"machine\": {\"cpus\": " << g_place.ncpu_online
		  << ", \"model\": " << json_str(model) << ", \"kernel\": " << json_str(u.release)
		  << ", \"host_cpu\": " << g_place.host << ", \"worker_cpu\": " << g_place.worker
		  << ", \"mode_probe_ns\": " << json_num(probe_ns)
		  << ", \"slow_mode_above_ns\": " << json_num(kSlowModeNs)
		  << "},\n  \"passes\": " << passes
		  << ",\n  \"quick\": " << (g_quick ? "true" : "false") << ",\n  \"left_out\": [";
		for (size_t i = 0; i < left_out().size(); i++)
			f << (i ? ", " : "") << json_str(left_out()[i]);
		f << "],\n  \"results\": [\n";
		for (size_t i = 0; i < rows.size(); i++) {
			const Row &r = rows[i];
			auto arr = [&](const std::vector<double> &v) {
				std::string s = "[";
				for (size_t k = 0; k < v.size(); k++)
					s += (k ? ", " : "") + json_num(v[k]);
				return s + "]";
			};
			std::string modes = "[", mixed = "[";
			for (size_t k = 0; k < r.modes.size(); k++) {
				modes += (k ? ", " : "") + json_str(r.modes[k]);
				mixed += std::string(k ? ", " : "") +
					 (r.mixed[k] ? "true" : "false");
			}
			f << "    {\"case\": " << json_str(r.cs)
			  << ", \"metric\": " << json_str(r.metric)
			  << ", \"unit\": " << json_str(r.unit)
			  << ", \"value\": " << json_num(r.value)
			  << ", \"per_pass\": " << arr(r.per_pass) << ", \"compare_to\": "
			  << (r.floor_name.empty() ? "null" : json_str(r.floor_name))
			  << ", \"compare_value\": " << json_num(r.floor_value)
			  << ", \"ratio\": " << json_num(r.ratio)
			  << ", \"per_pass_ratio\": " << arr(r.per_pass_ratio) << ", \"peer\": "
			  << (r.peer_name.empty() ? "null" : json_str(r.peer_name))
			  << ", \"peer_value\": " << json_num(r.peer_value)
			  << ", \"peer_ratio\": " << json_num(r.peer_ratio) << ", \"better\": "
			  << (r.better == Better::Lower ? "\"lower\"" : "\"higher\"")
			  << ", \"modes\": " << modes << "], \"mode_mixed\": " << mixed << "]}"
			  << (i + 1 < rows.size() ? ",\n" : "\n");
		}
		f << "  ]\n}\n";
		printf("wrote %s\n", json.c_str());
	}

	int rc = 0;
	if (!plot.empty()) {
		std::vector<PlotRow> prow;
		for (auto &r : rows) {
			PlotRow p;
			p.cs = r.cs;
			p.metric = r.metric;
			p.unit = r.unit;
			p.floor_name = r.floor_name;
			p.peer_name = r.peer_name;
			p.value = r.value;
			p.ratio = r.ratio;
			p.peer_ratio = r.peer_ratio;
			p.lower_better = r.better == Better::Lower;
			prow.push_back(p);
		}
		PlotInfo info;
		info.source = "this run";
		info.title = "libknitting " + lib_version +
			     (std::string(KB_COMMIT) == "unknown" ? "" : " (" KB_COMMIT ")") +
			     " against its floors and best peers\n" + model + ", " +
			     std::to_string(g_place.ncpu_online) + " CPUs, " +
			     std::to_string(passes) + (passes == 1 ? " pass" : " passes") +
			     ", medians, " + date +
			     (g_quick ? " (--quick: the times mean nothing)" : "");
		if (write_plot(plot, prow, info) == 0)
			printf("wrote %s\n", plot.c_str());
		else
			rc = 1;
	}

	if (g_check_failures) {
		fprintf(stderr, "knit-bench: %d count check(s) failed\n", g_check_failures);
		return 1;
	}
	if (g_quick)
		printf("knit-bench --quick: every count checked out\n");
	return rc;
}
