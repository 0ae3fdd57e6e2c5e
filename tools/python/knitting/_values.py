# SPDX-License-Identifier: MIT
"""knitting._values - Python values to and from knit_value_t, and Python
callables as task functions."""
import ctypes as C
from typing import Any, Callable, Optional, Tuple, Union

from ._abi import (KNIT_EPROTO, KNIT_VALUE_BOOL, KNIT_VALUE_BYTES, KNIT_VALUE_ERROR, KNIT_VALUE_F64,
                   KNIT_VALUE_I64, KNIT_VALUE_NONE, KNIT_VALUE_STRING, TASK_FN, Value)
from ._errors import KnitError, TaskError

#: What a task's argument or result can be in Python.
KnitValue = Union[None, bool, int, float, str, bytes]

def to_value(x: Any) -> Tuple[Value, Optional[C.Array]]:
    """A Python value as a knit_value_t (and the buffer that must outlive it)."""
    if x is None:
        return Value(type=KNIT_VALUE_NONE), None
    if isinstance(x, bool):
        return Value(type=KNIT_VALUE_BOOL, i64=int(x)), None
    if isinstance(x, int):
        if not -(1 << 63) <= x < (1 << 63):
            raise OverflowError("%d does not fit in int64" % x)
        return Value(type=KNIT_VALUE_I64, i64=x), None
    if isinstance(x, float):
        return Value(type=KNIT_VALUE_F64, f64=x), None
    if isinstance(x, str):
        b = x.encode()
        if b"\0" in b:
            raise ValueError("a string value cannot hold NUL; pass bytes")
        buf = C.create_string_buffer(b, len(b) + 1)
        return Value(type=KNIT_VALUE_STRING, data=C.cast(buf, C.c_void_p), len=len(b)), buf
    if isinstance(x, (bytes, bytearray, memoryview)):
        b = bytes(x)
        if not b:
            return Value(type=KNIT_VALUE_BYTES), None
        buf = C.create_string_buffer(b, len(b))
        return Value(type=KNIT_VALUE_BYTES, data=C.cast(buf, C.c_void_p), len=len(b)), buf
    raise TypeError("no knit value for %s" % type(x).__name__)


def from_value(v: Value) -> Union[KnitValue, TaskError]:
    """A knit_value_t as a Python value (bytes are copied)."""
    t = v.type
    if t == KNIT_VALUE_NONE:
        return None
    if t == KNIT_VALUE_BOOL:
        return bool(v.i64)
    if t == KNIT_VALUE_I64:
        return v.i64
    if t == KNIT_VALUE_F64:
        return v.f64
    raw = C.string_at(v.data, v.len) if v.len else b""
    if t == KNIT_VALUE_STRING:
        return raw.decode(errors="replace")
    if t == KNIT_VALUE_BYTES:
        return raw
    if t == KNIT_VALUE_ERROR:
        return TaskError(v.code, raw.decode(errors="replace"))
    raise KnitError(-KNIT_EPROTO, "result", "unknown value type %d" % t)


def python_task(lib: C.CDLL, fn: Callable[[Any], Any]) -> TASK_FN:
    """Wrap a Python callable as a task: fn(arg) -> result; raising
    TaskError(code, message) or any exception makes it a task error."""

    def trampoline(ctx, arg, ret):
        try:
            res = fn(from_value(arg.contents))
            v, buf = to_value(res)
            if buf is not None:
                # The worker copies the result after we return: put the bytes
                # in memory the pool frees once it has them (knit_ctx_alloc).
                mem = lib.knit_ctx_alloc(ctx, max(v.len + 1, 1))
                if not mem:
                    return 12  # ENOMEM, as the task's own error code
                C.memmove(mem, buf, v.len + (1 if v.type == KNIT_VALUE_STRING else 0))
                v.data = mem
            ret[0] = v
            return 0
        except TaskError as e:
            return _error_result(lib, ctx, ret, e.task_code or 1, e.message or "")
        except Exception as e:  # a task must not unwind into C
            return _error_result(lib, ctx, ret, 1, "%s: %s" % (type(e).__name__, e))

    return TASK_FN(trampoline)


def _error_result(lib: C.CDLL, ctx: int, ret: Any, code: int, message: str) -> int:
    b = message.encode()[:4095]
    mem = lib.knit_ctx_alloc(ctx, len(b) + 1)
    if mem:
        C.memmove(mem, b + b"\0", len(b) + 1)
        ret[0] = Value(type=KNIT_VALUE_ERROR, code=code, data=mem, len=len(b))
    # A non-zero return makes the call a task error (-KNIT_ETASK); with an
    # error value in ret the completion carries its code and message.
    return code
