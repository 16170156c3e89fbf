/*
 * exec.c: the measured program runs without us. The exec family, posix_spawn* and fork
 * interposers, the marks page that tells a fork child whether perf events count it, and
 * the self-counting fds that outlive an exec. The rule is in the comment below.
 */
#include "shim.h"

/* A tool such as perf stat forks its workload before it opens any event, the child
 * blocks on a pipe while the parent opens the counters with enable_on_exec, and then it
 * execs (evlist__prepare_workload). The child inherited LD_PRELOAD and
 * BAYESPERF_SOCKET: left alone, it would load this library after the exec, and its
 * loading (an openat, a read, mmaps, page faults) would be counted by the very events
 * the tool opened for it. So such an exec leaves our preload entry and our variables
 * out of the new program's environment; the new program then runs exactly as without
 * bayesperf (and has no fd of ours: all of them are O_CLOEXEC).
 *
 * Which exec is the measured program's: one that a perf event opened through the shim
 * will count, because the event targets the exec'ing process (perf stat -- CMD opens
 * them on its forked child's pid, with enable_on_exec), or counts the descendants of its
 * parent (an event on every task of a CPU, pid -1, as perf stat -a opens; an inherited
 * event on the parent itself), or counts the process itself and outlives the exec (its
 * own event on itself whose fd is not close-on-exec). perf opens the events after the
 * fork, so the child learns of them through memory the two share: the marks page, a
 * MAP_SHARED anonymous page mapped before the first fork (fork is interposed for that)
 * or at the first perf event, whichever comes first, that fork children share with their
 * parent. Every process that opens a perf event writes there which pids its events
 * count. Any other exec keeps the shim: the shell of `bayesperf run -- sh -c 'perf stat
 * ...'`, and a tool started by another tool that does not count it, are served. (Simply
 * stripping every exec of a perf client's children would cut off tools that start
 * tools.) Marks are never removed: a pid reused within one tool's lifetime, or more
 * than BP_MARKS_MAX marks, can only err towards one of the two sides of this rule.
 *
 * What is removed: BAYESPERF_SOCKET and BAYESPERF_VERBOSE (which `bayesperf run` sets),
 * and this library's entry in LD_PRELOAD (the variable goes when nothing else is left
 * in it); the user's other preloads and variables stay verbatim and in order. The
 * exec'ing child of a multithreaded parent may only do async-signal-safe work, so the
 * new environment is built on the stack, and everything that needs dlsym or dladdr is
 * resolved before the fork (prepare_exec). */

enum { MARK_TARGET = 1, MARK_DESCENDANTS = 2 };
#define BP_MARKS_MAX 511
struct bp_marks {
	uint32_t n;   /* slots taken (may exceed BP_MARKS_MAX: those marks are lost, and the
	                 programs they would have named keep the shim, as before marks) */
	uint32_t pad;
	struct {
		int32_t pid;  /* written last (release): 0 while the slot is being filled */
		uint32_t kind; /* MARK_TARGET: events count pid; MARK_DESCENDANTS: its children */
	} m[BP_MARKS_MAX];
};
static struct bp_marks *marks; /* shared with fork children; NULL until needed */
static char shim_path[PATH_MAX]; /* this library as named in LD_PRELOAD ("" unknown) */

int selffd[BP_SELF_FDS]; /* described in shim.h */
int nselffd;
static pthread_mutex_t selffd_lock = PTHREAD_MUTEX_INITIALIZER;

/* prepare_exec maps the marks page, finds our own path and resolves the functions the
 * exec interposers call, in a state where dlsym and mmap are safe (not in a fork child). */
