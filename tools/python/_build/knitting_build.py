# SPDX-License-Identifier: MIT
"""knitting_build - the PEP 517 backend that builds the knitting package
(PEP 517 build_wheel and build_sdist, PEP 660 build_editable), with the
standard library only.

Metadata comes from pyproject.toml's [project] table (name, version,
description, requires-python, license); the wheel holds the knitting/
package, a dist-info with METADATA, WHEEL and RECORD (sha256 of every file),
and is py3-none-any.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "knitting"
TAG = "py3-none-any"


def _project():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    try:
        import tomllib  # Python 3.11
        return tomllib.loads(text)["project"]
    except ImportError:  # older Pythons: the flat string keys this file uses
        body = text.split("[project]", 1)[1].split("\n[", 1)[0]
        return dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', body, re.M))


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p.get("description", ""), "Requires-Python: " + p.get("requires-python", ""),
             "License: " + str(p.get("license", ""))]
    return ("\n".join(lines) + "\n").encode()


def _package_files():
    out = []
    top = os.path.join(ROOT, PACKAGE)
    for d, dirs, files in os.walk(top):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith((".py", ".typed")):
                full = os.path.join(d, f)
                out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    if not out:
        raise RuntimeError("knitting_build: no package files under %s" % top)
    return out


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _write_wheel(wheel_directory, p, members):
    """members: (archive name, bytes); adds the dist-info and RECORD."""
    di = _dist_info(p)
    wheel = ("Wheel-Version: 1.0\nGenerator: knitting_build\nRoot-Is-Purelib: true\nTag: %s\n"
             % TAG).encode()
    members = list(members) + [(di + "/METADATA", _metadata(p)), (di + "/WHEEL", wheel),
                               (di + "/top_level.txt", (PACKAGE + "\n").encode())]
    record = io.StringIO()
    for name, data in members:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write("%s,sha256=%s,%d\n" % (name, digest, len(data)))
    record.write(di + "/RECORD,,\n")
    members.append((di + "/RECORD", record.getvalue().encode()))
    name = "%s-%s-%s.whl" % (p["name"], p["version"], TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in members:
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _project(),
                        [(arc, _read(full)) for arc, full in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding only a .pth that puts this source tree on sys.path."""
    p = _project()
    return _write_wheel(wheel_directory, p, [("_%s_editable.pth" % PACKAGE, (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("_build/knitting_build.py", os.path.abspath(__file__))] + _package_files()
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        def add(arc, data):
            info = tarfile.TarInfo(base + "/" + arc)
            info.size, info.mode, info.mtime = len(data), 0o644, 1577836800
            t.addfile(info, io.BytesIO(data))
        for arc, full in files:
            add(arc, _read(full))
        add("PKG-INFO", _metadata(p))
    return name
