# SPDX-License-Identifier: MIT
"""knitting - libknitting from Python, through ctypes (standard library only).

Two layers:

* The C ABI mirrored one to one: the constants, a ctypes.Structure for every
  public struct (Value, Task, PoolOptions, CallOptions, Completion,
  LaneStats, PoolStats), and ``load()``, which opens the shared library and
  gives every function its argument and result types. Use it exactly like
  the C API (see the man pages: knit_pool_create(3), knit_call(3), ...).
* ``Pool``: a small Pythonic wrapper over the same calls. Values convert
  both ways (None, bool, int, float, bytes, str); a task error raises
  ``TaskError``; any other failure raises ``KnitError`` carrying the negative
  code and knit_strerror's text, and for a failed pool creation the
  library's reason (knit_last_error, 1.2; ``.detail``, "" with 1.1).

What a ctypes user trips on (each one learned the hard way):

* Load the library with ``RTLD_GLOBAL`` (``load()`` does) when a task
  library you load separately calls ``knit_ctx_*``: its undefined references
  then resolve against the copy the pool runs on.
* Keep every ``CFUNCTYPE`` object alive for the pool's whole life. ctypes
  frees the trampoline when the Python object goes away, and a worker calling
  it afterwards jumps into freed memory. ``Pool`` keeps them for you.
* Never load the library with ``ctypes.PyDLL`` (or ``pythonapi``): it holds
  the GIL across calls, so a ``knit_call`` waiting for a Python task, which
  needs the GIL to run, deadlocks. ``ctypes.CDLL`` releases the GIL around
  each call.
* Python tasks run one at a time: a worker thread entering a Python callback
  takes the GIL. Python tasks give you concurrency with the host (which
  waits in C, without the GIL), not parallelism; for parallel work, give the
  pool C functions (from a shared object: ``ctypes.cast(lib.fn, TASK_FN)``).
* Argument bytes must stay alive until the call completes; ``Pool.enqueue``
  keeps them until ``Pool.complete`` hands the completion out.
* A result's bytes belong to the pool until ``knit_completion_release``;
  ``Pool`` copies them into Python objects and releases them at once.

Example::

    import knitting
    def square(x):
        return x * x
    with knitting.Pool({"square": square}, workers=1) as pool:
        print(pool.call("square", 12))  # 144
"""
import ctypes as C
import ctypes.util
import os

__all__ = ["load", "last_error", "Pool", "KnitError", "TaskError", "Value", "Task", "TaskLibrary", "PoolOptions",
           "CallOptions", "Completion", "LaneStats", "PoolStats", "TASK_FN", "STRUCTS"]

# ---- constants (include/knitting.h) ------------------------------------------

(KNIT_OK, KNIT_EINVAL, KNIT_ENOMEM, KNIT_EAGAIN, KNIT_ENOTASK, KNIT_ETOOBIG,
 KNIT_ECLOSED, KNIT_ETIMEDOUT, KNIT_ECANCELED, KNIT_ECRASHED, KNIT_EPROTO,
 KNIT_ETASK, KNIT_ESYSTEM, KNIT_EVERSION, KNIT_ENOTFOUND, KNIT_EBUSY,
 KNIT_ENOENT, KNIT_EACCES,
 KNIT_ERROR_MAX_) = range(19)
(KNIT_VALUE_NONE, KNIT_VALUE_BOOL, KNIT_VALUE_I64, KNIT_VALUE_F64, KNIT_VALUE_BYTES,
 KNIT_VALUE_STRING, KNIT_VALUE_ERROR) = range(7)
