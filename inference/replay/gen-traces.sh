#!/usr/bin/env bash
# gen-traces.sh regenerates the real-program traces in testdata/ (run as root: tracepoints
# need it). Each trace is `perf stat -I 10` of a real program on 20 software events and
# tracepoints plus its 12 to 15 most frequent syscall-entry tracepoints, all in one event group
# (see tracegen/main.go for why), so every count is exact and every row spans the same
# time for all events. Traces differ from run to run (timing, page cache): the committed
# ones are one sample; tests check properties, not their exact values.
#
# usage: inference/replay/gen-traces.sh [OUTDIR]   (from the repository root)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/inference/replay/testdata}
mkdir -p "$out"
work=$(mktemp -d /tmp/bayesperf-traces.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/tracegen" "$root/inference/replay/tracegen"
# tg NAME NSYSCALLS CMD...: record CMD into $out/NAME.csv with its NSYSCALLS most
# frequent syscall tracepoints.
# Everything it says (sizes, syscall coverage, how well the relations hold) is kept in
# $out/generate.log.
tg() {
  local name=$1 nsys=$2; shift 2
  echo "== $name: $*" | tee -a "$out/generate.log" >&2
  (cd "$work" && ./tracegen -o "$out/$name.csv" -syscalls "$nsys" -- "$@") 2>&1 | tee -a "$out/generate.log" >&2
}
: > "$out/generate.log"

# 1. xz: compression, CPU bound with steady reads and writes and a large heap.
head -c 24000000 /usr/bin/perf > "$work/input.bin" 2>/dev/null || cp /usr/bin/perf "$work/input.bin"
tg xz 12 xz -6 -T1 -c -k "$work/input.bin"

# 2. find: directory walk, metadata syscalls (getdents64, newfstatat, openat, close).
tg find 12 find /usr /var /etc -xdev -name '*.h' -newer /etc/hostname

# 3. python: an interpreter allocating, sorting, serializing and writing files in phases.
cat > "$work/work.py" <<'PY'
import json, os, random, hashlib
r = random.Random(1)
d = [{"k": r.random(), "v": "x" * r.randrange(100)} for _ in range(120000)]
d.sort(key=lambda x: x["k"])
for i in range(40):
    with open(f"part{i}.json", "w") as f:
        json.dump(d[i*3000:(i+1)*3000], f)
h = hashlib.sha256()
for i in range(40):
    with open(f"part{i}.json", "rb") as f:
        h.update(f.read())
    os.remove(f"part{i}.json")
print(h.hexdigest())
PY
tg python 15 python3 work.py

# 4. git + shell: a fork/exec storm (commits in a loop), then a repack.
# Every workload must be repeatable: tracegen runs it twice (syscall census, then the
# recording), so each script starts from a clean state.
cat > "$work/git.sh" <<'SH'
set -e
rm -rf repo
mkdir repo
cd repo
git init -q .
git config user.email t@example.com
git config user.name t
for i in $(seq 1 60); do
  seq 1 $((i * 200)) > "f$i.txt"
  git add "f$i.txt"
  git commit -q -m "commit $i"
done
git gc -q --aggressive
git log --stat > /dev/null
SH
tg git 12 sh git.sh

# 5. make -j2: parallel C compilation (gcc, cc1, as, ld processes).
mkdir -p "$work/cproj"
for i in $(seq 1 16); do
  printf '#include <stdio.h>\nint f%d(int x){int s=0;for(int i=0;i<x;i++)s+=i*%d;return s;}\n' "$i" "$i" > "$work/cproj/f$i.c"
done
printf 'int main(void){return 0;}\n' > "$work/cproj/main.c"
{
  printf 'SRCS := $(wildcard *.c)\nOBJS := $(SRCS:.c=.o)\n'
  printf 'prog: $(OBJS)\n\t$(CC) -o $@ $^\n'
  printf '%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n'
  printf 'clean:\n\trm -f *.o prog\n'
} > "$work/cproj/Makefile"
tg make 12 sh -c 'make -s -C cproj clean && make -s -C cproj -j2'

ls -la "$out"/*.csv >&2
