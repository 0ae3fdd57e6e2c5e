#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/python/run_pytest.py FILE - run one test file of the suite under
pytest, with tests/run.sh's exit codes: 0 pass, 1 fail, 77 skip.

Skip (77, "SKIP: why") when pytest is not installed (python3-pytest:
tools/deps.sh installs it) or when every test of FILE was skipped; fail when
FILE collected no test (pytest's exit 5): a file that checks nothing must
not read as a pass.
"""
import sys

try:
    import pytest
except ImportError:
    print("SKIP: pytest is not installed for %s (Debian: python3-pytest; tools/deps.sh)" % sys.executable)
    sys.exit(77)


class Outcomes:
    def __init__(self):
        self.passed = self.failed = 0
        self.skipped = []

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed += 1
        elif report.skipped:
            self.skipped.append("%s: %s" % (report.nodeid, report.longrepr[-1] if isinstance(
                report.longrepr, tuple) else report.longrepr))
        elif report.when == "call":
            self.passed += 1


def main(argv):
    if len(argv) != 2:
        print("usage: run_pytest.py FILE", file=sys.stderr)
        return 2
    o = Outcomes()
    rc = pytest.main(["-p", "no:cacheprovider", "-rs", "-q", argv[1]], plugins=[o])
    if rc == 5:
        print("FAIL: %s collected no test" % argv[1])
        return 1
    if rc != 0:
        return 1
    for s in o.skipped:
        print("skipped", s)
    if o.passed == 0 and o.skipped:
        print("SKIP: every test skipped: %s" % o.skipped[-1])
        return 77
    if o.passed == 0:
        print("FAIL: %s ran no test" % argv[1])
        return 1
    print("PASS: %d passed, %d skipped" % (o.passed, len(o.skipped)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
