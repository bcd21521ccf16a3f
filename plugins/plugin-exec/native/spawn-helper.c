/*
 * tkgate-spawn-helper: starts the commands of exec endpoints for the gateway (src/native-link.ts talks
 * to it). It does what src/spawn-helper.ts + run-process.ts do, without a Node runtime: posix_spawn (glibc
 * uses clone(CLONE_VM|CLONE_VFORK), so no page tables are copied) and one poll() loop for all its
 * children, instead of a fork per command and stream objects per pipe.
 *
 * The link to the gateway is fd 3 (a socketpair made by Node), frames both ways, little-endian:
 *   u32 length of what follows, u8 type, u32 run id, payload.
 * gateway -> helper
 *   RUN   (1): u32 timeout ms, u64 max stdout bytes, u8 flags (1 stdin, 2 cwd), str file, [str cwd],
 *              u32 argc, str args..., u32 envc, str "NAME=value"..., [str stdin]   (str = u32 length, bytes)
 *   ABORT (2): nothing more
 *   WATCH (3), UNWATCH (4): nothing more; the "run id" is a process group the gateway started itself
 *              (a run of an async endpoint), killed with the helper's own commands when the gateway goes away
 * helper -> gateway
 *   HELLO (0): u32 pid of the helper (sent once, at start)
 *   STARTED (1): u32 pid (= process group) of the command
 *   DONE  (2): u8 reason, i32 exit code, i32 signal, str stdout, str stderr, str cause
 *
 * Started by the gateway with an empty environment and no argument; it forks at once into a session of its
 * own and its first process exits (no shell is needed: the container image has none), so it is re-parented
 * to init and no process a command can walk up to holds the gateway's environment or names the gateway's pid
 * (a command that scans /proc finds the gateway all the same: not-dumpable.c closes its environ and memory).
 * When the gateway goes away (EOF or EPIPE on the link: also when it is SIGKILLed) every command's group and
 * every watched group is killed and the helper exits.
 *
 * A run ends with its command: once the main process has exited, its pipes are read for DRAIN_MS more and
 * then closed, whoever else holds them (a process of another user the helper may not kill, say).
 *
 * Nothing a command starts outlives its run. The helper and each command's main process are subreapers
 * (PR_SET_CHILD_SUBREAPER): a daemon that double-forks and leaves the group (setsid) is re-parented to the
 * command while it runs, and to the helper once it has exited. A child of the helper that is no running
 * command's main process is therefore a leftover of an ended run: it is killed as soon as it arrives (the
 * main process's exit, a timeout), and reaped, so none lingers as a zombie of init either.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINK_FD 3
/* A RUN frame holds arguments (each at most 128 KiB), the environment and a stdin context: bounded. */
#define MAX_FRAME (64u << 20)
/* stdout is sent in one frame: it must fit in its u32 length with room to spare. */
#define MAX_OUTPUT (1024ull << 20)
#define MAX_RUNS 1024
#define MAX_LIST 65536
#define STDERR_KEPT 16384
#define CHUNK 65536
/* Process groups of the gateway's own runs (WATCH): as many as it may run at once, with room to spare. */
#define MAX_WATCHED 4096
/* After the command's exit, how long its pipes are read before they are closed (docs/toolkits.md). */
#define DRAIN_MS 500

enum { REQ_RUN = 1, REQ_ABORT = 2, REQ_WATCH = 3, REQ_UNWATCH = 4 };
enum { REP_HELLO = 0, REP_STARTED = 1, REP_DONE = 2 };
/* The outcome reasons, in the order of src/native-link.ts's REASONS. */
enum { OUT_OK, OUT_EXIT_CODE, OUT_SIGNAL, OUT_TIMEOUT, OUT_TOO_LARGE, OUT_SPAWN_FAILED, OUT_ABORTED };

struct run {
	int used;
	uint32_t id;
	pid_t pid;
	int exited, status;
	int stopped; /* the first of timeout / output_too_large / aborted, or 0 */
	int in_fd, out_fd, err_fd;
	char *in_data; /* points into the RUN frame, which this run owns */
	char *frame;
	size_t in_len, in_off;
	char *out;
	size_t out_len, out_cap, out_max;
	char err[STDERR_KEPT];
	size_t err_len;
	int64_t deadline; /* ms, CLOCK_MONOTONIC */
	int64_t drain_until; /* once exited: when the pipes are closed */
};

