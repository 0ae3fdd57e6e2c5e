# SPDX-License-Identifier: MIT
"""knitting._abi - the C ABI of include/knitting.h mirrored one to one.

The constants, a ctypes.Structure for every public struct (each checked
against the C layout by the test suite), the task function type, and the
argument and result types of every function (SIGNATURES). Nothing here
loads the library.
"""
import ctypes as C
from typing import Dict, List, Tuple, Type

# ---- constants (include/knitting.h) ------------------------------------------

(KNIT_OK, KNIT_EINVAL, KNIT_ENOMEM, KNIT_EAGAIN, KNIT_ENOTASK, KNIT_ETOOBIG,
 KNIT_ECLOSED, KNIT_ETIMEDOUT, KNIT_ECANCELED, KNIT_ECRASHED, KNIT_EPROTO,
 KNIT_ETASK, KNIT_ESYSTEM, KNIT_EVERSION, KNIT_ENOTFOUND, KNIT_EBUSY,
 KNIT_ENOENT, KNIT_EACCES, KNIT_ERROR_MAX_) = range(19)
(KNIT_VALUE_NONE, KNIT_VALUE_BOOL, KNIT_VALUE_I64, KNIT_VALUE_F64, KNIT_VALUE_BYTES,
 KNIT_VALUE_STRING, KNIT_VALUE_ERROR) = range(7)
KNIT_TASK_ABORTABLE = 1
KNIT_TOPOLOGY_AUTO, KNIT_TOPOLOGY_LANES, KNIT_TOPOLOGY_STEAL = range(3)
KNIT_MAX_WORKERS = 64
KNIT_CPU_MASK_WORDS = 16
KNIT_WORKERS_THREADS, KNIT_WORKERS_PROCESSES = 0, 1
KNIT_PROC_INHERIT_ENV, KNIT_PROC_NAMED_SHM = 1, 2
KNIT_WORKER_NONE, KNIT_WORKER_BOOTING, KNIT_WORKER_SERVING, KNIT_WORKER_RETIRING = 0, 1, 2, 3
KNIT_WORKER_BACKING_OFF = 4  # 1.2
KNIT_ZERO = 0xFFFFFFFF
KNIT_TASK_LIBRARY_VERSION = 2
KNIT_CALL_ABORTABLE, KNIT_CALL_LANE, KNIT_CALL_NO_TIMEOUT = 1, 2, 4
KNIT_CALL_HIGH, KNIT_CALL_LOW = 8, 16  # 1.2
KNIT_CANCEL_NOW, KNIT_CANCEL_SIGNAL, KNIT_CANCEL_KILL = 1, 2, 4  # KILL: 1.2, process pools
KNIT_STOP_DRAIN, KNIT_STOP_CANCEL = 1, 2
# 1.2: completion infos (knit_completion_info) and why a worker died.
(KNIT_DEATH_NONE, KNIT_DEATH_SIGNAL, KNIT_DEATH_EXIT, KNIT_DEATH_HARD_TIMEOUT,
 KNIT_DEATH_PROTOCOL, KNIT_DEATH_OOM, KNIT_DEATH_SANDBOX, KNIT_DEATH_CANCEL_KILL) = range(8)
KNIT_DEATH_CAUSE_MAX = 16
KNIT_INFO_LANE, KNIT_INFO_TIMING, KNIT_INFO_DEATH, KNIT_INFO_CPU, KNIT_INFO_SYSCALL = 1, 2, 4, 8, 16
KNIT_POOL_INFO_TIMING, KNIT_POOL_INFO_CPU = 1, 2
KNIT_VERSION_MAJOR, KNIT_VERSION_MINOR, KNIT_VERSION_PATCH = 1, 2, 0
KNIT_VERSION_NUMBER = (KNIT_VERSION_MAJOR << 16) | (KNIT_VERSION_MINOR << 8) | KNIT_VERSION_PATCH
# The oldest library this module loads: it uses nothing of 1.2 but
# knit_last_error, and that only when the library has it.
KNIT_LIBRARY_MIN_NUMBER = (1 << 16) | (1 << 8) | 0