KNIT_TASK_ABORTABLE = 1
KNIT_TOPOLOGY_AUTO, KNIT_TOPOLOGY_LANES, KNIT_TOPOLOGY_STEAL = range(3)
KNIT_MAX_WORKERS = 64
KNIT_CPU_MASK_WORDS = 16
KNIT_WORKERS_THREADS, KNIT_WORKERS_PROCESSES = 0, 1
KNIT_PROC_INHERIT_ENV, KNIT_PROC_NAMED_SHM = 1, 2
KNIT_ZERO = 0xFFFFFFFF
KNIT_TASK_LIBRARY_VERSION = 1
KNIT_CALL_ABORTABLE, KNIT_CALL_LANE, KNIT_CALL_NO_TIMEOUT = 1, 2, 4
KNIT_CANCEL_NOW, KNIT_CANCEL_SIGNAL = 1, 2
KNIT_STOP_DRAIN, KNIT_STOP_CANCEL = 1, 2
KNIT_VERSION_MAJOR, KNIT_VERSION_MINOR, KNIT_VERSION_PATCH = 1, 2, 0
KNIT_VERSION_NUMBER = (KNIT_VERSION_MAJOR << 16) | (KNIT_VERSION_MINOR << 8) | KNIT_VERSION_PATCH
# The oldest library the module runs on: it binds 1.2's knit_last_error
# only where the library has it (_OPTIONAL), and needs nothing else newer.
_NEEDS_MINOR = 1

# ---- the public structs ---------------------------------------------------------


class Value(C.Structure):
    _fields_ = [("type", C.c_uint32), ("code", C.c_int32), ("i64", C.c_int64),
                ("f64", C.c_double), ("data", C.c_void_p), ("len", C.c_size_t)]


# int (*)(knit_ctx_t *, const knit_value_t *, knit_value_t *)
TASK_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(Value), C.POINTER(Value))


class Task(C.Structure):
    _fields_ = [("name", C.c_char_p), ("fn", TASK_FN), ("timeout_ms", C.c_uint32),
                ("flags", C.c_uint32), ("data", C.c_void_p), ("reserved", C.c_uint64 * 2)]


class PoolOptions(C.Structure):
    _fields_ = [(n, C.c_uint32) for n in (
        "size", "workers", "topology", "balancer", "inline_lane", "inline_batch",
        "steal_region_lanes", "stall_free_loops", "max_backoff_ms", "doorbell", "spin_us",
        "park_ms", "abort_capacity", "hard_timeout_ms", "max_pending", "reserved0")] + [
        ("payload_max_bytes", C.c_uint64), ("payload_initial_bytes", C.c_uint64),
        ("max_payload_bytes", C.c_uint64), ("cpu_mask", C.c_uint64 * KNIT_CPU_MASK_WORDS),
        ("cpu_flags", C.c_uint32), ("reserved1", C.c_uint32),
        ("worker_kind", C.c_uint32), ("proc_flags", C.c_uint32),
        ("task_library", C.c_char_p), ("worker_path", C.c_char_p),
        ("respawn_max", C.c_uint32), ("reserved2", C.c_uint32),
        ("worker_prefix", C.POINTER(C.c_char_p))]


class CallOptions(C.Structure):
    _fields_ = [("size", C.c_uint32), ("flags", C.c_uint32), ("timeout_ms", C.c_uint32),
                ("lane", C.c_uint32)]


class Request(C.Structure):
    """One call of a knit_enqueue_many burst (since 1.1)."""
    _fields_ = [("task", C.c_uint32), ("reserved", C.c_uint32), ("arg", C.POINTER(Value)),
                ("user_data", C.c_void_p), ("opts", C.POINTER(CallOptions))]


class Completion(C.Structure):
    _fields_ = [("ticket", C.c_uint64), ("user_data", C.c_void_p), ("status", C.c_int32),
                ("task", C.c_uint32), ("result", Value), ("reserved", C.c_uint64 * 2)]


class LaneStats(C.Structure):
    _fields_ = [(n, C.c_uint64) for n in (
        "calls", "parks", "wakes_sent", "wakes_received", "watchdog_expiries", "spins",
        "doorbell_rings", "steal_claims", "steal_conflicts", "spurious_wakes", "arena_trims")] + [
        ("cpu", C.c_int64)]


