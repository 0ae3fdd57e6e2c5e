# SPDX-License-Identifier: MIT
"""asyncio: await pool.acall(...) and pool.asubmit(...) reaped by the event
loop through add_reader on the completion descriptor (Pool.fileno()), with
the loop free meanwhile; the reader is registered only while calls are
pending; cancelling the asyncio future cancels the call."""
import asyncio
import os


import pytest

import knitting


def test_fileno(cpool):
    fd = cpool.fileno()
    assert fd >= 0 and fd == cpool.fileno()
    os.fstat(fd)  # a live descriptor


def test_acall(cpool):
    async def main():
        assert await cpool.acall("double", 21) == 42
        fut = cpool.asubmit("upper", "abc")
        assert isinstance(fut, asyncio.Future)
        assert await fut == "ABC"
        with pytest.raises(knitting.TaskError) as e:
            await cpool.acall("error", 3)
        assert e.value.task_code == 3
        with pytest.raises(knitting.TimeoutError):
            await cpool.acall("sleep", 2000, timeout=0.01)

    asyncio.run(main())


def test_many_calls_with_the_loop_running(cpool):
    ticks = 0

    async def ticker(stop):
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    async def main():
        stop = asyncio.Event()
        t = asyncio.ensure_future(ticker(stop))
        res = await asyncio.gather(*[cpool.acall("double", i) for i in range(2000)],
                                   cpool.acall("sleep", 50))
        stop.set()
        await t
        return res

    res = asyncio.run(main())
    assert res[:2000] == [2 * i for i in range(2000)]
    assert ticks > 0  # the loop ran while the calls were out
    reader = next(iter(cpool._core.readers.values()), None)
    assert reader is not None and reader.pending == 0 and reader.fd is None  # unregistered when idle
    assert not cpool._core.entries


def test_cancel_from_asyncio(cpool):
    async def main():
        task = asyncio.ensure_future(cpool.acall("sleep", 2000))
        await asyncio.sleep(0)  # let it enqueue
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The call's one completion (-KNIT_ECANCELED) comes and is dropped.
        for _ in range(5000):
            if not cpool._core.entries:
                break
            await asyncio.sleep(0.001)
        assert not cpool._core.entries
        assert await cpool.acall("double", 2) == 4

    asyncio.run(main())
    assert cpool.stats()["pending"] == 0


def test_asyncio_and_threads_share_a_pool(cpool):
    async def main():
        thread_futs = [cpool.submit("double", i) for i in range(200)]  # the reaper thread runs too
        got = await asyncio.gather(*[cpool.acall("double", i) for i in range(200)],
                                   *[asyncio.wrap_future(f) for f in thread_futs])
        return got

    assert asyncio.run(main()) == [2 * i for i in range(200)] * 2


def test_process_pool_from_asyncio(procpool):
    async def main():
        return await asyncio.gather(*[procpool.acall("double", i) for i in range(2000)])

    assert asyncio.run(main()) == [2 * i for i in range(2000)]


def test_acall_after_shutdown(lib, ctasks):
    pool = knitting.Pool(ctasks, lib=lib)
    pool.shutdown()

    async def main():
        with pytest.raises(knitting.ClosedError):
            await pool.acall("double", 1)

    asyncio.run(main())


def test_asubmit_needs_a_running_loop(cpool):
    with pytest.raises(RuntimeError):
        cpool.asubmit("double", 1)
