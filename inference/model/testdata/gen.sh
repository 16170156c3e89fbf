#!/bin/bash
# gen.sh records the real-program traces the accuracy tests replay: exact per-10ms counts of
# 35 software events and tracepoints from `perf stat -I 10`. Software events and tracepoints
# are never multiplexed by the kernel, so every count is the truth for its interval.
#
# Usage: gen.sh [outdir]   (needs root or perf_event_paranoid <= -1 for tracepoints)
# Output: one <name>.csv per program, header "interval_ns,<event>,...", one row per interval.
set -euo pipefail
out=${1:-$(dirname "$0")}
EV="task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations,\
raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_wakeup,\
sched:sched_process_exec,syscalls:sys_enter_read,syscalls:sys_enter_write,\
syscalls:sys_enter_openat,syscalls:sys_enter_close,syscalls:sys_enter_mmap,\
syscalls:sys_enter_munmap,syscalls:sys_enter_brk,syscalls:sys_enter_newfstatat,\
syscalls:sys_enter_lseek,syscalls:sys_enter_getdents64,syscalls:sys_enter_mprotect,\
syscalls:sys_enter_rt_sigaction,syscalls:sys_enter_ioctl,syscalls:sys_enter_futex,\
syscalls:sys_enter_pread64,syscalls:sys_enter_access,syscalls:sys_enter_clone3,\
syscalls:sys_enter_wait4,syscalls:sys_enter_execve,syscalls:sys_enter_exit_group,\
syscalls:sys_enter_readlinkat,syscalls:sys_enter_fcntl,syscalls:sys_enter_statx,\
syscalls:sys_enter_madvise"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

record() { # name cmd...
	local name=$1; shift
	perf stat -I 10 -x, -e "$EV" -o "$tmp/$name.perf" -- "$@" >/dev/null 2>&1 || true
	# perf prints time,count,unit,event,running,...; pivot to one row per interval.
	awk -F, -v evs="$EV" '
		BEGIN { n = split(evs, name, ","); for (i = 1; i <= n; i++) idx[name[i]] = i }
		/^#/ || NF < 4 { next }
		{
			t = $1 + 0; if (!(t in seen)) { seen[t] = 1; order[++rows] = t }
			v = $2; if (v ~ /not/) v = 0
			if ($3 == "msec") v = sprintf("%.0f", v * 1e6)   # task-clock: ms -> ns
			c[t, idx[$4]] = v
		}
		END {
			printf "interval_ns"; for (i = 1; i <= n; i++) printf ",%s", name[i]; print ""
			prev = 0
			for (r = 1; r <= rows; r++) {
				t = order[r]; printf "%.0f", (t - prev) * 1e9; prev = t
				for (i = 1; i <= n; i++) printf ",%s", ((t, i) in c ? c[t, i] : 0)
				print ""
			}
		}' "$tmp/$name.perf" >"$out/$name.csv"
	echo "$out/$name.csv: $(($(wc -l <"$out/$name.csv") - 1)) intervals"
}

record tar-gzip sh -c 'tar cf - /usr/include 2>/dev/null | gzip -1 | wc -c'
record go-vet sh -c 'cd /usr/local/go/src && GOFLAGS=-mod=mod go vet ./sort ./strings ./bufio ./container/... 2>&1'
record find-grep sh -c 'find /usr/share /usr/lib -type f -name "*.py" 2>/dev/null | head -3000 | xargs grep -l "import os" | wc -l'
record sqlite sh -c 'rm -f /tmp/bp-gen.db; sqlite3 /tmp/bp-gen.db "create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c where x<200000) insert into t select x, hex(randomblob(16)) from c; create index i on t(b); select count(*) from t where b like \"A%\";"; rm -f /tmp/bp-gen.db'
