// SPDX-License-Identifier: MIT
// tests/stress/arena_xor.cpp - the payload arena under concurrent frees
// (PB takes every free as an atomic XOR, arena.h): one producer allocates, shrinks, rolls back and
// publishes frames through 32 lanes of a small (pressured) arena; several
// consumers claim lanes, check each frame with arena_check, verify its unique
// pattern and free its slot with the PB XOR. Run twice:
//   threads:   3 consumer threads in this process;
//   processes: 2 forked consumer processes that map the memfd again with
//              region_map_fd (at their own addresses: everything is offsets).
// Checked: no payload overwritten while live (aliasing), no toggle lost or
// doubled (PA == PB at the end, every published frame consumed once, the
// allocator restarts at offset 0), no frame rejected by arena_check.
//
// Exit 0 pass, 1 fail. KNIT_STRESS_SCALE (positive integer, default 1)
// multiplies the frame counts; sanitizer builds divide them by 8.
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "knitting.h"
#include "src/arena.h"
#include "src/region.h"

using namespace knit::detail;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define KNIT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define KNIT_TEST_SANITIZED 1
#endif
#endif

namespace {

// Region layout (byte offsets; every shared word on its own 128-byte block).
constexpr uint64_t kLanes = 0;       // 32 x u32 lane state, 128 bytes apart
constexpr uint64_t kFrames = 4096;   // 32 x Frame
constexpr uint64_t kCounters = 8192; // done, consumed, errors: 128 bytes apart
constexpr uint64_t kPA = 12288;
constexpr uint64_t kPB = 12288 + 128;
constexpr uint64_t kTable = 12288 + 256;
constexpr uint64_t kData = 16384;
constexpr uint64_t kCapacity = 128 * 1024;
constexpr uint64_t kRegionSize = kData + kCapacity;

enum : uint32_t { kEmpty = 0, kPublished = 1, kClaimed = 2 };

struct Frame {
	uint32_t slot, offset, len, seed;
};

struct View {
	uint8_t *base;
	ArenaShared arena;
	uint32_t *lane(uint32_t i) const
	{
		return reinterpret_cast<uint32_t *>(base + kLanes + 128 * i);
	}
	Frame *frame(uint32_t i) const { return reinterpret_cast<Frame *>(base + kFrames) + i; }
	uint32_t *done() const { return reinterpret_cast<uint32_t *>(base + kCounters); }
	uint64_t *consumed() const { return reinterpret_cast<uint64_t *>(base + kCounters + 128); }
	uint64_t *errors() const { return reinterpret_cast<uint64_t *>(base + kCounters + 256); }
};

View view_of(uint8_t *base)
{
	View v;
	v.base = base;
	v.arena.pa = reinterpret_cast<uint32_t *>(base + kPA);
	v.arena.pb = reinterpret_cast<uint32_t *>(base + kPB);
	v.arena.table = reinterpret_cast<uint32_t *>(base + kTable);
	v.arena.base = base + kData;
	v.arena.capacity = kCapacity;
	return v;
}

uint32_t ld_acq(uint32_t *p)
{
	return std::atomic_ref<uint32_t>(*p).load(std::memory_order_acquire);
}
void st_rel(uint32_t *p, uint32_t v)
{
	std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release);
}

void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (uint32_t i = 0; i + 4 <= len; i += 4) {
		x = x * 1664525u + 1013904223u;
		memcpy(p + i, &x, 4);
	}
	for (uint32_t i = len & ~3u; i < len; i++) {
		p[i] = (uint8_t)seed;
	}
}

bool verify(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint8_t tmp[8192];
	if (len > sizeof tmp) {
		return false;
	}
	fill(tmp, len, seed);
	return memcmp(p, tmp, len) == 0;
}