static struct run runs[MAX_RUNS];
static int run_count;
static pid_t watched[MAX_WATCHED];
static int watched_count;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kill_group(struct run *r)
{
	if (r->pid > 0)
		kill(-r->pid, SIGKILL); /* ESRCH: the group is gone already */
}

static int is_running_command(pid_t pid)
{
	for (int i = 0; i < MAX_RUNS; i++)
		if (runs[i].used && !runs[i].exited && runs[i].pid == pid)
			return 1;
	return 0;
}

/*
 * SIGKILLs every child of the helper that is no running command's main process: what the commands of
 * ended runs left behind, re-parented here. Their own children arrive in turn and go the same way when
 * their SIGCHLD is handled. /proc/self/task/<pid>/children lists them in one read (the helper has one thread).
 */
static void kill_leftovers(int all)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *p = buf, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		if (pid > 0 && (all || !is_running_command((pid_t)pid)))
			kill((pid_t)pid, SIGKILL);
	}
}

static void watch(pid_t pgid)
{
	if (pgid <= 1)
		return; /* never kill(-1) or our own group by mistake */
	if (watched_count == MAX_WATCHED) {
		fprintf(stderr, "tkgate-spawn-helper: more than %d watched process groups; %d is not watched\n", MAX_WATCHED, (int)pgid);
		return;
	}
	watched[watched_count++] = pgid;
}

static void unwatch(pid_t pgid)
{
	for (int i = 0; i < watched_count; i++)
		if (watched[i] == pgid) {
			watched[i] = watched[--watched_count];
			return;
		}
}

/* The gateway is gone: nobody can stop these commands any more, so they end now, and so does the helper. */
_Noreturn static void shutdown_all(int code)
{
	for (int i = 0; i < watched_count; i++)
		kill(-watched[i], SIGKILL);
	for (int i = 0; i < MAX_RUNS; i++)
		if (runs[i].used)
			kill_group(&runs[i]);
	/*
	 * What the commands left comes to the helper as each of them dies: kill and reap until no child is
	 * left (for 2 s at most), so nothing is handed on to init.
	 */
	int64_t until = now_ms() + 2000;
	for (;;) {
		kill_leftovers(1);
		pid_t pid = waitpid(-1, NULL, WNOHANG);
		if (pid < 0 || now_ms() > until)
			break;
		if (pid == 0)
			nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
	}
	exit(code);
}

/*
 * The gateway is gone (a write met EPIPE), but what it sent before is still to be read from the link: a
 * WATCH among it must be obeyed. Nothing more is written, no more commands start, and the EOF that follows
 * the frames ends the helper (read_link).
 */
static int gateway_gone;

/* Writes all of buf to the link, across partial writes and signals. */
static void write_all(const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0 && !gateway_gone) {
		ssize_t n = write(LINK_FD, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EPIPE)
				shutdown_all(1);
			gateway_gone = 1;
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

/*
 * Replies wait in a buffer until the loop is about to sleep in poll(): the STARTED and DONE frames of all
 * that one turn handled leave in one write, so the gateway wakes once for them, not once per frame.
 */
static char *outq;
static size_t outq_len, outq_cap;

static void flush_replies(void)
{
	write_all(outq, outq_len);
	outq_len = 0;
}

static void queue_reply(const void *buf, size_t len)
{
	if (len >= CHUNK) { /* a large stdout is written as it is, not copied once more */
		flush_replies();
		write_all(buf, len);
		return;
	}
	if (outq_cap - outq_len < len) {
		size_t cap = outq_cap ? outq_cap : CHUNK;
		while (cap - outq_len < len)
			cap *= 2;
		char *grown = realloc(outq, cap);
		if (!grown)
			shutdown_all(1);
		outq = grown, outq_cap = cap;
	}
	memcpy(outq + outq_len, buf, len);
	outq_len += len;
}

static void put_u32(char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (char)(v >> (8 * i));
}

static uint32_t get_u32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return u[0] | (u[1] << 8) | (u[2] << 16) | ((uint32_t)u[3] << 24);
}

static void send_small(uint8_t type, uint32_t id, uint32_t value)
{
	char f[13];
	put_u32(f, 9);
	f[4] = (char)type;
	put_u32(f + 5, id);
	put_u32(f + 9, value);
	queue_reply(f, sizeof f);
}

