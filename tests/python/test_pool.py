# SPDX-License-Identifier: MIT
"""Pool's synchronous and by-hand layers: values of every type through
Python and C tasks, task errors, exceptions per status, enqueue/complete
with user_data (each call exactly once), per-call timeouts in seconds,
stats, stop and close, CFUNCTYPE lifetimes, and tools/python/example.py."""
import gc
import math
import os
import subprocess
import sys

import pytest

import knitting
from conftest import PKG


def python_tasks():
    def fail(x):
        raise knitting.TaskError(x, "failed on purpose")

    return {"echo": lambda x: x, "fail": fail, "boom": lambda x: 1 // x, "twice": lambda x: x * 2}


VALUES = [None, True, False, 0, -2 ** 63, 2 ** 63 - 1, 1.5, -0.0, float("inf"), "", "héllo",
          b"", b"\x00\xff" * 300, bytes(range(256)) * 40]


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


@pytest.fixture
def pypool(lib):
    with knitting.Pool(python_tasks(), lib=lib, workers=2) as pool:
        yield pool


@pytest.mark.parametrize("v", VALUES, ids=lambda v: repr(v)[:20])
def test_values_round_trip(pypool, cpool, v):
    assert same(pypool.call("echo", v), v)
    assert same(cpool.call("echo", v), v)


def test_task_errors(pypool, cpool):
    assert pypool.call("twice", 21) == 42
    with pytest.raises(knitting.TaskError) as e:
        pypool.call("fail", 7)
    assert (e.value.task_code, e.value.message, e.value.code) == (7, "failed on purpose", -knitting.KNIT_ETASK)
    with pytest.raises(knitting.TaskError) as e:
        pypool.call("boom", 0)
    assert "ZeroDivisionError" in e.value.message
    with pytest.raises(knitting.TaskError) as e:
        cpool.call("error", 5)
    assert (e.value.task_code, e.value.message) == (5, "bad input")
    with pytest.raises(knitting.TaskError) as e:
        cpool.call("fail", 9)
    assert e.value.task_code == 9
    assert cpool.call("upper", "abc") == "ABC"


def test_argument_errors(pypool):
    with pytest.raises(knitting.KnitError) as e:
        pypool.call("nope", 1)
    assert e.value.code == -knitting.KNIT_ENOTASK
    with pytest.raises(knitting.KnitError) as e:
        pypool.call(99, 1)
    assert e.value.code == -knitting.KNIT_ENOTASK
    with pytest.raises(TypeError):
        pypool.call("echo", object())
    with pytest.raises(OverflowError):
        pypool.call("echo", 2 ** 63)
    with pytest.raises(ValueError):
        pypool.enqueue("echo", 1, user_data=-1)
    for bad in (0, -1.0):
        with pytest.raises(ValueError):
            pypool.call("echo", 1, timeout=bad)
        with pytest.raises(ValueError):
            pypool.submit("echo", 1, timeout=bad)


def test_enqueue_complete_each_exactly_once(pypool):
    n = 300
    for i in range(n):
        pypool.enqueue("twice", i, user_data=i + 1)
    seen = {}
    while sum(seen.values()) < n:
        for _ticket, ud, r in pypool.complete(max=32, timeout=10.0):
            seen[ud] = seen.get(ud, 0) + 1
            assert r == 2 * (ud - 1)
    assert sorted(seen) == list(range(1, n + 1)) and set(seen.values()) == {1}
    assert pypool.complete(timeout=0) == []
    st = pypool.stats()
    assert st["enqueued"] == st["completed"] and st["pending"] == 0 and len(st["lane"]) == 2
    assert sum(ln["calls"] for ln in st["lane"]) == st["enqueued"]
    # Reaping by hand excludes the pool's own reaping on the same pool.
    with pytest.raises(RuntimeError):
        pypool.submit("twice", 1)


def test_timeouts_in_seconds(cpool, lib, ctasks):
    t = cpool.enqueue("sleep", 300, timeout=0.02)
    (ticket, _, r), = cpool.complete(max=1, timeout=10.0)
    assert ticket == t and isinstance(r, knitting.TimeoutError) and r.code == -knitting.KNIT_ETIMEDOUT
    assert isinstance(r, TimeoutError)  # the builtin too
    with pytest.raises(knitting.TimeoutError):
        cpool.call("sleep", 300, timeout=0.02)
    # A task registered with a default timeout (seconds in the tuple).
    with knitting.Pool({"sleep": (ctasks["sleep"], 0.02)}, lib=lib) as p:
        with pytest.raises(knitting.TimeoutError):
            p.call("sleep", 300)
        assert p.call("sleep", 0, timeout=5.0) > 0  # the deadline the task saw


def test_stop_close_and_closed_errors(lib, ctasks):
    pool = knitting.Pool({"double": ctasks["double"]}, lib=lib)
    pool.stop()
    with pytest.raises(knitting.ClosedError) as e:
        pool.call("double", 1)
    assert e.value.code == -knitting.KNIT_ECLOSED
    with pytest.raises(knitting.ClosedError):
        pool.complete()  # stopped and drained: no hang
    pool.close()
    pool.close()  # idempotent
    assert pool.closed
    with pytest.raises(knitting.ClosedError):
        pool.stats()
    with pytest.raises(RuntimeError):  # ClosedError is one, as Executor.submit after shutdown raises
        pool.submit("double", 1)


def test_trampolines_outlive_the_constructor(lib):
    pool = knitting.Pool({"inc": lambda x: x + 1}, lib=lib, workers=1)
    gc.collect()
    assert pool.call("inc", 41) == 42
    pool.close()


def test_bad_pools(lib):
    with pytest.raises(TypeError):
        knitting.Pool({"x": 3}, lib=lib)
    with pytest.raises(TypeError):
        knitting.Pool({"x": len}, lib=lib, wrokers=2)
    with pytest.raises(knitting.KnitError) as e:
        knitting.Pool({"x": len}, lib=lib, workers=knitting.KNIT_MAX_WORKERS + 1)
    assert e.value.code == -knitting.KNIT_EINVAL and "knit_pool_create" in str(e.value)


def test_a_pool_left_to_the_garbage_collector(lib, ctasks):
    pool = knitting.Pool({"double": ctasks["double"]}, lib=lib)
    futs = [pool.submit("double", i) for i in range(50)]
    core = pool._core
    del pool
    gc.collect()  # the finalizer cancels what is left and destroys the pool
    assert core.handle is None and not core.entries
    assert all(f.done() for f in futs)
    assert all(f.cancelled() or f.result() == 2 * i for i, f in enumerate(futs))


def test_example(libpath):
    env = dict(os.environ, KNITTING_LIB=libpath, PYTHONPATH=PKG)
    out = subprocess.run([sys.executable, os.path.join(PKG, "example.py")], env=env,
                         capture_output=True, text=True, timeout=60)
    want = ["words: 4", "sqrt(4) -> 2.0", "sqrt(9) -> 3.0", "sqrt(-1) -> error: task error 33: negative input",
            "sqrt(16) -> 4.0", "calls: 5 enqueued, 5 completed"]
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:-1] == want


