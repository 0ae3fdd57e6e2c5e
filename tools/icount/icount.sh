#!/bin/sh
# SPDX-License-Identifier: MIT
# [WORKERS=N] [TOPOLOGY=auto|steal|lanes] tools/icount/icount.sh LIBDIR
#     [BATCHES] [BATCH_SIZE] [one|many|timed|free]: the host's
# instructions per call (callgrind, inclusive) in knit_enqueue (with "many":
# knit_enqueue_many, one per batch), knit_complete and
# knit_completion_release, for batches of no-op calls on a pool of WORKERS
# workers (default 1) and topology TOPOLOGY (default auto)
# ("timed": as "one", on a pool with KNIT_POOL_INFO_TIMING; "free": batches
# of up to 1000 with no wait before the reap, as knit-bench's batch cases:
# its instructions then depend on valgrind's schedule), against the
# libknitting in LIBDIR (a build/lib). Stable across the machine's fast and
# slow modes, unlike knit-bench: use it to compare two builds' per-call work
# (e.g. a base build's lib and this tree's build/lib). Then the same run
# outside valgrind prints the pool's counts per call (backlog passes, wakes,
# parks, spins, steal claims; knit_pool_stats(3)) and its throughput.
set -eu
lib=$1 nb=${2:-2000} bs=${3:-32} mode=${4:-one}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 -g -I"$here/../../include" "$here/icount.c" -o "$tmp/icount" -L"$lib" -lknitting
LD_LIBRARY_PATH=$lib valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$tmp/icount" "$nb" "$bs" "$mode" \
	>/dev/null 2>"$tmp/err" || { tail "$tmp/err" >&2; exit 1; }
# Inclusive cost per entry from the call edges of the driver's main() (the
# "=> file:function (Nx)" lines): the per-function totals are split by the
# source file of the inlined code, the edges are not.
callgrind_annotate --inclusive=yes --auto=yes --threshold=100 "$tmp/cg.out" | sed 's/,//g' | awk -v n=$((nb * bs)) -v m="$mode" '
	/=> .*:knit_enqueue(_many)? \(/ { e += $1 } /=> .*:knit_complete \(/ { c += $1 } /=> .*:knit_completion_release \(/ { r += $1 }
	END { if (e == 0 || c == 0 || r == 0) {
		      print "icount: no call edges for knit_enqueue" (m == "many" ? "_many" : "") ", knit_complete and knit_completion_release in the profile" > "/dev/stderr"
		      exit 1
	      }
	      printf "per call: knit_enqueue" (m == "many" ? "_many" : "") " %.1f  knit_complete %.1f  knit_completion_release %.1f  (completion side %.1f, all three %.1f)\n",
	      e / n, c / n, r / n, (c + r) / n, (e + c + r) / n }'
LD_LIBRARY_PATH=$lib "$tmp/icount" "$nb" "$bs" "$mode" | tail -n 1
