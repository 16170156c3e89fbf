#!/usr/bin/env bash
# gen-corpus-live.sh records family (c) of the replay corpus: live traces of real programs
# saved by `bayesperf eval --save-trace` (the virtual PMU's always-on truth copies, one row
# per multiplexing slice in which the workload ran). See testdata/corpus/README-live.md.
#
# Run as root from anywhere (tracepoints and the BPF collector need it). It installs what
# it needs with apt-get, builds bayesperf, generates every input from fixed seeds, and for
# each workload:
#   1. discovery: `perf stat -e 'syscalls:sys_enter_*' -x,` of the workload, keeping the
#      syscall-entry tracepoints with a non-zero count (most frequent first, at most
#      $MAXSYS of them);
#   2. recording: `bayesperf eval -e <base events + those syscalls> --counters 8
#      --fixed task-clock --save-trace live-NAME.csv -- CMD`, its printed summary going to
#      live-NAME.log;
#   3. replay scoring, exactly as the corpus is judged:
#      `bayesperf eval --trace live-NAME.csv --time-column time_ns --counters 8 --fixed task-clock`,
#      appended to live-NAME.log after a "== replay" line.
#
# usage: inference/replay/gen-corpus-live.sh [OUTDIR [NAME...]]
# With NAMEs (gcc zstd bzip2 sqlite pysqlite perl python du find http forkstorm sort git
# gzip lz4 node txz cpdiff lsr make awk),
# only those traces are recorded. Traces differ from run to run (timing, page cache, other
# load on the machine): the committed ones are one sample. TIME_ONLY=1 only times each
# workload (to size it) and records nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/inference/replay/testdata/corpus}
shift || true
only=" $* "
MAXSYS=${MAXSYS:-50}
COUNTERS=8
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ "$(id -u)" != 0 ]; then echo "gen-corpus-live.sh: run as root (tracepoints, BPF)" >&2; exit 1; fi

export DEBIAN_FRONTEND=noninteractive
need=()
for p in gcc libc6-dev zstd bzip2 sqlite3 perl python3 curl linux-perf coreutils findutils procps \
         lz4 git nodejs gzip xz-utils tar; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q "${need[@]}"
fi
PY=/usr/bin/python3 # Debian's, not whatever python3 is first on PATH