def test_complete_tickets_and_wait_idle(pypool):
    """1.2: reap chosen calls only (the rest stays for complete()), the
    codes for tickets not to be reaped, and wait_idle beside a reaper."""
    t = [pypool.enqueue("twice", i, user_data=i) for i in range(20)]
    got = pypool.complete_tickets([t[3]], timeout=None)
    assert [(tk, ud, r) for tk, ud, r in got] == [(t[3], 3, 6)]
    with pytest.raises(knitting.KnitError) as e:
        pypool.complete_tickets([t[3]], timeout=0)
    assert e.value.code == -14  # KNIT_ENOTFOUND: reaped already
    want = set(t[:10]) - {t[3]}
    while want:
        for tk, ud, r in pypool.complete_tickets(sorted(want), max=4, timeout=None):
            assert r == 2 * ud and tk in want
            want.discard(tk)
    rest = {}
    while len(rest) < 10:
        for tk, ud, r in pypool.complete(timeout=None):
            rest[ud] = r
    assert rest == {i: 2 * i for i in range(10, 20)}
    # Not idle while a completion waits unreaped; idle once it is reaped.
    tk = pypool.enqueue("echo", 1)
    assert pypool.wait_idle(timeout=0.02) is False
    assert [x[0] for x in pypool.complete_tickets([tk])] == [tk]
    assert pypool.wait_idle(timeout=0) is True
    with pytest.raises(ValueError):
        pypool.complete_tickets([])


def test_priority_option_and_class_stats(pypool):
    """1.2: priority="high"|"low" reaches the pool (class counters), bad
    values are refused before anything is enqueued."""
    t = [pypool.enqueue("echo", i, user_data=i, priority=p)
         for i, p in enumerate([None, "high", "low", "high"])]
    with pytest.raises(ValueError):
        pypool.enqueue("echo", 9, priority="urgent")
    got = {}
    while len(got) < 4:
        for _tk, ud, r in pypool.complete(timeout=None):
            got[ud] = r
    assert got == {0: 0, 1: 1, 2: 2, 3: 3} and len(t) == 4
    st = pypool.stats()
    assert st["class_enqueued"][0] == 2 and st["class_enqueued"][2] == 1
    assert sum(st["class_enqueued"]) == st["enqueued"]
    assert sum(st["class_backlogged"]) == st["backlogged"]


def test_completion_info_only_when_timed(lib, ctasks):
    """info=True: None on a pool that did not ask for timing; on a timed
    pool the lane and a timing (run no shorter than the task's sleep)."""
    with knitting.Pool(ctasks, lib=lib, workers=2) as plain:
        plain.enqueue("double", 4)
        (_, _, r, info), = plain.complete(timeout=10, info=True)
        assert r == 8 and info is None
    with knitting.Pool(ctasks, lib=lib, workers=2, topology=knitting.KNIT_TOPOLOGY_LANES,
                       info_flags=knitting.KNIT_POOL_INFO_TIMING) as timed:
        for i in range(20):
            timed.enqueue("double", i, user_data=i)
        got = []
        while len(got) < 20:
            got += timed.complete(timeout=10, info=True)
        per_lane = [0, 0]
        for _, ud, r, info in got:
            assert r == 2 * ud
            assert info["flags"] == knitting.KNIT_INFO_LANE | knitting.KNIT_INFO_TIMING
            assert info["wait_ns"] >= 0 and info["run_ns"] >= info["cpu_ns"] >= 0
            per_lane[info["lane"]] += 1
        st = timed.stats()
        assert per_lane == [st["lane"][0]["calls"], st["lane"][1]["calls"]]
        assert st["deaths"] == [0] * knitting.KNIT_DEATH_CAUSE_MAX
