# SPDX-License-Identifier: MIT
"""knitting._errors - one exception class per outcome, and the one place
that turns a negative KNIT_E* code into an exception (error_for,
raise_for)."""
import builtins
import concurrent.futures
import ctypes as C
from typing import NoReturn, Optional

from . import _abi as A

# The loaded library, for knit_strerror (set by _library.load).
_lib: Optional[C.CDLL] = None


def strerror(code: int) -> str:
    """knit_strerror's text for a code, or a plain one before any load."""
    if _lib is not None:
        return _lib.knit_strerror(code).decode(errors="replace")
    return "error %d" % code


class KnitError(Exception):
    """A libknitting call or call outcome failed.

    ``code`` is the negative KNIT_E* code; ``where`` names what failed.
    """

    def __init__(self, code: int, where: str = "", detail: str = "") -> None:
        self.code = code
        self.where = where
        text = strerror(code)
        if detail:
            text += " (" + detail + ")"
        self._text = "%s%s [%d]" % (where + ": " if where else "", text, code)
        Exception.__init__(self, self._text)

    def __str__(self) -> str:
        return self._text

    def __reduce__(self):  # picklable, as concurrent.futures may need
        return (type(self), (self.code, self.where))


class TaskError(KnitError):
    """The task reported an error (status -KNIT_ETASK).

    ``task_code`` is the task's own error code and ``message`` its text.
    A Python task raises it to choose both.
    """

    def __init__(self, task_code: int, message: str = "") -> None:
        self.task_code, self.message = task_code, message
        self.code, self.where = -A.KNIT_ETASK, ""
        self._text = "task error %d%s" % (task_code, ": " + message if message else "")
        Exception.__init__(self, self._text)

    def __reduce__(self):
        return (TaskError, (self.task_code, self.message))


class CrashedError(KnitError):
    """The worker running the call died (status -KNIT_ECRASHED)."""


class TimeoutError(KnitError, builtins.TimeoutError):
    """The call's deadline passed (status -KNIT_ETIMEDOUT). Also a builtin
    TimeoutError, which concurrent.futures raises for a wait that expires."""


class CancelledError(KnitError, concurrent.futures.CancelledError):
    """The call was cancelled (status -KNIT_ECANCELED). Also a
    concurrent.futures.CancelledError."""


class ClosedError(KnitError, RuntimeError):
    """The pool is stopping, stopped or closed (-KNIT_ECLOSED). Also a
    RuntimeError, as Executor.submit after shutdown raises."""


_BY_CODE = {-A.KNIT_ECRASHED: CrashedError, -A.KNIT_ETIMEDOUT: TimeoutError,
            -A.KNIT_ECANCELED: CancelledError, -A.KNIT_ECLOSED: ClosedError}


def error_for(code: int, where: str = "", detail: str = "") -> KnitError:
    """The exception for a negative code (a call's return or a completion's
    status other than -KNIT_ETASK, which carries a TaskError instead)."""
    return _BY_CODE.get(code, KnitError)(code, where, detail)


def raise_for(code: int, where: str) -> NoReturn:
    """Raise the exception for a failed libknitting function call, made on
    this thread just before. With a library that has knit_last_error (1.2),
    its text for this thread is added."""
    detail = ""
    if _lib is not None and hasattr(_lib, "knit_last_error"):
        text = _lib.knit_last_error()
        if text:
            detail = text.decode(errors="replace")
    raise error_for(code, where, detail)


def check(rc: int, where: str) -> int:
    """rc when it is not negative; else raise_for(rc, where)."""
    if rc < 0:
        raise_for(rc, where)
    return rc