# ---- the public structs ---------------------------------------------------------


class Value(C.Structure):
    _fields_ = [("type", C.c_uint32), ("code", C.c_int32), ("i64", C.c_int64),
                ("f64", C.c_double), ("data", C.c_void_p), ("len", C.c_size_t)]


# int (*)(knit_ctx_t *, const knit_value_t *, knit_value_t *)
TASK_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(Value), C.POINTER(Value))


class Task(C.Structure):
    _fields_ = [("name", C.c_char_p), ("fn", TASK_FN), ("timeout_ms", C.c_uint32),
                ("flags", C.c_uint32), ("data", C.c_void_p), ("reserved", C.c_uint64 * 2)]


class PoolOptions(C.Structure):
    _fields_ = [(n, C.c_uint32) for n in (
        "size", "workers", "topology", "balancer", "inline_lane", "inline_batch",
        "steal_region_lanes", "stall_free_loops", "max_backoff_ms", "doorbell", "spin_us",
        "park_ms", "abort_capacity", "hard_timeout_ms", "max_pending", "reserved0")] + [
        ("payload_max_bytes", C.c_uint64), ("payload_initial_bytes", C.c_uint64),
        ("max_payload_bytes", C.c_uint64), ("cpu_mask", C.c_uint64 * KNIT_CPU_MASK_WORDS),
        ("cpu_flags", C.c_uint32), ("reserved1", C.c_uint32),
        ("worker_kind", C.c_uint32), ("proc_flags", C.c_uint32),
        ("task_library", C.c_char_p), ("worker_path", C.c_char_p),
        ("respawn_max", C.c_uint32), ("reserved2", C.c_uint32),
        ("worker_prefix", C.POINTER(C.c_char_p)),
        # 1.2: thread workers' start/stop callbacks (knit_worker_hook_fn) and their argument
        ("worker_start", C.c_void_p), ("worker_stop", C.c_void_p), ("worker_hook_arg", C.c_void_p),
        ("info_flags", C.c_uint32), ("info_records", C.c_uint32),  # 1.2
        ("recycle_calls", C.c_uint64), ("recycle_rss_bytes", C.c_uint64),
        ("recycle_age_ms", C.c_uint32), ("reserved3", C.c_uint32),  # 1.2
        ("sandbox", C.c_void_p),  # 1.2: a knit_sandbox_t (process pools)
        # 1.2: restart intensity and backoff (process pools)
        ("respawn_window_ms", C.c_uint32), ("respawn_backoff_ms", C.c_uint32),
        ("respawn_backoff_max_ms", C.c_uint32), ("reserved4", C.c_uint32)]


class CallOptions(C.Structure):
    _fields_ = [("size", C.c_uint32), ("flags", C.c_uint32), ("timeout_ms", C.c_uint32),
                ("lane", C.c_uint32)]


class Request(C.Structure):
    """One call of a knit_enqueue_many burst (since 1.1)."""
    _fields_ = [("task", C.c_uint32), ("reserved", C.c_uint32), ("arg", C.POINTER(Value)),
                ("user_data", C.c_void_p), ("opts", C.POINTER(CallOptions))]


class MapOptions(C.Structure):
    """knit_map's options (since 1.2); cancel points at an int another thread sets."""
    _fields_ = [("size", C.c_uint32), ("chunk", C.c_uint32), ("timeout_ms", C.c_uint32),
                ("flags", C.c_uint32), ("cancel", C.POINTER(C.c_int)),
                ("reserved", C.c_uint64 * 2)]


class Completion(C.Structure):
    _fields_ = [("ticket", C.c_uint64), ("user_data", C.c_void_p), ("status", C.c_int32),
                ("task", C.c_uint32), ("result", Value), ("reserved", C.c_uint64 * 2)]