static void prepare_exec(void)
{
	if (__atomic_load_n(&marks, __ATOMIC_ACQUIRE) != NULL)
		return;
	Dl_info info;
	if (shim_path[0] == '\0' && dladdr((void *)prepare_exec, &info) != 0 && info.dli_fname != NULL &&
	    strlen(info.dli_fname) < sizeof shim_path)
		strcpy(shim_path, info.dli_fname);
	(void)real_execve(), (void)real_execvpe(), (void)real_fexecve(), (void)real_fork();
	void *p = real_mmap()(NULL, sizeof(struct bp_marks), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return; /* no marks: children of this process keep the preload, as before */
	struct bp_marks *none = NULL;
	if (!__atomic_compare_exchange_n(&marks, &none, (struct bp_marks *)p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		real_munmap()(p, sizeof(struct bp_marks));
}

static int marked(struct bp_marks *m, int32_t pid, uint32_t kind)
{
	uint32_t n = __atomic_load_n(&m->n, __ATOMIC_ACQUIRE);
	if (n > BP_MARKS_MAX)
		n = BP_MARKS_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (__atomic_load_n(&m->m[i].pid, __ATOMIC_ACQUIRE) == pid && m->m[i].kind == kind)
			return 1;
	return 0;
}

static void add_mark(int32_t pid, uint32_t kind)
{
	struct bp_marks *m = __atomic_load_n(&marks, __ATOMIC_ACQUIRE);
	if (m == NULL || marked(m, pid, kind))
		return;
	uint32_t i = __atomic_fetch_add(&m->n, 1, __ATOMIC_RELAXED);
	if (i >= BP_MARKS_MAX)
		return;
	m->m[i].kind = kind;
	__atomic_store_n(&m->m[i].pid, pid, __ATOMIC_RELEASE);
}

static void self_fd_add(int fd)
{
	pthread_mutex_lock(&selffd_lock);
	int slot = -1;
	for (int i = 0; i < nselffd && slot < 0; i++)
		if (selffd[i] < 0)
			slot = i;
	if (slot < 0 && nselffd < BP_SELF_FDS)
		slot = nselffd++;
	if (slot >= 0)
		__atomic_store_n(&selffd[slot], fd, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&selffd_lock);
}

/* self_fd_copied tracks a duplicate of a self-counting event's fd (dup clears
 * close-on-exec: the copy alone keeps the event alive across an exec). */
void self_fd_copied(int oldfd, int newfd)
{
	if (LIKELY(__atomic_load_n(&nselffd, __ATOMIC_RELAXED) == 0) || newfd < 0 || newfd == oldfd)
		return;
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++)
		if (__atomic_load_n(&selffd[i], __ATOMIC_RELAXED) == oldfd) {
			self_fd_add(newfd);
			return;
		}
}

/* mark_counted records whom the event just opened as fd counts; see above. */
void mark_counted(int fd, const struct perf_event_attr *attr, int pid)
{
	prepare_exec();
	int32_t me = (int32_t)raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (pid > 0 && !counts_self(pid)) {
		add_mark(pid, MARK_TARGET);
		if (attr->inherit)
			add_mark(pid, MARK_DESCENDANTS);
		return;
	}
	if (pid == -1 || attr->inherit)
		add_mark(me, MARK_DESCENDANTS);
	self_fd_add(fd);
}

/* exec_counted reports whether a program this process execs now (or, with spawn, a
 * child it starts) will be counted by a perf event opened through the shim. */
static int exec_counted(int spawn)
{
	struct bp_marks *m = __atomic_load_n(&marks, __ATOMIC_ACQUIRE);
	int32_t me = (int32_t)raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (spawn)
		return m != NULL && marked(m, me, MARK_DESCENDANTS);
	if (m != NULL) {
		int32_t parent = (int32_t)raw_syscall6(SYS_getppid, 0, 0, 0, 0, 0, 0);
		if (marked(m, me, MARK_TARGET) || marked(m, parent, MARK_DESCENDANTS))
			return 1;
	}
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++) {
		int fd = __atomic_load_n(&selffd[i], __ATOMIC_RELAXED);
		if (fd < 0)
			continue;
		long fl = raw_syscall6(SYS_fcntl, fd, F_GETFD, 0, 0, 0, 0);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			return 1; /* the event survives the exec and counts the new program */
	}
	return 0;
}

static int env_is(const char *kv, const char *name)
{
	size_t n = strlen(name);
	return strncmp(kv, name, n) == 0 && kv[n] == '=';
}

/* drop_preload writes into out the value of LD_PRELOAD (val) without our entry and one
 * separator next to it, the rest verbatim. Returns 0 when val has no entry of ours (keep
 * the variable as is), 1 when out holds the new value ("" : drop the variable). */
static int drop_preload(const char *val, char *out)
{
	size_t plen = strlen(shim_path);
	if (plen == 0)
		return 0;
	for (const char *t = val; *t != '\0';) {
		while (*t == ':' || *t == ' ')
			t++;
		const char *e = t;
		while (*e != '\0' && *e != ':' && *e != ' ')
			e++;
		if ((size_t)(e - t) == plen && memcmp(t, shim_path, plen) == 0) {
			/* Remove [t, e) and the separator after it, or before it when it is last. */
			const char *from = t, *to = e;
			if (*to != '\0')
				to++;
			else if (from > val)
				from--;
			size_t head = (size_t)(from - val);
			memcpy(out, val, head);
			strcpy(out + head, to);
			for (const char *c = out; *c != '\0'; c++)
				if (*c != ':' && *c != ' ')
					return 1;
			out[0] = '\0';
			return 1;
		}
		t = e;
	}
	return 0;
}

typedef int (*exec_fn)(void *ctx, char *const env[]);

/* exec_env calls fn with envp, or with envp less what is ours when the new program will
 * be counted (exec_counted). The new environment lives on this stack frame (no allocation: this
 * may run in a fork child of a multithreaded tool, or in a vfork child). */
static int exec_env(char *const envp[], int spawn, exec_fn fn, void *ctx)
{
	if (envp == NULL || !exec_counted(spawn))
		return fn(ctx, envp);
	size_t n = 0, ldlen = 0;
	for (; envp[n] != NULL; n++)
		if (env_is(envp[n], "LD_PRELOAD") && ldlen == 0)
			ldlen = strlen(envp[n]);
	if (n > 65536 || ldlen > 65536)
		return fn(ctx, envp); /* too big for this stack frame: exec as before */
	char *out[n + 1];
	char ld[ldlen + 1];
	int ld_done = 0; /* ld.so reads the first LD_PRELOAD entry: later ones stay as they are */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *kv = envp[i];
		if (env_is(kv, BP_ENV_SOCKET) || env_is(kv, BP_ENV_VERBOSE))
			continue;
		if (env_is(kv, "LD_PRELOAD") && !ld_done) {
			ld_done = 1;
			memcpy(ld, "LD_PRELOAD=", 11);
			if (drop_preload(kv + 11, ld + 11)) {
				if (ld[11] != '\0')
					out[k++] = ld;
				continue;
			}
		}
		out[k++] = (char *)kv;
	}
	out[k] = NULL;
	return fn(ctx, out);
}

