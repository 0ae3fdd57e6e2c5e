/* SPDX-License-Identifier: MIT */
/*
 * abi/layout.c - the frozen layout of every public struct on LP64 Linux
 * (x86-64, aarch64, riscv64): size and the offset of each member. Compiled
 * by `make abi-check` for each of those targets (-fsyntax-only); nothing
 * here runs. A change that moves, resizes or removes a member breaks the
 * build of this file; growing a size-prefixed struct (knit_pool_options_t,
 * knit_call_options_t, knit_pool_stats_t) at its end is allowed (see
 * abi/README) and is recorded here by adding the new member's line and
 * updating the size on purpose.
 */
#include <stddef.h>

#include "knitting.h"

#if !defined(__LP64__) || !defined(__linux__)
#error "abi/layout.c describes LP64 Linux"
#endif

#define KNIT_SIZE(type, n) _Static_assert(sizeof(type) == (n), "sizeof(" #type ") changed")
#define KNIT_AT(type, member, off)                                                                 \
	_Static_assert(offsetof(type, member) == (off), #type "." #member " moved")

/* knit_value_t */
KNIT_SIZE(knit_value_t, 40);
KNIT_AT(knit_value_t, type, 0);
KNIT_AT(knit_value_t, code, 4);
KNIT_AT(knit_value_t, i64, 8);
KNIT_AT(knit_value_t, f64, 16);
KNIT_AT(knit_value_t, data, 24);
KNIT_AT(knit_value_t, len, 32);

/* knit_task_t */
KNIT_SIZE(knit_task_t, 48);
KNIT_AT(knit_task_t, name, 0);
KNIT_AT(knit_task_t, fn, 8);
KNIT_AT(knit_task_t, timeout_ms, 16);
KNIT_AT(knit_task_t, flags, 20);
KNIT_AT(knit_task_t, data, 24);
KNIT_AT(knit_task_t, reserved, 32);

/* knit_pool_options_t */
KNIT_SIZE(knit_pool_options_t, 344);
KNIT_AT(knit_pool_options_t, size, 0);
KNIT_AT(knit_pool_options_t, workers, 4);
KNIT_AT(knit_pool_options_t, topology, 8);
KNIT_AT(knit_pool_options_t, balancer, 12);
KNIT_AT(knit_pool_options_t, inline_lane, 16);
KNIT_AT(knit_pool_options_t, inline_batch, 20);
KNIT_AT(knit_pool_options_t, steal_region_lanes, 24);
KNIT_AT(knit_pool_options_t, stall_free_loops, 28);
KNIT_AT(knit_pool_options_t, max_backoff_ms, 32);
KNIT_AT(knit_pool_options_t, doorbell, 36);
KNIT_AT(knit_pool_options_t, spin_us, 40);
KNIT_AT(knit_pool_options_t, park_ms, 44);
KNIT_AT(knit_pool_options_t, abort_capacity, 48);
KNIT_AT(knit_pool_options_t, hard_timeout_ms, 52);
KNIT_AT(knit_pool_options_t, max_pending, 56);
KNIT_AT(knit_pool_options_t, reserved0, 60);
KNIT_AT(knit_pool_options_t, payload_max_bytes, 64);
KNIT_AT(knit_pool_options_t, payload_initial_bytes, 72);
KNIT_AT(knit_pool_options_t, max_payload_bytes, 80);
KNIT_AT(knit_pool_options_t, cpu_mask, 88);
KNIT_AT(knit_pool_options_t, cpu_flags, 216);
KNIT_AT(knit_pool_options_t, reserved1, 220);
KNIT_AT(knit_pool_options_t, worker_kind, 224);
KNIT_AT(knit_pool_options_t, proc_flags, 228);
KNIT_AT(knit_pool_options_t, task_library, 232);
KNIT_AT(knit_pool_options_t, worker_path, 240);
KNIT_AT(knit_pool_options_t, respawn_max, 248);
KNIT_AT(knit_pool_options_t, reserved2, 252);
KNIT_AT(knit_pool_options_t, worker_prefix, 256);
KNIT_AT(knit_pool_options_t, worker_start, 264);
KNIT_AT(knit_pool_options_t, worker_stop, 272);
KNIT_AT(knit_pool_options_t, worker_hook_arg, 280);
KNIT_AT(knit_pool_options_t, info_flags, 288);        /* 1.2 */
KNIT_AT(knit_pool_options_t, info_records, 292);      /* 1.2 */
KNIT_AT(knit_pool_options_t, recycle_calls, 296);     /* 1.2 */
KNIT_AT(knit_pool_options_t, recycle_rss_bytes, 304); /* 1.2 */
KNIT_AT(knit_pool_options_t, recycle_age_ms, 312);    /* 1.2 */
KNIT_AT(knit_pool_options_t, reserved3, 316);         /* 1.2 */
KNIT_AT(knit_pool_options_t, sandbox, 320);           /* 1.2 */

KNIT_AT(knit_pool_options_t, respawn_window_ms, 328);      /* 1.2 */
KNIT_AT(knit_pool_options_t, respawn_backoff_ms, 332);     /* 1.2 */
KNIT_AT(knit_pool_options_t, respawn_backoff_max_ms, 336); /* 1.2 */
KNIT_AT(knit_pool_options_t, reserved4, 340);              /* 1.2 */

/* knit_sandbox_t */
KNIT_SIZE(knit_sandbox_t, 120);
KNIT_AT(knit_sandbox_t, size, 0);
KNIT_AT(knit_sandbox_t, flags, 4);
KNIT_AT(knit_sandbox_t, seccomp_sets, 8);
KNIT_AT(knit_sandbox_t, reserved0, 12);
KNIT_AT(knit_sandbox_t, seccomp_allow, 16);
KNIT_AT(knit_sandbox_t, rlimit_as, 24);
KNIT_AT(knit_sandbox_t, rlimit_cpu, 32);
KNIT_AT(knit_sandbox_t, rlimit_nofile, 40);
KNIT_AT(knit_sandbox_t, rlimit_nproc, 48);
KNIT_AT(knit_sandbox_t, namespaces, 56);
KNIT_AT(knit_sandbox_t, reserved1, 60);
KNIT_AT(knit_sandbox_t, cgroup, 64);
KNIT_AT(knit_sandbox_t, cgroup_memory_max, 72);
KNIT_AT(knit_sandbox_t, cgroup_pids_max, 80);
KNIT_AT(knit_sandbox_t, cgroup_cpu_max_us, 88);
KNIT_AT(knit_sandbox_t, cgroup_cpu_period_us, 92);
KNIT_AT(knit_sandbox_t, landlock_ro, 96);
KNIT_AT(knit_sandbox_t, landlock_rw, 104);
KNIT_AT(knit_sandbox_t, landlock_abi, 112);
KNIT_AT(knit_sandbox_t, reserved2, 116);

/* knit_request_t (an array element: frozen) */
KNIT_SIZE(knit_request_t, 32);
KNIT_AT(knit_request_t, task, 0);
KNIT_AT(knit_request_t, reserved, 4);
KNIT_AT(knit_request_t, arg, 8);
KNIT_AT(knit_request_t, user_data, 16);
KNIT_AT(knit_request_t, opts, 24);

/* knit_call_options_t */
KNIT_SIZE(knit_call_options_t, 16);
KNIT_AT(knit_call_options_t, size, 0);
KNIT_AT(knit_call_options_t, flags, 4);
KNIT_AT(knit_call_options_t, timeout_ms, 8);
KNIT_AT(knit_call_options_t, lane, 12);

/* knit_completion_t */
KNIT_SIZE(knit_completion_t, 80);
KNIT_AT(knit_completion_t, ticket, 0);
KNIT_AT(knit_completion_t, user_data, 8);
KNIT_AT(knit_completion_t, status, 16);
KNIT_AT(knit_completion_t, task, 20);
KNIT_AT(knit_completion_t, result, 24);
KNIT_AT(knit_completion_t, reserved, 64);

/* knit_completion_info_t (1.2; size-prefixed) */
KNIT_SIZE(knit_map_options_t, 40);
KNIT_AT(knit_map_options_t, size, 0);
KNIT_AT(knit_map_options_t, chunk, 4);
KNIT_AT(knit_map_options_t, timeout_ms, 8);
KNIT_AT(knit_map_options_t, flags, 12);
KNIT_AT(knit_map_options_t, cancel, 16);
KNIT_AT(knit_map_options_t, reserved, 24);

KNIT_SIZE(knit_completion_info_t, 88);
KNIT_AT(knit_completion_info_t, size, 0);
KNIT_AT(knit_completion_info_t, flags, 4);
KNIT_AT(knit_completion_info_t, lane, 8);
KNIT_AT(knit_completion_info_t, pid, 12);
KNIT_AT(knit_completion_info_t, wait_ns, 16);
KNIT_AT(knit_completion_info_t, run_ns, 24);
KNIT_AT(knit_completion_info_t, cpu_ns, 32);
KNIT_AT(knit_completion_info_t, death, 40);
KNIT_AT(knit_completion_info_t, death_detail, 44);
KNIT_AT(knit_completion_info_t, syscall_nr, 48);
KNIT_AT(knit_completion_info_t, syscall_arch, 52);
KNIT_AT(knit_completion_info_t, syscall_name, 56);

/* knit_lane_stats_t */
KNIT_SIZE(knit_lane_stats_t, 96);
KNIT_AT(knit_lane_stats_t, calls, 0);
KNIT_AT(knit_lane_stats_t, parks, 8);
KNIT_AT(knit_lane_stats_t, wakes_sent, 16);
KNIT_AT(knit_lane_stats_t, wakes_received, 24);
KNIT_AT(knit_lane_stats_t, watchdog_expiries, 32);
KNIT_AT(knit_lane_stats_t, spins, 40);
KNIT_AT(knit_lane_stats_t, doorbell_rings, 48);
KNIT_AT(knit_lane_stats_t, steal_claims, 56);
KNIT_AT(knit_lane_stats_t, steal_conflicts, 64);
KNIT_AT(knit_lane_stats_t, spurious_wakes, 72);
KNIT_AT(knit_lane_stats_t, arena_trims, 80);
KNIT_AT(knit_lane_stats_t, cpu, 88);

/* knit_pool_stats_t */
KNIT_SIZE(knit_pool_stats_t, 9208);
KNIT_AT(knit_pool_stats_t, size, 0);
KNIT_AT(knit_pool_stats_t, lanes, 4);
KNIT_AT(knit_pool_stats_t, topology, 8);
KNIT_AT(knit_pool_stats_t, workers, 12);
KNIT_AT(knit_pool_stats_t, enqueued, 16);
KNIT_AT(knit_pool_stats_t, completed, 24);
KNIT_AT(knit_pool_stats_t, pending, 32);
KNIT_AT(knit_pool_stats_t, backlog, 40);
KNIT_AT(knit_pool_stats_t, backlog_high_water, 48);
KNIT_AT(knit_pool_stats_t, doorbell_arms, 56);
KNIT_AT(knit_pool_stats_t, doorbell_wakes, 64);
KNIT_AT(knit_pool_stats_t, inline_calls, 72);
KNIT_AT(knit_pool_stats_t, proto_errors, 80);
KNIT_AT(knit_pool_stats_t, late_drops, 88);
KNIT_AT(knit_pool_stats_t, arena_committed_bytes, 96);
KNIT_AT(knit_pool_stats_t, sync_calls, 104);
KNIT_AT(knit_pool_stats_t, lane, 112);
KNIT_AT(knit_pool_stats_t, spawns, 6352);
KNIT_AT(knit_pool_stats_t, crashes, 6360);
KNIT_AT(knit_pool_stats_t, respawns, 6368);
KNIT_AT(knit_pool_stats_t, hard_kills, 6376);
KNIT_AT(knit_pool_stats_t, backlogged, 6384);         /* 1.1 */
KNIT_AT(knit_pool_stats_t, class_enqueued, 6392);     /* 1.2 */
KNIT_AT(knit_pool_stats_t, class_backlogged, 6416);   /* 1.2 */
KNIT_AT(knit_pool_stats_t, deaths, 6440);             /* 1.2 */
KNIT_AT(knit_pool_stats_t, recycles_calls, 6568);     /* 1.2 */
KNIT_AT(knit_pool_stats_t, recycles_rss, 6576);       /* 1.2 */
KNIT_AT(knit_pool_stats_t, recycles_age, 6584);       /* 1.2 */
KNIT_AT(knit_pool_stats_t, recycle_failures, 6592);   /* 1.2 */
KNIT_AT(knit_pool_stats_t, worker, 6600);             /* 1.2 */
KNIT_AT(knit_pool_stats_t, respawn_backoffs, 9160);   /* 1.2 */
KNIT_AT(knit_pool_stats_t, respawn_backoff_ms, 9168); /* 1.2 */
KNIT_AT(knit_pool_stats_t, cancel_kills, 9176);       /* 1.2 */
KNIT_AT(knit_pool_stats_t, landlock_abi, 9184);       /* 1.2 */
KNIT_AT(knit_pool_stats_t, reserved5, 9188);          /* 1.2 */
KNIT_AT(knit_pool_stats_t, shared_calls, 9192);       /* 1.2 */
KNIT_AT(knit_pool_stats_t, shared_frames, 9200);      /* 1.2 */

/* knit_worker_stats_t (an array element: frozen) */
KNIT_SIZE(knit_worker_stats_t, 40);
KNIT_AT(knit_worker_stats_t, pid, 0);
KNIT_AT(knit_worker_stats_t, calls, 8);
KNIT_AT(knit_worker_stats_t, rss_bytes, 16);
KNIT_AT(knit_worker_stats_t, age_ns, 24);
KNIT_AT(knit_worker_stats_t, state, 32);
KNIT_AT(knit_worker_stats_t, reserved, 36);

/* knit_task_library_t */
KNIT_SIZE(knit_task_library_t, 40);
KNIT_AT(knit_task_library_t, size, 0);
KNIT_AT(knit_task_library_t, version, 4);
KNIT_AT(knit_task_library_t, tasks, 8);
KNIT_AT(knit_task_library_t, ntasks, 16);
KNIT_AT(knit_task_library_t, init, 24);
KNIT_AT(knit_task_library_t, fini, 32);
_Static_assert(KNIT_TASK_LIBRARY_V1_SIZE == 24, "a version 1 task library: 1.1's size");