static void send_done(uint32_t id, int reason, int exit_code, int sig, const char *out, size_t out_len,
		      const char *err, size_t err_len, const char *cause)
{
	size_t cause_len = strlen(cause);
	char head[18], len[4];
	put_u32(head, (uint32_t)(14 + 4 + out_len + 4 + err_len + 4 + cause_len));
	head[4] = REP_DONE;
	put_u32(head + 5, id);
	head[9] = (char)reason;
	put_u32(head + 10, (uint32_t)exit_code);
	put_u32(head + 14, (uint32_t)sig);
	queue_reply(head, sizeof head);
	put_u32(len, (uint32_t)out_len);
	queue_reply(len, 4);
	queue_reply(out, out_len);
	put_u32(len, (uint32_t)err_len);
	queue_reply(len, 4);
	queue_reply(err, err_len);
	put_u32(len, (uint32_t)cause_len);
	queue_reply(len, 4);
	queue_reply(cause, cause_len);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void free_run(struct run *r)
{
	close_fd(&r->in_fd);
	close_fd(&r->out_fd);
	close_fd(&r->err_fd);
	free(r->out);
	free(r->frame);
	memset(r, 0, sizeof *r);
	run_count--;
}

/* Like run-process.ts: the first reason to stop wins; the whole group is killed each time. */
static void stop(struct run *r, int reason)
{
	if (!r->stopped)
		r->stopped = reason;
	kill_group(r);
}

/* The run is over once its command has exited and both output pipes are at EOF (Node's 'close'). */
static void finish_if_done(struct run *r)
{
	if (!r->exited || r->out_fd >= 0 || r->err_fd >= 0)
		return;
	int reason = OUT_OK, code = 0, sig = 0;
	if (r->stopped) {
		reason = r->stopped;
	} else if (WIFSIGNALED(r->status)) {
		reason = OUT_SIGNAL;
		sig = WTERMSIG(r->status);
	} else if (WEXITSTATUS(r->status) != 0) {
		reason = OUT_EXIT_CODE;
		code = WEXITSTATUS(r->status);
	}
	send_done(r->id, reason, code, sig, r->out, reason == OUT_OK ? r->out_len : 0, r->err, r->err_len, "");
	free_run(r);
}

/* Bare names are looked up in the command's own PATH (as Node's spawn does), not the helper's (empty). */
static const char *resolve(const char *file, char **envp, char *buf, size_t size)
{
	if (strchr(file, '/'))
		return file;
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	for (char **e = envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	for (const char *dir = path;; dir++) {
		const char *end = strchrnul(dir, ':');
		int n = snprintf(buf, size, "%.*s%s%s", (int)(end - dir), dir, end == dir ? "" : "/", file);
		if (n > 0 && (size_t)n < size && access(buf, X_OK) == 0)
			return buf;
		if (!*end)
			break;
		dir = end;
	}
	return file; /* posix_spawn reports ENOENT */
}

/*
 * The command's side of vfork(): only system calls until execve, on the helper's memory (the helper waits
 * meanwhile). A failure is left in *failed for the helper to report, as posix_spawn would return it.
 */
_Noreturn static void exec_child(const char *file, const char *cwd, char **argv, char **envp, int in_fd, int out_fd, int err_fd,
				 volatile int *failed)
{
	sigset_t none;
	sigemptyset(&none);
	/* Its own group (pgid = pid), no blocked signals (we block SIGCHLD), SIGPIPE not ignored (we ignore it). */
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* What it starts and leaves stays its own child while it runs, within reach of its run's end. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if (in_fd < 0)
		in_fd = open("/dev/null", O_RDONLY);
	if (in_fd < 0 || dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0 || (cwd && chdir(cwd) < 0)) {
		*failed = errno;
		_exit(127);
	}
	execve(file, argv, envp);
	*failed = errno;
	_exit(127);
}

/* vfork, as glibc's posix_spawn does (no page tables copied), with a prctl posix_spawn cannot make. */
static pid_t start_child(const char *file, const char *cwd, char **argv, char **envp, const int fds[3], volatile int *failed)
{
	pid_t pid = vfork();
	if (pid == 0)
		exec_child(file, cwd, argv, envp, fds[0], fds[1], fds[2], failed);
	return pid;
}

/* Starts the command in its own process group with pipes for stdout/stderr (and stdin); 0 or an errno. */
static int spawn_command(struct run *r, const char *file, const char *cwd, char **argv, char **envp, int with_stdin)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	char found[4096];
	volatile int failed = 0;
	int rc = 0;

	/* O_CLOEXEC: no command inherits another run's pipe ends (its EOF would never come) or the link. */
	if ((with_stdin && pipe2(in, O_CLOEXEC)) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		rc = errno;
		goto fail_pipes;
	}
	int fds[3] = { in[0], out[1], err[1] };
	pid_t pid = start_child(resolve(file, envp, found, sizeof found), cwd, argv, envp, fds, &failed);
	if (pid < 0) {
		rc = errno;
	} else if (failed) {
		rc = failed;
		waitpid(pid, NULL, 0);
	} else {
		r->pid = pid;
	}
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&err[1]);
	if (rc)
		goto fail_pipes;
	r->in_fd = in[1];
	r->out_fd = out[0];
	r->err_fd = err[0];
	if (r->in_fd >= 0)
		fcntl(r->in_fd, F_SETFL, O_NONBLOCK); /* a command not reading stdin must not stall the loop */
	return 0;
fail_pipes:
	close_fd(&in[0]), close_fd(&in[1]), close_fd(&out[0]), close_fd(&out[1]), close_fd(&err[0]), close_fd(&err[1]);
	return rc;
}

