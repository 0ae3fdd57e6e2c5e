# SPDX-License-Identifier: MIT
"""Process pools (knit-worker processes over tests/ffi/tasks.c's task
library): calls, the executor, and a crashing task as CrashedError."""
import ctypes as C
import os
import time

import pytest

import knitting


def test_calls_and_map(procpool):
    assert procpool.call("double", 21) == 42
    assert procpool.call("upper", "abc") == "ABC"
    assert list(procpool.map("double", range(300), chunksize=50)) == [2 * i for i in range(300)]
    st = procpool.stats()
    assert st["spawns"] == 2 and st["crashes"] == 0


def test_a_crashing_task(procpool):
    with pytest.raises(knitting.CrashedError) as e:
        procpool.call("crash")
    assert e.value.code == -knitting.KNIT_ECRASHED
    with pytest.raises(knitting.CrashedError):
        procpool.submit("crash").result(timeout=60)
    # The pool respawns the worker and goes on.
    assert procpool.call("double", 5) == 10
    # Two crashes of one lane in a row: the second respawn waits out a
    # backoff (10 ms by default) and counts once it happened.
    for _ in range(20000):
        st = procpool.stats()
        if st["respawns"] == 2:
            break
        time.sleep(0.001)
    assert st["crashes"] == 2 and st["respawns"] == 2


def test_a_crashed_call_says_why(procpool):
    """complete(info=True): the crashed call's info names the signal and
    the dead worker's pid; the stats count the death by cause."""
    t = procpool.enqueue("crash")
    got = []
    for _ in range(100):
        got += procpool.complete(timeout=10, info=True)
        if got:
            break
    assert len(got) == 1
    ticket, _, err, info = got[0]
    assert ticket == t and isinstance(err, knitting.CrashedError)
    assert info is not None and info["flags"] & knitting.KNIT_INFO_DEATH
    assert info["pid"] > 0
    assert info["death"] in (knitting.KNIT_DEATH_SIGNAL, knitting.KNIT_DEATH_EXIT)
    st = procpool.stats()
    assert sum(st["deaths"]) == 1 and st["deaths"][info["death"]] == 1


def test_a_sandbox_violation_names_its_syscall(lib, tasks_so, tmp_path):
    """With the seccomp sandbox, a task that opens a file (await creates
    one) fails only its own call, and its info names the syscall the
    kernel reported (openat) beside the cause; the next call runs."""
    sb = knitting.Sandbox(size=C.sizeof(knitting.Sandbox), flags=knitting.KNIT_SANDBOX_SECCOMP)
    with knitting.Pool(lib=lib, workers=1, worker_kind=knitting.KNIT_WORKERS_PROCESSES,
                       task_library=tasks_so, sandbox=C.addressof(sb)) as pool:
        pool.enqueue("await", str(tmp_path / "never"))
        [(_, _, err, info)] = pool.complete(max=1, timeout=20, info=True)
        assert isinstance(err, knitting.CrashedError)
        assert info["death"] == knitting.KNIT_DEATH_SANDBOX
        assert info["flags"] & knitting.KNIT_INFO_SYSCALL
        assert info["syscall_name"] == "openat" and info["syscall_nr"] > 0
        assert not os.path.exists(tmp_path / "never")
        assert pool.call("double", 4) == 8
        assert pool.stats()["deaths"][knitting.KNIT_DEATH_SANDBOX] == 1


def _wait_file(path):
    for _ in range(20000):
        if os.path.exists(path):
            return
        time.sleep(0.001)
    raise AssertionError(path + " never appeared")


def test_cancel_kill_ends_a_hung_call(lib, tasks_so, tmp_path):
    """cancel(ticket, kill=True): the call ends cancelled at once, only the
    worker running it is killed and replaced, the other worker's call and
    the pool go on."""
    with knitting.Pool(lib=lib, workers=2, worker_kind=knitting.KNIT_WORKERS_PROCESSES,
                       topology=knitting.KNIT_TOPOLOGY_LANES, task_library=tasks_so) as pool:
        a, b = str(tmp_path / "a"), str(tmp_path / "b")
        ta = pool.enqueue("await", a, user_data=1)
        tb = pool.enqueue("await", b, user_data=2)
        _wait_file(a)
        _wait_file(b)
        pool.cancel(ta, kill=True)
        [(t, ud, r)] = pool.complete(max=1, timeout=20)
        assert t == ta and ud == 1
        assert isinstance(r, knitting.CancelledError)
        os.unlink(b)
        [(t, ud, r)] = pool.complete(max=1, timeout=20)
        assert t == tb and r == b
        assert pool.call("double", 4) == 8
        # The successor's spawn follows the kill (the monitor spawns after
        # the lane's calls completed): wait for it, bounded.
        end = time.monotonic() + 20
        st = pool.stats()
        while st["spawns"] < 3 and time.monotonic() < end:
            time.sleep(0.002)
            st = pool.stats()
        assert st["cancel_kills"] == 1 and st["crashes"] == 0 and st["spawns"] == 3
        with pytest.raises(ValueError):
            pool.cancel(tb, signal=True, kill=True)


def test_cancel_kill_on_a_thread_pool_is_invalid(cpool):
    t = cpool.enqueue("sleep", 20)
    with pytest.raises(knitting.KnitError) as e:
        cpool.cancel(t, kill=True)
    assert e.value.code == -knitting.KNIT_EINVAL
    [(tt, _, r)] = cpool.complete(max=1, timeout=20)
    assert tt == t and not isinstance(r, Exception)


def test_restart_options_and_backoff_counters(lib, tasks_so):
    """respawn_window_ms / respawn_backoff_ms reach the pool: the second crash
    in a row of the one worker waits a backoff, counted in the stats."""
    with knitting.Pool(lib=lib, workers=1, worker_kind=knitting.KNIT_WORKERS_PROCESSES,
                       task_library=tasks_so, respawn_max=10, respawn_window_ms=60000,
                       respawn_backoff_ms=20, respawn_backoff_max_ms=20) as pool:
        for _ in range(3):
            with pytest.raises(knitting.CrashedError):
                pool.call("crash")
        assert pool.call("double", 3) == 6
        st = pool.stats()
        assert st["crashes"] == 3 and st["respawns"] == 3
        assert st["respawn_backoffs"] == 2 and st["respawn_backoff_ms"] == 40
