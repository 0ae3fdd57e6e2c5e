#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/trace/caps.sh KNIT_TRACE LIB   knit-trace as a non-root uid, by capability
#
# Runs `knit-trace -l LIB -d 1` as uid 65534 through setpriv(1) with:
#   no capability          -> exit 1, "missing capability CAP_BPF"
#   CAP_BPF only           -> exit 1, "missing capability CAP_PERFMON"
#   CAP_BPF + CAP_PERFMON  -> past the capability check: a full run (exit 0),
#                             or, where the kernel wants more for a uprobe
#                             perf event, exit 1 saying CAP_SYS_ADMIN
#   CAP_SYS_ADMIN          -> a full run: exit 0 and one JSON report
# Needs root (to hand out capabilities), setpriv and a kernel that runs BPF.
set -u
[ $# -eq 2 ] || { echo "usage: $0 KNIT_TRACE LIB" >&2; exit 1; }
tool=$1 lib=$2
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "handing capabilities to another uid needs root"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
[ -r /sys/kernel/btf/vmlinux ] || skip "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
bpftool=$(command -v bpftool || echo /usr/sbin/bpftool)
if [ -x "$bpftool" ] && ! "$bpftool" prog show >/dev/null 2>&1; then
	skip "the kernel refuses the bpf() syscall"
fi
[ -x "$tool" ] || fail "$tool was not built"
[ -r "$lib" ] || fail "$lib was not built"
setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$lib" ||
	fail "uid 65534 cannot read $lib (the test needs a world-readable build tree)"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# run CAPS: knit-trace as uid 65534 with exactly CAPS (comma list, may be empty)
run() {
	local c=()
	[ -n "$1" ] && c=(--inh-caps="$1" --ambient-caps="$1")
	timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups "${c[@]}" \
		"$tool" -l "$lib" -d 1 --json >"$out" 2>&1
	rc=$?
	echo "== caps '${1:-none}': exit $rc"
	cat "$out"
}

run ""
[ $rc = 1 ] && grep -q 'missing capability CAP_BPF ' "$out" || fail "no capability: want exit 1 naming CAP_BPF"
run +bpf
[ $rc = 1 ] && grep -q 'missing capability CAP_PERFMON ' "$out" || fail "CAP_BPF only: want exit 1 naming CAP_PERFMON"
run +bpf,+perfmon
! grep -q 'missing capability' "$out" || fail "CAP_BPF + CAP_PERFMON: still refused by the capability check"
if [ $rc != 0 ]; then
	[ $rc = 1 ] && grep -q 'refused the uprobe without CAP_SYS_ADMIN' "$out" ||
		fail "CAP_BPF + CAP_PERFMON: want a full run or the CAP_SYS_ADMIN message"
fi
run +sys_admin
[ $rc = 0 ] || fail "CAP_SYS_ADMIN: want a full run (exit 0)"
grep -q '^{"time":' "$out" || fail "CAP_SYS_ADMIN: no JSON report"
echo "capability checks: ok"