/* A cursor over a frame's payload: every read is checked against the end, so a bad frame is refused. */
struct cursor {
	char *p, *end;
	int bad;
};

static uint32_t take_u32(struct cursor *c)
{
	if (c->end - c->p < 4) {
		c->bad = 1;
		return 0;
	}
	uint32_t v = get_u32(c->p);
	c->p += 4;
	return v;
}

/* A string's bytes in the frame (not NUL-terminated: callers copy what they keep). */
static char *take_str(struct cursor *c, size_t *len)
{
	uint32_t n = take_u32(c);
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	char *s = c->p;
	c->p += n;
	if (len)
		*len = n;
	return s;
}

/* A list of strings, copied out NUL-terminated, with `first` before them (argv[0]) when given. */
static char **take_list(struct cursor *c, char *first)
{
	uint32_t count = take_u32(c);
	if (c->bad || count > MAX_LIST) {
		c->bad = 1;
		return NULL;
	}
	size_t extra = first ? 1 : 0;
	char **list = calloc(count + extra + 1, sizeof *list);
	if (!list)
		return NULL;
	if (first)
		list[0] = first;
	for (uint32_t i = 0; i < count; i++) {
		size_t n;
		char *s = take_str(c, &n);
		if (!s || !(list[i + extra] = strndup(s, n))) {
			c->bad = 1;
			break;
		}
	}
	return list;
}

static void free_list(char **list, int skip_first)
{
	if (!list)
		return;
	for (char **p = list + skip_first; *p; p++)
		free(*p);
	free(list);
}

static void start_run(uint32_t id, char *frame, size_t len)
{
	struct cursor c = { frame + 9, frame + len, 0 };
	char *file = NULL, *cwd = NULL, **argv = NULL, **envp = NULL;
	const char *cause = NULL;
	char message[512];
	uint32_t timeout = take_u32(&c);
	uint64_t max_out = take_u32(&c);
	max_out |= (uint64_t)take_u32(&c) << 32;
	uint8_t flags = c.p < c.end ? (uint8_t)*c.p++ : 0;
	size_t n;
	char *s = take_str(&c, &n);
	if (s)
		file = strndup(s, n);
	if (flags & 2 && (s = take_str(&c, &n)))
		cwd = strndup(s, n);
	if (file) {
		argv = take_list(&c, file);
		envp = take_list(&c, NULL);
	}
	char *in_data = NULL;
	size_t in_len = 0;
	if (flags & 1)
		in_data = take_str(&c, &in_len);

	struct run *r = NULL;
	for (int i = 0; i < MAX_RUNS && !r; i++)
		if (!runs[i].used)
			r = &runs[i];
	int rc = 0;
	if (c.bad || !file || !argv || !envp || (flags & 2 && !cwd))
		cause = "the helper could not read the run";
	else if (!r)
		cause = "the helper runs too many commands";
	else {
		memset(r, 0, sizeof *r);
		r->in_fd = r->out_fd = r->err_fd = -1;
		rc = spawn_command(r, file, cwd, argv, envp, flags & 1);
		if (rc) {
			snprintf(message, sizeof message, "spawn %s %s", file, strerror(rc));
			cause = message;
		}
	}
	if (cause) {
		send_done(id, OUT_SPAWN_FAILED, 0, 0, "", 0, "", 0, cause);
		free(frame);
	} else {
		r->used = 1;
		run_count++;
		r->id = id;
		r->frame = frame; /* owns the stdin bytes until written */
		r->in_data = in_data;
		r->in_len = in_len;
		r->out_max = max_out < MAX_OUTPUT ? max_out : MAX_OUTPUT;
		r->deadline = now_ms() + timeout;
		send_small(REP_STARTED, id, (uint32_t)r->pid);
		if (r->in_fd >= 0 && in_len == 0)
			close_fd(&r->in_fd);
	}
	free(cwd);
	free_list(argv, 1);
	free(file);
	free_list(envp, 0);
}