// One consumer: claim published lanes (CAS), check, verify, free the arena
// slot (the XOR under test), then release the lane. Returns its error count.
uint64_t consumer_loop(View v, uint32_t first_lane)
{
	uint64_t errors = 0, idle = 0;
	for (;;) {
		bool any = false;
		for (uint32_t k = 0; k < 32; k++) {
			uint32_t l = (first_lane + k) % 32;
			uint32_t expect = kPublished;
			// acquire: pairs with the producer's release store of kPublished.
			if (!std::atomic_ref<uint32_t>(*v.lane(l))
				     .compare_exchange_strong(expect, kClaimed,
							      std::memory_order_acquire,
							      std::memory_order_relaxed)) {
				continue;
			}
			any = true;
			Frame f = *v.frame(l);
			if (arena_check(v.arena, f.slot, f.offset, f.len) != 0) {
				errors++;
				fprintf(stderr, "arena_check refused slot %u [%u,+%u)\n", f.slot,
					f.offset, f.len);
			} else if (!verify(v.arena.base + f.offset, f.len, f.seed)) {
				errors++;
				fprintf(stderr, "payload of seed %u overwritten (aliasing)\n",
					f.seed);
			}
			arena_free(v.arena, f.slot);
			if ((f.seed & 15) == 0) {
				sched_yield(); // only PB orders the reuse in this window
			}
			std::atomic_ref<uint64_t>(*v.consumed())
				.fetch_add(1, std::memory_order_relaxed);
			// release: pairs with the producer's acquire load of the lane.
			st_rel(v.lane(l), kEmpty);
		}
		if (any) {
			idle = 0;
			continue;
		}
		// acquire: pairs with the release store of done after the last publish.
		if (ld_acq(v.done()) != 0) {
			bool left = false;
			for (uint32_t l = 0; l < 32; l++) {
				left |= ld_acq(v.lane(l)) == kPublished;
			}
			if (!left) {
				return errors;
			}
		}
		if (++idle > 32) {
			sched_yield();
		}
	}
}

struct ProducerStats {
	uint64_t published = 0, rolled_back = 0, eagain = 0;
	bool ok = true;
};

// `alive` is polled while the producer waits, so a dead consumer process
// fails the run instead of hanging it.
template <typename Alive>
ProducerStats producer_loop(View v, uint64_t frames, uint32_t seed, Alive alive)
{
	ProducerStats st;
	ArenaProducer prod;
	prod.init(v.arena, 0);
	std::mt19937 rng(seed);
	uint32_t lane = 0;
	uint64_t waits = 0;
	for (uint64_t it = 0; it < frames && st.ok; it++) {
		uint32_t n = (rng() % 4 == 0) ? 1 + rng() % 8192 : 1 + rng() % 600;
		uint32_t slot = 0, off = 0;
		int rc;
		uint32_t spins = 0;
		while ((rc = prod.alloc(n, &slot, &off)) == -KNIT_EAGAIN) {
			st.eagain++;
			if (++spins > 16) {
				sched_yield();
			}
			if ((++waits & 0xFFFF) == 0 && !alive()) {
				st.ok = false;
				break;
			}
		}
		if (!st.ok) {
			break;
		}
		if (rc != 0 || off % 64 != 0 || (uint64_t)off + n > kCapacity) {
			fprintf(stderr, "alloc(%u) = %d offset %u\n", n, rc, off);
			st.ok = false;
			break;
		}
		uint32_t len = n;
		if (rng() % 5 == 0) {
			len = rng() % (n + 1);
			prod.shrink(slot, len);
		}
		uint32_t s = (uint32_t)it + 1;
		fill(prod.at(off), len, s);
		if (rng() % 8 == 0) {
			prod.rollback(slot); // races the consumers' XORs on PB
			st.rolled_back++;
			continue;
		}
		spins = 0;
		// acquire: pairs with the consumer's release store of kEmpty.
		while (ld_acq(v.lane(lane)) != kEmpty) {
			lane = (lane + 1) % 32;
			if (++spins > 64) {
				sched_yield();
				spins = 0;
				if ((++waits & 0xFFFF) == 0 && !alive()) {
					st.ok = false;
					break;
				}
			}
		}
		if (!st.ok) {
			break;
		}
		*v.frame(lane) = {slot, off, len, s};
		// release: pairs with the consumer's acquire CAS.
		st_rel(v.lane(lane), kPublished);
		st.published++;
		lane = (lane + 1) % 32;
	}
	// release: pairs with the consumers' acquire load of done.
	st_rel(v.done(), 1);
	if (st.ok) {
		// Wait for the consumers to drain (bounded by the run's timeout),
		// then the arena must be empty and restart at 0.
		while (std::atomic_ref<uint64_t>(*v.consumed()).load(std::memory_order_acquire) <
		       st.published) {
			sched_yield();
			if ((++waits & 0xFFFF) == 0 && !alive()) {
				st.ok = false;
				return st;
			}
		}
		if (prod.live_count() != 0 || ld_acq(v.arena.pa) != ld_acq(v.arena.pb)) {
			fprintf(stderr, "toggles lost: PA %08x PB %08x live %u\n",
				ld_acq(v.arena.pa), ld_acq(v.arena.pb), prod.live_count());
			st.ok = false;
		}
		uint32_t slot, off;
		if (prod.alloc(64, &slot, &off) != 0 || off != 0) {
			fprintf(stderr, "arena did not restart at 0\n");
			st.ok = false;
		}
	}
	return st;
}

