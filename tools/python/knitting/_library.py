# SPDX-License-Identifier: MIT
"""knitting._library - finding and opening libknitting.so.1."""
import ctypes as C
import ctypes.util
import os
import threading
from typing import List, Optional

from . import _abi as A
from . import _errors

SONAME = "libknitting.so.1"

_lib: Optional[C.CDLL] = None
_lock = threading.Lock()


class LibraryNotFoundError(OSError):
    """No libknitting could be loaded; ``tried`` lists each attempt with why
    it failed."""

    def __init__(self, tried: List[str]) -> None:
        self.tried = tried
        super().__init__("libknitting could not be loaded; tried:\n  " + "\n  ".join(tried) +
                         "\nInstall the library (make install), pass its path "
                         "(knitting.load(path) or Pool(lib=path)), or set KNITTING_LIB to it.")


def _candidates(path: Optional[str]) -> List[str]:
    if path is not None:
        return [path]  # an explicit path is the only one tried
    names = []
    env = os.environ.get("KNITTING_LIB")
    if env:
        names.append(env)
    names.append(SONAME)  # the loader's search: LD_LIBRARY_PATH, ld.so.cache, default dirs
    found = ctypes.util.find_library("knitting")
    if found and found not in names:
        names.append(found)
    return names


def _bind(lib: C.CDLL) -> None:
    for name, (res, args) in A.SIGNATURES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    if hasattr(lib, "knit_last_error"):  # 1.2
        lib.knit_last_error.restype, lib.knit_last_error.argtypes = C.c_char_p, []
    for name, (res, args) in A.SIGNATURES_1_2.items():  # 1.2: only where the library has them
        if hasattr(lib, name):
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args


def load(path: Optional[str] = None) -> C.CDLL:
    """Open libknitting and give every function its argument and result types.

    Tried in order, first success wins: ``path`` when given (then nothing
    else); else ``$KNITTING_LIB``; then ``libknitting.so.1`` through the
    dynamic loader's own search; then what ``ctypes.util.find_library``
    finds. Raises LibraryNotFoundError listing every attempt, or KnitError
    (-KNIT_EVERSION) when the library is of another major version or older
    than this module.

    The first library loaded is the module's (load() without a path returns
    it again). It is opened RTLD_GLOBAL, so task libraries loaded later
    resolve knit_ctx_* against it, and as ctypes.CDLL, which releases the
    GIL around every call (ctypes.PyDLL would hold it and deadlock a call
    waiting for a Python task).
    """
    global _lib
    with _lock:
        if _lib is not None and path is None:
            return _lib
        tried = []
        for name in _candidates(path):
            try:
                lib = C.CDLL(name, mode=C.RTLD_GLOBAL)
            except OSError as e:
                tried.append("%s: %s" % (name, e))
                continue
            _bind(lib)
            v = lib.knit_version()
            m = A.KNIT_LIBRARY_MIN_NUMBER
            if (v >> 16) != A.KNIT_VERSION_MAJOR or v < m:
                raise _errors.KnitError(
                    -A.KNIT_EVERSION, name,
                    "it is version %d.%d.%d; this module needs %d.%d.%d or a newer %d.x"
                    % (v >> 16, (v >> 8) & 0xFF, v & 0xFF, m >> 16,
                       (m >> 8) & 0xFF, m & 0xFF, A.KNIT_VERSION_MAJOR))
            if _lib is None:
                _lib = lib
                _errors._lib = lib
            return lib
        raise LibraryNotFoundError(tried)