static struct run *find_run(uint32_t id)
{
	for (int i = 0; i < MAX_RUNS; i++)
		if (runs[i].used && runs[i].id == id)
			return &runs[i];
	return NULL;
}

/* Frames from the gateway, gathered across reads. */
static char *inbuf;
static size_t in_len, in_cap;

static void read_link(void)
{
	if (in_cap - in_len < CHUNK) {
		size_t cap = in_cap ? in_cap * 2 : 4 * CHUNK;
		char *grown = realloc(inbuf, cap);
		if (!grown)
			shutdown_all(1);
		inbuf = grown, in_cap = cap;
	}
	ssize_t n = read(LINK_FD, inbuf + in_len, in_cap - in_len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		shutdown_all(n == 0 ? 0 : 1); /* EOF: the gateway went away */
	in_len += (size_t)n;
	size_t at = 0;
	while (in_len - at >= 4) {
		uint32_t len = get_u32(inbuf + at);
		if (len < 5 || len > MAX_FRAME) {
			fprintf(stderr, "tkgate-spawn-helper: bad frame length %u\n", len);
			shutdown_all(2);
		}
		if (in_len - at < 4 + (size_t)len) {
			/* Room for the whole frame, so one more read can complete it. */
			if (in_cap < 4 + (size_t)len) {
				memmove(inbuf, inbuf + at, in_len - at);
				in_len -= at, at = 0;
				char *grown = realloc(inbuf, 4 + (size_t)len + CHUNK);
				if (!grown)
					shutdown_all(1);
				inbuf = grown, in_cap = 4 + (size_t)len + CHUNK;
			}
			break;
		}
		char *f = inbuf + at;
		uint32_t id = get_u32(f + 5);
		if (f[4] == REQ_RUN && !gateway_gone) {
			char *copy = malloc(4 + (size_t)len);
			if (!copy)
				shutdown_all(1);
			memcpy(copy, f, 4 + (size_t)len);
			start_run(id, copy, 4 + (size_t)len);
		} else if (f[4] == REQ_ABORT) {
			struct run *r = find_run(id);
			if (r)
				stop(r, OUT_ABORTED);
		} else if (f[4] == REQ_WATCH) {
			watch((pid_t)id);
		} else if (f[4] == REQ_UNWATCH) {
			unwatch((pid_t)id);
		}
		at += 4 + (size_t)len;
	}
	memmove(inbuf, inbuf + at, in_len - at);
	in_len -= at;
}

static void reap(int sfd)
{
	struct signalfd_siginfo info;
	while (read(sfd, &info, sizeof info) > 0)
		;
	int status;
	pid_t pid;
	/* Leftovers of ended runs are reaped here too: they are the helper's children. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < MAX_RUNS; i++) {
			struct run *r = &runs[i];
			if (!r->used || r->pid != pid)
				continue;
			r->exited = 1;
			r->status = status;
			r->drain_until = now_ms() + DRAIN_MS;
			kill_group(r); /* whatever it left running in its group */
			close_fd(&r->in_fd);
			finish_if_done(r);
		}
	}
	kill_leftovers(0);
}

static void read_output(struct run *r, int is_err)
{
	static char buf[CHUNK];
	int *fd = is_err ? &r->err_fd : &r->out_fd;
	ssize_t n = read(*fd, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close_fd(fd);
		return;
	}
	if (is_err) {
		size_t keep = (size_t)n < STDERR_KEPT - r->err_len ? (size_t)n : STDERR_KEPT - r->err_len;
		memcpy(r->err + r->err_len, buf, keep);
		r->err_len += keep;
		return;
	}
	if (r->stopped == OUT_TOO_LARGE)
		return; /* drained until EOF, kept no more */
	if ((size_t)n > r->out_max - r->out_len) {
		stop(r, OUT_TOO_LARGE);
		return;
	}
	if (r->out_len + (size_t)n > r->out_cap) {
		size_t cap = r->out_cap ? r->out_cap : CHUNK;
		while (cap < r->out_len + (size_t)n)
			cap *= 2;
		char *grown = realloc(r->out, cap);
		if (!grown) {
			stop(r, OUT_TOO_LARGE);
			return;
		}
		r->out = grown, r->out_cap = cap;
	}
	memcpy(r->out + r->out_len, buf, (size_t)n);
	r->out_len += (size_t)n;
}

