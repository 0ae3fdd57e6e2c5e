// SPDX-License-Identifier: MIT
// src/options.cpp - knit_pool_options_t validation and defaults.
//
// Bad options are errors, never clamps (the ABI contract lists each rule). A
// caller built against an older, shorter struct passes a smaller `size`: only
// those bytes are read and the rest take defaults. KNIT_ZERO asks for a real
// zero where 0 would mean "default".
#include "src/common.h"

#include "src/error.h"
#include "src/runtime.h"
#include "src/proc.h"

namespace knit::detail {

namespace {
constexpr uint64_t kMiB = 1024ull * 1024;
constexpr uint64_t kPayloadMaxDefault = 64 * kMiB;
constexpr uint64_t kPayloadMaxMin = 64 * 1024;
constexpr uint64_t kPayloadMaxMax = (4096 * kMiB) - 64;
constexpr uint32_t kSpinMaxUs = 1000 * 1000;
// spin_us 0: every pool spins this long (spin.h caps how many workers do).
constexpr uint32_t kSpinDefaultUs = 50;
constexpr uint32_t kInfoRecordsMax = 1u << 20;
} // namespace

int options_resolve(const knit_pool_options_t *in, PoolConfig *out)
{
	knit_pool_options_t o;
	memset(&o, 0, sizeof o);
	if (in != nullptr) {
		if (in->size == 0 || in->size > sizeof o)
			return error_set(-KNIT_EVERSION,
					 "options size %u is not one this library knows (1..%zu)",
					 in->size, sizeof o);
		memcpy(&o, in, in->size);
		o.size = (uint32_t)sizeof o;
	}
	memset(out, 0, sizeof *out);

	if (o.reserved0 != 0)
		return error_set(-KNIT_EINVAL, "reserved0 is %u, not 0", o.reserved0);
	if (o.workers > KNIT_MAX_WORKERS)
		return error_set(-KNIT_EINVAL, "workers %u is more than KNIT_MAX_WORKERS (%d)",
				 o.workers, KNIT_MAX_WORKERS);
	out->workers = o.workers == 0 ? 1 : o.workers;

	if (o.balancer > KNIT_BALANCE_FIRST_IDLE_OR_RANDOM)
		return error_set(-KNIT_EINVAL, "balancer %u is not a knit_balancer", o.balancer);
	out->balancer = o.balancer == KNIT_BALANCE_DEFAULT ? (uint32_t)KNIT_BALANCE_ROUND_ROBIN
							   : o.balancer;
	if (o.inline_lane > KNIT_INLINE_LAST)
		return error_set(-KNIT_EINVAL, "inline_lane %u is not a knit_inline_lane",
				 o.inline_lane);
	out->inline_lane = o.inline_lane;
	if (o.doorbell > KNIT_DOORBELL_OFF)
		return error_set(-KNIT_EINVAL, "doorbell %u is not a knit_doorbell", o.doorbell);
	out->doorbell = o.doorbell != KNIT_DOORBELL_OFF;

	// Topology. AUTO: STEAL for 2..31 workers with no explicit balancer and
	// no inline lane (work goes to whichever worker is free), LANES otherwise (more than 31
	// workers: the claim protocol has 31 consumers at most).
	// Explicit STEAL: with a balancer or an inline lane, or with more than
	// 31 workers, -KNIT_EINVAL (an explicit request that cannot be honoured
	// is an error, not a silent fallback); one worker is allowed.
	// Process workers (src/proc.h): a task library, no function pointers
	// (knit_pool_create checks the table argument), either topology (AUTO
	// as for threads: no balancer or inline lane can be given anyway), no
	// inline lane (the host cannot run a library task it does not
	// isolate). Placement (cpu_mask, cpu_flags) applies to each worker
	// process: the worker places itself from the boot record
	// (src/proc_worker.cpp).
	if (o.worker_kind > KNIT_WORKERS_PROCESSES)
		return error_set(-KNIT_EINVAL, "worker_kind %u is not a knit_worker_kind",
				 o.worker_kind);
	if (o.reserved2 != 0)
		return error_set(-KNIT_EINVAL, "reserved2 is %u, not 0", o.reserved2);
	if (o.reserved3 != 0)
		return error_set(-KNIT_EINVAL, "reserved3 is %u, not 0", o.reserved3);
	if (o.reserved4 != 0)
		return error_set(-KNIT_EINVAL, "reserved4 is %u, not 0", o.reserved4);
	out->processes = o.worker_kind == KNIT_WORKERS_PROCESSES;
	if (out->processes) {
		if (o.task_library == nullptr || o.task_library[0] == 0)
			return error_set(-KNIT_EINVAL,
					 "process workers need a task_library (it is %s)",
					 o.task_library == nullptr ? "NULL" : "empty");
		if ((o.proc_flags & ~(uint32_t)(KNIT_PROC_INHERIT_ENV | KNIT_PROC_NAMED_SHM)) != 0)
			return error_set(-KNIT_EINVAL, "proc_flags 0x%x has unknown bits",
					 o.proc_flags);
		if (o.inline_lane != KNIT_INLINE_OFF)
			return error_set(-KNIT_EINVAL,
					 "process workers take no inline_lane (it is %u)",
					 o.inline_lane);
		if (o.worker_start != nullptr || o.worker_stop != nullptr ||
		    o.worker_hook_arg != nullptr)
			return error_set(-KNIT_EINVAL,
					 "%s is for thread workers only (a worker process runs "
					 "the task library's init and fini)",
					 o.worker_start != nullptr  ? "worker_start"
					 : o.worker_stop != nullptr ? "worker_stop"
								    : "worker_hook_arg");
		// A prefix: 1..kPrefixMax words, none empty (an empty program
		// name would only fail later, at the spawn).
		if (o.worker_prefix != nullptr) {
			uint32_t n = 0;
			while (n <= kPrefixMax && o.worker_prefix[n] != nullptr) {
				if (o.worker_prefix[n][0] == 0 && n == 0)
					return error_set(-KNIT_EINVAL,
							 "worker_prefix[0] (the program) is empty");
				n++;
			}
			if (n == 0)
				return error_set(
					-KNIT_EINVAL,
					"worker_prefix has no words (set it to NULL for none)");
			if (n > kPrefixMax)
				return error_set(-KNIT_EINVAL,
						 "worker_prefix has more than %u words",
						 kPrefixMax);
		}
		// Restarts (src/proc.h, "restarts"): the window keeps one time
		// per counted crash, so it bounds respawn_max; the backoff's cap
		// is at least its base.
		const uint32_t budget = respawn_budget(o.respawn_max);
		if (o.respawn_window_ms != 0 && budget > KNIT_RESPAWN_WINDOW_MAX)
			return error_set(-KNIT_EINVAL,
					 "respawn_max %u is more than KNIT_RESPAWN_WINDOW_MAX (%d) "
					 "with a respawn_window_ms (%u)",
					 budget, KNIT_RESPAWN_WINDOW_MAX, o.respawn_window_ms);
		const RespawnBackoff b =
			respawn_backoff(o.respawn_backoff_ms, o.respawn_backoff_max_ms);
		if (b.base_ms > kBackoffLongestMs || b.max_ms > kBackoffLongestMs)
			return error_set(-KNIT_EINVAL,
					 "respawn_backoff%s_ms %u is more than %u (an hour)",
					 b.base_ms > kBackoffLongestMs ? "" : "_max",
					 b.base_ms > kBackoffLongestMs ? b.base_ms : b.max_ms,
					 kBackoffLongestMs);
		if (b.max_ms < b.base_ms)
			return error_set(-KNIT_EINVAL,
					 "respawn_backoff_max_ms %u is less than "
					 "respawn_backoff_ms %u",
					 b.max_ms, b.base_ms);
		out->recycle_calls = o.recycle_calls;
		out->recycle_rss_bytes = o.recycle_rss_bytes;
		out->recycle_age_ms = o.recycle_age_ms;
	} else if (o.recycle_calls != 0 || o.recycle_rss_bytes != 0 || o.recycle_age_ms != 0) {
		// A worker thread shares the host's memory and cannot be replaced
		// without stopping the tasks it runs: recycling is a process
		// pool's.
		return error_set(-KNIT_EINVAL,
				 "%s is for process workers only (worker_kind is threads)",
				 o.recycle_calls != 0       ? "recycle_calls"
				 : o.recycle_rss_bytes != 0 ? "recycle_rss_bytes"
							    : "recycle_age_ms");
	} else if (o.task_library != nullptr || o.worker_path != nullptr || o.proc_flags != 0 ||
		   o.respawn_max != 0 || o.worker_prefix != nullptr || o.sandbox != nullptr ||
		   o.respawn_window_ms != 0 || o.respawn_backoff_ms != 0 ||
		   o.respawn_backoff_max_ms != 0) {
		return error_set(-KNIT_EINVAL,
				 "%s is for process workers only (worker_kind is threads)",
				 o.task_library != nullptr    ? "task_library"
				 : o.worker_path != nullptr   ? "worker_path"
				 : o.proc_flags != 0          ? "proc_flags"
				 : o.respawn_max != 0         ? "respawn_max"
				 : o.sandbox != nullptr       ? "sandbox"
				 : o.worker_prefix != nullptr ? "worker_prefix"
				 : o.respawn_window_ms != 0   ? "respawn_window_ms"
				 : o.respawn_backoff_ms != 0  ? "respawn_backoff_ms"
							      : "respawn_backoff_max_ms");
	}
	switch (o.topology) {
	case KNIT_TOPOLOGY_AUTO:
		out->topology = out->workers >= 2 && out->workers <= kMaxStealConsumers &&
						o.balancer == KNIT_BALANCE_DEFAULT &&
						o.inline_lane == KNIT_INLINE_OFF
					? (uint32_t)KNIT_TOPOLOGY_STEAL
					: (uint32_t)KNIT_TOPOLOGY_LANES;
		break;
	case KNIT_TOPOLOGY_LANES:
		out->topology = KNIT_TOPOLOGY_LANES;
		break;
	case KNIT_TOPOLOGY_STEAL:
		if (o.balancer != KNIT_BALANCE_DEFAULT)
			return error_set(-KNIT_EINVAL,
					 "the steal topology takes no balancer (it is %u)",
					 o.balancer);
		if (o.inline_lane != KNIT_INLINE_OFF)
			return error_set(-KNIT_EINVAL,
					 "the steal topology takes no inline_lane (it is %u)",
					 o.inline_lane);
		if (out->workers > kMaxStealConsumers)
			return error_set(-KNIT_EINVAL,
					 "the steal topology takes at most %u workers (not %u)",
					 (unsigned)kMaxStealConsumers, out->workers);
		out->topology = KNIT_TOPOLOGY_STEAL;
		break;
	default:
		return error_set(-KNIT_EINVAL, "topology %u is not a knit_topology", o.topology);
	}
	// steal_region_lanes: a power of two (else -KNIT_EINVAL, whatever the
	// topology), clamped into [1, widest with 32/g >= workers + 1] (one
	// spare region for a delayed claimant, steal.h); 0 = the widest. Ignored by the lanes
	// topology.
	if (o.steal_region_lanes != 0 && (o.steal_region_lanes & (o.steal_region_lanes - 1)) != 0)
		return error_set(-KNIT_EINVAL, "steal_region_lanes %u is not a power of two",
				 o.steal_region_lanes);
	out->steal_g = 0;
	if (out->topology == KNIT_TOPOLOGY_STEAL &&
	    steal_resolve_region_lanes(out->workers, o.steal_region_lanes, &out->steal_g) != 0)
		return error_set(-KNIT_EINVAL, "steal_region_lanes %u does not fit %u workers",
				 o.steal_region_lanes, out->workers);

	out->inline_batch = o.inline_batch == 0 ? 1 : o.inline_batch;

	if (o.stall_free_loops == KNIT_ZERO)
		out->stall_free_loops = 0;
	else if (o.stall_free_loops == 0)
		out->stall_free_loops = out->doorbell ? 1 : 128;
	else
		out->stall_free_loops = o.stall_free_loops;

	if (o.max_backoff_ms == KNIT_ZERO)
		out->max_backoff_ms = 0;
	else
		out->max_backoff_ms = o.max_backoff_ms == 0 ? 10 : o.max_backoff_ms;

	// The inline lane is not counted: it runs on the host and never spins.
	if (o.spin_us == KNIT_ZERO)
		out->spin_us = 0;
	else if (o.spin_us == 0)
		out->spin_us = kSpinDefaultUs;
	else if (o.spin_us > kSpinMaxUs)
		return error_set(-KNIT_EINVAL, "spin_us %u is more than one second (%u)", o.spin_us,
				 kSpinMaxUs);
	else
		out->spin_us = o.spin_us;

	if (o.park_ms == KNIT_ZERO)
		return error_set(-KNIT_EINVAL,
				 "park_ms is KNIT_ZERO (0 is the default: no watchdog)");
	// 0: no watchdog (the park handshake loses no wake: tests/model/wake.pml);
	// park_ms still sets the idle period after which the arenas are trimmed.
	out->park_ms = o.park_ms == 0 ? 1000 : o.park_ms;
	out->park_watchdog = o.park_ms != 0;

	if (o.abort_capacity == KNIT_ZERO)
		out->abort_capacity = 0;
	else if (o.abort_capacity == 0)
		out->abort_capacity = 258;
	else if (o.abort_capacity > kMaxAbortCapacity)
		return error_set(-KNIT_EINVAL, "abort_capacity %u is more than %u",
				 o.abort_capacity, (unsigned)kMaxAbortCapacity);
	else
		out->abort_capacity = o.abort_capacity;

	out->hard_timeout_ms = o.hard_timeout_ms == KNIT_ZERO ? 0 : o.hard_timeout_ms;

	if (o.max_pending == KNIT_ZERO)
		out->max_pending = 0;
	else if (o.max_pending == 0)
		out->max_pending = 65536;
	else if (o.max_pending > kMaxPendingLimit)
		return error_set(-KNIT_EINVAL, "max_pending %u is more than %u", o.max_pending,
				 (unsigned)kMaxPendingLimit);
	else
		out->max_pending = o.max_pending;

	uint64_t pmax = o.payload_max_bytes == 0 ? kPayloadMaxDefault : o.payload_max_bytes;
	if (pmax < kPayloadMaxMin || pmax > kPayloadMaxMax)
		return error_set(-KNIT_EINVAL, "payload_max_bytes %llu is outside %llu..%llu",
				 (unsigned long long)pmax, (unsigned long long)kPayloadMaxMin,
				 (unsigned long long)kPayloadMaxMax);
	if (o.payload_initial_bytes > pmax)
		return error_set(-KNIT_EINVAL,
				 "payload_initial_bytes %llu is more than payload_max_bytes %llu",
				 (unsigned long long)o.payload_initial_bytes,
				 (unsigned long long)pmax);
	uint64_t per_call = o.max_payload_bytes == 0 ? pmax / 8 : o.max_payload_bytes;
	if (per_call > pmax / 8)
		return error_set(-KNIT_EINVAL,
				 "max_payload_bytes %llu is more than payload_max_bytes / 8 (%llu)",
				 (unsigned long long)per_call, (unsigned long long)(pmax / 8));
	out->payload_max_bytes = pmax;
	out->payload_initial_bytes = o.payload_initial_bytes;
	out->max_payload_bytes = per_call;

	// Placement. Whether each CPU is one the process may use is the
	// kernel's call, made when the workers start (src/pool.cpp).
	if ((o.cpu_flags & ~(uint32_t)KNIT_CPU_ONE_PER_WORKER) != 0)
		return error_set(-KNIT_EINVAL, "cpu_flags 0x%x has unknown bits", o.cpu_flags);
	if (o.reserved1 != 0)
		return error_set(-KNIT_EINVAL, "reserved1 is %u, not 0", o.reserved1);
	uint64_t any = 0;
	for (uint32_t i = 0; i < KNIT_CPU_MASK_WORDS; i++) {
		out->cpu_mask[i] = o.cpu_mask[i];
		any |= o.cpu_mask[i];
	}
	if (any == 0 && o.cpu_flags != 0) // one CPU per worker out of no CPU at all
		return error_set(-KNIT_EINVAL,
				 "cpu_flags KNIT_CPU_ONE_PER_WORKER with an empty cpu_mask");
	out->place = any != 0;
	out->one_per_worker = (o.cpu_flags & KNIT_CPU_ONE_PER_WORKER) != 0;

	// Completion infos (src/info.h).
	if ((o.info_flags & ~(uint32_t)(KNIT_POOL_INFO_TIMING | KNIT_POOL_INFO_CPU)) != 0)
		return error_set(-KNIT_EINVAL, "info_flags 0x%x has unknown bits", o.info_flags);
	out->cpu_time = (o.info_flags & KNIT_POOL_INFO_CPU) != 0;
	out->timing = out->cpu_time || (o.info_flags & KNIT_POOL_INFO_TIMING) != 0;
	if (o.info_records > kInfoRecordsMax)
		return error_set(-KNIT_EINVAL, "info_records %u is more than %u", o.info_records,
				 kInfoRecordsMax);
	out->info_records = o.info_records != 0 ? o.info_records : out->timing ? 1024 : 64;
	return 0;
}

} // namespace knit::detail
