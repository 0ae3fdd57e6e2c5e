#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/python/example.py - libknitting from Python in a dozen lines.

Run from a checkout after `make`:
    KNITTING_LIB=build/lib/libknitting.so.1 PYTHONPATH=tools/python python3 tools/python/example.py
With an installed library, KNITTING_LIB is not needed; with the package
installed (`pip install tools/python`, or `make install`), PYTHONPATH is not.
"""
import knitting


def word_count(text):
    return len(text.split())


def checked_sqrt(x):
    if x < 0:
        raise knitting.TaskError(33, "negative input")
    return x ** 0.5


with knitting.Pool({"word_count": word_count, "sqrt": checked_sqrt}, workers=2) as pool:
    print("words:", pool.call("word_count", "the quick brown fox"))
    inputs = [4, 9, -1, 16]
    for i, n in enumerate(inputs):
        pool.enqueue("sqrt", float(n), user_data=i)  # user_data: an int handed back
    done = []
    while len(done) < len(inputs):
        done += pool.complete(max=8)
    for ticket, i, result in sorted(done, key=lambda d: d[1]):
        print("sqrt(%d) ->" % inputs[i], result if not isinstance(result, Exception) else "error: %s" % result)
    st = pool.stats()
    print("calls: %d enqueued, %d completed" % (st["enqueued"], st["completed"]))