uint64_t frames_for(uint64_t base)
{
	const char *e = getenv("KNIT_STRESS_SCALE");
	long k = e != nullptr ? atol(e) : 1;
	uint64_t n = base * (uint64_t)(k < 1 ? 1 : k);
#ifdef KNIT_TEST_SANITIZED
	n /= 8;
#endif
	return n;
}

bool run_threads(uint64_t frames)
{
	Region r;
	if (region_create(RegionKind::kAnonymous, kRegionSize, "arena-xor", &r) != 0) {
		fprintf(stderr, "region_create failed\n");
		return false;
	}
	View v = view_of(r.base);
	std::vector<std::thread> consumers;
	std::atomic<uint64_t> errors{0};
	for (uint32_t c = 0; c < 3; c++) {
		consumers.emplace_back([v, c, &errors] { errors += consumer_loop(v, c * 11); });
	}
	ProducerStats st = producer_loop(v, frames, 1234, [] { return true; });
	for (auto &t : consumers) {
		t.join();
	}
	bool ok = st.ok && errors.load() == 0 && *v.consumed() == st.published &&
		  st.published + st.rolled_back == frames;
	printf("threads:   %lu frames, %lu published, %lu rolled back, %lu EAGAIN retries, %lu "
	       "errors: %s\n",
	       (unsigned long)frames, (unsigned long)st.published, (unsigned long)st.rolled_back,
	       (unsigned long)st.eagain, (unsigned long)errors.load(), ok ? "ok" : "FAIL");
	region_destroy(&r);
	return ok;
}

bool run_processes(uint64_t frames)
{
	Region r;
	if (region_create(RegionKind::kMemfd, kRegionSize, "arena-xor", &r) != 0) {
		fprintf(stderr, "region_create(memfd) failed\n");
		return false;
	}
	const int kChildren = 2;
	pid_t pids[kChildren];
	pid_t parent = getpid();
	fflush(stdout);
	for (int c = 0; c < kChildren; c++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return false;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent) {
				_exit(1);
			}
			// A second mapping of the same memfd, at another address.
			Region mine;
			if (region_map_fd(r.fd, kRegionSize, &mine) != 0 || mine.base == r.base) {
				_exit(2);
			}
			View v = view_of(mine.base);
			uint64_t errors = consumer_loop(v, (uint32_t)c * 16);
			std::atomic_ref<uint64_t>(*v.errors())
				.fetch_add(errors, std::memory_order_relaxed);
			region_destroy(&mine);
			_exit(errors == 0 ? 0 : 3);
		}
		pids[c] = pid;
	}
	View v = view_of(r.base);
	auto alive = [&pids] {
		for (pid_t p : pids) {
			int status;
			if (waitpid(p, &status, WNOHANG) != 0) {
				fprintf(stderr, "consumer process %d ended early\n", (int)p);
				return false;
			}
		}
		return true;
	};
	ProducerStats st = producer_loop(v, frames, 4321, alive);
	bool children_ok = true;
	for (pid_t p : pids) {
		if (!st.ok) {
			kill(p, SIGKILL);
		}
		int status = 0;
		if (waitpid(p, &status, 0) != p || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			children_ok = false;
			fprintf(stderr, "consumer process %d: status %#x\n", (int)p, status);
		}
	}
	uint64_t errors = *v.errors();
	bool ok = st.ok && children_ok && errors == 0 && *v.consumed() == st.published &&
		  st.published + st.rolled_back == frames;
	printf("processes: %lu frames, %lu published, %lu rolled back, %lu EAGAIN retries, %lu "
	       "errors: %s\n",
	       (unsigned long)frames, (unsigned long)st.published, (unsigned long)st.rolled_back,
	       (unsigned long)st.eagain, (unsigned long)errors, ok ? "ok" : "FAIL");
	region_destroy(&r);
	return ok;
}

} // namespace

int main(void)
{
	bool ok = run_threads(frames_for(2000000));
	ok = run_processes(frames_for(1000000)) && ok;
	printf("%s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
