#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/trace/run.sh KNIT_TRACE PROGRAM [--lib] [--late] [--text] [--arg ARG]... [--lane N]
#
# End-to-end test of knit-trace(8): start PROGRAM (trace_fixture or
# trace_pool; it waits for a go file; each --arg is passed after the go file,
# e.g. trace_pool's topology), attach `knit-trace -p PID --json` to it
# (with --lib: `-l PROGRAM` too, for the fixture, whose probes are in the
# executable; with --lane N: `--lane N`, and check_trace.py then checks that
# only lane N was reported, with all of its calls; with --late: only once
# the program printed READY, i.e. attach to a pool that is running already),
# give the go signal once
# knit-trace says it is attached, let the
# program run to its end (knit-trace reports when the process exits), then
# check_trace.py compares knit-trace's counts with the program's own STATS
# line and checks the latencies. With --text: the text report instead of
# --json, and check_text.py checks its banner and summary line against the
# same STATS line. Either way it prints (measures, never asserts) how long
# knit-trace took to exit after the process did.
#
# Needs root. Nothing to mount: USDT probes attach through the uprobe PMU in
# sysfs and the scheduler programs are tp_btf, neither needs tracefs or a
# bpffs (nothing is pinned). Exit 77 ("SKIP: ...") only where BPF itself is
# unavailable: not root, no kernel BTF, the bpf() syscall refused, or the
# tool could not be built for that reason.
set -u
[ $# -ge 2 ] || { echo "usage: $0 KNIT_TRACE PROGRAM [--lib] [--late] [--text] [--arg ARG]... [--lane N]" >&2; exit 1; }
tool=$1 prog=$2 mode= late= text=
shift 2
pargs=() lane=()
while [ $# -gt 0 ]; do
	case $1 in
	--lib) mode=--lib; shift ;;
	--late) late=1; shift ;;
	--text) text=1; shift ;;
	--arg) [ $# -ge 2 ] || { echo "FAIL: --arg needs a value"; exit 1; }; pargs+=("$2"); shift 2 ;;
	--lane) [ $# -ge 2 ] || { echo "FAIL: --lane needs a value"; exit 1; }; lane=(--lane "$2"); shift 2 ;;
	*) echo "FAIL: unknown argument $1"; exit 1 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "knit-trace needs root to load BPF programs"
[ -r /sys/kernel/btf/vmlinux ] || skip "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
[ -d /sys/bus/event_source/devices/uprobe ] || skip "the kernel has no uprobe PMU"
bpftool=$(command -v bpftool || echo /usr/sbin/bpftool)
if [ -x "$bpftool" ] && ! "$bpftool" prog show >/dev/null 2>&1; then
	skip "the kernel refuses the bpf() syscall"
fi
[ -x "$tool" ] || { echo "FAIL: $tool was not built"; exit 1; }
[ -x "$prog" ] || { echo "FAIL: $prog was not built"; exit 1; }

tmp=$(mktemp -d)
ppid= tpid=
cleanup() {
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null
	[ -n "$ppid" ] && kill "$ppid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

"$prog" "$tmp/go" "${pargs[@]}" >"$tmp/prog.out" 2>"$tmp/prog.err" &
ppid=$!
# Attach only once the child has exec'd the program (before that the pid is
# still the forking shell) and, when knit-trace must find the library in
# /proc/PID/maps, once the dynamic loader has mapped it. Bounded: 30 s.
want=$(readlink -f "$prog")
for _ in $(seq 300); do
	if [ "$(readlink -f "/proc/$ppid/exe" 2>/dev/null)" = "$want" ] &&
		{ [ "$mode" = --lib ] || grep -q 'libknitting' "/proc/$ppid/maps" 2>/dev/null; } &&
		{ [ -z "$late" ] || grep -q '^READY' "$tmp/prog.out"; }; then
		break
	fi
	kill -0 "$ppid" 2>/dev/null || break
	sleep 0.1
done
args=(-p "$ppid" "${lane[@]}")
[ -z "$text" ] && args+=(--json)
[ "$mode" = --lib ] && args+=(-l "$(readlink -f "$prog")")
echo "run: $tool ${args[*]}"
"$tool" "${args[@]}" >"$tmp/trace.json" 2>"$tmp/trace.err" &
tpid=$!

# Wait (bounded: 30 s) for "attached" from knit-trace.
attached=0
for _ in $(seq 300); do
	if grep -q 'attached' "$tmp/trace.err"; then attached=1; break; fi
	kill -0 "$tpid" 2>/dev/null || break
	sleep 0.1
done
if [ $attached = 0 ]; then
	cat "$tmp/trace.err"
	if grep -q 'refused the BPF programs (Operation not permitted)' "$tmp/trace.err"; then
		skip "the kernel refuses to load BPF programs"
	fi
	echo "FAIL: knit-trace did not attach"
	exit 1
fi

touch "$tmp/go"
wait "$ppid"
prc=$?
ppid=
t_exit=$(date +%s%N)
cat "$tmp/prog.err"
[ $prc = 0 ] || { echo "FAIL: $prog exited with $prc"; exit 1; }

# knit-trace notices the exit within ~0.1 s; bound the wait at 30 s.
for _ in $(seq 300); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$tpid" 2>/dev/null; then echo "FAIL: knit-trace did not exit after the process"; exit 1; fi
wait "$tpid"
trc=$?
tpid=
echo "measured: knit-trace exited $(( ($(date +%s%N) - t_exit) / 1000000 )) ms after the process"
cat "$tmp/trace.err"
[ $trc = 0 ] || { echo "FAIL: knit-trace exited with $trc"; exit 1; }

# Nothing to compare is a failure, not a pass.
[ -s "$tmp/trace.json" ] || { echo "FAIL: knit-trace wrote no report"; exit 1; }
grep -q '^STATS ' "$tmp/prog.out" || { echo "FAIL: $prog printed no STATS line"; exit 1; }
if [ -n "$text" ]; then
	cat "$tmp/trace.json"
	python3 "$here/check_text.py" "$tmp/trace.json" "$tmp/trace.err" "$tmp/prog.out"
else
	python3 "$here/check_trace.py" "$tmp/trace.json" "$tmp/prog.out" "${lane[@]}"
fi