class LaneStats(C.Structure):
    _fields_ = [(n, C.c_uint64) for n in (
        "calls", "parks", "wakes_sent", "wakes_received", "watchdog_expiries", "spins",
        "doorbell_rings", "steal_claims", "steal_conflicts", "spurious_wakes", "arena_trims")] + [
        ("cpu", C.c_int64)]


class WorkerStats(C.Structure):
    _fields_ = [("pid", C.c_int64), ("calls", C.c_uint64), ("rss_bytes", C.c_uint64),
                ("age_ns", C.c_uint64), ("state", C.c_uint32), ("reserved", C.c_uint32)]


class PoolStats(C.Structure):
    _fields_ = [("size", C.c_uint32), ("lanes", C.c_uint32), ("topology", C.c_uint32),
                ("workers", C.c_uint32)] + [(n, C.c_uint64) for n in (
                    "enqueued", "completed", "pending", "backlog", "backlog_high_water",
                    "doorbell_arms", "doorbell_wakes", "inline_calls", "proto_errors",
                    "late_drops", "arena_committed_bytes", "sync_calls")] + [
        ("lane", LaneStats * (KNIT_MAX_WORKERS + 1))] + [
        (n, C.c_uint64) for n in ("spawns", "crashes", "respawns", "hard_kills", "backlogged")] + [
        ("class_enqueued", C.c_uint64 * 3), ("class_backlogged", C.c_uint64 * 3),
        ("deaths", C.c_uint64 * KNIT_DEATH_CAUSE_MAX)] + [
        (n, C.c_uint64) for n in (
            "recycles_calls", "recycles_rss", "recycles_age", "recycle_failures")] + [
        ("worker", WorkerStats * KNIT_MAX_WORKERS)] + [
        (n, C.c_uint64) for n in ("respawn_backoffs", "respawn_backoff_ms", "cancel_kills")] + [
        ("landlock_abi", C.c_uint32), ("reserved5", C.c_uint32),  # 1.2
        ("shared_calls", C.c_uint64), ("shared_frames", C.c_uint64)]  # 1.2


class CompletionInfo(C.Structure):  # 1.2
    _fields_ = [("size", C.c_uint32), ("flags", C.c_uint32), ("lane", C.c_uint32),
                ("pid", C.c_int32), ("wait_ns", C.c_int64), ("run_ns", C.c_int64),
                ("cpu_ns", C.c_int64), ("death", C.c_uint32), ("death_detail", C.c_int32),
                ("syscall_nr", C.c_int32), ("syscall_arch", C.c_uint32),
                ("syscall_name", C.c_char * 32)]


class TaskLibrary(C.Structure):
    """What a task library exports as knit_task_library (process workers)."""
    _fields_ = [("size", C.c_uint32), ("version", C.c_uint32), ("tasks", C.POINTER(Task)),
                ("ntasks", C.c_size_t),
                # version 2 (1.2): the worker process hooks, init and fini
                ("init", C.c_void_p), ("fini", C.c_void_p)]


# knit_sandbox_t's seccomp flag and sets (1.2).
KNIT_SANDBOX_SECCOMP = 1
KNIT_SECCOMP_FILES, KNIT_SECCOMP_NETWORK, KNIT_SECCOMP_PROCESSES = 1, 2, 4


class Sandbox(C.Structure):
    """knit_sandbox_t (1.2): a process pool's sandbox (PoolOptions.sandbox points to one)."""
    _fields_ = [("size", C.c_uint32), ("flags", C.c_uint32), ("seccomp_sets", C.c_uint32),
                ("reserved0", C.c_uint32), ("seccomp_allow", C.POINTER(C.c_char_p)),
                ("rlimit_as", C.c_uint64), ("rlimit_cpu", C.c_uint64),
                ("rlimit_nofile", C.c_uint64), ("rlimit_nproc", C.c_uint64),
                # namespaces and a cgroup (1.2)
                ("namespaces", C.c_uint32), ("reserved1", C.c_uint32), ("cgroup", C.c_char_p),
                ("cgroup_memory_max", C.c_uint64), ("cgroup_pids_max", C.c_uint64),
                ("cgroup_cpu_max_us", C.c_uint32), ("cgroup_cpu_period_us", C.c_uint32),
                # Landlock (1.2)
                ("landlock_ro", C.POINTER(C.c_char_p)), ("landlock_rw", C.POINTER(C.c_char_p)),
                ("landlock_abi", C.c_uint32), ("reserved2", C.c_uint32)]


