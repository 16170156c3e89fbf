#!/usr/bin/env bash
# bench_ir.sh prints the instructions one online slice update (Observe) executes, per
# benchmark and event count, counted by valgrind's callgrind: unlike ns/op, the figure
# is the same from run to run on a shared, noisy machine (it leaves out cache misses,
# which ns/op has). Each benchmark runs twice after the same warm-up, for N1 slices
# and for N1 plus whole freeze periods (slices/freeze, at least 4000 slices); the
# difference over the extra slices is the cost of one slice, freezing included.
# Usage: bench_ir.sh [events...] (default 35; 8 takes minutes: its history is long).
set -euo pipefail
cd "$(dirname "$0")"
command -v valgrind >/dev/null || { echo "bench_ir.sh: needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
events=("$@")
[ ${#events[@]} -gt 0 ] || events=(35)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/model.test" .
N1=2000
run() { # benchmark events slices: total instructions of the run; its output in $tmp/stdout
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$tmp/model.test" -test.run '^$' \
		-test.bench "^$1\$/^events=$2\$" -test.benchtime "$3x" -test.cpu 1 >"$tmp/stdout" 2>"$tmp/err" ||
		{ cat "$tmp/err" "$tmp/stdout" >&2; exit 1; }
	awk '/^summary:/ {print $2}' "$tmp/out"
}
printf '%-20s %6s %14s\n' benchmark events instr/slice
for b in BenchmarkSlice BenchmarkSliceLive; do
	for n in "${events[@]}"; do
		a=$(run "$b" "$n" $N1)
		per=$(awk '{for (i = 2; i <= NF; i++) if ($i == "slices/freeze") print int($(i-1))}' "$tmp/stdout")
		extra=$(( (4000 + per - 1) / per * per ))
		z=$(run "$b" "$n" $((N1 + extra)))
		printf '%-20s %6d %14.0f\n' "$b" "$n" "$(echo "($z - $a) / $extra" | bc -l)"
	done
done
