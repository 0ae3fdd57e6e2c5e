#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/summary.sh RESULTS [MAKE_STATUS]
# Print what failed (with the end of its log) and what was skipped (with why),
# then the one summary line "N passed, N failed, N skipped". A non-zero
# MAKE_STATUS means some suite did not even build: that counts as a failure.
# Exits 1 if anything failed.
set -u
res=$1 mk=${2:-0}
pass=0 fail=0 skip=0
shopt -s nullglob
for f in "$res"/*.status; do
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
