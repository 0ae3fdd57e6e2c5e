# SPDX-License-Identifier: MIT
"""knitting._pool - Pool: a libknitting pool as a concurrent.futures.Executor,
with asyncio calls over its completion descriptor.

Who reaps what. Completions of submitted calls (submit, map, asubmit,
acall) are reaped by whichever comes first of: the pool's reaper thread
(started by the first submit or map; it waits in knit_complete without the
GIL), the asyncio loop's reader (knit_complete with a zero timeout when the
completion descriptor is readable), and the shutdown. libknitting hands each
completion to exactly one of them; the reaper pops its entry from the table
under the lock, so each future is resolved exactly once, and every
completion is released right after its result is copied out.

A pool is reaped either by the pool (submit, map, asubmit, acall) or by its
user (enqueue, complete), never both: the first use picks the mode and the
other raises. call() needs no reaping and works in both.

The handle is guarded: every use enters under the lock, and the destroy
waits until no thread is inside, after a stop that makes every waiter
return; so no thread touches a destroyed pool, and a use after close raises
ClosedError.
"""
import asyncio
import concurrent.futures
import ctypes as C
import itertools
import math
import os
import threading
import time
import weakref
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from . import _abi as A
from ._errors import ClosedError, KnitError, TaskError, check, error_for
from ._library import load
from ._values import from_value, python_task, to_value

#: A task given to Pool: a Python callable, a C task function (TASK_FN), or
#: a tuple (task, timeout_seconds) or (task, timeout_seconds, flags).
TaskSpec = Union[Callable[[Any], Any], "A.TASK_FN", Tuple[Any, ...]]

_REAP_MAX = 64
_CANCELLED = object()  # an outcome: resolve the future as cancelled


_PRIORITY_FLAGS = {None: 0, "high": A.KNIT_CALL_HIGH, "low": A.KNIT_CALL_LOW}


def _wait_ns(timeout: Optional[float]) -> int:
    """A wait in seconds (None: forever) as knit_complete's timeout_ns."""
    if timeout is None:
        return -1
    if timeout < 0:
        raise ValueError("timeout must be >= 0 seconds or None, not %r" % (timeout,))
    return min(int(timeout * 1e9), (1 << 63) - 1)