struct exec_args {
	const char *path;
	char *const *argv;
	int fd;
};

static int do_execve(void *c, char *const env[])
{
	struct exec_args *a = c;
	return real_execve()(a->path, a->argv, env);
}

static int do_execvpe(void *c, char *const env[])
{
	struct exec_args *a = c;
	return real_execvpe()(a->path, a->argv, env);
}

static int do_fexecve(void *c, char *const env[])
{
	struct exec_args *a = c;
	return real_fexecve()(a->fd, a->argv, env);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_args a = {.path = path, .argv = argv};
	return exec_env(envp, 0, do_execve, &a);
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_args a = {.path = file, .argv = argv};
	return exec_env(envp, 0, do_execvpe, &a);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_args a = {.fd = fd, .argv = argv};
	return exec_env(envp, 0, do_fexecve, &a);
}

/* The execl family collects its NULL-terminated arguments (execle: then envp) as libc
 * does, and goes through the functions above. */
#define EXECL_ARGV(arg0, last, argv, extra)                        \
	va_list ap;                                                \
	va_start(ap, last);                                        \
	size_t argc = 1;                                           \
	{                                                          \
		va_list cp;                                        \
		va_copy(cp, ap);                                   \
		while (va_arg(cp, char *) != NULL)                 \
			argc++;                                    \
		va_end(cp);                                        \
	}                                                          \
	char *argv[argc + 1];                                      \
	argv[0] = (char *)(arg0);                                  \
	for (size_t i = 1; i <= argc; i++)                         \
		argv[i] = va_arg(ap, char *); /* argv[argc] = NULL */ \
	extra;                                                     \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...)
{
	EXECL_ARGV(arg, arg, argv, (void)0);
	return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXECL_ARGV(arg, arg, argv, (void)0);
	return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	EXECL_ARGV(arg, arg, argv, envp = va_arg(ap, char *const *));
	return execve(path, argv, envp);
}

struct spawn_args {
	pid_t *pid;
	const char *path;
	const posix_spawn_file_actions_t *fa;
	const posix_spawnattr_t *attr;
	char *const *argv;
};

static int do_posix_spawn(void *c, char *const env[])
{
	struct spawn_args *a = c;
	return real_posix_spawn()(a->pid, a->path, a->fa, a->attr, a->argv, env);
}

static int do_posix_spawnp(void *c, char *const env[])
{
	struct spawn_args *a = c;
	return real_posix_spawnp()(a->pid, a->path, a->fa, a->attr, a->argv, env);
}

/* posix_spawn execs in a child that never runs our code: a perf client whose events
 * count its children passes the stripped environment itself. */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct spawn_args a = {pid, path, fa, attr, argv};
	return exec_env(envp, 1, do_posix_spawn, &a);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct spawn_args a = {pid, file, fa, attr, argv};
	return exec_env(envp, 1, do_posix_spawnp, &a);
}

/* fork maps the marks page first, so that the child shares it with its parent and sees
 * the parent's first perf event even when it comes after the fork (perf's order). */
EXPORT pid_t fork(void)
{
	if (!guard) {
		int saved = errno;
		prepare_exec();
		errno = saved;
	}
	return real_fork()();
}
