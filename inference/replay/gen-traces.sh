#!/usr/bin/env bash
# gen-traces.sh regenerates the real-program traces in testdata/ (run as root: tracepoints
# need it). Each trace is `perf stat -I 10` of a real program on 20 software events and
# tracepoints plus its 12 to 15 most frequent syscall-entry tracepoints, all in one event group
# (see tracegen/main.go for why), so every count is exact and every row spans the same
# time for all events. Traces differ from run to run (timing, page cache): the committed
# ones are one sample; tests check properties, not their exact values.
#
# usage: inference/replay/gen-traces.sh [OUTDIR [NAME...]]   (from the repository root)
# With NAMEs (xz find python git make), only those traces are regenerated.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/inference/replay/testdata}
shift || true
only=" $* "
mkdir -p "$out"
work=$(mktemp -d /tmp/bayesperf-traces.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/tracegen" "$root/inference/replay/tracegen"
# tg NAME NSYSCALLS CMD...: record CMD into $out/NAME.csv with its NSYSCALLS most
# frequent syscall tracepoints.
# Everything it says (sizes, syscall coverage, how well the relations hold) is kept in
# $out/NAME.log.
tg() {
  local name=$1 nsys=$2; shift 2
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then return 0; fi
  echo "== $name: $*" | tee "$out/$name.log" >&2
  (cd "$work" && ./tracegen -o "$out/$name.csv" -syscalls "$nsys" -- "$@") 2>&1 | tee -a "$out/$name.log" >&2
}

# 1. xz: compression, CPU bound with steady reads and writes and a large heap.
cat /usr/bin/perf /usr/bin/perf /usr/bin/perf | head -c 60000000 > "$work/input.bin"
tg xz 12 xz -6 -T1 -c -k "$work/input.bin"

# 2. find | xargs grep: a directory walk (getdents64, newfstatat) feeding a stream of grep
#    processes that open and read thousands of small files.
#    (grep exits 1 for files without a match: that is not a failure here.)
tg find 12 sh -c 'find /usr -xdev -type f -name "*.h" | xargs -n 100 grep -c static > /dev/null; exit 0'

# 3. python: an interpreter allocating, sorting, serializing and writing files in phases.
cat > "$work/work.py" <<'PY'
import json, os, random, hashlib
r = random.Random(1)
d = [{"k": r.random(), "v": "x" * r.randrange(100)} for _ in range(600000)]
d.sort(key=lambda x: x["k"])
for i in range(200):
    with open(f"part{i}.json", "w") as f:
        json.dump(d[i*3000:(i+1)*3000], f)
h = hashlib.sha256()
for i in range(200):
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
for i in $(seq 1 120); do
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
for i in $(seq 1 48); do
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

# Callgrind traces: hardware-like events (instructions, data reads and writes, L1 and LL
# cache misses, conditional and indirect branches and their mispredictions, bus events,
# syscalls) from valgrind's simulation, one row per ~N basic blocks. Single process only.
# tcg NAME BBS CMD...: like tg, with callgrind dumping every BBS basic blocks.
tcg() {
  local name=$1 bbs=$2; shift 2
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then return 0; fi
  echo "== $name: $*" | tee "$out/$name.log" >&2
  (cd "$work" && ./tracegen -o "$out/$name.csv" -callgrind "$bbs" -- "$@") 2>&1 | tee -a "$out/$name.log" >&2
}

# 6. gzip under callgrind: a compression loop, steady with data-dependent branches.
cat /usr/bin/bash /usr/bin/bash | head -c 2500000 > "$work/cg-input.bin"
tcg cg-gzip 200000 gzip -6 -c "$work/cg-input.bin"

# 7. sqlite3 under callgrind: create, bulk insert, index, aggregate queries (phases).
#    An in-memory database: callgrind must run sqlite3 itself (it does not follow a
#    shell's exec), and the run must be repeatable.
tcg cg-sqlite 200000 sqlite3 :memory: "create table t(a,b); insert into t select value, hex(randomblob(20)) from generate_series(1,100000); create index ta on t(b); select count(*), sum(length(b)) from t where a % 7 = 3; select a from t order by b limit 5;"

ls -la "$out"/*.csv >&2
