# SPDX-License-Identifier: MIT
"""knitting - libknitting from Python, through ctypes (standard library only).

Two layers:

* ``Pool``: a pool as a ``concurrent.futures.Executor``. ``call`` runs one
  task and returns its result; ``submit`` returns a Future whose
  ``cancel()`` cancels the call (knit_cancel); ``map`` enqueues in bursts of
  ``chunksize`` (knit_enqueue_many); ``shutdown(wait, cancel_futures)``;
  ``await pool.acall(...)`` and ``pool.asubmit(...)`` from asyncio, reaped
  by the loop through ``loop.add_reader`` on ``pool.fileno()`` (the
  completion descriptor). Values convert both ways (None, bool, int, float,
  bytes, str). Time is in seconds (float), None for no timeout. Failures
  raise ``KnitError`` (``.code``: the negative KNIT_E* code) or one of its
  subclasses: ``TaskError`` (``.task_code``, ``.message``), ``CrashedError``,
  ``TimeoutError``, ``CancelledError``, ``ClosedError``.
* The C ABI mirrored one to one: the constants, a ctypes.Structure for every
  public struct (Value, Task, PoolOptions, CallOptions, Request, Completion,
  LaneStats, PoolStats, TaskLibrary), and ``load()``, which finds and opens
  the shared library (an explicit path, else $KNITTING_LIB, else the
  loader's search for libknitting.so.1) and gives every function its
  argument and result types. Use it exactly like the C API (see the man
  pages: knit_pool_create(3), knit_call(3), ...).

Example::

    import asyncio, knitting
    def square(x):
        return x * x
    with knitting.Pool({"square": square}, workers=2) as pool:
        print(pool.call("square", 12))                    # 144
        print(list(pool.map("square", range(5), chunksize=2)))  # [0, 1, 4, 9, 16]
        print(asyncio.run(pool.acall("square", 7)))       # 49

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
* Argument bytes are copied before knit_enqueue or knit_call returns: a
  buffer built for an argument may go as soon as the call is made.
* A result's bytes belong to the pool until ``knit_completion_release``;
  ``Pool`` copies them into Python objects and releases them at once.

"""
from ._abi import *  # noqa: F401,F403  (the constants and structs of knitting.h)
from ._abi import (STRUCTS, TASK_FN, CallOptions, Completion, CompletionInfo, LaneStats,
                   PoolOptions, PoolStats, Request, Sandbox, Task, TaskLibrary, Value, WorkerStats)
from ._abi import SIGNATURES as _SIGNATURES  # noqa: F401
from ._errors import (CancelledError, ClosedError, CrashedError, KnitError, TaskError,
                      TimeoutError)
from ._library import LibraryNotFoundError, load
from ._pool import Future, Pool
from ._values import KnitValue, from_value, to_value

__version__ = "1.2.0"

__all__ = ["load", "Pool", "Future", "KnitError", "TaskError", "CrashedError", "TimeoutError",
           "CancelledError", "ClosedError", "LibraryNotFoundError", "KnitValue", "to_value",
           "from_value", "Value", "Task", "TaskLibrary", "PoolOptions", "CallOptions", "Request",
           "Completion", "CompletionInfo", "LaneStats", "WorkerStats", "PoolStats", "Sandbox", "TASK_FN",
           "STRUCTS"]
