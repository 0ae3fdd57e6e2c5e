#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/summary.sh RESULTS [MAKE_STATUS [SUITE...]]
# Print what failed (with the end of its log) and what was skipped (with why),
# then the one summary line "N passed, N failed, N skipped". A non-zero
# MAKE_STATUS means some suite did not even build: that counts as a failure.
# With SUITEs (e.g. "unit", "thread-stress"), only their results are counted:
# `make check-ffi` summarises ffi alone, not what earlier suites left in
# RESULTS; without, everything in RESULTS is (`make check`).
# No result at all (an empty or missing RESULTS, or a suite that ran nothing)
# is a failure: a check that checked nothing must not read as a pass.
# Exits 1 if anything failed.
set -u
if [ $# -lt 1 ]; then
	echo "usage: $0 RESULTS [MAKE_STATUS [SUITE...]]" >&2
	exit 1
fi
res=$1 mk=${2:-0}
shift $(($# >= 2 ? 2 : 1))
pass=0 fail=0 skip=0
shopt -s nullglob
files=()
if [ $# -eq 0 ]; then
	files=("$res"/*.status)
else
	for s in "$@"; do
		found=("$res/$s".*.status)
		if [ ${#found[@]} -eq 0 ]; then
			echo "FAILED  $s: the suite recorded no result (no test ran)"
			fail=$((fail + 1))
		fi
		files+=("${found[@]}")
	done
fi
for f in "${files[@]}"; do
	t=$(basename "$f" .status)
	case $(cat "$f") in
	pass) pass=$((pass + 1)) ;;
	skip) skip=$((skip + 1)); echo "SKIPPED $t: $(cat "$res/$t.reason")" ;;
	*)
		fail=$((fail + 1))
		echo "FAILED  $t ($(cat "$res/$t.reason" 2>/dev/null)); last lines of $res/$t.log:"
		tail -n 15 "$res/$t.log" | sed 's/^/    | /'
		;;
	esac
done
if [ $# -eq 0 ] && [ ${#files[@]} -eq 0 ]; then
	echo "FAILED  no test result in $res (nothing ran)"
	fail=$((fail + 1))
fi
if [ "$mk" != 0 ]; then
	echo "FAILED  build: a suite did not build (make exited $mk; see the errors above)"
	fail=$((fail + 1))
fi
if [ $skip -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ $fail -eq 0 ]
