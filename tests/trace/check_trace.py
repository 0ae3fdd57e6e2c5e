#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/trace/check_trace.py TRACE_JSON PROGRAM_OUTPUT [--lane N]

Compare what knit-trace --json reported with the STATS line the traced
program printed (its pool's own knit_pool_stats, or the fixture's own
counters), and check that the latencies are sane. Exit 0 when every check
holds, 1 otherwise; every check is printed.

Exact equalities (the probes fire exactly where the counters count):
  per lane  worker_park == parks, host_ring == wakes_sent,
            wake_rung + wake_stop == wakes_received,
            wake_watchdog == watchdog_expiries,
            task_start == task_done == calls, doorbell_ring == doorbell_rings,
            stop_request == stop_ack == 1 (worker lanes);
  per pool  doorbell_arm == doorbell_arms, doorbell_wake == doorbell_wakes,
            task_complete == completed, task_enqueue == enqueued;
  synchronous-line calls (knit_call's fast path) apart: sync_enqueue (on
            the line's lane, in every topology) and sync_complete ==
            sync_calls, task_complete - sync_complete == completed -
            sync_calls; per lane sync_enqueue == the calls it ran during
            the program's knit_calls;
  kind      "threads" or "processes", as the pool's.
Pairing (the tool attached before the pool existed, so nothing is half seen):
  every ring is followed by its worker's wake probe (or came after the worker
  already took it), and is either seen going on a CPU or found its worker
  still running; every park ends in a wake; every call has a queue wait, a
  service time and a call latency.
