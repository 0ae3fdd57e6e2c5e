#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/seccomp-doc.sh [SECCOMP_C PAGE...] - the sandbox's seccomp policy as
# documented is the policy as built, name by name: each PAGE's sections
# between the roff comments '.\" seccomp: SET' and the next '.\" seccomp:'
# line (SET: base, files, network, processes) list exactly the syscalls
# SECCOMP_C allows there. A section's names are the lower-case first words
# of its .B and .BR lines that are no man-page reference ("abort (3)").
# SECCOMP_C's are the string literals of its SET_set[] array (base_set, ...)
# and, for base, every name its code resolves or allows one by one
# (seccomp_syscall_resolve_name("x"), allow_a0_eq(ctx, "x", ...): clone,
# clone3, kill, tgkill, rt_sigaction). The processes set also allows clone
# (any flags) and kill (any pid but the host's) in its own branch. A page
# without a section is skipped only when it has no section at all; each
# page must have the base section.
set -eu
export LC_ALL=C
src=${1:-tools/knit-worker/seccomp.c}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- man/man8/knit-worker.8 man/man3/knit_pool_create.3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# The literals of array NAME in $src.
array() {
	awk -v a="static const char *const $1[] = {" '
		index($0, a) { on = 1 }
		on { while (match($0, /"[a-z0-9_]+"/)) { print substr($0, RSTART + 1, RLENGTH - 2);
			$0 = substr($0, RSTART + RLENGTH) } }
		on && /NULL};/ { exit }' "$src"
}
array base_set > "$tmp/code.base"
sed -n 's/.*\(seccomp_syscall_resolve_name\|allow_a0_eq\)([^"]*"\([a-z0-9_]*\)".*/\2/p' "$src" >> "$tmp/code.base"
array files_set > "$tmp/code.files"
array network_set > "$tmp/code.network"
{ array processes_set; echo clone; echo kill; } > "$tmp/code.processes"
for s in base files network processes; do
	sort -u "$tmp/code.$s" -o "$tmp/code.$s"
	[ -s "$tmp/code.$s" ] || { echo "seccomp-doc: no names for $s in $src: is the pattern still right?"; exit 1; }
done

for page in "$@"; do
	awk '/^\.\\" seccomp: / { set = $3; next }
		set != "" && set != "end" && /^\.BR? [a-z][a-z0-9_]*/ && !/^\.BR? [a-z0-9_]+ \([0-9]/ {
			print set, $2 }' "$page" > "$tmp/doc"
	grep -q '^base ' "$tmp/doc" || { echo "seccomp-doc: $page has no '.\\\" seccomp: base' section"; fail=1; continue; }
	for s in base files network processes; do
		sed -n "s/^$s //p" "$tmp/doc" | sort -u > "$tmp/doc.$s"
		[ -s "$tmp/doc.$s" ] || continue # this page does not list the set
		if ! cmp -s "$tmp/code.$s" "$tmp/doc.$s"; then
			echo "seccomp-doc: $page's $s list differs from $src (< code only, > page only):"
			diff "$tmp/code.$s" "$tmp/doc.$s" | grep '^[<>]' | sed 's/^/  /'
			fail=1
		fi
	done
done
[ "$fail" = 0 ] && echo "seccomp-doc: $* list the policy of $src exactly ($(cat "$tmp"/code.* | wc -l) names)"
exit "$fail"