class PoolStats(C.Structure):
    _fields_ = [("size", C.c_uint32), ("lanes", C.c_uint32), ("topology", C.c_uint32),
                ("workers", C.c_uint32)] + [(n, C.c_uint64) for n in (
                    "enqueued", "completed", "pending", "backlog", "backlog_high_water",
                    "doorbell_arms", "doorbell_wakes", "inline_calls", "proto_errors",
                    "late_drops", "arena_committed_bytes", "sync_calls")] + [
        ("lane", LaneStats * (KNIT_MAX_WORKERS + 1))] + [
        (n, C.c_uint64) for n in ("spawns", "crashes", "respawns", "hard_kills", "backlogged")]


class TaskLibrary(C.Structure):
    """What a task library exports as knit_task_library (process workers)."""
    _fields_ = [("size", C.c_uint32), ("version", C.c_uint32), ("tasks", C.POINTER(Task)),
                ("ntasks", C.c_size_t)]


# C type name -> mirror (tests compare each against the C layout).
STRUCTS = {"knit_value_t": Value, "knit_task_t": Task, "knit_pool_options_t": PoolOptions,
           "knit_call_options_t": CallOptions, "knit_request_t": Request,
           "knit_completion_t": Completion,
           "knit_lane_stats_t": LaneStats, "knit_pool_stats_t": PoolStats,
           "knit_task_library_t": TaskLibrary}

# ---- the library ------------------------------------------------------------------

_P, _PP = C.c_void_p, C.POINTER(C.c_void_p)
_SIGNATURES = {
    "knit_pool_create": (C.c_int, [C.POINTER(PoolOptions), C.POINTER(Task), C.c_size_t, _PP]),
    "knit_pool_task_id": (C.c_int, [_P, C.c_char_p]),
    "knit_enqueue": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), _P, C.POINTER(C.c_uint64)]),
    "knit_enqueue_ex": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), _P, C.POINTER(CallOptions),
                                  C.POINTER(C.c_uint64)]),
    "knit_enqueue_many": (C.c_int, [_P, C.POINTER(Request), C.c_uint32, C.POINTER(C.c_uint64)]),
    "knit_complete": (C.c_int, [_P, C.POINTER(Completion), C.c_uint, C.c_int64]),
    "knit_completion_release": (C.c_int, [_P, C.POINTER(Completion)]),
    "knit_completion_fd": (C.c_int, [_P]),
    "knit_call": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), C.POINTER(Completion), C.c_int64]),
    "knit_call_ex": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), C.POINTER(CallOptions),
                               C.POINTER(C.c_uint64), C.POINTER(Completion), C.c_int64]),
    "knit_cancel": (C.c_int, [_P, C.c_uint64, C.c_uint32]),
    "knit_stop": (C.c_int, [_P, C.c_uint32, C.c_int64]),
    "knit_pool_destroy": (C.c_int, [_P]),
    "knit_pool_stats": (C.c_int, [_P, C.POINTER(PoolStats), C.c_size_t]),
    "knit_ctx_aborted": (C.c_int, [_P]),
    "knit_ctx_deadline_ns": (C.c_int64, [_P]),
    "knit_ctx_alloc": (C.c_void_p, [_P, C.c_size_t]),
    "knit_ctx_lane": (C.c_int, [_P]),
    "knit_ctx_task_data": (C.c_void_p, [_P]),
    "knit_version": (C.c_uint32, []),
    "knit_strerror": (C.c_char_p, [C.c_int]),
}
# Functions a library older than this module may lack (bound when present).
_OPTIONAL = {
    "knit_last_error": (C.c_char_p, []),  # 1.2
}

_lib = None