def _deadline_ms(timeout: Optional[float]) -> int:
    """A call's deadline in seconds (None: the task's default) as timeout_ms."""
    if timeout is None:
        return 0
    if not timeout > 0:
        raise ValueError("a call's timeout must be > 0 seconds or None, not %r" % (timeout,))
    ms = max(1, math.ceil(timeout * 1000))
    if ms >= A.KNIT_ZERO:
        raise ValueError("a call's timeout must be under %d seconds" % (A.KNIT_ZERO // 1000))
    return ms


_INFO_FIELDS = ("lane", "pid", "wait_ns", "run_ns", "cpu_ns", "death", "death_detail")


def _info(core: "_Core", h: C.c_void_p, c: A.Completion) -> Optional[Dict[str, Any]]:
    """knit_completion_info of c as a dict (flags and the members it
    covers), or None when the pool kept none for it (read before the
    completion is released: the release drops it)."""
    if not hasattr(core.lib, "knit_completion_info"):
        raise KnitError(-A.KNIT_EVERSION, "knit_completion_info", "needs libknitting 1.2")
    ci = A.CompletionInfo(size=C.sizeof(A.CompletionInfo))
    rc = core.lib.knit_completion_info(h, C.byref(c), C.byref(ci))
    if rc == -A.KNIT_ENOTFOUND:
        return None
    check(rc, "knit_completion_info")
    d = {"flags": ci.flags, **{n: getattr(ci, n) for n in _INFO_FIELDS}}
    # A sandbox violation's syscall (KNIT_INFO_SYSCALL): the name is the
    # library's own table's, ASCII.
    if ci.flags & A.KNIT_INFO_SYSCALL:
        d["syscall_nr"] = ci.syscall_nr
        d["syscall_arch"] = ci.syscall_arch
        d["syscall_name"] = ci.syscall_name.decode("ascii", "replace")
    return d


def _reaped(core, h, out, n: int, info: bool = False) -> List[Tuple[Any, ...]]:
    """The first n completions of out as (ticket, user_data, result or
    exception), with info a fourth item (_info), each one's result bytes
    released to the pool as it is read."""
    done = []
    for c in out[:n]:
        extra: Tuple[Any, ...] = ()
        try:
            if info:
                extra = (_info(core, h, c),)
            r = _outcome(core, c)
        except KnitError as e:
            r = e
        finally:
            core.lib.knit_completion_release(h, C.byref(c))
        if r is _CANCELLED:
            r = error_for(c.status, "call")
        done.append((c.ticket, c.user_data or 0, r) + extra)
    return done

def _outcome(core: "_Core", c: A.Completion) -> Any:
    """A completion's result, or the exception it stands for (not raised)."""
    if c.status == 0:
        return from_value(c.result)
    if c.status == -A.KNIT_ETASK:
        r = from_value(c.result)
        return r if isinstance(r, TaskError) else TaskError(0, "")
    if c.status == -A.KNIT_ECANCELED or (c.status == -A.KNIT_ECLOSED and core.cancel_futures):
        return _CANCELLED
    return error_for(c.status, "call")


class Future(concurrent.futures.Future):
    """A concurrent.futures.Future for one enqueued call: cancel() cancels
    the call itself (knit_cancel with KNIT_CANCEL_NOW), whether it waits or
    runs; a running task's result is then dropped."""

    def __init__(self, core: "_Core") -> None:
        super().__init__()
        self._knit_core = core
        self.ticket = 0  #: the call's ticket (set once it is enqueued)

    def cancel(self) -> bool:
        """Cancel the call. True if it is cancelled (now or before); False
        when it has completed or its completion is on its way."""
        if self.done():
            return self.cancelled()
        if self.ticket == 0 or self._knit_core.cancel_ticket(self.ticket) != 0:
            return False
        # Its one completion is -KNIT_ECANCELED; the reaper notifies waiters.
        return concurrent.futures.Future.cancel(self)


class _FutureEntry:
    __slots__ = ("fut",)

    def __init__(self, fut: Future) -> None:
        self.fut = fut

    def resolve(self, out: Any) -> None:
        fut = self.fut
        if out is _CANCELLED:
            concurrent.futures.Future.cancel(fut)
            fut.set_running_or_notify_cancel()
        elif fut.set_running_or_notify_cancel():
            if isinstance(out, BaseException):
                fut.set_exception(out)
            else:
                fut.set_result(out)


class _AioEntry:
    __slots__ = ("reader", "fut")

    def __init__(self, reader: "_LoopReader", fut: "asyncio.Future[Any]") -> None:
        self.reader, self.fut = reader, fut

    def _settle(self, out: Any) -> None:  # in the loop's thread
        fut = self.fut
        if not fut.done():
            if out is _CANCELLED:
                fut.cancel()
            elif isinstance(out, BaseException):
                fut.set_exception(out)
            else:
                fut.set_result(out)
        self.reader.done_one()

    def resolve(self, out: Any) -> None:
        loop = self.reader.loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._settle(out)
            return
        try:
            loop.call_soon_threadsafe(self._settle, out)
        except RuntimeError:  # the loop is closed: nobody is left to tell
            pass


class _LoopReader:
    """One event loop's watch on the completion descriptor: registered
    (loop.add_reader on a dup of it, so a pool destroyed first cannot leave
    the loop watching a reused number) while the loop has calls pending, and
    removed when it has none. Used only in the loop's thread."""

    def __init__(self, core: "_Core", loop: asyncio.AbstractEventLoop) -> None:
        self.core, self.loop = core, loop
        self.pending = 0
        self.fd: Optional[int] = None

    def add_one(self) -> None:
        if self.fd is None:
            self.fd = os.dup(self.core.completion_fd())
            self.loop.add_reader(self.fd, self.core.reap, 0)
        self.pending += 1

    def done_one(self) -> None:
        self.pending -= 1
        if self.pending == 0 and self.fd is not None:
            self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = None


class _Core:
    """The state shared by a Pool, its futures, its reaper thread and its
    finalizer (which must not keep the Pool alive)."""

    def __init__(self, lib: C.CDLL) -> None:
        self.lib = lib
        self.handle: Optional[C.c_void_p] = None
        self.keep: List[Any] = []          # CFUNCTYPE objects, names: alive until destroyed
        self.cond = threading.Condition()
        self.users = 0                     # threads inside a C call on the handle
        self.dead = False                  # destroyed (or being destroyed)
        self.closing = False               # shutdown begun: no new calls
        self.cancel_futures = False        # shutdown(cancel_futures=True): ECLOSED -> cancelled
        self.entries: Dict[int, Any] = {}  # user_data key -> _FutureEntry / _AioEntry
        self.keys = itertools.count(1)
        self.mode: Optional[str] = None    # "pool" or "user" reaping
        self.reaper: Optional[threading.Thread] = None
        self.readers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopReader]" = \
            weakref.WeakKeyDictionary()
        self.teardown_lock = threading.RLock()  # a callback run by the teardown may shut down
        self.torn = False
        self.fd: Optional[int] = None

    # ---- the guarded handle ----
    def enter(self, where: str) -> C.c_void_p:
        with self.cond:
            if self.dead or self.handle is None:
                raise ClosedError(-A.KNIT_ECLOSED, where, "the pool is closed")
            self.users += 1
            return self.handle

    def leave(self) -> None:
        with self.cond:
            self.users -= 1
            if self.users == 0 and self.dead:
                self.cond.notify_all()

    def set_mode(self, mode: str) -> None:
        with self.cond:
            if self.mode is None:
                self.mode = mode
            elif self.mode != mode:
                raise RuntimeError(
                    "this pool's completions are reaped by %s; do not mix enqueue()/complete() "
                    "with submit()/map()/acall() on one pool"
                    % ("the pool (submit, map, acall)" if self.mode == "pool" else
                       "its user (enqueue, complete)"))

    def cancel_ticket(self, ticket: int) -> int:
        try:
            h = self.enter("knit_cancel")
        except ClosedError:
            return -A.KNIT_ECLOSED
        try:
            return self.lib.knit_cancel(h, ticket, A.KNIT_CANCEL_NOW)
        finally:
            self.leave()

    def completion_fd(self) -> int:
        if self.fd is None:
            h = self.enter("knit_completion_fd")
            try:
                self.fd = check(self.lib.knit_completion_fd(h), "knit_completion_fd")
            finally:
                self.leave()
        return self.fd

    # ---- reaping ----
    def reap(self, timeout_ns: int, out: Optional[C.Array] = None) -> int:
        """One knit_complete (timeout_ns as there); resolves what it got.
        Returns its count, or a negative code (-KNIT_ECLOSED: stopped and
        drained, or destroyed)."""
        if out is None:
            out = (A.Completion * _REAP_MAX)()
        try:
            h = self.enter("knit_complete")
        except ClosedError:
            return -A.KNIT_ECLOSED
        done = []
        try:
            n = self.lib.knit_complete(h, out, _REAP_MAX, timeout_ns)
            for c in out[:max(n, 0)]:
                try:
                    res = _outcome(self, c)
                except KnitError as e:
                    res = e
                finally:
                    self.lib.knit_completion_release(h, C.byref(c))
                with self.cond:
                    entry = self.entries.pop(c.user_data or 0, None)
                if entry is not None:
                    done.append((entry, res))
        finally:
            self.leave()
        # Resolved outside the guard: a done-callback may shut the pool down.
        for entry, res in done:
            entry.resolve(res)
        return n

    def _reaper_main(self) -> None:
        out = (A.Completion * _REAP_MAX)()
        while True:
            n = self.reap(-1, out)
            if n < 0:
                if n != -A.KNIT_ECLOSED:  # cannot reap: fail what waits rather than hang it
                    self.fail_all(error_for(n, "knit_complete"))
                return

    def start_reaper(self) -> None:
        with self.cond:
            if self.reaper is None and not self.closing:
                self.reaper = threading.Thread(target=self._reaper_main, name="knitting-reaper",
                                               daemon=True)
                self.reaper.start()

    def fail_all(self, exc: BaseException) -> None:
        with self.cond:
            entries, self.entries = list(self.entries.values()), {}
        for entry in entries:
            entry.resolve(exc)

    # ---- the end ----
    def teardown(self, cancel: bool) -> None:
        """Stop (draining, or cancelling what has not completed), resolve every
        future, destroy the pool. Idempotent; concurrent callers wait, except
        a done-callback that shuts the pool down: in the thread tearing down
        it finds the work begun and returns, and in the reaper thread, which
        another thread's teardown waits for, it returns if that one began."""
        if threading.current_thread() is self.reaper:
            if not self.teardown_lock.acquire(blocking=False):
                return
        else:
            self.teardown_lock.acquire()
        try:
            self._teardown(cancel)
        finally:
            self.teardown_lock.release()

    def _teardown(self, cancel: bool) -> None:
        if self.torn:
            return
        self.torn = True
        with self.cond:
            self.closing = True
            self.cancel_futures = self.cancel_futures or cancel
            handle, reaper = self.handle, self.reaper
        if handle is None:
            return
        flags = A.KNIT_STOP_CANCEL if cancel else A.KNIT_STOP_DRAIN
        rc = self.lib.knit_stop(handle, flags, -1)
        if self.mode == "pool":
            # knit_complete returns -KNIT_ECLOSED once all is reaped.
            while self.reap(-1) >= 0:
                pass
            if reaper is not None and reaper is not threading.current_thread():
                reaper.join()
        with self.cond:
            self.dead = True
            while self.users:
                self.cond.wait()
        self.lib.knit_pool_destroy(handle)
        self.handle = None
        self.fail_all(ClosedError(-A.KNIT_ECLOSED, "shutdown",
                                  "knit_stop returned %d" % rc if rc else ""))


class Pool(concurrent.futures.Executor):
    """A libknitting pool, usable as a concurrent.futures.Executor.

    tasks: a mapping name -> task for a thread pool, where a task is a Python
    callable (fn(arg) -> result; it runs under the GIL, so Python tasks run
    one at a time), a C task function (a TASK_FN, e.g.
    ``ctypes.cast(cdll.my_task, knitting.TASK_FN)``; C tasks run in parallel),
    or a tuple (task, timeout_seconds[, flags]). Omit it for a process pool,
    whose tasks come from ``task_library``.
    lib: a loaded library (knitting.load()) or the path of one; default
    load().
    options: any PoolOptions field (workers=2, worker_kind=
    KNIT_WORKERS_PROCESSES, task_library="/path/tasks.so", ...); strings are
    encoded, worker_prefix takes a list of words.

    Time is in seconds (floats) everywhere; None means no timeout (for a
    call: the task's default, which is none unless the task was given one).
    Failures raise KnitError or its subclasses: TaskError (the task's code
    and message), CrashedError, TimeoutError, CancelledError, ClosedError.

    Leaving a ``with`` block is shutdown(wait=True): every call submitted
    runs to completion first.
    """

    def __init__(self, tasks: Optional[Mapping[str, TaskSpec]] = None,
                 lib: Union[None, str, C.CDLL] = None, **options: Any) -> None:
        lib = load(lib) if lib is None or isinstance(lib, str) else lib
        core = self._core = _Core(lib)
        self._ids: Dict[str, int] = {}
        entries = []
        for name, spec in (tasks or {}).items():
            if isinstance(spec, tuple):
                if not 1 <= len(spec) <= 3:
                    raise TypeError("task %r: a tuple is (task, timeout_seconds[, flags])" % name)
                fn, timeout, flags = (spec + (None, 0)[len(spec) - 1:])[:3]
            else:
                fn, timeout, flags = spec, None, 0
            if not isinstance(fn, A.TASK_FN):
                if not callable(fn):
                    raise TypeError("task %r is neither callable nor a TASK_FN" % name)
                fn = python_task(lib, fn)
            bname = name.encode()
            core.keep += [fn, bname]
            entries.append(A.Task(bname, fn, _deadline_ms(timeout), flags))
        arr = (A.Task * len(entries))(*entries) if entries else None
        opts = A.PoolOptions(size=C.sizeof(A.PoolOptions))
        fields = dict(A.PoolOptions._fields_)
        for k, v in options.items():
            if k == "size" or k not in fields:
                raise TypeError("unknown pool option %r" % k)
            if isinstance(v, str):
                v = v.encode()
                core.keep.append(v)
            elif k == "worker_prefix" and isinstance(v, (list, tuple)):
                argv = (C.c_char_p * (len(v) + 1))(*[w.encode() for w in v], None)
                core.keep.append(argv)
                v = C.cast(argv, C.POINTER(C.c_char_p))
            setattr(opts, k, v)
        handle = C.c_void_p()
        check(lib.knit_pool_create(C.byref(opts), arr, len(entries), C.byref(handle)),
              "knit_pool_create")
        core.handle = handle
        self._finalizer = weakref.finalize(self, core.teardown, True)

    # ---- tasks ----
    def task_id(self, name: str) -> int:
        """The id of the task called name (raises KnitError -KNIT_ENOTASK)."""
        tid = self._ids.get(name)
        if tid is None:
            h = self._core.enter("knit_pool_task_id")
            try:
                tid = check(self._core.lib.knit_pool_task_id(h, name.encode()), "task %r" % name)
            finally:
                self._core.leave()
            self._ids[name] = tid
        return tid

    def _tid(self, task: Union[str, int]) -> int:
        if isinstance(task, int):
            if not 0 <= task < (1 << 32):
                raise KnitError(-A.KNIT_ENOTASK, "task %d" % task)
            return task
        return self.task_id(task)

    def _options(self, timeout: Optional[float], priority: Optional[str] = None) -> Optional[A.CallOptions]:
        ms = _deadline_ms(timeout)
        flags = _PRIORITY_FLAGS.get(priority, -1)
        if flags < 0:
            raise ValueError("priority must be None, 'high' or 'low'")
        if not ms and not flags:
            return None
        return A.CallOptions(size=C.sizeof(A.CallOptions), flags=flags, timeout_ms=ms)

    # ---- one synchronous call ----
    def call(self, task: Union[str, int], arg: Any = None, timeout: Optional[float] = None) -> Any:
        """Run task(arg) and return its result, raising what it failed with.
        The GIL is released while this thread waits."""
        core = self._core
        v, _buf = to_value(arg)
        ns = 0 if timeout is None else max(1, _deadline_ms(timeout) and int(timeout * 1e9))
        tid = self._tid(task)
        c = A.Completion()
        h = core.enter("knit_call")
        try:
            check(core.lib.knit_call(h, tid, C.byref(v), C.byref(c), ns), "knit_call")
            try:
                res = _outcome(core, c)
            finally:
                core.lib.knit_completion_release(h, C.byref(c))
        finally:
            core.leave()
        if res is _CANCELLED:
            res = error_for(c.status, "call")
        if isinstance(res, BaseException):
            raise res
        return res

    # ---- futures ----
    def _enqueue(self, tid: int, v: A.Value, key: int, opts: Optional[A.CallOptions]) -> int:
        core = self._core
        t = C.c_uint64()
        h = core.enter("knit_enqueue")
        try:
            if opts is not None:
                rc = core.lib.knit_enqueue_ex(h, tid, C.byref(v), C.c_void_p(key), C.byref(opts),
                                              C.byref(t))
            else:
                rc = core.lib.knit_enqueue(h, tid, C.byref(v), C.c_void_p(key), C.byref(t))
        finally:
            core.leave()
        check(rc, "knit_enqueue")
        return t.value

    def _register(self, entry: Any) -> int:
        core = self._core
        with core.cond:
            if core.closing or core.dead:
                raise ClosedError(-A.KNIT_ECLOSED, "submit", "the pool is shut down")
            key = next(core.keys)
            core.entries[key] = entry
        return key

    def _unregister(self, key: int) -> None:
        with self._core.cond:
            self._core.entries.pop(key, None)

    def submit(self, task: Union[str, int], arg: Any = None, /, *,  # type: ignore[override]
               timeout: Optional[float] = None, priority: Optional[str] = None) -> Future:
        """Enqueue task(arg) and return its Future. timeout: the call's
        deadline in seconds (it then fails with TimeoutError). priority:
        None (normal), "high" or "low" (libknitting 1.2: KNIT_CALL_HIGH /
        KNIT_CALL_LOW; placed before waiting calls of lower classes)."""
        core = self._core
        core.set_mode("pool")
        v, _buf = to_value(arg)
        tid, opts = self._tid(task), self._options(timeout, priority)
        fut = Future(core)
        key = self._register(_FutureEntry(fut))
        try:
            fut.ticket = self._enqueue(tid, v, key, opts)
        except BaseException:
            self._unregister(key)
            raise
        core.start_reaper()
        return fut

    def _submit_many(self, tid: int, args: List[Any], opts: Optional[A.CallOptions]) -> List[Future]:
        """args as one knit_enqueue_many burst (repeated for what it leaves)."""
        core = self._core
        n = len(args)
        vals = [to_value(a)[0] for a in args]
        futs = [Future(core) for _ in args]
        keys = [self._register(_FutureEntry(f)) for f in futs]
        reqs = (A.Request * n)()
        po = C.pointer(opts) if opts is not None else None
        for i in range(n):
            reqs[i].task, reqs[i].arg, reqs[i].user_data = tid, C.pointer(vals[i]), keys[i]
            reqs[i].opts = po
        tickets = (C.c_uint64 * n)()
        done = 0
        try:
            while done < n:
                h = core.enter("knit_enqueue_many")
                try:
                    k = core.lib.knit_enqueue_many(
                        h, C.cast(C.addressof(reqs) + done * C.sizeof(A.Request), C.POINTER(A.Request)),
                        n - done,
                        C.cast(C.addressof(tickets) + done * C.sizeof(C.c_uint64), C.POINTER(C.c_uint64)))
                finally:
                    core.leave()
                check(k, "knit_enqueue_many")
                for i in range(done, done + k):
                    futs[i].ticket = tickets[i]
                done += k
        finally:
            for key in keys[done:]:
                self._unregister(key)
            if done:
                core.start_reaper()
        return futs

    def map(self, fn: Union[str, int], *iterables: Iterable[Any],  # type: ignore[override]
            timeout: Optional[float] = None, chunksize: int = 1) -> Iterator[Any]:
        """Like Executor.map for a task that takes one argument: every call is
        enqueued at once, in bursts of chunksize calls (one knit_enqueue_many
        each), and the results come back in order. timeout: seconds from
        this call for all results (builtin TimeoutError when one is late);
        the calls not yet returned are cancelled if the iterator is closed."""
        if len(iterables) != 1:
            raise TypeError("map(task, iterable): a task takes one argument, not %d" % len(iterables))
        if not isinstance(chunksize, int) or chunksize < 1:
            raise ValueError("chunksize must be an int >= 1")
        self._core.set_mode("pool")
        end = None if timeout is None else time.monotonic() + timeout
        tid = self._tid(fn)
        futs: List[Future] = []
        it = iter(iterables[0])
        while True:
            batch = list(itertools.islice(it, chunksize))
            if not batch:
                break
            futs += self._submit_many(tid, batch, None)
        return self._results(futs, end)

    @staticmethod
    def _results(futs: List[Future], end: Optional[float]) -> Iterator[Any]:
        futs.reverse()  # pop() from the end hands them out in order and lets each go
        f = None
        try:
            while futs:
                f = futs.pop()
                yield f.result() if end is None else f.result(max(0.0, end - time.monotonic()))
            f = None
        finally:
            for g in futs + ([f] if f is not None else []):
                g.cancel()  # a done one stays as it is

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the pool and destroy it once every call has completed.

        wait: return only then (else it happens in a thread of its own).
        cancel_futures: calls not yet completed, waiting or running, complete
        as cancelled (knit_stop with KNIT_STOP_CANCEL) instead of running to
        their end. A submit after shutdown raises ClosedError. Idempotent."""
        core = self._core
        with core.cond:
            core.closing = True
            core.cancel_futures = core.cancel_futures or cancel_futures
        if wait:
            core.teardown(cancel_futures)
        else:
            threading.Thread(target=core.teardown, args=(cancel_futures,), name="knitting-shutdown",
                             daemon=True).start()

    def close(self) -> None:
        """shutdown(wait=True, cancel_futures=True): destroy the pool now,
        cancelling what has not completed."""
        self.shutdown(wait=True, cancel_futures=True)

    # ---- asyncio ----
    def fileno(self) -> int:
        """knit_completion_fd: readable while completions wait (poll it, never
        read it; owned by the pool, closed when it is destroyed)."""
        return self._core.completion_fd()

    def asubmit(self, task: Union[str, int], arg: Any = None, *,
                timeout: Optional[float] = None) -> "asyncio.Future[Any]":
        """Enqueue task(arg) from a running event loop; returns an
        asyncio.Future (await it). The loop reaps through add_reader on the
        completion descriptor; cancelling the future cancels the call."""
        loop = asyncio.get_running_loop()
        core = self._core
        core.set_mode("pool")
        v, _buf = to_value(arg)
        tid, opts = self._tid(task), self._options(timeout)
        reader = core.readers.get(loop)
        if reader is None:
            reader = core.readers[loop] = _LoopReader(core, loop)
        afut: "asyncio.Future[Any]" = loop.create_future()
        key = self._register(_AioEntry(reader, afut))
        reader.add_one()
        try:
            ticket = self._enqueue(tid, v, key, opts)
        except BaseException:
            self._unregister(key)
            reader.done_one()
            raise

        def on_done(f: "asyncio.Future[Any]") -> None:
            if f.cancelled():
                core.cancel_ticket(ticket)

        afut.add_done_callback(on_done)
        return afut

    async def acall(self, task: Union[str, int], arg: Any = None, *,
                    timeout: Optional[float] = None) -> Any:
        """await pool.acall(task, arg): the result of task(arg), without
        blocking the event loop."""
        return await self.asubmit(task, arg, timeout=timeout)

    # ---- reaping by hand ----
    def enqueue(self, task: Union[str, int], arg: Any = None, user_data: int = 0,
                timeout: Optional[float] = None, priority: Optional[str] = None) -> int:
        """Enqueue task(arg) for complete() to reap; returns the ticket.
        user_data: an int in [0, 2**64) handed back by complete(); priority
        as submit()'s."""
        if not isinstance(user_data, int) or not 0 <= user_data < (1 << 64):
            raise ValueError("user_data must be an int in [0, 2**64)")
        self._core.set_mode("user")
        v, _buf = to_value(arg)
        return self._enqueue(self._tid(task), v, user_data, self._options(timeout, priority))

    def complete(self, max: int = 64, timeout: Optional[float] = None, info: bool = False
                 ) -> List[Tuple[Any, ...]]:
        """Up to max completions of enqueue()d calls as (ticket, user_data,
        result or exception), waiting up to timeout seconds for the first
        (None: until one comes or the pool is stopped and drained, which
        raises ClosedError; 0: not at all). With info=True each tuple has a
        fourth item: the completion's info (knit_completion_info,
        libknitting 1.2) as a dict -- flags, lane, pid, wait_ns, run_ns,
        cpu_ns, death, death_detail, and for a sandbox violation
        (KNIT_INFO_SYSCALL) syscall_nr, syscall_arch, syscall_name -- or
        None when the pool kept none."""
        core = self._core
        core.set_mode("user")
        if max < 1:
            raise ValueError("max must be >= 1")
        out = (A.Completion * max)()
        ns = _wait_ns(timeout)
        h = core.enter("knit_complete")
        try:
            n = check(core.lib.knit_complete(h, out, max, ns), "knit_complete")
            return _reaped(core, h, out, n, info)
        finally:
            core.leave()

    def complete_tickets(self, tickets: Sequence[int], max: int = 64,
                         timeout: Optional[float] = None, info: bool = False
                         ) -> List[Tuple[Any, ...]]:
        """complete() (info as there), but only for the enqueue()d calls whose tickets are
        given (knit_complete_tickets, libknitting 1.2): every other
        completion stays for complete(). Returns as soon as any of them is
        ready ([] when none was within timeout); raises KnitError
        (-KNIT_ENOTFOUND) when none of the tickets is still to be reaped."""
        core = self._core
        core.set_mode("user")
        if max < 1:
            raise ValueError("max must be >= 1")
        ts = list(tickets)
        if not ts:
            raise ValueError("tickets must not be empty")
        if not hasattr(core.lib, "knit_complete_tickets"):
            raise KnitError(-A.KNIT_EVERSION, "knit_complete_tickets", "needs libknitting 1.2")
        arr = (C.c_uint64 * len(ts))(*ts)
        out = (A.Completion * max)()
        h = core.enter("knit_complete_tickets")
        try:
            n = check(core.lib.knit_complete_tickets(h, arr, len(ts), out, max, _wait_ns(timeout)),
                      "knit_complete_tickets")
            return _reaped(core, h, out, n, info)
        finally:
            core.leave()

    def wait_idle(self, timeout: Optional[float] = None) -> bool:
        """Wait until every call enqueued before now has been reaped (by any
        thread; this reaps nothing) without stopping the pool
        (knit_wait_idle, libknitting 1.2). True when it was, False when
        timeout seconds passed first (None: no limit)."""
        core = self._core
        if not hasattr(core.lib, "knit_wait_idle"):
            raise KnitError(-A.KNIT_EVERSION, "knit_wait_idle", "needs libknitting 1.2")
        h = core.enter("knit_wait_idle")
        try:
            rc = core.lib.knit_wait_idle(h, _wait_ns(timeout))
        finally:
            core.leave()
        if rc == -A.KNIT_ETIMEDOUT:
            return False
        check(rc, "knit_wait_idle")
        return True

    def cancel(self, ticket: int, signal: bool = False, kill: bool = False) -> None:
        """knit_cancel: complete the call now as cancelled, or with
        signal=True only raise its abort bit. kill=True (process pools,
        1.2): complete it now as cancelled and kill and replace the worker
        process running it, if it started (a thread pool raises
        InvalidArgument; see knit_cancel(3))."""
        if signal and kill:
            raise ValueError("cancel: signal and kill exclude each other")
        if kill:
            rc = self._cancel_flags(ticket, A.KNIT_CANCEL_KILL)
        elif signal:
            rc = self._cancel_flags(ticket, A.KNIT_CANCEL_SIGNAL)
        else:
            rc = self._core.cancel_ticket(ticket)
        check(rc, "knit_cancel")

    def _cancel_flags(self, ticket: int, flags: int) -> int:
        h = self._core.enter("knit_cancel")
        try:
            return self._core.lib.knit_cancel(h, ticket, flags)
        finally:
            self._core.leave()

    # ---- the rest ----
    def stats(self) -> Dict[str, Any]:
        """knit_pool_stats as a dict; "lane" is a list of per-lane dicts."""
        # A 1.1 library knows the struct up to backlogged only; deaths came
        # with knit_completion_info.
        v12 = hasattr(self._core.lib, "knit_wait_idle")
        deaths = hasattr(self._core.lib, "knit_completion_info")
        size = (C.sizeof(A.PoolStats) if deaths else A.PoolStats.deaths.offset if v12
                else A.PoolStats.class_enqueued.offset)
        st = A.PoolStats(size=size)
        h = self._core.enter("knit_pool_stats")
        try:
            check(self._core.lib.knit_pool_stats(h, C.byref(st), size), "knit_pool_stats")
        finally:
            self._core.leave()
        late = ("deaths", "recycles_calls", "recycles_rss", "recycles_age", "recycle_failures")
        skip = (("lane", "size", "worker") + (() if deaths else late) if v12
                else ("lane", "size", "worker", "class_enqueued", "class_backlogged") + late)
        d = {n: getattr(st, n) for n, _ in A.PoolStats._fields_ if n not in skip}
        for n in ("class_enqueued", "class_backlogged", "deaths"):
            if n in d:
                d[n] = list(d[n])  # [high, normal, low]
        d["lane"] = [{n: getattr(st.lane[i], n) for n, _ in A.LaneStats._fields_}
                     for i in range(st.lanes)]
        if deaths:  # the supervisor's view (1.2): one dict per worker
            d["worker"] = [{n: getattr(st.worker[i], n) for n, _ in A.WorkerStats._fields_}
                           for i in range(min(st.workers, A.KNIT_MAX_WORKERS))]
        return d

    def stop(self, cancel: bool = False, timeout: Optional[float] = None) -> None:
        """knit_stop: refuse new calls; drain the enqueued ones (or, with
        cancel, complete them with ClosedError); wait up to timeout seconds
        for the workers. The pool stays until shutdown()/close()."""
        flags = A.KNIT_STOP_CANCEL if cancel else A.KNIT_STOP_DRAIN
        h = self._core.enter("knit_stop")
        try:
            check(self._core.lib.knit_stop(h, flags, _wait_ns(timeout)), "knit_stop")
        finally:
            self._core.leave()

    @property
    def closed(self) -> bool:
        """True once shutdown() or close() began."""
        return self._core.closing or self._core.dead

    def __exit__(self, *exc: Any) -> bool:
        self.shutdown(wait=True)
        return False
