# SPDX-License-Identifier: MIT
"""Pool as a concurrent.futures.Executor: submit, map with chunksize,
shutdown (wait, cancel_futures), Future.cancel as knit_cancel, every
future resolved exactly once under concurrent submitters, and the GIL
released while a thread waits in a call."""
import concurrent.futures as cf
import threading

import pytest

import knitting


def test_submit_and_result(cpool):
    futs = [cpool.submit("double", i) for i in range(100)]
    assert all(isinstance(f, cf.Future) for f in futs)
    assert [f.result(timeout=30) for f in futs] == [2 * i for i in range(100)]
    with pytest.raises(knitting.TaskError) as e:
        cpool.submit("error", 4).result(timeout=30)
    assert (e.value.task_code, e.value.message) == (4, "bad input")
    with pytest.raises(knitting.TimeoutError):
        cpool.submit("sleep", 2000, timeout=0.01).result(timeout=30)


@pytest.mark.parametrize("chunksize", [1, 7, 64, 1000])
def test_map_in_order(cpool, chunksize):
    assert list(cpool.map("double", range(500), chunksize=chunksize)) == [2 * i for i in range(500)]
    assert list(cpool.map("double", [], chunksize=chunksize)) == []


def test_map_errors(cpool):
    it = cpool.map("fail", [0, 3, 0])
    assert next(it) is None
    with pytest.raises(knitting.TaskError):
        next(it)
    with pytest.raises(TypeError):
        cpool.map("double", [1], [2])
    with pytest.raises(ValueError):
        cpool.map("double", [1], chunksize=0)


def test_map_timeout_cancels_the_rest(lib, ctasks):
    with knitting.Pool(ctasks, lib=lib, workers=1) as pool:
        it = pool.map("sleep", [1500, 1500, 1500], timeout=0.05)
        with pytest.raises(TimeoutError):  # concurrent.futures.TimeoutError is the builtin
            next(it)
        it.close()  # cancels what is left
        st = pool.stats()
        assert st["enqueued"] == 3 and st["pending"] == 0


def test_cancel(lib, ctasks):
    with knitting.Pool(ctasks, lib=lib, workers=1) as pool:
        running = pool.submit("sleep", 500)
        waiting = pool.submit("sleep", 500)
        assert waiting.cancel() and waiting.cancelled()
        with pytest.raises(cf.CancelledError):
            waiting.result(timeout=30)
        assert running.cancel() and running.cancelled()  # KNIT_CANCEL_NOW: its result is dropped
        done = pool.submit("double", 21)
        assert done.result(timeout=30) == 42
        assert not done.cancel() and not done.cancelled()
        assert waiting.cancel()  # again: still cancelled
        # The cancelled calls' completions came and went: nothing waits.
        cf.wait([pool.submit("double", 0)], timeout=30)
        assert pool.stats()["pending"] == 0 and not pool._core.entries


def test_wait_and_as_completed_see_cancellation(lib, ctasks):
    with knitting.Pool(ctasks, lib=lib, workers=1) as pool:
        futs = [pool.submit("sleep", 300)] + [pool.submit("double", i) for i in range(10)]
        for f in futs[1:6]:
            assert f.cancel()
        done, not_done = cf.wait(futs, timeout=60)
        assert not not_done
        assert sum(f.cancelled() for f in cf.as_completed(futs, timeout=60)) == 5


def test_shutdown_cancel_futures(lib, ctasks):
    pool = knitting.Pool(ctasks, lib=lib, workers=1)
    futs = [pool.submit("sleep", 300)] + [pool.submit("double", i) for i in range(20)]
    pool.shutdown(wait=True, cancel_futures=True)
    assert all(f.done() for f in futs)
    assert all(f.cancelled() for f in futs[1:])  # they never ran: the worker was in the sleep
    assert futs[0].cancelled()  # a running call too: its result is dropped
    with pytest.raises(knitting.ClosedError):
        pool.submit("double", 1)
    pool.shutdown()  # idempotent


def test_shutdown_drains(lib, ctasks):
    pool = knitting.Pool(ctasks, lib=lib, workers=2)
    futs = [pool.submit("double", i) for i in range(300)]
    pool.shutdown(wait=True)
    assert [f.result(timeout=0) for f in futs] == [2 * i for i in range(300)]


def test_shutdown_without_waiting(lib, ctasks):
    pool = knitting.Pool(ctasks, lib=lib, workers=2)
    futs = [pool.submit("double", i) for i in range(300)]
    pool.shutdown(wait=False)
    with pytest.raises(RuntimeError):
        pool.submit("double", 1)
    done, not_done = cf.wait(futs, timeout=60)
    assert not not_done
    assert [f.result() for f in futs] == [2 * i for i in range(300)]


def test_shutdown_from_a_done_callback(lib, ctasks):
    pool = knitting.Pool(ctasks, lib=lib, workers=1)
    fired = threading.Event()
    f = pool.submit("double", 1)
    f.add_done_callback(lambda _f: (pool.shutdown(wait=True), fired.set()))
    assert fired.wait(60) and f.result() == 2 and pool.closed


def test_each_future_resolved_exactly_once(lib, ctasks):
    calls = {}
    lock = threading.Lock()

    def count(f):
        with lock:
            calls[f] = calls.get(f, 0) + 1

    with knitting.Pool(ctasks, lib=lib, workers=2) as pool:
        futs = [[] for _ in range(4)]

        def submitter(k):
            for i in range(500):
                f = pool.submit("double", k * 1000 + i)
                f.add_done_callback(count)
                futs[k].append(f)

        ts = [threading.Thread(target=submitter, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        allf = sum(futs, [])
        assert sorted(f.result(timeout=60) for f in allf) == sorted(2 * (k * 1000 + i) for k in range(4)
                                                                   for i in range(500))
        st = pool.stats()
        assert st["enqueued"] == st["completed"] == 2000
    assert len(calls) == 2000 and set(calls.values()) == {1}


def test_the_gil_is_released_during_calls(cpool):
    # ffi_meet returns how many calls were inside it at once (waiting, bounded,
    # for 2). Two threads calling it meet only if neither holds the GIL while
    # it waits in knit_call.
    got = []
    ts = [threading.Thread(target=lambda: got.append(cpool.call("meet", 2))) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [2, 2]


def test_shutdown_from_a_callback_while_another_thread_shuts_down(lib, ctasks):
    pool = knitting.Pool(ctasks, lib=lib, workers=1)
    gate = pool.submit("sleep", 200)
    gate.add_done_callback(lambda _f: pool.shutdown(wait=True))
    t = threading.Thread(target=pool.shutdown, kwargs={"wait": True}, daemon=True)
    t.start()
    t.join(120)  # a bound on a deadlock, not a measurement
    assert not t.is_alive(), "shutdown deadlocked against a done-callback's shutdown"
    assert gate.result(timeout=0) == 0 and pool.closed  # ffi_sleep: the deadline it saw, none
