# SPDX-License-Identifier: MIT
"""Process pools (knit-worker processes over tests/ffi/tasks.c's task
library): calls, the executor, and a crashing task as CrashedError."""
import pytest

import knitting


def test_calls_and_map(procpool):
    assert procpool.call("double", 21) == 42
    assert procpool.call("upper", "abc") == "ABC"
    assert list(procpool.map("double", range(300), chunksize=50)) == [2 * i for i in range(300)]
    st = procpool.stats()
    assert st["spawns"] == 2 and st["crashes"] == 0


def test_a_crashing_task(procpool):
    with pytest.raises(knitting.CrashedError) as e:
        procpool.call("crash")
    assert e.value.code == -knitting.KNIT_ECRASHED
    with pytest.raises(knitting.CrashedError):
        procpool.submit("crash").result(timeout=60)
    # The pool respawns the worker and goes on.
    assert procpool.call("double", 5) == 10
    st = procpool.stats()
    assert st["crashes"] == 2 and st["respawns"] == 2



def test_a_crashed_call_says_why(procpool):
    """complete(info=True): the crashed call's info names the signal and
    the dead worker's pid; the stats count the death by cause."""
    t = procpool.enqueue("crash")
    got = []
    for _ in range(100):
        got += procpool.complete(timeout=10, info=True)
        if got:
            break
    assert len(got) == 1
    ticket, _, err, info = got[0]
    assert ticket == t and isinstance(err, knitting.CrashedError)
    assert info is not None and info["flags"] & knitting.KNIT_INFO_DEATH
    assert info["pid"] > 0
    assert info["death"] in (knitting.KNIT_DEATH_SIGNAL, knitting.KNIT_DEATH_EXIT)
    st = procpool.stats()
    assert sum(st["deaths"]) == 1 and st["deaths"][info["death"]] == 1
