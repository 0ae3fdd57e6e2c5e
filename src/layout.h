// SPDX-License-Identifier: MIT
// src/layout.h - the shared-memory layout of a lock (one direction of a lane),
// of a lane block (signals + request lock + return lock + both arenas) and of
// a steal control block. Pure constants and offset arithmetic: nothing in
// shared memory is a pointer, every structure is addressed by a byte offset
// from the base of its region, so two processes that map the same memfd at
// different addresses interoperate. Both sides compute the same offsets from
// the same configuration (arena capacities agreed out of band, e.g. in the
// pool's boot record); no offset is ever read back from shared memory.
//
// Every word that two parties write or poll sits alone in a 128-byte block
// (KNIT_SHARED_BLOCK): x86 prefetches line pairs and some arm64 cores have
// 128-byte lines, so 64-byte padding would still false-share.
//
// ---- LOCK (one direction: one producer, one consumer) ------------------------
//
//  offset  size   name         writer                  reader / pairs with
//  ------  -----  -----------  ----------------------  ---------------------------------------
//       0    128  A            producer (release st.)  consumer acquire load in pending()
//     128    128  B            consumer (release st.)  producer acquire load in refresh_shadow()
//     256    128  PA           arena producer           consumer acquire load (live-slot check)
//     384    128  PB           any consumer (atomic     arena producer acquire load before
//                              XOR, release) + prod.    reusing a range (arena.h)
//                              rollback
//     512    256  arena table  arena producer (plain,   consumer, after acquire of A
//                              ordered by A release)    ({u32 offset, u32 size} x 32)
//     768  20480  slots[32]    producer (plain,         consumer, after acquire of A; slot i
//                              ordered by A release)    is rewritten only after the producer
//                                                       saw B_i == A_i (acquire of B)
//   21248         end of the fixed part (kLockFixedBytes)
//
//  Only the first word of each 128-byte block of A/B/PA/PB is used; the rest is
//  padding that nobody writes, except word 1 of A's block in a steal submit
//  lock: the producer's ring cursor (kLockOffRing, written with A).
//
//  SLOT i (stride 640 = 5 x 128, so every slot starts on a 128-byte block):
//    +0    64  task line (TaskLine below): FrameHead + value words
//    +64  512  inline payload area (bytes/string/error message <= 512 bytes;
//              strings and error messages carry a NUL after len, so <= 511)
//    +576  64  side words (kSlotOffSide): the producer's own, written with
//              the frame before A (a response's timing, src/info.h), or not
//              at all; lock2 neither writes nor checks them. They also keep
//              slot i+1's task line off the block of slot i's inline tail.
//  The producer writes only the slot it publishes, and only between seeing the
//  lane free and publishing it. No control word of another party lives in a
//  slot: ACK/WANT/LIVE and the doorbell have blocks of their own, so a
//  producer's slot writes never share a cache line with another party's word.
//
//  ARENA DATA: a separate range (offset + capacity, 4096-aligned here so the
//  arena can be committed lazily page by page; allocations inside are 64-byte
//  granules). Offsets in the arena table and task lines are relative to the
//  arena data base and are u32, so capacity <= kArenaMaxCapacity.
//
// ---- LANE BLOCK (one worker: both directions + its signal words) -------------
//
//  offset  size   name              writer               reader
//  ------  -----  ----------------  -------------------  ---------------------------
//       0    128  wake sequence     waker (add, then     worker futex-waits on it
//                                   FUTEX_WAKE)
//     128    128  parked flag       worker               waker (Dekker: seq_cst fence)
//     256    128  stop word         host: REQUESTED,     both (RUNNING=0 / REQUESTED=1 /
//                                   RETIRE; worker:       ACKNOWLEDGED=2 / RETIRE=3)
//                                   ACKNOWLEDGED
//     384    128  doorbell word     host (armed flag)    worker after publishing a result
//     512    128  trap record       worker (its SIGSYS   host, once the worker died of
//                                   handler, once)       SIGSYS (src/sandbox.h); the host
//                                                        zeroes it at each death
//     640    384  spare 3 x 128     reserved, zero       -
//    1024  21248  request lock      host produces        worker consumes
//   22272  21248  return lock       worker produces      host consumes
//   43520         end of the fixed part (kLaneFixedBytes)
//   45056    req  request arena     (lane_req_arena_offset)
//     ...    ret  return arena      (lane_ret_arena_offset(req_cap))
//                 total lane_block_bytes(req_cap, ret_cap), 4096-aligned
//  Zero-filled memory is a valid initial lane block: A == B == PA == PB == 0
//  (all lanes free), stop = RUNNING, not parked, doorbell disarmed.
//
// ---- STEAL CONTROL BLOCK (steal topology: at the start of the steal area) ----
//
//  One host page, then one page per consumer (kStealPageBytes each, c < 31).
//  A process pool backs consumer c's page with a memfd of its own that only
//  the host and worker c map writable; its peers map it read-only, and the
//  host page is part of the pool's shared (read-only) memory (src/proc.h,
//  "isolation"): every word below has exactly one writer process.
//
//  offset           size  name       writer                reader
//  ---------------  ----  ---------  --------------------  ---------------------------------
//                0   128  DEAD       host (atomic OR;      every consumer (zero = alive, so
//                                     AND: a revival)       zero-filled memory is safe)
//              128   128  SUBMIT PB  the host only: the     consumers' arena_check (read);
//                                    submit arena's        a consumer never frees a submit
//                                    "freed" toggles       allocation: the producer does, once
//                                                          the lane is retired (lock2.h)
//  page(c) =
//  4096 * (1 + c)
//  page(c) +   0   128  ACK[c]     consumer c            producer (XOR of all ACK = the B of
//                                                        stealing), peers
//  page(c) +   4          CLAIM[c] consumer c (with      the host, once c is dead (steal.h,
//                                   ACK[c]: one u64)      "Dead consumers"); nobody else
//  page(c) + 128   128  WANT[c]    consumer c            peers (Dekker: seq_cst)
//  page(c) + 256   128  WAKE[c]    the host (add, then   worker c futex-waits on it
//                                   FUTEX_WAKE); thread   (steal pools: its lane's wake seq)
//                                   pools: peers too
//  page(c) + 384   128  PARKED[c]  worker c; the host's  wakers (Dekker, wake.h)
//                                   CAS (thread pools:
//                                   peers' too)
//  page(c) + 512   128  PEERW[c]   thread pools only:    the host's stats (u64, relaxed add)
//                                   peers that woke c
//                                   (steal_wake_one)
//       131072        end (kStealControlBytes); the submit lock starts at kStealLockOff
//  A worker process never writes a peer's page (it is not mapped writable
//  there) and so never wakes a peer: the host's wake at each publish
//  (steal_flush, src/dispatch.cpp) and each worker's re-check before it
//  parks hand out the work.
#ifndef KNIT_SRC_LAYOUT_H
#define KNIT_SRC_LAYOUT_H