Attribution: knit-trace reports only lanes the pool has (no row for the
shared submit queue of a steal pool); a call counts on the lane that ran it.
task_enqueue counts per lane where calls are placed on a lane's own queue
(lanes topology, inline lane, every synchronous-line call) and at pool
level where they go to the shared submit queue (steal's ticketed calls).
Latencies: 0 < min <= p50 <= p99 <= max <= the traced run's length, and
the histogram buckets add up to the count.

Process pools (STATS has "processes"): the workers' probes fire in the
knit-worker processes, so every check above holds only if knit-trace
followed them and reported their events under the host's pool and lanes.
Also: proc_worker_start per lane == 1 + the workers killed on that lane,
summed == spawns; every worker process is reaped once, by cause
(proc_worker_exit): signal + exit + protocol deaths == crashes, each killed
worker one SIGKILL death on its lane, every last worker stopped when asked. "late": the workers were running, idle, before knit-trace
attached (and the STATS counters are those since): no proc_worker_start,
and knit-trace found the workers itself. A worker killed (SIGKILL) while parked leaves one park
without its wake: per killed worker one park duration sample less, and a ring
that raced with the kill may have no wake probe sample.

With --lane N (knit-trace ran with --lane N): only lane N is reported, and
its counts and views still equal the pool's own counters for lane N; the
pool-level probes (doorbell, shared-queue enqueues) are not filtered, and
task_complete counts only lane N's calls.
"""
import json
import sys

failures = 0


def check(ok, what):
    global failures
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures += 1


def eq(got, want, what):
    check(got == want, f"{what}: knit-trace {got}, expected {want}")


def main():
    only = None
    if len(sys.argv) == 5 and sys.argv[3] == "--lane":
        only = int(sys.argv[4])
    elif len(sys.argv) != 3:
        print("usage: check_trace.py TRACE_JSON PROGRAM_OUTPUT [--lane N]")
        return 1
    reports = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    stats = None
    for line in open(sys.argv[2]):
        if line.startswith("STATS "):
            stats = json.loads(line[6:])
    check(len(reports) == 1, f"one knit-trace report (got {len(reports)})")
    check(stats is not None, "the program printed its STATS line")
    if not reports or stats is None:
        return 1
    rep = reports[-1]
    pool_addr = int(stats["pool"], 16)
    pools = {int(p["pool"], 16): p for p in rep["pools"]}
    check(list(pools) == [pool_addr],
          f"knit-trace saw exactly the pool {stats['pool']} (saw {[hex(p) for p in pools]})")
    if pool_addr not in pools:
        return 1
    pool = pools[pool_addr]
    lanes = {l["lane"]: l for l in pool["lanes"]}
    zero = {"counts": {}, "latency": {}}
    run_ns = rep["seconds"] * 1e9

    def hist_count(lat, view):
        return lat.get(view, {}).get("count", 0)

    steal = stats.get("topology") == "steal"
    have = {ls["lane"] for ls in stats["lanes"]}
    want = have if only is None else {only}
    check(set(lanes) <= want,
          f"knit-trace reported only lanes {sorted(want)} (reported {sorted(lanes)})")
    by_lane = {ls["lane"]: ls for ls in stats["lanes"]}

    total_cold_rings = 0
    for ls in stats["lanes"]:
        n = ls["lane"]
        if n not in want:
            continue
        kt = lanes.get(n, zero)
        c, lat = kt["counts"], kt["latency"]
        g = lambda k: c.get(k, 0)
        killed = ls.get("killed", 0)
        # A worker its sandbox killed (proc-sandbox): the violating call
        # started on it and was enqueued there, but it never returned, so
        # the lane's calls (counted by the worker at the task's end) miss it.
        violated = ls.get("violated", 0)
        eq(g("worker_park"), ls["parks"], f"lane {n} parks")
        eq(g("host_ring"), ls["wakes_sent"], f"lane {n} host rings == wakes_sent")
        eq(g("wake_rung") + g("wake_stop"), ls["wakes_received"],
           f"lane {n} rung + stop wakes == wakes_received")
        eq(g("wake_watchdog"), ls["watchdog_expiries"], f"lane {n} watchdog wakes")
        eq(g("task_start"), ls["calls"] + violated,
           f"lane {n} tasks started == calls (+ {violated} violating)")
        eq(g("task_done"), ls["calls"], f"lane {n} tasks done == calls")
        eq(g("doorbell_ring"), ls["doorbell_rings"], f"lane {n} doorbell rings")
        if n < stats["workers"]:
            eq(g("stop_request"), 1, f"lane {n} stop requests")
            eq(g("stop_ack"), 1, f"lane {n} stop acknowledgements")
            eq(hist_count(lat, "stop"), 1, f"lane {n} stop latency samples")
        rings = g("host_ring")
        total_cold_rings += rings
        # A worker SIGKILLed just after a ring is put on a CPU (to die) but
        # never reaches its wake probe: per killed worker, at most one ring
        # without a wake probe sample.
        slack = killed
        woke = hist_count(lat, "wake_probe") + g("ring_after_wake")
        check(rings - slack <= woke <= rings,
              f"lane {n} ring -> wake probe samples + rings the worker took before their probe: "
              f"knit-trace {woke}, expected {rings} (at most {slack} fewer allowed)")
        eq(hist_count(lat, "wake_cpu") + g("ring_found_running"), rings,
           f"lane {n} ring -> on-CPU samples + rings that found the worker running")
        # Every futex park ends in a wake probe; a worker can also take a
        # ring while re-checking before its futex wait (a wake, no park).
        check(g("worker_wake") >= g("worker_park") - killed,
              f"lane {n} wakes {g('worker_wake')} >= parks {g('worker_park')} - killed {killed}")
        eq(hist_count(lat, "park"), g("worker_park") - killed,
           f"lane {n} park duration samples (parks - {killed} killed while parked)")
        if stats.get("processes"):
            first = 0 if stats.get("late") else 1
            eq(g("proc_worker_start"), first + killed + violated,
               f"lane {n} worker processes started ({first} + {killed + violated} respawned)")
            eq(g("proc_killed_sandbox"), violated, f"lane {n} workers killed by the sandbox")
        eq(hist_count(lat, "queue"), ls["calls"] + violated, f"lane {n} queue wait samples")
        eq(hist_count(lat, "service"), ls["calls"], f"lane {n} service time samples")
        eq(hist_count(lat, "call"), ls["calls"] + violated, f"lane {n} call latency samples")
        # Synchronous-line calls (knit_call's fast path) are placed on
        # their lane's line in every topology; under steal the ticketed
        # calls go to the shared submit queue instead.
        # The program's knit_calls took its lanes' lines when sync_calls
        # counted them all (the inline topology takes none).
        if stats["sync_calls"] == stats["knit_calls"]:
            eq(g("sync_enqueue"), ls["knit_calls"], f"lane {n} synchronous-line calls")
        elif stats["sync_calls"] == 0:
            eq(g("sync_enqueue"), 0, f"lane {n} synchronous-line calls (none)")
        else:
            print(f"skip: lane {n} synchronous-line calls: {stats['sync_calls']} of the "
                  f"{stats['knit_calls']} knit_calls took a line, which lanes is unknown")
        eq(g("task_enqueue"),
           g("sync_enqueue") if steal and n < stats["workers"] else ls["calls"] + violated,
           f"lane {n} enqueues on its own queue (its line's included)")

    pl = pool["pool_level"]["counts"]
    tot = pool["totals"]["counts"]
    eq(pool.get("kind"), "processes" if stats.get("processes") else "threads", "pool kind")
    if stats.get("processes") and only is None:
        # Every worker process the pool started, it reaped (the pool was
        # destroyed before the program's end): by cause, crashes apart.
        ends = sum(tot.get(k, 0) for k in ("proc_exit_stopped", "proc_died_signal",
                                           "proc_died_status", "proc_killed",
                                           "proc_killed_protocol", "proc_killed_oom",
                                           "proc_killed_sandbox", "proc_exit_other"))
        started = stats["workers"] if stats.get("late") else stats["spawns"]
        eq(ends, started, "worker processes reaped (every cause)")
        eq(tot.get("proc_died_signal", 0) + tot.get("proc_died_status", 0) +
           tot.get("proc_killed_protocol", 0) + tot.get("proc_killed_oom", 0) +
           tot.get("proc_killed_sandbox", 0), stats["crashes"],
           "worker process deaths (signal + exit + protocol) == pool crashes")
        killed = sum(ls.get("killed", 0) for ls in stats["lanes"])
        eq(tot.get("proc_died_signal", 0), killed, "worker processes killed by a signal")
        eq(pool["totals"].get("death_signals"), [9] if killed else [],
           "the signals they died of (SIGKILL)")
        eq(tot.get("proc_exit_stopped", 0), stats["workers"],
           "worker processes that stopped when asked")
        for ls in stats["lanes"]:
            if ls["lane"] < stats["workers"]:
                lc = lanes.get(ls["lane"], zero)["counts"]
                eq(lc.get("proc_died_signal", 0), ls.get("killed", 0),
                   f"lane {ls['lane']} worker processes killed by a signal")
    if only is None:
        eq(tot.get("sync_enqueue", 0), stats["sync_calls"],
           "synchronous-line calls placed == sync_calls")
        eq(pl.get("sync_complete", 0), stats["sync_calls"],
           "synchronous-line calls completed == sync_calls")
        eq(pl.get("task_complete", 0) - pl.get("sync_complete", 0),
           stats["completed"] - stats["sync_calls"],
           "ticketed calls completed == completed - sync_calls")
    if stats.get("processes") and only is None:
        eq(tot.get("proc_worker_start", 0), stats["spawns"],
           "worker processes started == pool spawns")
        eq(stats["respawns"],
           sum(ls.get("killed", 0) + ls.get("violated", 0) for ls in stats["lanes"]),
           "the pool respawned each killed worker")
        eq(tot.get("proc_killed_sandbox", 0), stats.get("violations", 0),
           "workers killed by the sandbox == deaths[KNIT_DEATH_SANDBOX]")
    eq(pl.get("doorbell_arm", 0), stats["doorbell_arms"], "pool doorbell arms")
    eq(pl.get("doorbell_wake", 0), stats["doorbell_wakes"], "pool doorbell wakes")
    if only is None:
        eq(pl.get("task_complete", 0), stats["completed"], "pool calls completed")
        eq(tot.get("task_enqueue", 0), stats["enqueued"], "pool calls enqueued")
    else:
        eq(pl.get("task_complete", 0), by_lane[only]["calls"],
           f"pool calls completed (lane {only}'s only)")
    eq(pl.get("task_enqueue", 0), stats["enqueued"] - stats["sync_calls"] if steal else 0,
       "pool-level enqueues (the shared submit queue: the ticketed calls)")
    if only is None and "cold_calls" in stats:
        check(total_cold_rings >= stats["cold_calls"],
              f"every cold call rang a worker ({total_cold_rings} rings >= "
              f"{stats['cold_calls']} cold calls)")
    wake_cpu = pool["totals"]["latency"].get("wake_cpu", {}).get("count", 0)
    check(wake_cpu >= 1 or (only is not None and by_lane[only]["wakes_sent"] == 0), f"some ring was seen putting a sleeping worker on a CPU ({wake_cpu})")

    for where, lats in [("totals", pool["totals"]["latency"]),
                        ("pool level", pool["pool_level"]["latency"])] + \
                       [(f"lane {n}", l["latency"]) for n, l in lanes.items()]:
        for view, h in lats.items():
            if not h["count"]:
                continue
            ok = 0 < h["min_ns"] <= h["p50_ns"] <= h["p99_ns"] <= h["max_ns"] <= run_ns
            check(ok, f"{where} {view}: 0 < min {h['min_ns']} <= p50 {h['p50_ns']} <= "
                      f"p99 {h['p99_ns']} <= max {h['max_ns']} <= run {run_ns:.0f} ns")
            eq(sum(b[2] for b in h["hist"]), h["count"], f"{where} {view} buckets add up")
    print(f"{failures} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
