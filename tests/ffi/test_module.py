#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/ffi/test_module.py - the importable Python module tools/python/knitting.py.

The library comes from KNIT_LIB (set by `make check-ffi`). Checks the
Pythonic layer: values of every type through Python tasks and C tasks (the
task library tests/ffi/tasks.c, built here), task errors as TaskError with
code and message, a Python exception in a task, KnitError codes for bad
arguments, enqueue + complete with user_data (every call exactly once), a
per-call timeout, stats, close and the context manager, that the module keeps
CFUNCTYPE objects alive for the pool's life, and that the module's example
(tools/python/example.py) runs and prints what it should.
Exit 0 pass, 1 fail, 77 skip.
"""
import ctypes as C
import gc
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
import knitting  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)
    return cond


def raises(exc, fn, what, code=None):
    try:
        fn()
    except exc as e:
        if code is None:
            return True
        return check(e.code == code, f"{what}: code {e.code}, expected {code}")
    except Exception as e:  # noqa: BLE001
        return check(False, f"{what}: raised {type(e).__name__}: {e}")
    return check(False, f"{what}: no {exc.__name__} raised")


def find_cc():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


def python_tasks():
    def echo(x):
        return x

    def fail(x):
        raise knitting.TaskError(x, "failed on purpose")

    def boom(x):
        return 1 // x

    return {"echo": echo, "fail": fail, "boom": boom, "twice": lambda x: x * 2}


def values():
    return [None, True, False, 0, -2 ** 63, 2 ** 63 - 1, 1.5, -0.0, float("inf"), "", "héllo",
            b"", b"\x00\xff" * 300, bytes(range(256)) * 40]


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


def run(lib, tl):
    with knitting.Pool(python_tasks(), lib=lib, workers=2) as pool:
        for v in values():
            r = pool.call("echo", v)
            check(same(r, v), f"python echo {v!r:.40} -> {r!r:.40}")
        check(pool.call("twice", 21) == 42, "twice(21)")
        try:
            pool.call("fail", 7)
            check(False, "fail(7) did not raise")
        except knitting.TaskError as e:
            check(e.task_code == 7 and e.message == "failed on purpose" and e.code == -knitting.KNIT_ETASK,
                  f"TaskError fields: {e.task_code} {e.message!r} {e.code}")
        try:
            pool.call("boom", 0)
            check(False, "boom(0) did not raise")
        except knitting.TaskError as e:
            check("ZeroDivisionError" in e.message, f"a Python exception becomes a task error: {e.message!r}")
        raises(knitting.KnitError, lambda: pool.call("nope", 1), "unknown task name", -knitting.KNIT_ENOTASK)
        raises(knitting.KnitError, lambda: pool.call(99, 1), "unknown task id", -knitting.KNIT_ENOTASK)
        raises(TypeError, lambda: pool.call("echo", object()), "a value with no knit type")
        raises(OverflowError, lambda: pool.call("echo", 2 ** 63), "int beyond int64")
        raises(ValueError, lambda: pool.enqueue("echo", 1, user_data=-1), "negative user_data")

        N = 300
        for i in range(N):
            pool.enqueue("twice", i, user_data=i + 1)
        seen = {}
        while sum(seen.values()) < N:
            for ticket, ud, r in pool.complete(max=32, timeout_ns=10 ** 10):
                seen[ud] = seen.get(ud, 0) + 1
                check(r == 2 * (ud - 1), f"twice({ud - 1}) -> {r}")
        check(sorted(seen) == list(range(1, N + 1)) and set(seen.values()) == {1},
              "every enqueued call completed exactly once")
        st = pool.stats()
        check(st["enqueued"] == st["completed"] and st["pending"] == 0 and len(st["lane"]) == 2,
              f"stats: {st['enqueued']} {st['completed']} {st['pending']} lanes {len(st['lane'])}")
        check(sum(ln["calls"] for ln in st["lane"]) == st["enqueued"], "lane calls add up")

    # C tasks from a shared object, with a per-call timeout.
    sleep = C.cast(tl.ffi_sleep, knitting.TASK_FN)
    upper = C.cast(tl.ffi_upper, knitting.TASK_FN)
    pool = knitting.Pool({"sleep": sleep, "upper": upper}, lib=lib, workers=1)
    check(pool.call("upper", "abc") == "ABC", "C task upper")
    t = pool.enqueue("sleep", 300, timeout_ms=20)
    (ticket, _, r), = pool.complete(max=1, timeout_ns=10 ** 10)
    check(ticket == t and isinstance(r, knitting.KnitError) and r.code == -knitting.KNIT_ETIMEDOUT,
          f"a call past its timeout completes with ETIMEDOUT: {r!r}")
    pool.close()
    pool.close()  # idempotent
    raises(knitting.KnitError, lambda: pool.stop(), "a closed pool", -knitting.KNIT_EINVAL)

    # The module keeps the task trampolines alive: nothing else refers to
    # the lambda or its CFUNCTYPE once the constructor returned.
    pool = knitting.Pool({"inc": lambda x: x + 1}, lib=lib, workers=1)
    gc.collect()
    check(pool.call("inc", 41) == 42, "a Python task after gc.collect()")
    pool.close()

    raises(TypeError, lambda: knitting.Pool({"x": 3}, lib=lib), "a task that is not callable")
    raises(TypeError, lambda: knitting.Pool({"x": len}, lib=lib, wrokers=2), "a misspelt option")
    raises(knitting.KnitError, lambda: knitting.Pool({"x": len}, lib=lib, workers=knitting.KNIT_MAX_WORKERS + 1),
           "too many workers", -knitting.KNIT_EINVAL)
    # A failed create says why: the code and knit_last_error()'s words.
    try:
        knitting.Pool({}, lib=lib, worker_kind=knitting.KNIT_WORKERS_PROCESSES,
                      task_library="/nonexistent/kt-tasks.so")
        check(False, "a missing task library raised nothing")
    except knitting.KnitError as e:
        check(e.code == -knitting.KNIT_ENOENT and 'task library "/nonexistent/kt-tasks.so"' in e.detail
              and e.detail in str(e), f"a missing task library: {e!r} (detail {e.detail!r})")
    knitting.Pool({"x": len}, lib=lib, workers=1).close()
    check(knitting.last_error(lib) == "", f"cleared by a successful create: {knitting.last_error(lib)!r}")

    # The example, as a user runs it.
    env = dict(os.environ, KNITTING_LIB=lib._name, PYTHONPATH=os.path.join(ROOT, "tools", "python"))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "python", "example.py")], env=env,
                         capture_output=True, text=True, timeout=60)
    want = ["words: 4", "sqrt(4) -> 2.0", "sqrt(9) -> 3.0", "sqrt(-1) -> error: task error 33: negative input",
            "sqrt(16) -> 4.0", "calls: 5 enqueued, 5 completed"]
    check(out.returncode == 0 and out.stdout.split("\n")[:-1] == want,
          f"example.py: rc {out.returncode}\n{out.stdout}{out.stderr}")


def main():
    libpath = os.environ.get("KNIT_LIB") or os.path.join(ROOT, "build/lib/libknitting.so.1")
    cc = find_cc()
    if cc is None:
        print("SKIP: no C compiler to build tests/ffi/tasks.c")
        return 77
    tmp = tempfile.mkdtemp(prefix="knit-mod-")
    try:
        tasks_so = os.path.join(tmp, "tasks.so")
        subprocess.run([cc, "-std=gnu11", "-O1", "-shared", "-fPIC", "-I", os.path.join(ROOT, "include"),
                        os.path.join(HERE, "tasks.c"), "-o", tasks_so, "-L", os.path.dirname(libpath),
                        "-Wl,-rpath," + os.path.dirname(libpath), "-l:" + os.path.basename(libpath)],
                       check=True)
        lib = knitting.load(libpath)
        run(lib, C.CDLL(tasks_so))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'FAIL' if failures else 'PASS'}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
