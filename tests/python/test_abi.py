# SPDX-License-Identifier: MIT
"""The ctypes mirrors against the C compiler: a program generated from the
mirrors' own member lists prints sizeof and every offsetof as the compiler
sees include/knitting.h, and each must equal ctypes'. Also: every public
struct of the header has a mirror, and the version constants match."""
import ctypes as C
import os
import re
import subprocess

import knitting
from conftest import ROOT

HEADER = open(os.path.join(ROOT, "include", "knitting.h")).read()


def c_layout(cc, tmp_path):
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "knitting.h"', "int main(void) {"]
    for cname, py in knitting.STRUCTS.items():
        lines.append('printf("%s size %%zu\\n", sizeof(%s));' % (cname, cname))
        for f, _ in py._fields_:
            lines.append('printf("%s %s %%zu\\n", offsetof(%s, %s));' % (cname, f, cname, f))
    lines += ["return 0; }"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = str(tmp_path / "layout")
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"), str(src),
                    "-o", exe], check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return [tuple(line.split()) for line in out.splitlines()]


def test_mirrors_match_the_compiler(cc, tmp_path):
    got = c_layout(cc, tmp_path)
    fields = sum(len(py._fields_) for py in knitting.STRUCTS.values())
    assert len(got) == len(knitting.STRUCTS) + fields
    # The first line of each struct is its sizeof, then one per member in order.
    seen = {}
    for cname, member, value in got:
        seen.setdefault(cname, []).append((member, int(value)))
    for cname, py in knitting.STRUCTS.items():
        rows = seen[cname]
        assert rows[0] == ("size", C.sizeof(py)), "sizeof(%s)" % cname
        assert rows[1:] == [(f, getattr(py, f).offset) for f, _ in py._fields_], cname


def test_every_public_struct_is_mirrored():
    c_structs = set(re.findall(r"^typedef struct knit_\w+ \{.*?^\} (knit_\w+_t);", HEADER, re.M | re.S))
    assert c_structs, "no struct typedef found in knitting.h"
    assert c_structs == set(knitting.STRUCTS)


def test_version_constants_match_the_header(lib):
    ver = [int(re.search(r"^#define KNIT_VERSION_%s (\d+)$" % p, HEADER, re.M).group(1))
           for p in ("MAJOR", "MINOR", "PATCH")]
    assert [knitting.KNIT_VERSION_MAJOR, knitting.KNIT_VERSION_MINOR, knitting.KNIT_VERSION_PATCH] == ver
    assert knitting.__version__ == "%d.%d.%d" % tuple(ver)
    pyproject = open(os.path.join(ROOT, "tools", "python", "pyproject.toml")).read()
    assert re.search(r'^version = "%d\.%d\.%d"$' % tuple(ver), pyproject, re.M)
    assert lib.knit_version() >> 16 == ver[0]


def test_error_codes_match_the_header():
    for name, value in re.findall(r"^\s*(KNIT_E\w+|KNIT_OK) = (\d+),?", HEADER, re.M):
        assert getattr(knitting, name) == int(value), name