export PATH=$PATH:/usr/local/go/bin
work=$(mktemp -d /tmp/bayesperf-corpus-live.XXXXXX)
cleanup() {
  # the HTTP server of a failed http run
  [ -s "$work/http.pid" ] && kill "$(cat "$work/http.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# bayesperf is built from the committed HEAD (an export of it), not from the working tree,
# so that uncommitted edits do not leak into the corpus; BAYESPERF=/path/to/binary skips
# the build.
if [ -n "${BAYESPERF:-}" ]; then
  BP=$BAYESPERF
  bpver="$BAYESPERF (prebuilt)"
else
  mkdir "$work/src"
  git -C "$root" archive HEAD | tar -x -C "$work/src"
  (cd "$work/src" && go build -o "$work/bayesperf" ./cmd/bayesperf)
  BP=$work/bayesperf
  bpver="commit $(git -C "$root" rev-parse --short HEAD)"
fi

# Events measured in every trace: the software events, both raw syscall tracepoints and
# a few scheduler tracepoints. The workload's own syscall-entry tracepoints are added.
BASE=task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations
BASE+=,raw_syscalls:sys_enter,raw_syscalls:sys_exit
BASE+=,sched:sched_switch,sched:sched_wakeup,sched:sched_wakeup_new,sched:sched_process_fork
BASE+=,sched:sched_process_exec,sched:sched_process_exit,sched:sched_migrate_task

# ---------------------------------------------------------------- inputs (fixed seeds)
cd "$work"
mkdir -p in c docroot
# A text corpus of 24 MB: Zipf-like words, line lengths and numbers from a fixed seed.
"$PY" - <<'PY'
import random
r = random.Random(20240601)
syll = ["ka","to","ri","me","lo","an","be","su","ni","qua","ex","or","el","is","um","pra"]
words = ["".join(r.choice(syll) for _ in range(r.randint(1, 4))) for _ in range(6000)]
weights = [1.0 / (i + 1) for i in range(len(words))]
out = []
size = 0
while size < 24_000_000:
    n = r.randint(3, 18)
    line = " ".join(r.choices(words, weights, k=n))
    if r.random() < 0.3:
        line += " %d" % r.randint(0, 10**6)
    out.append(line)
    size += len(line) + 1
open("in/text.txt", "w").write("\n".join(out) + "\n")
PY
head -c 8000000 in/text.txt > in/text8.txt

# C sources: 6 generated translation units of arithmetic, loops and switches.
"$PY" - <<'PY'
import random
r = random.Random(7)
for u in range(6):
    with open(f"c/unit{u}.c", "w") as f:
        f.write("#include <stdint.h>\n#include <string.h>\n")
        for k in range(90):
            f.write(f"uint64_t u{u}_f{k}(uint64_t *a, int n, uint64_t s) {{\n")
            f.write("  uint64_t acc = s;\n  for (int i = 0; i < n; i++) {\n    switch ((a[i] ^ acc) & 7) {\n")
            for c in range(8):
                op = r.choice(["+", "^", "*", "-"])
                f.write(f"    case {c}: acc = (acc {op} a[i]) * {r.randint(3, 1 << 20)}u + {r.randint(1, 999)}; break;\n")
            f.write("    }\n    if (acc %% 13 == 5) a[i] = acc >> %d;\n  }\n" % r.randint(1, 40))
            f.write("  for (int j = n - 1; j > 0; j--) acc += a[j] * a[j-1];\n  return acc;\n}\n")
        f.write(f"uint64_t unit{u}(uint64_t *a, int n) {{\n  uint64_t s = 0;\n")
        for k in range(90):
            f.write(f"  s = u{u}_f{k}(a, n, s);\n")
        f.write("  return s;\n}\n")
with open("c/main.c", "w") as f:
    f.write("#include <stdio.h>\n#include <stdint.h>\n")
    for u in range(6):
        f.write(f"uint64_t unit{u}(uint64_t *a, int n);\n")
    f.write("int main(void) {\n  static uint64_t a[4096];\n  uint64_t s = 0;\n")
    f.write("  for (int i = 0; i < 4096; i++) a[i] = i * 2654435761u;\n")
    for u in range(6):
        f.write(f"  s += unit{u}(a, 4096);\n")
    f.write('  printf("%llu\\n", (unsigned long long)s);\n  return 0;\n}\n')
PY

# SQL for the sqlite3 shell: bulk inserts in transactions, an index, joins, aggregates,
# updates and deletes, on a database file on disk.
"$PY" - <<'PY'
import random
r = random.Random(11)
with open("in/work.sql", "w") as f:
    f.write("PRAGMA journal_mode=WAL;\nPRAGMA cache_size=-4000;\n")
    f.write("CREATE TABLE cust(id INTEGER PRIMARY KEY, name TEXT, city INTEGER);\n")
    f.write("CREATE TABLE ord(id INTEGER PRIMARY KEY, cust INTEGER, amount REAL, note TEXT);\n")
    for b in range(40):
        f.write("BEGIN;\n")
        for i in range(1000):
            cid = b * 1000 + i
            f.write(f"INSERT INTO cust VALUES({cid},'c{r.randrange(10**6)}',{r.randrange(300)});\n")
        f.write("COMMIT;\n")
    for b in range(80):
        f.write("BEGIN;\n")
        for i in range(2500):
            f.write(f"INSERT INTO ord(cust,amount,note) VALUES({r.randrange(40000)},{r.random()*1000:.2f},'{'n'*r.randrange(1,60)}');\n")
        f.write("COMMIT;\n")
    f.write("CREATE INDEX ord_cust ON ord(cust);\n")
    for q in range(60):
        f.write(f"SELECT c.city, count(*), sum(o.amount) FROM ord o JOIN cust c ON c.id=o.cust WHERE c.city % 30 = {q} GROUP BY c.city ORDER BY 3 DESC LIMIT 3;\n")
    for q in range(600):
        f.write(f"UPDATE ord SET amount = amount * 1.01 WHERE cust = {r.randrange(40000)};\n")
    f.write("DELETE FROM ord WHERE amount < 50;\nVACUUM;\nSELECT count(*), avg(amount) FROM ord;\n")
PY

# python3 + its sqlite3 module: many small transactions (a commit each, so journal writes
# and fsyncs), point queries, and a final aggregate.
cat > in/pysqlite.py <<'PY'
import random, sqlite3, os
r = random.Random(5)
if os.path.exists("py.db"):
    os.remove("py.db")
db = sqlite3.connect("py.db")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE kv(k INTEGER PRIMARY KEY, v TEXT, n INTEGER)")
for t in range(2000):
    db.executemany("INSERT OR REPLACE INTO kv VALUES(?,?,?)",
                   [(r.randrange(50000), "v" * r.randrange(1, 200), r.randrange(1000)) for _ in range(40)])
    db.commit()
    for _ in range(30):
        db.execute("SELECT v FROM kv WHERE k=?", (r.randrange(50000),)).fetchone()
print(db.execute("SELECT count(*), sum(n) FROM kv").fetchone())
db.close()
PY

# perl: word counts, regex rewriting and a few hundred output files.
cat > in/work.pl <<'PL'
use strict; use warnings;
my %count; my $n = 0;
open(my $in, '<', 'in/text.txt') or die;
mkdir 'perlout';
my ($fh, $part) = (undef, 0);
while (my $line = <$in>) {
    for my $w (split /\s+/, $line) { $count{$w}++ }
    $line =~ s/\b(\w)(\w*)\b/\u$1$2/g;
    $line =~ s/(\d+)/sprintf("%x", $1)/ge;
    if ($n++ % 2000 == 0) { close $fh if $fh; open($fh, '>', "perlout/p" . $part++) or die; }
    print $fh $line;
}
close $fh;
my @top = (sort { $count{$b} <=> $count{$a} } keys %count)[0..9];
print join(" ", @top), "\n";
# read the parts back, with a checksum of every line
my $sum = 0;
for my $p (0 .. $part - 1) {
    open(my $f, '<', "perlout/p$p") or die;
    while (<$f>) { $sum = ($sum + unpack("%32C*", $_)) % 65521 }
    close $f;
}
print "$sum\n";
PL

# python3: an interpreter in phases: objects and sorting, json to many files, regex,
# zlib, reading everything back.
cat > in/work.py <<'PY'
import json, os, random, re, zlib, hashlib
r = random.Random(3)
os.makedirs("pyout", exist_ok=True)
d = [{"k": r.random(), "w": "".join(r.choice("abcdefgh") for _ in range(r.randrange(2, 30)))} for _ in range(300000)]
d.sort(key=lambda x: (x["w"], x["k"]))
for i in range(300):
    with open(f"pyout/part{i}.json", "w") as f:
        json.dump(d[i * 1000:(i + 1) * 1000], f)
pat = re.compile(r"(ab|cd)+e?f")
hits = 0
for line in open("in/text8.txt"):
    hits += len(pat.findall(line))
h = hashlib.sha256()
for i in range(300):
    with open(f"pyout/part{i}.json", "rb") as f:
        h.update(zlib.compress(f.read(), 6))
print(hits, h.hexdigest())
PY

# Files served over loopback HTTP: 200 files of 1 KB to 400 KB.
"$PY" - <<'PY'
import random
r = random.Random(9)
blob = open("in/text8.txt", "rb").read()
for i in range(200):
    n = r.choice([1000, 8000, 30000, 120000, 400000])
    o = r.randrange(len(blob) - n)
    open(f"docroot/f{i}.txt", "wb").write(blob[o:o + n])
PY
for i in $(seq 0 199); do echo "http://127.0.0.1:PORT/f$i.txt"; done > in/urls.tmpl

# The HTTP workload: the server is a child of the measured command, so both sides of the
# loopback connections are counted; it is stopped at the end (and by cleanup on failure).
cat > in/http.sh <<'SH'
#!/bin/sh
port=$1
/usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 -d docroot >/dev/null 2>&1 &
srv=$!
echo "$srv" > http.pid
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/"; do
  i=$((i + 1)); [ $i -gt 200 ] && { kill $srv; exit 1; }
  sleep 0.02
done
sed "s/PORT/$port/" in/urls.tmpl > urls.txt
for round in 1 2; do
  # one curl with 200 URLs (a connection each: http.server speaks HTTP/1.0) ...
  xargs curl -s < urls.txt > /dev/null
  # ... and 100 curl processes with one URL each
  head -100 urls.txt | while read -r u; do curl -s -o /dev/null "$u"; done
done
kill $srv
wait $srv 2>/dev/null
exit 0
SH
chmod +x in/http.sh
# a free loopback port
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# ---------------------------------------------------------------- workloads
# rec NAME CMD...: discovery, recording and replay scoring of CMD as live-NAME.
rec() {
  local name=$1; shift
  if [ "$only" != "  " ] && [[ "$only" != *" $name "* ]]; then return 0; fi
  local csv=$out/live-$name.csv log=$out/live-$name.log
  echo "== live-$name: $*" >&2
  if [ -n "${TIME_ONLY:-}" ]; then # just time the workload (to size it)
    /usr/bin/time -f "   %e s elapsed, %U s user, %S s system" "$@" >/dev/null; return 0
  fi
  # 1. discovery
  perf stat -x, -o "$work/disc-$name.txt" -e 'syscalls:sys_enter_*' -- "$@" >/dev/null 2>&1 || {
    echo "discovery of $name failed" >&2; return 1; }
  rm -rf "$work/perlout" "$work/pyout" "$work"/*.o "$work/c"/*.o "$work/py.db" "$work/db1.sqlite"* "$work"/*.zst* "$work"/*.bz2 "$work/prog"
  local sys nsys nfound
  nfound=$(grep -v '^#' "$work/disc-$name.txt" | awk -F, '$3 ~ /^syscalls:/ && $1+0 > 0' | wc -l)
  sys=$(grep -v '^#' "$work/disc-$name.txt" | awk -F, '$3 ~ /^syscalls:/ && $1+0 > 0 {print $1, $3}' |
        sort -k1,1nr -k2,2 | head -n "$MAXSYS" | awk '{print $2}' | paste -sd, -)
  nsys=$(echo "$sys" | tr ',' '\n' | grep -c . || true)
  local events=$BASE${sys:+,$sys}
  local nev
  nev=$(echo "$events" | tr ',' '\n' | wc -l)
  # 2. recording
  {
    echo "== live-$name: $*"
    echo "# discovery: $nfound syscall-entry tracepoints with a non-zero count, $nsys kept (most frequent first, at most $MAXSYS)"
    echo "# events ($nev): $events"
    echo "# bayesperf: $bpver"
    echo "# bayesperf eval -e <events> --counters $COUNTERS --fixed task-clock --save-trace live-$name.csv -- $*"
  } > "$log"
  local rc=0
  "$BP" eval -e "$events" --counters $COUNTERS --fixed task-clock --save-trace "$csv" -- "$@" >> "$log" 2>&1 || rc=$?
  rm -rf "$work/perlout" "$work/pyout" "$work"/*.o "$work/c"/*.o "$work/py.db" "$work/db1.sqlite"* "$work"/*.zst* "$work"/*.bz2 "$work/prog"
  if [ $rc != 0 ]; then echo "# eval exited $rc" >> "$log"; echo "recording of $name failed (exit $rc), see $log" >&2; return 1; fi
  local size rows
  size=$(stat -c %s "$csv"); rows=$(($(wc -l < "$csv") - 1))
  echo "# trace: $rows rows, $nev events, $size bytes" >> "$log"
  if [ "$size" -gt 2097152 ]; then echo "live-$name.csv is over 2 MiB ($size bytes)" >&2; return 1; fi
  if [ "$size" -gt 409600 ]; then echo "warning: live-$name.csv is over 400 KB ($size bytes)" >&2; fi
  # 3. replay scoring, as judged
  {
    echo
    echo "== replay: bayesperf eval --trace live-$name.csv --time-column time_ns --counters $COUNTERS --fixed task-clock"
    (cd "$out" && "$BP" eval --trace "live-$name.csv" --time-column time_ns --counters $COUNTERS --fixed task-clock 2>&1) || echo "# replay exited $?"
  } >> "$log"
  echo "   $rows rows, $nev events, $size bytes" >&2
}

# 1. gcc: six generated translation units at -O2, then a link and a run.
rec gcc sh -c 'for f in c/unit*.c c/main.c; do gcc -O2 -c -o "${f%.c}.o" "$f" || exit 1; done; gcc -o prog c/*.o && ./prog >/dev/null'
# 2. zstd: three compressions of 24 MB of text (level 12 on two threads, level 9, level 7
#    with a long window on two threads), each decompressed and checked.
rec zstd sh -c 'for l in "-12 -T2" "-9 -T1" "-7 --long=27 -T2"; do zstd -q -f $l -o text.zst in/text.txt && zstd -q -d -f --long=27 -o text.zst.out text.zst && cmp -s in/text.txt text.zst.out || exit 1; done'
# 3. bzip2: compression of 24 MB, then decompression.
rec bzip2 sh -c 'bzip2 -9 -c in/text.txt > text.bz2 && bzip2 -d -c text.bz2 > /dev/null'
# 4. sqlite3 shell: the generated SQL workload on a WAL database on disk.
rec sqlite sh -c 'sqlite3 db1.sqlite < in/work.sql > /dev/null'
# 5. python3 sqlite3 module: 2,000 small transactions with point queries.
rec pysqlite "$PY" in/pysqlite.py
# 6. perl: word counts and regex rewriting of 24 MB into 1,600 files, read back.
rec perl perl in/work.pl
# 7. python3: objects, sort, json files, regex, zlib.
rec python "$PY" in/work.py
# 8. du: disk-usage walks over /usr, /var/lib and /etc (newfstatat, getdents64).
rec du sh -c 'for i in 1 2; do du -a /usr /var/lib /etc > /dev/null 2>&1; du -sh --apparent-size /usr > /dev/null; du -s --inodes /usr/share > /dev/null; done; exit 0'
# 9. find: eight walks of /usr (one with /etc and /var) with name, size, type, time and
#    permission predicates, one printing symlink targets.
rec find sh -c 'for i in 1 2; do find /usr -xdev -name "*.so*" -size +20k > /dev/null; find /usr -xdev -type l -printf "%l\n" > /dev/null; find /usr/share -xdev -newer /etc/hostname -type f -printf "%s %p\n" > /dev/null; find /usr /etc /var -xdev -perm -u+x -type f -empty > /dev/null; done; exit 0'
# 10. http: python3 -m http.server on 127.0.0.1 with 600 curl requests (2 rounds of 200 + 100).
rec http sh in/http.sh "$port"
# 11. forkstorm: a shell spawning 2,500 short processes and 2,500 subshells.
rec forkstorm sh -c 'i=0; while [ $i -lt 2500 ]; do /bin/true; (echo $i > /dev/null); i=$((i + 1)); done'
# 12. sort: a pipeline of tr, sort (two threads), uniq and sort again over 24 MB of words.
rec sort sh -c 'tr " " "\n" < in/text.txt | sort -S 32M --parallel=2 | uniq -c | sort -rn | head -5 > /dev/null'

# Added on 2026-11-29: a third batch, recorded after the model change of 067a50c and
# scored at it before anything was tuned on it (split.txt says how it was split).
# 13. git: a repository of the inputs: init, add, commit, repack, log --stat.
rec git sh -c 'rm -rf r && git init -q r && cp -r in r/ && cd r && git add -A && git -c user.name=a -c user.email=a@b commit -qm x && git -c gc.auto=0 repack -adq && git log --stat > /dev/null && cd .. && rm -rf r'
# 14. gzip: -9 and -1 of 24 MB of text, one decompressed.
rec gzip sh -c 'gzip -9 -c in/text.txt > t.gz && gzip -dc t.gz > /dev/null && gzip -1 -c in/text.txt > /dev/null && rm -f t.gz'
# 15. lz4: -9 and -1 of the text, one decompressed.
rec lz4 sh -c 'lz4 -q -9 -f in/text.txt t.lz4 && lz4 -q -dc t.lz4 > /dev/null && lz4 -q -1 -f in/text.txt t1.lz4 && rm -f t.lz4 t1.lz4'
# 16. node: three million Map updates and a sort, then the text read and split.
rec node node -e 'let s=0;const m=new Map();for(let i=0;i<3e6;i++){const k="k"+(i*7919%100003);m.set(k,(m.get(k)||0)+1)}const a=[...m.values()].sort((x,y)=>y-x);s+=a[0];const t=require("fs").readFileSync("in/text.txt","utf8");s+=t.split(/\s+/).length;console.log(s)'
# 17. txz: tar -cJ of the kernel headers (xz through a pipe), then a listing.
rec txz sh -c 'tar -cJf t.txz -C /usr/include linux && tar -tJf t.txz > /dev/null && rm -f t.txz'

# Added on 2026-11-30: a fourth batch, of programs in no trace of this family, recorded
# as a held-out check (not scored when recorded).
command -v mawk > /dev/null || apt-get install -y -q mawk
cat > c/Makefile <<'MK'
CFLAGS = -O1
OBJS = $(patsubst %.c,%.o,$(wildcard *.c))
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
MK
# 18. cpdiff: cp -r of the C++ and kernel headers, perl's library and the inputs, each
#     copy compared with its original by diff -r, then removed.
rec cpdiff sh -c 'rm -rf cp1 && mkdir cp1 && cp -r /usr/include/c++ /usr/include/linux /usr/share/perl in docroot cp1/ && diff -r /usr/include/c++ cp1/c++ && diff -r /usr/include/linux cp1/linux && diff -r /usr/share/perl cp1/perl && diff -r in cp1/in && diff -r docroot cp1/docroot && rm -rf cp1'
# 19. lsr: ls -lR of /usr/share and /usr/lib, ls -laRi of /usr/include and /etc (lstat,
#     getdents64, readlink, user and group names).
rec lsr sh -c 'ls -lR /usr/share /usr/lib > /dev/null 2>&1; ls -laRi --time-style=full-iso /usr/include /etc > /dev/null 2>&1; exit 0'
# 20. make: make -B -j2 of the six C units and main.c at -O1 (make's jobserver, the
#     gcc driver, cc1 and as per object), then the link.
rec make make -s -B -j2 -C c prog
# 21. awk: mawk word counts over the 24 MB text, each line written to a file by its first
#     letter, then a second mawk over those files.
rec awk sh -c 'rm -rf awkout && mkdir awkout && mawk "{ for (i = 1; i <= NF; i++) n[\$i]++; print > (\"awkout/\" substr(\$1, 1, 1)) } END { for (w in n) if (n[w] > 100) k++; print k }" in/text.txt > /dev/null && mawk "{ c += length(\$0); w += NF } END { print c, w }" awkout/* > /dev/null && rm -rf awkout'