/* What is already in the run's pipes, read without waiting (a bounded number of reads), then both closed. */
static void drain_and_close(struct run *r)
{
	for (int n = 0; n < 64 && (r->out_fd >= 0 || r->err_fd >= 0); n++) {
		int progressed = 0;
		int *fds[2] = { &r->out_fd, &r->err_fd };
		for (int k = 0; k < 2; k++) {
			if (*fds[k] < 0)
				continue;
			struct pollfd p = { .fd = *fds[k], .events = POLLIN };
			if (poll(&p, 1, 0) == 1) {
				read_output(r, k);
				progressed = 1;
			}
		}
		if (!progressed)
			break;
	}
	close_fd(&r->out_fd);
	close_fd(&r->err_fd);
}

static void write_input(struct run *r)
{
	ssize_t n = write(r->in_fd, r->in_data + r->in_off, r->in_len - r->in_off);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) { /* EPIPE: the command does not read its stdin, which is not an error */
		close_fd(&r->in_fd);
		return;
	}
	r->in_off += (size_t)n;
	if (r->in_off == r->in_len)
		close_fd(&r->in_fd);
}

int main(void)
{
	/* sh leaves SIGINT/SIGQUIT ignored for background jobs: commands get every signal at its default. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN); /* a closed pipe is EPIPE from write(), handled where it happens */
	/* fds 0-2 open (to /dev/null if need be), so no pipe gets one of them and a dup2 onto 1 or 2 clobbers it. */
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
			return 1;
	if (fcntl(LINK_FD, F_SETFD, FD_CLOEXEC) < 0) {
		fprintf(stderr, "tkgate-spawn-helper: no link on fd 3; started by the gateway only\n");
		return 2;
	}
	/* Away from the gateway (see the top of this file): the first process exits, the second goes on. */
	pid_t first = fork();
	if (first < 0)
		return 1;
	if (first > 0)
		_exit(0);
	setsid();
	/* Orphans of the commands come here, not to init: see the top of this file. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return 1;
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0)
		return 1;
	send_small(REP_HELLO, 0, (uint32_t)getpid());

	static struct pollfd fds[2 + 3 * MAX_RUNS];
	static struct run *owner[2 + 3 * MAX_RUNS];
	for (;;) {
		int nfds = 0;
		int64_t now = now_ms(), wait = -1;
		fds[nfds++] = (struct pollfd){ .fd = LINK_FD, .events = POLLIN };
		fds[nfds++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (int i = 0; i < MAX_RUNS; i++) {
			struct run *r = &runs[i];
			if (!r->used)
				continue;
			int64_t until = r->deadline;
			if (r->exited) {
				if (r->drain_until <= now) {
					/* Exited, yet something else holds the pipes: what is in them is read, then the run ends. */
					drain_and_close(r);
					finish_if_done(r);
					continue;
				}
				until = r->drain_until;
			} else if (r->deadline <= now) {
				stop(r, OUT_TIMEOUT);
				r->deadline = until = INT64_MAX; /* killed; its exit (and the pipes' drain) follows */
			}
			if (until != INT64_MAX && (wait < 0 || until - now < wait))
				wait = until - now;
			if (r->out_fd >= 0)
				owner[nfds] = r, fds[nfds++] = (struct pollfd){ .fd = r->out_fd, .events = POLLIN };
			if (r->err_fd >= 0)
				owner[nfds] = r, fds[nfds++] = (struct pollfd){ .fd = r->err_fd, .events = POLLIN };
			if (r->in_fd >= 0)
				owner[nfds] = r, fds[nfds++] = (struct pollfd){ .fd = r->in_fd, .events = POLLOUT };
		}
		flush_replies();
		int ready = poll(fds, (nfds_t)nfds, wait > INT32_MAX ? INT32_MAX : (int)wait);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			shutdown_all(1);
		}
		for (int i = 2; i < nfds; i++) {
			struct run *r = owner[i];
			if (!fds[i].revents)
				continue;
			if (fds[i].fd == r->out_fd)
				read_output(r, 0);
			else if (fds[i].fd == r->err_fd)
				read_output(r, 1);
			else if (fds[i].fd == r->in_fd)
				write_input(r);
			if (r->used)
				finish_if_done(r);
		}
		if (fds[1].revents)
			reap(sfd);
		if (fds[0].revents)
			read_link();
	}
}
