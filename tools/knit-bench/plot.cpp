// SPDX-License-Identifier: MIT
// tools/knit-bench/plot.cpp - knit-bench's picture: one dot plot of
// libknitting's time per call relative to its floor and to the best peer,
// per case, with the 1x line; drawn by gnuplot through a pipe (the data
// inline), and read back from a saved --json file for --plot-from.
#include "tools/knit-bench/bench.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

namespace kb {

namespace {

// ---- a small JSON reader, enough for knit-bench's own files ---------------

struct JVal {
	enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
	bool b = false;
	double n = NAN;
	std::string s;
	std::vector<JVal> a;
	std::vector<std::pair<std::string, JVal>> o;
	const JVal *get(const std::string &k) const
	{
		for (auto &kv : o)
			if (kv.first == k)
				return &kv.second;
		return nullptr;
	}
	std::string str(const std::string &k) const
	{
		const JVal *v = get(k);
		return v && v->kind == Str ? v->s : std::string();
	}
	double num(const std::string &k) const
	{
		const JVal *v = get(k);
		return v && v->kind == Num ? v->n : NAN;
	}
};

struct JParser {
	const std::string &t;
	size_t i = 0;
	std::string err;
	explicit JParser(const std::string &text) : t(text) {}
	void ws()
	{
		while (i < t.size() &&
		       (t[i] == ' ' || t[i] == '\n' || t[i] == '\t' || t[i] == '\r'))
			i++;
	}
	bool fail(const char *what)
	{
		if (err.empty())
			err = std::string(what) + " at byte " + std::to_string(i);
		return false;
	}
	bool lit(const char *w)
	{
		size_t n = strlen(w);
		if (t.compare(i, n, w) != 0)
			return fail("bad literal");
		i += n;
		return true;
	}
	bool string(std::string &out)
	{
		if (i >= t.size() || t[i] != '"')
			return fail("expected a string");
		for (i++; i < t.size() && t[i] != '"'; i++) {
			if (t[i] == '\\') {
				if (++i >= t.size())
					break;
				char c = t[i];
				out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'u' ? '?' : c;
				if (c == 'u')
					i += 4;
			} else {
				out += t[i];
			}
		}
		if (i >= t.size())
			return fail("unterminated string");
		i++;
		return true;
	}
	bool value(JVal &v, int depth = 0)
	{
		if (depth > 32)
			return fail("nested too deep");
		ws();
		if (i >= t.size())
			return fail("unexpected end");
		char c = t[i];
		if (c == '{') {
			v.kind = JVal::Obj;
			i++;
			ws();
			if (i < t.size() && t[i] == '}')
				return ++i, true;
			for (;;) {
				std::string k;
				ws();
				if (!string(k))
					return false;
				ws();
				if (i >= t.size() || t[i] != ':')
					return fail("expected ':'");
				i++;
				JVal e;
				if (!value(e, depth + 1))
					return false;
				v.o.emplace_back(std::move(k), std::move(e));
				ws();
				if (i < t.size() && t[i] == ',') {
					i++;
					continue;
				}
				if (i < t.size() && t[i] == '}')
					return ++i, true;
				return fail("expected ',' or '}'");
			}
		}
		if (c == '[') {
			v.kind = JVal::Arr;
			i++;
			ws();
			if (i < t.size() && t[i] == ']')
				return ++i, true;
			for (;;) {
				JVal e;
				if (!value(e, depth + 1))
					return false;
				v.a.push_back(std::move(e));
				ws();
				if (i < t.size() && t[i] == ',') {
					i++;
					continue;
				}
				if (i < t.size() && t[i] == ']')
					return ++i, true;
				return fail("expected ',' or ']'");
			}
		}
		if (c == '"') {
			v.kind = JVal::Str;
			return string(v.s);
		}
		if (c == 't')
			return v.kind = JVal::Bool, v.b = true, lit("true");
		if (c == 'f')
			return v.kind = JVal::Bool, lit("false");
		if (c == 'n')
			return v.kind = JVal::Null, lit("null");
		char *end = nullptr;
		errno = 0;
		v.n = strtod(t.c_str() + i, &end);
		if (end == t.c_str() + i)
			return fail("expected a value");
		v.kind = JVal::Num;
		i = (size_t)(end - t.c_str());
		return true;
	}
};

// A gnuplot string literal (double-quoted: a path may hold anything).
std::string gp_str(const std::string &s)
{
	std::string o = "\"";
	for (char c : s) {
		if (c == '"' || c == '\\')
			o += '\\';
		if (c == '\n')
			o += "\\n";
		else
			o += c;
	}
	return o + "\"";
}

std::string fmt(const char *f, double v)
{
	char b[64];
	snprintf(b, sizeof b, f, v);
	return b;
}

// Run gnuplot with `script` on its stdin; its stdout and stderr are
// captured, never passed through. 0, or -1 with *why set.
int run_gnuplot(const std::string &script, std::string *why)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) != 0)
		return *why = std::string("pipe: ") + strerror(errno), -1;
	if (pipe2(out, O_CLOEXEC) != 0) {
		close(in[0]);
		close(in[1]);
		return *why = std::string("pipe: ") + strerror(errno), -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, out[1], 2);
	char arg0[] = "gnuplot";
	char *argv[] = {arg0, nullptr};
	pid_t pid;
	const int e = posix_spawnp(&pid, "gnuplot", &fa, nullptr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (e != 0) {
		close(in[1]);
		close(out[0]);
		*why = e == ENOENT ? "gnuplot is not installed (make deps-bench installs it)"
				   : std::string("cannot run gnuplot: ") + strerror(e);
		return -1;
	}
	// A write to a gnuplot that died early must not kill us.
	struct sigaction ign = {}, old = {};
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	size_t off = 0;
	while (off < script.size()) {
		ssize_t n = write(in[1], script.data() + off, script.size() - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(in[1]);
	std::string msg;
	char buf[4096];
	for (;;) {
		ssize_t n = read(out[0], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		msg.append(buf, (size_t)n);
	}
	close(out[0]);
	sigaction(SIGPIPE, &old, nullptr);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && msg.empty())
		return 0;
	while (!msg.empty() && msg.back() == '\n')
		msg.pop_back();
	*why = (WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "gnuplot warned: " : "gnuplot failed: ") +
	       (msg.empty() ? std::string("no message") : msg);
	return -1;
}

} // namespace

int write_plot(const std::string &png, const std::vector<PlotRow> &rows, const PlotInfo &info)
{
	// A point per reference: libknitting's time per call over the
	// reference's (throughput: the reference's over libknitting's), so
	// every metric reads the same way and 1x is parity.
	struct Pt {
		std::string label;
		double vs_floor = NAN, vs_peer = NAN;
		std::string floor_note, peer_note;
	};
	std::vector<Pt> pts;
	for (auto &r : rows) {
		if (r.cs.rfind("knit.", 0) != 0 || !(r.unit == "ns" || r.unit == "calls/s"))
			continue;
		if (!std::isfinite(r.ratio) && !std::isfinite(r.peer_ratio))
			continue;
		Pt p;
		p.label = r.cs + " " + r.metric;
		auto cost = [&](double ratio) { return r.lower_better ? ratio : 1.0 / ratio; };
		if (std::isfinite(r.ratio) && r.ratio > 0) {
			p.vs_floor = cost(r.ratio);
			p.floor_note = fmt("%.2fx ", p.vs_floor) + r.floor_name;
		}
		if (std::isfinite(r.peer_ratio) && r.peer_ratio > 0) {
			p.vs_peer = cost(r.peer_ratio);
			p.peer_note = fmt("%.2fx ", p.vs_peer) + r.peer_name;
		}
		pts.push_back(p);
	}
	if (pts.empty()) {
		fprintf(stderr,
			"knit-bench: nothing to plot in %s: no libknitting case with a floor or a "
			"peer to compare with\n",
			info.source.c_str());
		return -1;
	}
	double lo = 1, hi = 1;
	for (auto &p : pts)
		for (double v : {p.vs_floor, p.vs_peer})
			if (std::isfinite(v))
				lo = std::min(lo, v), hi = std::max(hi, v);
	lo /= 1.6;
	hi *= 4; // room for the labels right of the points

	std::ostringstream g;
	const int h = 200 + 32 * (int)pts.size();
	g << "set terminal pngcairo noenhanced size 1300," << h << " font 'sans,10'\n"
	  << "set output " << gp_str(png) << "\n"
	  << "$data << EOD\n";
	for (size_t i = 0; i < pts.size(); i++) {
		auto &p = pts[i];
		g << i << " " << gp_str(p.label) << " "
		  << (std::isfinite(p.vs_floor) ? fmt("%.6g", p.vs_floor) : "NaN") << " "
		  << gp_str(p.floor_note) << " "
		  << (std::isfinite(p.vs_peer) ? fmt("%.6g", p.vs_peer) : "NaN") << " "
		  << gp_str(p.peer_note) << "\n";
	}
	g << "EOD\n"
	  << "set datafile missing 'NaN'\n"
	  << "set title " << gp_str(info.title) << "\n"
	  << "set xlabel "
	  << gp_str("libknitting's time per call / the reference's (log scale; throughput "
		    "counted as time per call). Left of 1x: libknitting is faster.")
	  << "\n"
	  << "set logscale x 2\nset xrange [" << lo << ":" << hi << "]\n"
	  << "set format x '%gx'\nset xtics (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256)\n"
	  << "set yrange [" << (double)pts.size() - 0.5 << ":-0.8]\n"
	  << "set grid xtics lc rgb '#dddddd'\nset border 3\nset ytics nomirror\nset xtics "
	     "nomirror\n"
	  << "set key outside top center vertical reverse Left\n"
	  << "set arrow 1 from 1, graph 0 to 1, graph 1 nohead lw 2 lc rgb '#444444' back\n"
	  << "set label 1 'parity' at 1, graph 1 offset 0.5,-0.8 tc rgb '#444444'\n"
	  << "plot $data using 3:1:ytic(2) with points pt 7 ps 1.7 lc rgb '#7f7f7f' "
	     "title 'vs what it alternated with in each pass: its floor (the least the protocol "
	     "costs), else the case named', \\\n"
	  << "     $data using 5:1 with points pt 5 ps 1.5 lc rgb '#1f77b4' "
	     "title 'vs the best peer (the fastest other library run for it)', \\\n"
	  << "     $data using 3:1:4 with labels left offset 1.2,0.55 tc rgb '#555555' notitle, "
	     "\\\n"
	  << "     $data using 5:1:6 with labels left offset 1.2,-0.55 tc rgb '#1f77b4' notitle\n";
	std::string why;
	if (run_gnuplot(g.str(), &why) != 0) {
		fprintf(stderr, "knit-bench: cannot draw %s: %s\n", png.c_str(), why.c_str());
		return -1;
	}
	return 0;
}

int plot_from_json(const std::string &json, const std::string &png)
{
	std::ifstream f(json);
	if (!f) {
		fprintf(stderr, "knit-bench: cannot read %s: %s\n", json.c_str(), strerror(errno));
		return -1;
	}
	std::stringstream ss;
	ss << f.rdbuf();
	const std::string text = ss.str();
	JParser p(text);
	JVal root;
	if (!p.value(root) || root.kind != JVal::Obj) {
		fprintf(stderr, "knit-bench: %s is not a knit-bench --json file (%s)\n",
			json.c_str(), p.err.empty() ? "not an object" : p.err.c_str());
		return -1;
	}
	const JVal *res = root.get("results");
	if (!res || res->kind != JVal::Arr) {
		fprintf(stderr,
			"knit-bench: %s has no \"results\" array: not a knit-bench --json file\n",
			json.c_str());
		return -1;
	}
	std::vector<PlotRow> rows;
	for (auto &r : res->a) {
		if (r.kind != JVal::Obj)
			continue;
		PlotRow pr;
		pr.cs = r.str("case");
		pr.metric = r.str("metric");
		pr.unit = r.str("unit");
		pr.floor_name = r.str("compare_to");
		pr.peer_name = r.str("peer");
		pr.value = r.num("value");
		pr.ratio = r.num("ratio");
		pr.peer_ratio = r.num("peer_ratio");
		pr.lower_better = r.str("better") != "higher";
		rows.push_back(pr);
	}
	PlotInfo info;
	info.source = json;
	const JVal *m = root.get("machine");
	const std::string model = m ? m->str("model") : "";
	const double cpus = m ? m->num("cpus") : NAN;
	std::string lib = root.str("library_version");
	std::string commit = root.str("commit");
	std::string date = root.str("date");
	info.title = "libknitting " + (lib.empty() ? std::string("(version not recorded)") : lib) +
		     (commit.empty() || commit == "unknown" ? "" : " (" + commit + ")") +
		     " against its floors and best peers\n" +
		     (model.empty() ? "unknown CPU" : model) +
		     (std::isfinite(cpus) ? ", " + std::to_string((int)cpus) + " CPUs" : "") +
		     ", " + std::to_string((int)root.num("passes")) + " " +
		     ((int)root.num("passes") == 1 ? "pass" : "passes") + ", medians" +
		     (date.empty() ? "" : ", " + date);
	return write_plot(png, rows, info);
}

} // namespace kb