#include "src/common.h"

#include "src/arena.h"

namespace knit::detail {

// ---- basic geometry ------------------------------------------------------------
inline constexpr uint32_t kLanes = 32;                // lanes per lock (bits of A and B)
inline constexpr uint32_t kBlock = KNIT_SHARED_BLOCK; // 128: one polled word per block
inline constexpr uint32_t kArenaAlign = 4096;         // arena data ranges start on a page
// Arena constants come from src/arena.h: kArenaSlots (32), kArenaGranule (64),
// kArenaTableBytes (256), kArenaMaxCapacity (2^32 - 64: offsets are u32).

// ---- lock sector ---------------------------------------------------------------
inline constexpr uint32_t kLockOffA = 0 * kBlock;
// Steal submit lock only: 31 - the producer's ring cursor (the next lane it
// tries, walking down; zero-filled memory = lane 31), stored before each
// release store of A, in A's block.
inline constexpr uint32_t kLockOffRing = kLockOffA + 4;
inline constexpr uint32_t kLockOffB = 1 * kBlock;
inline constexpr uint32_t kLockOffPA = 2 * kBlock;
inline constexpr uint32_t kLockOffPB = 3 * kBlock;
inline constexpr uint32_t kLockOffTable = 4 * kBlock; // 32 x {u32 offset, u32 size}
inline constexpr uint32_t kLockOffSlots = kLockOffTable + 2 * kBlock;

// ---- slots ---------------------------------------------------------------------
inline constexpr uint32_t kTaskLineBytes = 64;
inline constexpr uint32_t kInlineBytes = 512; // inline payload area per slot
inline constexpr uint32_t kSlotOffTask = 0;
inline constexpr uint32_t kSlotOffInline = kTaskLineBytes;
inline constexpr uint32_t kSlotOffSide = kSlotOffInline + kInlineBytes;
inline constexpr uint32_t kSideBytes = 64;
inline constexpr uint32_t kSlotStride = 5 * kBlock; // 64 + 512 + 64 side words
static_assert(kSlotOffSide + kSideBytes == kSlotStride, "the side words end the slot");
inline constexpr uint32_t kLockFixedBytes = kLockOffSlots + kLanes * kSlotStride;

// Where a value's bytes live (TaskLine::where).
inline constexpr uint32_t kWhereNone = 0;   // scalar or empty: no payload bytes
inline constexpr uint32_t kWhereInline = 1; // slot's inline area, at offset 0
inline constexpr uint32_t kWhereArena = 2;  // arena: arena_slot, arena_off

// The 64-byte task line at the start of every slot: plain little-endian words
// written by the producer before its release store of A and read by the
// consumer (as one private snapshot) after its acquire load of A. Every field
// is validated by the consumer before use (lock2.cpp / codec.cpp).
struct TaskLine {
	uint32_t task;       //  0 task index (request) / echoed (response)
	uint32_t flags;      //  4 meta and flags, checked against a mask
	uint32_t ticket;     //  8 ticket-table index of the issuer
	uint32_t generation; // 12 ticket generation (ABA guard), any value
	int32_t status;      // 16 0 or a negative KNIT_E* code
	uint32_t vtype;      // 20 knit_value_type_t
	int32_t vcode;       // 24 KNIT_VALUE_ERROR code, else 0
	uint32_t vlen;       // 28 payload bytes (excluding the NUL of strings)
	uint64_t scalar;     // 32 BOOL/I64: the int64; F64: the IEEE-754 bits
	uint64_t deadline;   // 40 CLOCK_MONOTONIC ns, 0 = none
	uint32_t where;      // 48 kWhere*
	uint32_t arena_slot; // 52 arena allocator slot (kWhereArena)
	uint32_t arena_off;  // 56 byte offset in the arena data (kWhereArena)
	uint32_t reserved;   // 60 written 0, ignored on read
};

// ---- lock offsets --------------------------------------------------------------
constexpr uint64_t lock_slot_offset(uint32_t lane)
{
	return kLockOffSlots + (uint64_t)lane * kSlotStride;
}
constexpr uint64_t lock_task_offset(uint32_t lane) { return lock_slot_offset(lane) + kSlotOffTask; }
constexpr uint64_t lock_inline_offset(uint32_t lane)
{
	return lock_slot_offset(lane) + kSlotOffInline;
}
// A standalone lock with its own arena right after it: [lock fixed][pad][arena].
constexpr uint64_t lock_arena_offset() { return align_up(kLockFixedBytes, kArenaAlign); }
constexpr uint64_t lock_region_bytes(uint64_t arena_capacity)
{
	return align_up(lock_arena_offset() + arena_capacity, kArenaAlign);
}
// Is this arena capacity usable (non-zero, granule multiple, u32 offsets)?
constexpr bool arena_capacity_ok(uint64_t cap)
{
	return cap >= kArenaGranule && cap <= kArenaMaxCapacity && cap % kArenaGranule == 0;
}

// ---- lane block ----------------------------------------------------------------
inline constexpr uint32_t kLaneOffWake = 0 * kBlock;     // u32 wake sequence
inline constexpr uint32_t kLaneOffParked = 1 * kBlock;   // u32 1 = parked
inline constexpr uint32_t kLaneOffStop = 2 * kBlock;     // u32 kStop*
inline constexpr uint32_t kLaneOffDoorbell = 3 * kBlock; // u32 armed flag
// A sandboxed worker's last words (src/sandbox.h, "the trap record"):
// u32 mark (kTrapMark, stored last), s32 syscall number, u32 AUDIT_ARCH.
inline constexpr uint32_t kLaneOffTrap = 4 * kBlock;
inline constexpr uint32_t kTrapOffNr = 4;
inline constexpr uint32_t kTrapOffArch = 8;
inline constexpr uint32_t kTrapMark = 0x53595331u;    // "SYS1"
inline constexpr uint32_t kLaneOffSpare = 5 * kBlock; // kLaneSpareBlocks x 128, zero
inline constexpr uint32_t kLaneSpareBlocks = 3;
inline constexpr uint32_t kLaneSignalBytes = kLaneOffSpare + kLaneSpareBlocks * kBlock;
inline constexpr uint32_t kLaneOffReqLock = kLaneSignalBytes;
inline constexpr uint32_t kLaneOffRetLock = kLaneOffReqLock + kLockFixedBytes;
inline constexpr uint32_t kLaneFixedBytes = kLaneOffRetLock + kLockFixedBytes;

inline constexpr uint32_t kStopRunning = 0;
inline constexpr uint32_t kStopRequested = 1;
inline constexpr uint32_t kStopAcknowledged = 2;
// A recycled worker process (src/lane.h, "Recycling"): take nothing new,
// ship the results held, then acknowledge. Only the host stores it (RUNNING
// -> RETIRE); knit_stop turns it into REQUESTED.
inline constexpr uint32_t kStopRetire = 3;

constexpr uint64_t lane_req_arena_offset() { return align_up(kLaneFixedBytes, kArenaAlign); }
constexpr uint64_t lane_ret_arena_offset(uint64_t req_cap)
{
	return align_up(lane_req_arena_offset() + req_cap, kArenaAlign);
}
constexpr uint64_t lane_block_bytes(uint64_t req_cap, uint64_t ret_cap)
{
	return align_up(lane_ret_arena_offset(req_cap) + ret_cap, kArenaAlign);
}

// ---- steal control block -------------------------------------------------------
inline constexpr uint32_t kMaxStealConsumers = 31;
inline constexpr uint32_t kStealPageBytes = 4096; // one consumer's page (and the host's)
inline constexpr uint32_t kStealOffDead = 0;      // u32 DEAD mask, bit c = consumer c gone
// The submit arena's PB word (see the table).
inline constexpr uint32_t kStealOffSubmitPB = kBlock;
constexpr uint32_t steal_page_offset(uint32_t c) { return kStealPageBytes * (1 + c); }
constexpr uint32_t steal_ack_offset(uint32_t c) { return steal_page_offset(c); }
// Beside ACK[c], in the same naturally aligned u64 (ACK the low half on
// little-endian): the lanes c has taken and not yet acknowledged. Stored
// with ACK in one 64-bit store, so ACK and CLAIM never disagree.
constexpr uint32_t steal_claim_offset(uint32_t c) { return steal_ack_offset(c) + 4; }
constexpr uint32_t steal_want_offset(uint32_t c) { return steal_page_offset(c) + kBlock; }
// Consumer c's signal words in a steal pool: its wake sequence, its parked
// word, and the count of wakes peers sent it (thread pools).
constexpr uint32_t steal_wake_offset(uint32_t c) { return steal_page_offset(c) + 2 * kBlock; }
constexpr uint32_t steal_parked_offset(uint32_t c) { return steal_page_offset(c) + 3 * kBlock; }
constexpr uint32_t steal_peerw_offset(uint32_t c) { return steal_page_offset(c) + 4 * kBlock; }
inline constexpr uint32_t kStealControlBytes = steal_page_offset(kMaxStealConsumers);
inline constexpr uint32_t kStealSignalEnd = kStealControlBytes;

// ---- access --------------------------------------------------------------------
// The u32 word at byte offset off of a region. The offset is a layout constant
// (never read from shared memory), so no bounds check is needed here.
inline uint32_t *word_at(uint8_t *base, uint64_t off)
{
	return reinterpret_cast<uint32_t *>(base + off);
}

// ---- the fixed layout, pinned ----------------------------------------------------
static_assert(sizeof(TaskLine) == kTaskLineBytes, "task line is one 64-byte line");
static_assert(offsetof(TaskLine, scalar) % 8 == 0 && offsetof(TaskLine, deadline) % 8 == 0);
static_assert(offsetof(TaskLine, scalar) == 32 && offsetof(TaskLine, deadline) == 40 &&
	      offsetof(TaskLine, where) == 48 && offsetof(TaskLine, reserved) == 60);
static_assert(kBlock == 128, "layout table assumes 128-byte blocks");
static_assert(kLockOffTable == 512 && kLockOffSlots == 768 && kLockFixedBytes == 21248);
static_assert(kArenaTableBytes <= kLockOffSlots - kLockOffTable);
static_assert(kSlotOffInline + kInlineBytes <= kSlotStride);
static_assert(kSlotStride % kBlock == 0 && kLockOffSlots % kBlock == 0);
static_assert(kLockFixedBytes % kBlock == 0);
static_assert(kLaneOffReqLock == 1024 && kLaneOffRetLock == 22272 && kLaneFixedBytes == 43520);
static_assert(lane_req_arena_offset() == 45056);
static_assert(kStealControlBytes == 131072 && steal_ack_offset(0) == 4096 &&
	      steal_want_offset(0) == 4224 && steal_wake_offset(0) == 4352 &&
	      steal_parked_offset(0) == 4480 && steal_peerw_offset(0) == 4608);
static_assert(steal_peerw_offset(0) + kBlock <= steal_page_offset(1),
	      "a consumer's words fit its page");
static_assert(kStealPageBytes == kArenaAlign, "a consumer page is one 4 KiB page");
static_assert(lock_arena_offset() % kArenaAlign == 0);
static_assert(steal_ack_offset(0) % 8 == 0 && kBlock % 8 == 0, "ACK/CLAIM is one aligned u64");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ACK is the low half of ACK/CLAIM");
static_assert(kArenaSlots == kLanes, "one arena slot per lane at most in flight");

} // namespace knit::detail

#endif