def load(path=None):
    """Open libknitting (once per process) and bind every function.

    path: the shared object; default: $KNITTING_LIB, else what
    ctypes.util.find_library("knitting") finds (an installed library).
    Loaded RTLD_GLOBAL as ctypes.CDLL (never PyDLL: see the module's notes).
    Raises OSError if it cannot be loaded and KnitError if the library is
    older than this module or of another major version.
    """
    global _lib
    if _lib is not None and path is None:
        return _lib
    path = path or os.environ.get("KNITTING_LIB") or ctypes.util.find_library("knitting")
    if not path:
        raise OSError("libknitting not found: install it, or set KNITTING_LIB to the .so")
    lib = C.CDLL(path, mode=C.RTLD_GLOBAL)
    for name, (res, args) in _SIGNATURES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    for name, (res, args) in _OPTIONAL.items():
        f = getattr(lib, name, None)  # None: an older library (see last_error)
        if f is not None:
            f.restype, f.argtypes = res, args
    v = lib.knit_version()
    if (v >> 16) != KNIT_VERSION_MAJOR or v < (KNIT_VERSION_MAJOR << 16 | _NEEDS_MINOR << 8):
        raise KnitError(-KNIT_EVERSION, "%s is version %d.%d.%d; this module needs %d.%d.0 or a newer %d.x"
                        % (path, v >> 16, (v >> 8) & 0xFF, v & 0xFF, KNIT_VERSION_MAJOR,
                           _NEEDS_MINOR, KNIT_VERSION_MAJOR))
    _lib = lib
    return lib


def last_error(lib=None):
    """knit_last_error(): why this thread's last knit_pool_create (or
    knit_pool_stats) failed, "" after a success; "" too with a library older
    than 1.2, which has no such function."""
    lib = lib or _lib
    f = getattr(lib, "knit_last_error", None) if lib is not None else None
    return f().decode(errors="replace") if f is not None else ""


class KnitError(Exception):
    """A libknitting call failed: .code is the negative KNIT_E* code;
    .detail the library's message of the cause (knit_last_error), or ""."""

    def __init__(self, code, what="", detail=""):
        self.code, self.detail = code, detail
        text = _lib.knit_strerror(code).decode() if _lib is not None else "error %d" % code
        super().__init__("%s%s (%d)%s" % (what + ": " if what else "", text, code, ": " + detail if detail else ""))


class TaskError(KnitError):
    """The task reported an error: .task_code and .message are what it gave."""

    def __init__(self, task_code, message):
        self.task_code, self.message = task_code, message
        Exception.__init__(self, "task error %d%s" % (task_code, ": " + message if message else ""))
        self.code = -KNIT_ETASK


def _check(rc, what):
    if rc < 0:
        raise KnitError(rc, what)
    return rc


# ---- values -------------------------------------------------------------------------

def to_value(x):
    """A Python value as a knit_value_t (and the buffer that must outlive it)."""
    if x is None:
        return Value(type=KNIT_VALUE_NONE), None
    if isinstance(x, bool):
        return Value(type=KNIT_VALUE_BOOL, i64=int(x)), None
    if isinstance(x, int):
        if not -(1 << 63) <= x < (1 << 63):
            raise OverflowError("%d does not fit in int64" % x)
        return Value(type=KNIT_VALUE_I64, i64=x), None
    if isinstance(x, float):
        return Value(type=KNIT_VALUE_F64, f64=x), None
    if isinstance(x, str):
        b = x.encode()
        if b"\0" in b:
            raise ValueError("a string value cannot hold NUL; pass bytes")
        buf = C.create_string_buffer(b, len(b) + 1)
        return Value(type=KNIT_VALUE_STRING, data=C.cast(buf, C.c_void_p), len=len(b)), buf
    if isinstance(x, (bytes, bytearray, memoryview)):
        b = bytes(x)
        if not b:
            return Value(type=KNIT_VALUE_BYTES), None
        buf = C.create_string_buffer(b, len(b))
        return Value(type=KNIT_VALUE_BYTES, data=C.cast(buf, C.c_void_p), len=len(b)), buf
    raise TypeError("no knit value for %s" % type(x).__name__)


