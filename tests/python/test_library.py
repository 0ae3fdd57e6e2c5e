# SPDX-License-Identifier: MIT
"""Finding the library: an explicit path, then $KNITTING_LIB, then the
loader's search for libknitting.so.1; a failure lists what was tried. Each
case runs in a fresh interpreter (a process loads the library once)."""
import os
import subprocess
import sys

import pytest

import knitting
from conftest import PKG

PROBE = "import knitting, sys\ntry:\n    lib = knitting.load(*sys.argv[1:])\nexcept OSError as e:\n" \
        "    print('ERR', e)\nelse:\n    print('OK', lib._name)\n"


def probe(env_extra, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("KNITTING_LIB", "LD_LIBRARY_PATH")}
    env.update(env_extra, PYTHONPATH=PKG)
    out = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True,
                         timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_explicit_path(libpath):
    assert probe({}, libpath) == "OK %s\n" % libpath
    out = probe({"KNITTING_LIB": libpath}, "/nonexistent/libknitting.so.1")
    assert out.startswith("ERR") and "/nonexistent/libknitting.so.1" in out
    assert libpath not in out  # an explicit path is the only one tried


def test_environment(libpath):
    assert probe({"KNITTING_LIB": libpath}) == "OK %s\n" % libpath


def test_loader_search(libpath):
    assert probe({"LD_LIBRARY_PATH": os.path.dirname(libpath)}) == "OK libknitting.so.1\n"


def test_what_was_tried(libpath):
    out = probe({"KNITTING_LIB": "/nonexistent/k.so"})
    # An installed library may be found by the loader; where none is, the
    # error names each attempt in order.
    if out.startswith("ERR"):
        assert "/nonexistent/k.so" in out and "libknitting.so.1" in out and "KNITTING_LIB" in out
        assert out.index("/nonexistent/k.so") < out.index("libknitting.so.1:")
    else:
        assert out.startswith("OK ") and "/nonexistent" not in out


def test_raise_for_adds_knit_last_error(lib, monkeypatch):
    class WithLastError:  # a 1.2 library: knit_last_error beside the rest
        def __getattr__(self, name):
            return getattr(lib, name)

        @staticmethod
        def knit_last_error():
            return b"the reason in detail"

    from knitting import _errors
    monkeypatch.setattr(_errors, "_lib", WithLastError())
    with pytest.raises(knitting.KnitError) as e:
        _errors.raise_for(-knitting.KNIT_EINVAL, "knit_pool_create")
    assert "the reason in detail" in str(e.value) and "knit_pool_create" in str(e.value)
    assert e.value.code == -knitting.KNIT_EINVAL
    monkeypatch.undo()
    with pytest.raises(knitting.KnitError) as e:
        _errors.raise_for(-knitting.KNIT_EINVAL, "knit_pool_create")
    assert "detail" not in str(e.value)
