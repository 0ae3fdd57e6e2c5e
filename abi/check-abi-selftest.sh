#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# abi/check-abi-selftest.sh BASELINE OBJDIR
# Shows that abi/check-abi.sh can fail. For each case it edits a scratch
# copy of the public header (or the map, or an internal header), recompiles
# the translation units that define exported functions against it, links
# them with the build's other objects (OBJDIR, e.g. build/obj/src) into a
# scratch library, and runs the check with the committed baseline:
#   completion_grows      a member appended to knit_completion_t   -> must fail
#   options_member_moved  a member inserted inside the options     -> must fail
#   symbol_removed        knit_cancel left out of the map          -> must fail
#   symbol_added          a new exported function                  -> must fail
#   options_grow_at_end   a member appended to the options (sized) -> must pass
#   internal_change       a member added to the private Pool       -> must pass
# The pass cases prove the failures come from the change, not from the
# scratch build. Fails when an input is missing or a case misbehaves.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BASELINE OBJDIR" >&2; exit 1; }
base=$1 objdir=$2
cd "$(dirname "$0")/.."
[ -s "$base" ] || { echo "FAIL: no baseline $base"; exit 1; }
# The scratch libraries carry the baseline's SONAME (a changed SONAME is a
# finding of its own, which would hide the ones the cases are about).
soname=$(sed -n "s/.* soname='\([^']*\)'.*/\1/p" "$base" | head -n 1)
[ -n "$soname" ] || { echo "FAIL: no soname in $base"; exit 1; }
[ -s "$objdir/api.o" ] || { echo "FAIL: no objects in $objdir (build the library first)"; exit 1; }
CXX=${CXX:-g++} CC=${CC:-gcc}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The translation units that define exported functions; every other object
# is taken from the build as is.
defs=$(grep -l 'extern "C" KNIT_API' src/*.cpp)
[ -n "$defs" ] || { echo "FAIL: no src/*.cpp defines an exported function"; exit 1; }

# build NAME: compile $defs against $scratch/NAME/{include,src overrides} and
# link $scratch/NAME/$soname with the map $scratch/NAME/map.
build() {
	local d=$scratch/$1 objs=() keep f
	for f in $defs; do
		"$CXX" -I"$d/over" -I"$d/include" -I. -Iinclude -D_GNU_SOURCE -std=c++20 -O0 -g \
			-fno-exceptions -fno-rtti -fno-threadsafe-statics -fvisibility=hidden -fPIC \
			-c "$f" -o "$d/$(basename "$f" .cpp).o" || return 1
		objs+=("$d/$(basename "$f" .cpp).o")
	done
	[ -f "$d/extra.cpp" ] && { "$CXX" -I"$d/include" -std=c++20 -O0 -g -fPIC -c "$d/extra.cpp" -o "$d/extra.o" || return 1; objs+=("$d/extra.o"); }
	# The build's object of every other current source (objdir may hold
	# objects of sources that no longer exist: leave those out).
	for f in src/*.cpp; do
		echo "$defs" | grep -qxF "$f" && continue
		keep="$objdir/$(basename "$f" .cpp).o"
		[ -s "$keep" ] || { echo "FAIL: no $keep (build the library first)"; return 1; }
		objs+=("$keep")
	done
	"$CC" -shared -Wl,-soname,"$soname" -Wl,--version-script="$d/map" -Wl,-z,defs \
		-o "$d/$soname" "${objs[@]}" -lurcu-common -lpthread
}

# prepare NAME: a scratch tree with copies of the header and the map.
prepare() {
	mkdir -p "$scratch/$1/include" "$scratch/$1/over/src"
	cp include/knitting.h "$scratch/$1/include/"
	cp abi/libknitting.map "$scratch/$1/map"
}

# edit FILE PYTHON-EXPR-ON-s: apply a replacement that must change the file.
edit() {
	python3 - "$1" "$2" <<'PY'
import sys
path, old_new = sys.argv[1], sys.argv[2]
old, new = old_new.split('\x1f')
s = open(path).read()
if old not in s:
    sys.exit("FAIL: %r not found in %s" % (old, path))
open(path, 'w').write(s.replace(old, new, 1))
PY
}
US=$'\x1f'

fail=0
# expect NAME pass|fail
expect() {
	local out rc=0
	out=$(abi/check-abi.sh "$base" "$scratch/$1/$soname" "$scratch/$1/include" abi/knitting.abignore 2>&1) || rc=$?
	if [ "$2" = fail ] && [ $rc -ne 0 ]; then
		echo "ok: $1 rejected: $(echo "$out" | grep -m1 -E 'changed|FAIL: exported|Removed|[0-9]+ Removed' | sed 's/^ *//')"
	elif [ "$2" = pass ] && [ $rc -eq 0 ]; then
		# Accepted only because the change is allowed: without the
		# suppressions and the private-type filter abidiff must see it.
		if abidiff "$base" "$scratch/$1/$soname" >/dev/null 2>&1; then
			echo "FAIL: $1: abidiff sees no change at all (the scratch build did not take the edit)"; fail=1
		else
			echo "ok: $1 accepted (a change abidiff sees, allowed by the filters)"
		fi
	else
		echo "$out"; echo "FAIL: $1 should $2 (check exit status $rc)"; fail=1
	fi
}

prepare completion_grows
edit "$scratch/completion_grows/include/knitting.h" "
} knit_completion_t;${US}
	uint64_t added;
} knit_completion_t;"
build completion_grows && expect completion_grows fail

prepare options_member_moved
edit "$scratch/options_member_moved/include/knitting.h" "	uint32_t topology;              /* enum knit_topology */${US}	uint32_t inserted;
	uint32_t topology;              /* enum knit_topology */"
build options_member_moved && expect options_member_moved fail

prepare symbol_removed
edit "$scratch/symbol_removed/map" "	knit_cancel;
${US}"
build symbol_removed && expect symbol_removed fail

prepare symbol_added
edit "$scratch/symbol_added/map" "	knit_version;${US}	knit_version;
	knit_added_for_test;"
printf 'extern "C" __attribute__((visibility("default"))) int knit_added_for_test(void) { return 0; }\n' >"$scratch/symbol_added/extra.cpp"
build symbol_added && expect symbol_added fail

prepare options_grow_at_end
edit "$scratch/options_grow_at_end/include/knitting.h" "
} knit_pool_options_t;${US}
	uint64_t added;
} knit_pool_options_t;"
build options_grow_at_end && expect options_grow_at_end pass

prepare internal_change
cp src/runtime.h "$scratch/internal_change/over/src/runtime.h"
edit "$scratch/internal_change/over/src/runtime.h" "struct alignas(128) Pool {${US}struct alignas(128) Pool {
	uint64_t added_for_test;"
build internal_change && expect internal_change pass

[ $fail -eq 0 ] && echo "abi selftest: 4 changes rejected, 2 allowed"
exit $fail