def from_value(v):
    """A knit_value_t as a Python value (bytes are copied)."""
    t = v.type
    if t == KNIT_VALUE_NONE:
        return None
    if t == KNIT_VALUE_BOOL:
        return bool(v.i64)
    if t == KNIT_VALUE_I64:
        return v.i64
    if t == KNIT_VALUE_F64:
        return v.f64
    raw = C.string_at(v.data, v.len) if v.len else b""
    if t == KNIT_VALUE_STRING:
        return raw.decode(errors="replace")
    if t == KNIT_VALUE_BYTES:
        return raw
    if t == KNIT_VALUE_ERROR:
        return TaskError(v.code, raw.decode(errors="replace"))
    raise KnitError(-KNIT_EPROTO, "unknown value type %d" % t)


def _python_task(fn):
    """Wrap a Python callable as a task: fn(arg) -> result; raising
    TaskError(code, message) or any exception makes it a task error."""

    def trampoline(ctx, arg, ret):
        try:
            res = fn(from_value(arg.contents))
            v, buf = to_value(res)
            if buf is not None:
                # The worker copies the result after we return: put the bytes
                # in memory the pool frees once it has them (knit_ctx_alloc).
                mem = _lib.knit_ctx_alloc(ctx, max(v.len + 1, 1))
                if not mem:
                    return 12  # ENOMEM, as the task's own error code
                C.memmove(mem, buf, v.len + (1 if v.type == KNIT_VALUE_STRING else 0))
                v.data = mem
            ret[0] = v
            return 0
        except TaskError as e:
            return _error_result(ctx, ret, e.task_code or 1, e.message or "")
        except Exception as e:  # a task must not unwind into C
            return _error_result(ctx, ret, 1, "%s: %s" % (type(e).__name__, e))

    return TASK_FN(trampoline)


def _error_result(ctx, ret, code, message):
    b = message.encode()[:4095]
    mem = _lib.knit_ctx_alloc(ctx, len(b) + 1)
    if mem:
        C.memmove(mem, b + b"\0", len(b) + 1)
        ret[0] = Value(type=KNIT_VALUE_ERROR, code=code, data=mem, len=len(b))
    # A non-zero return makes the call a task error (-KNIT_ETASK); with an
    # error value in ret the completion carries its code and message.
    return code


# ---- the pool -------------------------------------------------------------------------

