#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh RESULTS SUITE NAME -- COMMAND...   run one test, record its result
# tests/run.sh RESULTS --clear SUITE              forget SUITE's earlier results
#
# Each test is one process with a time limit (KNIT_TEST_TIMEOUT, default 600 s).
# Exit 0 = pass, 77 = skipped (the reason is the last line the test printed
# that starts with "SKIP" or, failing that, its last line), anything else =
# fail. The output is kept in RESULTS/SUITE.NAME.log; one status line is
# printed as the test ends.
set -u
res=$1; shift
mkdir -p "$res"
if [ "$1" = "--clear" ]; then
	rm -f "$res/$2".*
	exit 0
fi
suite=$1 name=$2; shift 2
[ "$1" = "--" ] && shift
log="$res/$suite.$name.log"
limit=${KNIT_TEST_TIMEOUT:-600}
start=$(date +%s.%N)
timeout -k 10 "$limit" "$@" >"$log" 2>&1 </dev/null
rc=$?
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ $rc -eq 0 ]; then
	status=pass
elif [ $rc -eq 77 ]; then
	status=skip
	reason=$(grep -E '^SKIP' "$log" | tail -n 1)
	[ -n "$reason" ] || reason=$(tail -n 1 "$log")
	echo "$reason" >"$res/$suite.$name.reason"
elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	status=fail
	echo "timed out after ${limit}s" >"$res/$suite.$name.reason"
else
	status=fail
	echo "exit $rc" >"$res/$suite.$name.reason"
fi
echo "$status" >"$res/$suite.$name.status"
printf '  %-4s  %-8s %-40s %6ss\n' "$(echo $status | tr a-z A-Z)" "$suite" "$name" "$secs"
exit 0