# C type name -> mirror (tests compare each against the C layout).
STRUCTS: Dict[str, Type[C.Structure]] = {"knit_value_t": Value, "knit_task_t": Task, "knit_pool_options_t": PoolOptions,
           "knit_call_options_t": CallOptions, "knit_request_t": Request,
           "knit_map_options_t": MapOptions,
           "knit_completion_t": Completion, "knit_completion_info_t": CompletionInfo,
           "knit_lane_stats_t": LaneStats, "knit_worker_stats_t": WorkerStats,
           "knit_pool_stats_t": PoolStats,
           "knit_task_library_t": TaskLibrary, "knit_sandbox_t": Sandbox}

# ---- the library ------------------------------------------------------------------

_P, _PP = C.c_void_p, C.POINTER(C.c_void_p)
SIGNATURES: Dict[str, Tuple[object, List[object]]] = {
    "knit_pool_create": (C.c_int, [C.POINTER(PoolOptions), C.POINTER(Task), C.c_size_t, _PP]),
    "knit_pool_task_id": (C.c_int, [_P, C.c_char_p]),
    "knit_enqueue": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), _P, C.POINTER(C.c_uint64)]),
    "knit_enqueue_ex": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), _P, C.POINTER(CallOptions),
                                  C.POINTER(C.c_uint64)]),
    "knit_enqueue_many": (C.c_int, [_P, C.POINTER(Request), C.c_uint32, C.POINTER(C.c_uint64)]),
    "knit_complete": (C.c_int, [_P, C.POINTER(Completion), C.c_uint, C.c_int64]),
    "knit_completion_release": (C.c_int, [_P, C.POINTER(Completion)]),
    "knit_completion_fd": (C.c_int, [_P]),
    "knit_call": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), C.POINTER(Completion), C.c_int64]),
    "knit_call_ex": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), C.POINTER(CallOptions),
                               C.POINTER(C.c_uint64), C.POINTER(Completion), C.c_int64]),
    "knit_cancel": (C.c_int, [_P, C.c_uint64, C.c_uint32]),
    "knit_stop": (C.c_int, [_P, C.c_uint32, C.c_int64]),
    "knit_pool_destroy": (C.c_int, [_P]),
    "knit_pool_stats": (C.c_int, [_P, C.POINTER(PoolStats), C.c_size_t]),
    "knit_ctx_aborted": (C.c_int, [_P]),
    "knit_ctx_deadline_ns": (C.c_int64, [_P]),
    "knit_ctx_alloc": (C.c_void_p, [_P, C.c_size_t]),
    "knit_ctx_lane": (C.c_int, [_P]),
    "knit_ctx_task_data": (C.c_void_p, [_P]),
    "knit_version": (C.c_uint32, []),
    "knit_strerror": (C.c_char_p, [C.c_int]),
}
# 1.2 functions, bound when the loaded library has them (a 1.1 library still loads).
SIGNATURES_1_2: Dict[str, Tuple[object, List[object]]] = {
    "knit_complete_tickets": (C.c_int, [_P, C.POINTER(C.c_uint64), C.c_uint, C.POINTER(Completion), C.c_uint,
                                        C.c_int64]),
    "knit_wait_idle": (C.c_int, [_P, C.c_int64]),
    "knit_map": (C.c_int, [_P, C.c_uint32, C.POINTER(Value), C.c_size_t, C.POINTER(Completion),
                           C.POINTER(MapOptions)]),
    "knit_completion_info": (C.c_int, [_P, C.POINTER(Completion), C.POINTER(CompletionInfo)]),
}