class Pool:
    """A libknitting pool.

    tasks: a dict name -> task, where a task is a Python callable
    (fn(arg) -> result, run under the GIL: one at a time) or a C task
    function (a TASK_FN, e.g. ctypes.cast(cdll.my_task, TASK_FN)). A value
    may also be a tuple (task, timeout_ms, flags).
    options: any PoolOptions field (workers=2, topology=..., ...).
    """

    def __init__(self, tasks, lib=None, **options):
        self._lib = lib or load()
        self._pool = None
        self._keep = []      # CFUNCTYPE objects and names: alive as long as the pool
        self._inflight = {}  # ticket -> argument buffer, until completed
        entries = []
        for name, spec in tasks.items():
            fn, timeout_ms, flags = spec if isinstance(spec, tuple) else (spec, 0, 0)
            if not isinstance(fn, TASK_FN):
                if not callable(fn):
                    raise TypeError("task %r is neither callable nor a TASK_FN" % name)
                fn = _python_task(fn)
            bname = name.encode()
            self._keep += [fn, bname]
            entries.append(Task(bname, fn, timeout_ms, flags))
        # Process pools take their tasks from options["task_library"]
        # (tasks must then be empty: the pool passes NULL).
        arr = (Task * len(entries))(*entries) if entries else None
        opts = PoolOptions(size=C.sizeof(PoolOptions))
        for k, v in options.items():
            if k == "size" or k not in dict(PoolOptions._fields_):
                raise TypeError("unknown pool option %r" % k)
            if isinstance(v, str):
                v = v.encode()
                self._keep.append(v)
            elif k == "worker_prefix" and isinstance(v, (list, tuple)):
                # A NULL-terminated argv (kept alive with the pool).
                v = (C.c_char_p * (len(v) + 1))(*[w.encode() for w in v], None)
                self._keep.append(v)
                v = C.cast(v, C.POINTER(C.c_char_p))
            setattr(opts, k, v)
        pool = C.c_void_p()
        rc = self._lib.knit_pool_create(C.byref(opts), arr, len(entries), C.byref(pool))
        if rc < 0:
            # Read on this thread, before anything else can call the library.
            raise KnitError(rc, "knit_pool_create", last_error(self._lib))
        self._pool = pool
        self._ids = {n: self._lib.knit_pool_task_id(pool, n.encode()) for n in tasks}

    def task_id(self, name):
        return _check(self._lib.knit_pool_task_id(self._pool, name.encode()), "task %r" % name)

    def _tid(self, task):
        if isinstance(task, int):
            return task
        return self._ids[task] if task in self._ids else self.task_id(task)

    def _result(self, c):
        try:
            if c.status == 0:
                return from_value(c.result)
            if c.status == -KNIT_ETASK:
                raise from_value(c.result)
            raise KnitError(c.status, "call")
        finally:
            self._lib.knit_completion_release(self._pool, C.byref(c))

    def call(self, task, arg=None, timeout_ns=0):
        """Run task(arg) and return its result (raises TaskError/KnitError).
        The GIL is released while the host waits."""
        v, buf = to_value(arg)
        c = Completion()
        _check(self._lib.knit_call(self._pool, self._tid(task), C.byref(v), C.byref(c), timeout_ns),
               "knit_call")
        del buf
        return self._result(c)

    def enqueue(self, task, arg=None, user_data=0, timeout_ms=0):
        """Queue task(arg); returns the ticket. user_data is an int handed back."""
        if not isinstance(user_data, int) or not 0 <= user_data < (1 << 64):
            raise ValueError("user_data must be an int in [0, 2**64)")
        v, buf = to_value(arg)
        t = C.c_uint64()
        if timeout_ms:
            o = CallOptions(size=C.sizeof(CallOptions), timeout_ms=timeout_ms)
            rc = self._lib.knit_enqueue_ex(self._pool, self._tid(task), C.byref(v), C.c_void_p(user_data),
                                           C.byref(o), C.byref(t))
        else:
            rc = self._lib.knit_enqueue(self._pool, self._tid(task), C.byref(v), C.c_void_p(user_data),
                                        C.byref(t))
        _check(rc, "knit_enqueue")
        self._inflight[t.value] = buf
        return t.value

    def complete(self, max=64, timeout_ns=-1):
        """Up to max completions as (ticket, user_data, result-or-exception),
        waiting up to timeout_ns (-1 forever, 0 not at all)."""
        out = (Completion * max)()
        n = _check(self._lib.knit_complete(self._pool, out, max, timeout_ns), "knit_complete")
        done = []
        for c in out[:n]:
            self._inflight.pop(c.ticket, None)
            try:
                r = self._result(c)
            except KnitError as e:
                r = e
            done.append((c.ticket, c.user_data or 0, r))
        return done

    def cancel(self, ticket, flags=KNIT_CANCEL_NOW):
        return _check(self._lib.knit_cancel(self._pool, ticket, flags), "knit_cancel")

    def stats(self):
        st = PoolStats(size=C.sizeof(PoolStats))
        _check(self._lib.knit_pool_stats(self._pool, C.byref(st), C.sizeof(st)), "knit_pool_stats")
        d = {n: getattr(st, n) for n, _ in PoolStats._fields_ if n not in ("lane", "reserved", "size")}
        d["lane"] = [{n: getattr(st.lane[i], n) for n, _ in LaneStats._fields_} for i in range(st.lanes)]
        return d

    def stop(self, flags=KNIT_STOP_DRAIN, timeout_ns=-1):
        return _check(self._lib.knit_stop(self._pool, flags, timeout_ns), "knit_stop")

    def close(self):
        """Destroy the pool (stops it first); idempotent."""
        if self._pool is not None:
            _check(self._lib.knit_pool_destroy(self._pool), "knit_pool_destroy")
            self._pool = None
            self._inflight.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self.close()
