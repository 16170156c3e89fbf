#!/usr/bin/env bash
# record.sh runs issue 13's live acceptance command once and saves its exact per-slice
# counts as live-tgz-N.csv beside this script (N: the next free number): a discovery
# run under `strace -f -c` lists every syscall `tar czf` of a documentation tree makes,
# then `bayesperf eval` measures them with raw_syscalls:sys_enter and the fault and
# scheduling events on 8 counters, task-clock fixed, and saves the trace it scored.
# Needs root (tracepoints), strace, and bin/bayesperf (make build).
# usage: internal/eval/testdata/acceptance/record.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
bp=$root/bin/bayesperf
[ -x "$bp" ] || { echo "record.sh: build bin/bayesperf first (make build)" >&2; exit 1; }
command -v strace > /dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q strace
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cmd=(tar czf "$out/x.tgz" -C /usr/share doc/)
strace -f -c -o "$out/strace.txt" "${cmd[@]}"
# strace's summary: one line per syscall, its name last; the totals line says "total".
# Syscalls without a tracepoint are left out.
tp=/sys/kernel/tracing/events/syscalls
[ -d "$tp" ] || tp=/sys/kernel/debug/tracing/events/syscalls
sys=$(awk '$NF ~ /^[a-z_0-9]+$/ && $NF != "total" && $NF != "syscall" {print "syscalls:sys_enter_" $NF}' "$out/strace.txt" |
	while read -r ev; do [ -d "$tp/${ev#syscalls:}" ] && echo "$ev"; done | paste -sd,)
[ -n "$sys" ] || { echo "record.sh: no syscall tracepoints under $tp (root? tracefs mounted?)" >&2; exit 1; }
ev="$sys,raw_syscalls:sys_enter,page-faults,minor-faults,major-faults,context-switches"
n=1
while [ -e "$here/live-tgz-$n.csv" ]; do n=$((n + 1)); done
"$bp" eval -e "$ev" --counters 8 --fixed task-clock --save-trace "$here/live-tgz-$n.csv" -- "${cmd[@]}"
echo "saved $here/live-tgz-$n.csv"
