# SPDX-License-Identifier: MIT
"""Fixtures of the Python package's suite (tests/python).

The library is $KNIT_LIB (set by `make check-python`), else the checkout's
build/lib/libknitting.so.1. The package is imported from tools/python (the
source tree), except where a test installs it. tests/ffi/tasks.c is built
once per test file into a temporary directory; it serves thread pools (its
functions, cast to TASK_FN) and process pools (its knit_task_library).
"""
import ctypes as C
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PKG = os.path.join(ROOT, "tools", "python")
sys.path.insert(0, PKG)
import knitting  # noqa: E402

LIBPATH = os.path.abspath(os.environ.get("KNIT_LIB") or os.path.join(ROOT, "build/lib/libknitting.so.1"))


def find_cc():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


@pytest.fixture(scope="session")
def libpath():
    if not os.path.exists(LIBPATH):
        pytest.fail("no library at %s: build it (make) or set KNIT_LIB" % LIBPATH)
    return LIBPATH


@pytest.fixture(scope="session")
def lib(libpath):
    return knitting.load(libpath)


@pytest.fixture(scope="session")
def cc():
    cc = find_cc()
    if cc is None:
        pytest.skip("no C compiler ($CC, cc, gcc, clang) to build tests/ffi/tasks.c")
    return cc


@pytest.fixture(scope="session")
def tasks_so(tmp_path_factory, cc, libpath):
    """tests/ffi/tasks.c as a shared object linked against the library."""
    out = str(tmp_path_factory.mktemp("tasks") / "tasks.so")
    d = os.path.dirname(libpath)
    subprocess.run([cc, "-std=gnu11", "-O1", "-Wall", "-Werror", "-shared", "-fPIC",
                    "-I", os.path.join(ROOT, "include"), os.path.join(ROOT, "tests", "ffi", "tasks.c"),
                    "-o", out, "-L", d, "-Wl,-rpath," + d, "-l:" + os.path.basename(libpath)], check=True)
    return out


@pytest.fixture(scope="session")
def ctasks(lib, tasks_so):
    """name -> TASK_FN of every C task of tasks.c (for thread pools)."""
    tl = C.CDLL(tasks_so)
    return {n: C.cast(getattr(tl, "ffi_" + n), knitting.TASK_FN)
            for n in ("double", "echo", "upper", "fail", "error", "sleep", "meet")}


@pytest.fixture
def cpool(lib, ctasks):
    """A two-worker thread pool of the C tasks."""
    with knitting.Pool(ctasks, lib=lib, workers=2) as pool:
        yield pool


@pytest.fixture
def procpool(lib, tasks_so):
    """A two-worker process pool over tasks.so (knit-worker beside the library)."""
    with knitting.Pool(lib=lib, workers=2, worker_kind=knitting.KNIT_WORKERS_PROCESSES,
                       task_library=tasks_so) as pool:
        yield pool
