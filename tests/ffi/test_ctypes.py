#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/ffi/test_ctypes.py - Python ctypes drives libknitting.so as a foreign
caller would.

The library path comes from the environment variable KNIT_LIB (set by
`make check-ffi`; defaults to build/lib/libknitting.so.1). The task library
tests/ffi/tasks.c is compiled here with the C compiler ($CC, else cc or gcc)
into a temporary directory; without a C compiler the test is skipped (77).

Checks: the ctypes mirrors of every public struct (those of the module
the package tools/python/knitting) match the C layout (sizes and every member offset
from abi/layout.c, which abi-check compiles against the header); task ids follow name order;
knit_call and knit_enqueue + knit_complete round trips with results checked;
task errors (-KNIT_ETASK with code and message), argument errors and their
knit_strerror texts; a timeout; stats; stop with acknowledgement; destroy.
Exit 0 pass, 1 fail, 77 skip.
"""
import ctypes as C
import math
import re
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ---- the ABI mirrored: the importable module's mirrors (tools/python) --------

sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
import knitting as K  # noqa: E402

from knitting import (KNIT_EINVAL, KNIT_ENOTASK, KNIT_ECLOSED, KNIT_ETIMEDOUT,  # noqa: E402
                      KNIT_ETASK, KNIT_EVERSION, KNIT_ENOTFOUND, KNIT_ERROR_MAX_, KNIT_MAX_WORKERS,
                      KNIT_CALL_LANE, KNIT_CANCEL_NOW, KNIT_STOP_DRAIN, KNIT_STOP_CANCEL,
                      Value, TASK_FN, Task, PoolOptions, CallOptions, Request, Completion, PoolStats,
                      STRUCTS)
(V_NONE, V_BOOL, V_I64, V_F64, V_BYTES, V_STRING, V_ERROR) = range(7)

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)
    return cond


def find_cc():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


def bind(lib):
    for name, (res, args) in K._SIGNATURES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


def value_i64(x):
    return Value(type=V_I64, i64=x)


def value_bytes(b, kind=V_BYTES):
    buf = C.create_string_buffer(b, len(b)) if b else None
    v = Value(type=kind, data=C.cast(buf, C.c_void_p) if buf else None, len=len(b))
    v._keep = buf  # keep the buffer alive as long as the value
    return v


def result_bytes(c):
    r = c.result
    return C.string_at(r.data, r.len) if r.len else b""


def main():
    libpath = os.environ.get("KNIT_LIB") or os.path.join(ROOT, "build/lib/libknitting.so.1")
    cc = find_cc()
    if cc is None:
        print("SKIP: no C compiler to build tests/ffi/tasks.c")
        return 77
    tmp = tempfile.mkdtemp(prefix="knit-ffi-")
    try:
        tasks_so = os.path.join(tmp, "tasks.so")
        subprocess.run([cc, "-std=gnu11", "-O1", "-shared", "-fPIC", "-I", os.path.join(ROOT, "include"),
                        os.path.join(HERE, "tasks.c"), "-o", tasks_so, "-L", os.path.dirname(libpath),
                        "-Wl,-rpath," + os.path.dirname(libpath), "-l:" + os.path.basename(libpath)],
                       check=True)
        lib = C.CDLL(libpath)
        tl = C.CDLL(tasks_so)
        return run(lib, tl)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_layout():
    """Every mirror against abi/layout.c: the sizes and member offsets that
    make abi-check compiles (as _Static_assert) against the header on each
    LP64 target, and whose coverage of every member it checks."""
    lay = open(os.path.join(ROOT, "abi", "layout.c")).read()
    sizes = {m[0]: int(m[1]) for m in re.findall(r"^KNIT_SIZE\((\w+), (\d+)\);", lay, re.M)}
    offs = {}
    for t, f, o in re.findall(r"^KNIT_AT\((\w+), (\w+), (\d+)\);", lay, re.M):
        offs.setdefault(t, {})[f] = int(o)
    if not check(sizes and offs, "abi/layout.c has no KNIT_SIZE/KNIT_AT lines"):
        return
    check(set(sizes) == set(STRUCTS), f"mirrored structs {sorted(STRUCTS)} != C structs {sorted(sizes)}")
    for cname, py in STRUCTS.items():
        check(C.sizeof(py) == sizes.get(cname), f"sizeof {cname}: ctypes {C.sizeof(py)}, C {sizes.get(cname)}")
        mine = {f: getattr(py, f).offset for f, _ in py._fields_}
        check(mine == offs.get(cname), f"{cname} members: ctypes {mine}, C {offs.get(cname)}")


def run(lib, tl):
    bind(lib)
    check_layout()

    hdr = open(os.path.join(ROOT, "include", "knitting.h")).read()
    ver = [int(re.search(r"^#define KNIT_VERSION_%s (\d+)$" % p, hdr, re.M).group(1)) for p in ("MAJOR", "MINOR", "PATCH")]
    check([K.KNIT_VERSION_MAJOR, K.KNIT_VERSION_MINOR, K.KNIT_VERSION_PATCH] == ver,
          f"the module's version constants differ from the header's {ver}")
    check(lib.knit_version() == K.KNIT_VERSION_NUMBER, "knit_version %#x" % lib.knit_version())
    texts = set()
    for code in range(KNIT_ERROR_MAX_):
        t = lib.knit_strerror(-code)
        check(t is not None and len(t) > 0, f"knit_strerror({-code}) empty")
        check(t == lib.knit_strerror(code), f"knit_strerror(+-{code}) differ")
        texts.add(t)
    check(len(texts) == KNIT_ERROR_MAX_, "knit_strerror texts are not distinct")
    check(lib.knit_strerror(12345) is not None, "knit_strerror(unknown) is NULL")

    # Tasks: C function pointers from the task library, cast to the task type.
    names = ["upper", "double", "sleep", "fail", "echo", "error"]
    fns = [C.cast(getattr(tl, "ffi_" + n), TASK_FN) for n in names]
    tasks = (Task * len(names))(*[Task(n.encode(), f, 0, 0) for n, f in zip(names, fns)])
    # topology 1 = LANES: the calls below pin lanes (KNIT_CALL_LANE), which a
    # stealing pool (AUTO with 2 workers) refuses.
    opts = PoolOptions(size=C.sizeof(PoolOptions), workers=2, topology=1, park_ms=60000)
    pool = C.c_void_p()

    # argument errors at creation
    check(lib.knit_pool_create(C.byref(opts), tasks, len(names), None) == -KNIT_EINVAL,
          "create with NULL out")
    bad = PoolOptions(size=0)
    check(lib.knit_pool_create(C.byref(bad), tasks, len(names), C.byref(pool)) == -KNIT_EVERSION,
          "create with size 0")
    bad = PoolOptions(size=C.sizeof(PoolOptions), workers=KNIT_MAX_WORKERS + 1)
    check(lib.knit_pool_create(C.byref(bad), tasks, len(names), C.byref(pool)) == -KNIT_EINVAL,
          "create with 65 workers")

    rc = lib.knit_pool_create(C.byref(opts), tasks, len(names), C.byref(pool))
    if not check(rc == 0 and pool.value, f"knit_pool_create: {rc} {lib.knit_strerror(rc)}"):
        return 1
    ids = {n: lib.knit_pool_task_id(pool, n.encode()) for n in names}
    check(ids == {n: i for i, n in enumerate(sorted(names))}, f"task ids not in name order: {ids}")
    check(lib.knit_pool_task_id(pool, b"nope") == -KNIT_ENOTASK, "task_id of an unknown name")
    check(lib.knit_pool_task_id(None, b"echo") == -KNIT_EINVAL, "task_id with NULL pool")

    c = Completion()

    def call(task, v, timeout_ns=0):
        rc = lib.knit_call(pool, ids[task], C.byref(v) if v is not None else None, C.byref(c), timeout_ns)
        check(rc == 0, f"knit_call({task}): {rc} {lib.knit_strerror(rc)}")
        return c

    r = call("double", value_i64(21))
    check(r.status == 0 and r.result.type == V_I64 and r.result.i64 == 42, "double(21)")
    # The synchronous fast path hands out ticket 0 (knit_call(3)); a call
    # with a timeout takes the ticketed path and carries its ticket.
    check(r.task == ids["double"] and r.ticket == 0, "completion task/ticket (fast path)")
    r = call("double", value_i64(4), timeout_ns=60 * 10**9)
    check(r.status == 0 and r.result.i64 == 8 and r.ticket != 0, "completion ticket (ticketed path)")
    r = call("echo", value_i64(-2 ** 63))
    check(r.result.i64 == -2 ** 63, "echo INT64_MIN")
    r = call("echo", Value(type=V_F64, f64=float("nan")))
    check(r.result.type == V_F64 and math.isnan(r.result.f64), "echo NaN")
    r = call("echo", Value(type=V_F64, f64=-0.0))
    check(math.copysign(1.0, r.result.f64) < 0, "echo -0.0")
    r = call("echo", Value(type=V_BOOL, i64=1))
    check(r.result.type == V_BOOL and r.result.i64 == 1, "echo bool")
    r = call("echo", None)
    check(r.status == 0 and r.result.type == V_NONE, "echo NULL arg")
    for n in (0, 1, 511, 512, 513, 4096, 1 << 20):
        payload = bytes((i * 7 + 3) & 0xFF for i in range(n))
        r = call("echo", value_bytes(payload))
        check(r.status == 0 and r.result.type == V_BYTES and result_bytes(r) == payload, f"echo bytes {n}")
        lib.knit_completion_release(pool, C.byref(c))
    r = call("upper", value_bytes(b"hello, ffi", V_STRING))
    check(r.status == 0 and r.result.type == V_STRING and result_bytes(r) == b"HELLO, FFI", "upper")
    check(C.string_at(r.result.data) == b"HELLO, FFI", "string result not NUL-terminated")
    check(lib.knit_completion_release(pool, C.byref(c)) == 0, "release")
    check(lib.knit_completion_release(pool, C.byref(c)) == 0, "release twice")

    # task errors
    r = call("fail", value_i64(7))
    check(r.status == -KNIT_ETASK and r.result.type == V_ERROR and r.result.code == 7,
          f"fail(7): status {r.status} type {r.result.type} code {r.result.code}")
    r = call("error", value_i64(5))
    check(r.status == -KNIT_ETASK and r.result.code == 5 and result_bytes(r) == b"bad input",
          "error(5): code and message")
    lib.knit_completion_release(pool, C.byref(c))
    r = call("upper", value_i64(1))  # wrong argument type: the task returns 22
    check(r.status == -KNIT_ETASK and r.result.code == 22, "upper(i64) -> task error 22")

    # a timeout
    r = call("sleep", value_i64(300), 20 * 1000 * 1000)
    check(r.status == -KNIT_ETIMEDOUT, f"sleep past the deadline: status {r.status}")

    # argument errors
    v = value_i64(1)
    check(lib.knit_call(pool, 999, C.byref(v), C.byref(c), 0) == -KNIT_ENOTASK, "unknown task")
    check(lib.knit_call(pool, ids["echo"], C.byref(v), None, 0) == -KNIT_EINVAL, "NULL out")
    check(lib.knit_call(None, ids["echo"], C.byref(v), C.byref(c), 0) == -KNIT_EINVAL, "NULL pool")
    check(lib.knit_enqueue(pool, ids["echo"], C.byref(Value(type=99)), None, None) == -KNIT_EINVAL,
          "unknown value type")
    check(lib.knit_enqueue(pool, ids["echo"], C.byref(Value(type=V_BYTES, len=4)), None, None) == -KNIT_EINVAL,
          "NULL data with len")
    check(lib.knit_cancel(pool, 1 << 50, KNIT_CANCEL_NOW) == -KNIT_ENOTFOUND, "cancel unknown ticket")
    check(lib.knit_cancel(pool, 1 << 50, 0) == -KNIT_EINVAL, "cancel without a flag")
    check(lib.knit_complete(pool, C.byref(c), 0, 0) == -KNIT_EINVAL, "complete max 0")
    check(b"" != lib.knit_strerror(-KNIT_ENOTASK), "strerror")

    # knit_enqueue + knit_complete, with user_data and _ex options
    N = 200
    tickets = {}
    for i in range(N):
        t = C.c_uint64()
        v = value_i64(i)
        if i % 2:
            o = CallOptions(size=C.sizeof(CallOptions), flags=KNIT_CALL_LANE, lane=i % 4 // 2)
            rc = lib.knit_enqueue_ex(pool, ids["double"], C.byref(v), C.c_void_p(i + 1), C.byref(o), C.byref(t))
        else:
            rc = lib.knit_enqueue(pool, ids["double"], C.byref(v), C.c_void_p(i + 1), C.byref(t))
        check(rc == 0 and t.value != 0, f"enqueue {i}: {rc}")
        tickets[i] = t.value
    check(len(set(tickets.values())) == N, "tickets not unique")
    out = (Completion * 16)()
    seen = {}
    for _ in range(2000):
        if len(seen) >= N:
            break
        n = lib.knit_complete(pool, out, 16, 100 * 1000 * 1000)
        check(n >= 0, f"knit_complete: {n}")
        for k in range(max(n, 0)):
            i = out[k].user_data - 1
            seen[i] = seen.get(i, 0) + 1
            check(out[k].status == 0 and out[k].result.i64 == 2 * i, f"call {i}: result")
            check(out[k].ticket == tickets[i], f"call {i}: ticket")
    check(len(seen) == N and all(x == 1 for x in seen.values()), f"{len(seen)} of {N} completed exactly once")

    # the same through knit_enqueue_many: one burst, a refused request in it
    M = 100
    vals = (Value * M)(*[value_i64(i) for i in range(M)])
    reqs = (Request * M)()
    o = CallOptions(size=C.sizeof(CallOptions), flags=KNIT_CALL_LANE, lane=1)
    for i in range(M):
        reqs[i].task = ids["double"]
        reqs[i].arg = C.pointer(vals[i])
        reqs[i].user_data = i + 1
        if i % 3 == 0:
            reqs[i].opts = C.pointer(o)
    reqs[70].reserved = 1
    tk = (C.c_uint64 * M)()
    k = lib.knit_enqueue_many(pool, reqs, M, tk)
    check(k == 70, f"knit_enqueue_many: {k}, want 70 (request 70 is refused)")
    check(lib.knit_enqueue_many(pool, C.cast(C.addressof(reqs[70]), C.POINTER(Request)), M - 70, None) == -KNIT_EINVAL,
          "the refused request first: -KNIT_EINVAL")
    check(len(set(tk[:70])) == 70 and 0 not in tk[:70] and all(t == 0 for t in tk[70:]), "burst tickets")
    seen = {}
    for _ in range(2000):
        if len(seen) >= 70:
            break
        n = lib.knit_complete(pool, out, 16, 100 * 1000 * 1000)
        check(n >= 0, f"knit_complete: {n}")
        for k in range(max(n, 0)):
            i = out[k].user_data - 1
            seen[i] = seen.get(i, 0) + 1
            check(out[k].status == 0 and out[k].result.i64 == 2 * i, f"burst call {i}: result")
            check(out[k].ticket == tk[i], f"burst call {i}: ticket")
    check(len(seen) == 70 and all(x == 1 for x in seen.values()), f"burst: {len(seen)} of 70 completed once")
    N += 70

    st = PoolStats(size=C.sizeof(PoolStats))
    check(lib.knit_pool_stats(pool, C.byref(st), C.sizeof(st)) == 0, "stats")
    check(st.workers == 2 and st.lanes == 2, f"stats workers {st.workers} lanes {st.lanes}")
    check(st.lane[0].calls + st.lane[1].calls >= N, "stats lane calls")
    check(all(st.lane[i].watchdog_expiries == 0 for i in range(2)), "watchdog fired")
    check(lib.knit_pool_stats(pool, C.byref(st), 8) == -KNIT_EVERSION, "stats with a short size")

    fd = lib.knit_completion_fd(pool)
    check(fd >= 0, f"knit_completion_fd: {fd}")

    # stop with acknowledgement
    check(lib.knit_stop(pool, KNIT_STOP_DRAIN | KNIT_STOP_CANCEL, -1) == -KNIT_EINVAL, "stop with both flags")
    check(lib.knit_stop(pool, KNIT_STOP_DRAIN, 10 * 10 ** 9) == 0, "knit_stop(DRAIN)")
    check(lib.knit_stop(pool, KNIT_STOP_DRAIN, 10 * 10 ** 9) == 0, "knit_stop twice")
    v = value_i64(1)
    check(lib.knit_enqueue(pool, ids["echo"], C.byref(v), None, None) == -KNIT_ECLOSED, "enqueue after stop")
    check(lib.knit_complete(pool, out, 16, 10 ** 9) == -KNIT_ECLOSED, "complete after stop")
    check(lib.knit_pool_destroy(pool) == 0, "destroy")
    check(lib.knit_pool_destroy(None) == -KNIT_EINVAL, "destroy NULL")

    print(f"{'FAIL' if failures else 'PASS'}: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
