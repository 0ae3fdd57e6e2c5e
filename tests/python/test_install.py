# SPDX-License-Identifier: MIT
"""Installing the package: `pip install tools/python` into a fresh venv,
offline (the in-tree backend needs nothing from an index), then an executor
map and an asyncio call from the installed copy; the wheel's RECORD; an
editable install; and make install-python / uninstall-python (what
`make install` and `make uninstall` run) into a DESTDIR stage."""
import base64
import csv
import hashlib
import io
import os
import re
import subprocess
import sys
import zipfile

import pytest

from conftest import PKG, ROOT

# The package's version (test_abi holds it to knitting.h's).
VERSION = re.search(r'^version = "([^"]+)"$', open(os.path.join(PKG, "pyproject.toml")).read(), re.M).group(1)

USE = """
import asyncio, knitting, sys
print(knitting.__file__)
with knitting.Pool({"sq": lambda x: x * x}, workers=2) as pool:
    print(list(pool.map("sq", range(6), chunksize=4)))
    print(asyncio.run(pool.acall("sq", 9)))
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    d = tmp_path_factory.mktemp("venv") / "v"
    r = subprocess.run([sys.executable, "-m", "venv", str(d)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not os.path.exists(d / "bin" / "pip"):
        pytest.skip("no working venv with pip for %s (Debian: python3-venv): %s"
                    % (sys.executable, (r.stderr or r.stdout).strip()[-200:]))
    return d


def pip(venv, *args):
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([str(venv / "bin" / "pip"), *args], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def use(python, libpath, cwd, pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["KNITTING_LIB"] = libpath
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    r = subprocess.run([str(python), "-c", USE], capture_output=True, text=True, timeout=120, env=env,
                       cwd=str(cwd))
    assert r.returncode == 0, r.stderr
    where, mapped, called = r.stdout.splitlines()
    assert mapped == "[0, 1, 4, 9, 16, 25]" and called == "81"
    return where


def test_pip_install_into_a_venv(venv, libpath, tmp_path):
    pip(venv, "install", PKG)
    where = use(venv / "bin" / "python", libpath, tmp_path)
    assert where.startswith(str(venv)), where  # the installed copy, not the source tree
    files = pip(venv, "show", "-f", "knitting")
    assert "knitting/_pool.py" in files and "knitting/py.typed" in files
    pip(venv, "uninstall", "-y", "knitting")
    assert not os.path.exists(os.path.dirname(where))


def test_editable_install(venv, libpath, tmp_path):
    pip(venv, "install", "-e", PKG)
    where = use(venv / "bin" / "python", libpath, tmp_path)
    assert where == os.path.join(PKG, "knitting", "__init__.py")
    pip(venv, "uninstall", "-y", "knitting")


def test_wheel_and_sdist(venv, tmp_path):
    pip(venv, "wheel", "--no-deps", "-w", str(tmp_path), PKG)
    whl, = [f for f in os.listdir(tmp_path) if f.endswith(".whl")]
    assert whl == "knitting-" + VERSION + "-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / whl) as z:
        names = set(z.namelist())
        rows = list(csv.reader(io.StringIO(z.read("knitting-" + VERSION + ".dist-info/RECORD").decode())))
        assert {r[0] for r in rows} == names
        for name, digest, size in rows:
            if name.endswith("RECORD"):
                assert digest == size == ""
                continue
            data = z.read(name)
            assert int(size) == len(data)
            assert digest == "sha256=" + base64.urlsafe_b64encode(
                hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert "Name: knitting\nVersion: " + VERSION + "\n" in z.read("knitting-" + VERSION + ".dist-info/METADATA").decode()
    sys.path.insert(0, os.path.join(PKG, "_build"))
    try:
        import knitting_build
        sdist = knitting_build.build_sdist(str(tmp_path))
    finally:
        sys.path.pop(0)
    assert sdist == "knitting-" + VERSION + ".tar.gz"
    pip(venv, "install", str(tmp_path / sdist))  # a wheel built from the sdist alone
    pip(venv, "uninstall", "-y", "knitting")


def test_make_install_python(tmp_path, libpath):
    make = os.environ.get("MAKE", "make")
    stage = tmp_path / "stage"
    for prefix, pydir in (("/usr", "/usr/lib/python3/dist-packages"), ("/opt/k", "/opt/k/py")):
        extra = [] if prefix == "/usr" else ["PYTHONDIR=" + pydir]
        r = subprocess.run([make, "-s", "--no-print-directory", "-C", ROOT, "install-python",
                            "DESTDIR=" + str(stage), "prefix=" + prefix, *extra],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        site = str(stage) + pydir
        assert sorted(os.listdir(os.path.join(site, "knitting"))) == sorted(
            f for f in os.listdir(os.path.join(PKG, "knitting")) if f.endswith((".py", ".typed")))
        where = use(sys.executable, libpath, tmp_path, pythonpath=site)
        assert where == os.path.join(site, "knitting", "__init__.py")  # and it imported (a __pycache__)
        r = subprocess.run([make, "-s", "--no-print-directory", "-C", ROOT, "uninstall-python",
                            "DESTDIR=" + str(stage), "prefix=" + prefix, *extra],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert not os.path.exists(os.path.join(site, "knitting"))
