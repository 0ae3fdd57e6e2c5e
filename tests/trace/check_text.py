#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/trace/check_text.py TRACE_OUT TRACE_ERR PROGRAM_OUTPUT

Check knit-trace's text report (no --json) against the traced program's
STATS line: the attach banner names worker processes only where the host
has some (the workers of a "late" process pool), the pool line names the
pool's kind, its calls completed with the synchronous and the ticketed apart
(equal to sync_calls and completed - sync_calls), and for a process pool the
worker processes started, died (by cause) and stopped when asked; counts of
one take the singular. Exit 0 when every check holds, 1 otherwise.
"""
import json
import re
import sys

failures = 0


def check(ok, what):
    global failures
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures += 1


def main():
    if len(sys.argv) != 4:
        print("usage: check_text.py TRACE_OUT TRACE_ERR PROGRAM_OUTPUT")
        return 1
    out = open(sys.argv[1]).read()
    err = open(sys.argv[2]).read()
    stats = None
    for line in open(sys.argv[3]):
        if line.startswith("STATS "):
            stats = json.loads(line[6:])
    check(stats is not None, "the program printed its STATS line")
    if stats is None:
        return 1
    procs = bool(stats.get("processes"))
    banner = [l for l in err.splitlines() if "attached" in l]
    check(len(banner) == 1, f"one attach banner (got {len(banner)})")
    if banner:
        if procs and stats.get("late"):
            want = f"and its {stats['workers']} worker processes)"
            check(want in banner[0], f"the banner names the running workers ({want!r}): {banner[0]}")
        else:
            check("worker process" not in banner[0],
                  f"the banner names no worker processes (none ran at attach): {banner[0]}")
    pool = int(stats["pool"], 16)
    lines = [l for l in out.splitlines() if l.startswith(f"pool 0x{pool:x} (")]
    check(len(lines) == 1, f"one summary line for pool 0x{pool:x} (got {len(lines)})")
    if not lines:
        return 1
    line = lines[0]
    print(f"line: {line}")
    kind = "process pool" if procs else "thread pool"
    check(line.startswith(f"pool 0x{pool:x} ({kind}): "), f"the line names the kind ({kind})")
    m = re.search(r": (\d+) calls? completed \((\d+) synchronous, (\d+) ticketed", line)
    check(m is not None, "the line gives calls completed, synchronous and ticketed")
    if m:
        done, sync, tick = map(int, m.groups())
        check(done == stats["completed"], f"calls completed {done} == {stats['completed']}")
        check(sync == stats["sync_calls"], f"synchronous {sync} == sync_calls {stats['sync_calls']}")
        check(tick == stats["completed"] - stats["sync_calls"],
              f"ticketed {tick} == completed - sync_calls {stats['completed'] - stats['sync_calls']}")
    check("enqueued to the shared submit queue" not in out,
          "no call is reported as enqueued to the shared submit queue")
    if stats.get("topology") == "steal":
        m = re.search(r"; (\d+) calls? through the shared submit queue\)", line)
        want = stats["enqueued"] - stats["sync_calls"]
        check(m is not None and int(m.group(1)) == want,
              f"steal: the ticketed calls went through the shared submit queue ({want})")
    if procs:
        started = 0 if stats.get("late") else stats["spawns"]
        killed = sum(ls.get("killed", 0) for ls in stats["lanes"])
        m = re.search(r"; (\d+) worker process(es)? started, (\d+) died", line)
        check(m is not None, "the line gives worker processes started and died")
        if m:
            check(int(m.group(1)) == started, f"worker processes started {m.group(1)} == {started}")
            check((m.group(2) is None) == (started == 1), "started: singular for one")
            check(int(m.group(3)) == stats["crashes"], f"died {m.group(3)} == crashes {stats['crashes']}")
        if killed:
            want = f"died ({killed} killed by SIGKILL)"
            check(want in line, f"the deaths by cause: {want!r}")
        violations = stats.get("violations", 0)
        if violations:
            want = f"died ({violations} killed by the sandbox (a forbidden syscall))"
            check(want in line, f"the deaths by cause: {want!r}")
        want = f", {stats['workers']} stopped when asked"
        check(line.endswith(want), f"every last worker stopped when asked ({want!r})")
    else:
        check("worker process" not in line, "a thread pool's line names no worker processes")
    slips = re.findall(r"\b1 (calls|arms|wakes|worker processes)\b", out + err)
    check(not slips, f"no plural after a count of one (found {slips})")
    print(f"{failures} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
