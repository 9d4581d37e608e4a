/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/capability.h>

#include "profile/profile.h"
#include "sampler.skel.h"
#include "sampling/sampler_events.h"
#include "sampling/sampler_user.h"
#include "sampling/features.h"
#include "sampling/samplequeue.h"
#include "sampling/tracefs.h"
#include "sampling/uprobe.h"
#include "util/util.h"

/* Event profile types, by SP_PROF_* (CPU is the perf events below). */
static const struct sampler_event_type *const event_types[SP_PROF_NTYPES] = {
    [SP_PROF_ALLOC] = &sampler_ev_alloc,
    [SP_PROF_LOCK] = &sampler_ev_lock,
    [SP_PROF_OFFCPU] = &sampler_ev_offcpu,
};

struct sampler {
	struct sampler_bpf *skel;
	struct ring_buffer *rb;	    /* the sample ring: consumed under qlock, into q */
	struct ring_buffer *rb_unw; /* the unwinder's notifications: the main thread's */
	/*
	 * Notifications wake nobody until their ring is a quarter full (bpf/unwind.bpf.h): the
	 * drain thread compares the ring's positions every DRAIN_PERIOD_MS and, when it holds
	 * records, counts unw_kick (an eventfd the main thread polls besides the ring). -1 / NULL
	 * when absent (then the main thread reads the ring at each of its polls, <= 100 ms).
	 */
	int unw_kick;
	const unsigned long *unw_cons, *unw_prod;
	size_t unw_page;
	size_t rb_bytes;
	/*
	 * The drain thread empties the sample ring into q every DRAIN_PERIOD_MS, however long the
	 * main thread is busy; the main thread takes q whole (into qread) and delivers it.
	 */
	struct samplequeue *q, *qread;
	pthread_mutex_t qlock;
	pthread_t drainer;
	int drainer_on, drainer_stop, delivering, qlock_on;
	uint64_t queue_lost; /* records the queue had no memory for */
	uint64_t queue_full; /* ring_to_queue() calls that found no room for the ring */
	size_t queue_max;
	void *scratch; /* one struct sp_sample, rebuilt from the queue */
	int ncpus;     /* possible CPUs */
	int *pfds;     /* perf event fd per CPU, -1 if offline */
	struct bpf_link **links;
	int nattached;
	sampler_cb cb;
	void *ctx;
	sampler_event_cb event_cb;
	struct bpf_link *proc_links[2]; /* process hooks (bpf/prochooks.bpf.h): exec, exit */
	struct bpf_link *unw_mmap_link;
	int mmap_fentry;  /* the mmap hook is tried as an fentry first (else the tracepoint) */
	int prctl_fentry; /* the prctl hook likewise */
	struct sampler_unwind_maps unw;
	/* proc_known (bpf/sampler.h), mapped: SP_PROC_KNOWN_WORDS words; NULL if not created. */
	__u64 *proc_known;
	int unwind;
	int threadctx;
	int python; /* the Python walk is loaded */
	/* The code-object cache's deallocation uprobes, one per process (link NULL: a free
	 * slot), with the process each is for. */
	int py_code_cache;
	struct py_dealloc_link {
		struct bpf_link *link;
		uint32_t pid;
	} * py_dealloc_links;
	size_t npy_dealloc_links;
	struct bpf_link *ctx_prctl_link;
	struct bpf_link **uprobe_links;
	size_t nuprobe_links, max_uprobe_links;
	uint32_t types;				    /* profile types: 1 << SP_PROF_* */
	void *ev_state[SP_PROF_NTYPES];		    /* event types' own state */
	uint32_t filter_exe_max, filter_cgroup_max; /* targeting maps; 0: filter not loaded */
	sampler_exec_path_cb exec_path_cb;	    /* file identities: executable paths */
};

static int handle_unwind_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size < sizeof(struct unwind_event) || !s->event_cb)
		return 0;
	return s->event_cb(s->ctx, data);
}

/*
 * The mmap and prctl hooks are classic tracepoints: libbpf finds its id in tracefs, which may not
 * be mounted (tracefs__ensure(): never unmounted from under other tools). Without it, new code is
 * found by the fallback (a PC outside the known mappings makes the agent re-read them).
 */
static struct bpf_link *attach_tracepoint(struct bpf_program *prog)
{
	tracefs__ensure();
	return bpf_program__attach(prog);
}

/*
 * The exec and exit hooks (one program each, running the parts switched on: unwinder, executable
 * paths, CPython descriptors, context threads). The unwinder and the context threads cannot do
 * without them (an error); the other parts warn and go on.
 */
static int attach_proc_hooks(struct sampler *s)
{
	static const char *const tp[2] = {"sched_process_exec", "sched_process_exit"};
	struct bpf_program *prog[2] = {s->skel->progs.on_proc_exec, s->skel->progs.on_proc_exit};
	int need = s->unwind || s->uprobe_links;

	for (int i = 0; i < 2; i++) {
		if (!bpf_program__autoload(prog[i]))
			continue;
		int err;

		s->proc_links[i] = bpf_program__attach(prog[i]);
		if (s->proc_links[i])
			continue;
		err = -errno;
		fprintf(stderr, "spanprof: %sattaching the process hook tp_btf/%s failed: %s%s\n",
			need ? "" : "warning: ", tp[i], strerror(-err),
			need ? ""
			     : " (CPython descriptors stay until the agent's sweep; short-lived "
			       "processes are named only from files a live process showed)");
		if (need)
			return err;
	}
	return 0;
}

/*
 * Attaches a system-call hook (@what: "mmap", "prctl"): @fentry where @use_fentry (the kernel
 * takes it), else @tp, the syscall's entry tracepoint syscalls/sys_enter_@what. The link, or
 * NULL after a warning ending in @without (what is lost).
 */
static struct bpf_link *attach_syscall_hook(const char *what, struct bpf_program *fentry,
					    int use_fentry, struct bpf_program *tp,
					    const char *without)
{
	struct bpf_link *link = NULL;

	if (use_fentry) {
		link = bpf_program__attach(fentry);
		if (!link && getenv("SPANPROF_DEBUG"))
			fprintf(stderr, "spanprof: the %s hook's fentry did not attach (%s)\n",
				what, strerror(errno));
	}
	if (link) {
		if (getenv("SPANPROF_DEBUG"))
			fprintf(stderr, "spanprof: %s hook: fentry on %s\n", what,
				bpf_program__section_name(fentry) + strlen("fentry/"));
		return link;
	}
	link = attach_tracepoint(tp);
	if (!link)
		fprintf(stderr,
			"spanprof: warning: no %s hook (tracepoint syscalls/sys_enter_%s: %s; is "
			"tracefs mounted at /sys/kernel/tracing?): %s\n",
			what, what, strerror(errno), without);
	else if (getenv("SPANPROF_DEBUG"))
		fprintf(stderr, "spanprof: %s hook: tracepoint syscalls/sys_enter_%s\n", what,
			what);
	return link;
}

/* SPANPROF_<@what>_HOOK=tracepoint keeps a system-call hook on its tracepoint (to measure it, or
 * for a kernel whose fentry misbehaves). */
static int syscall_hook_fentry(const struct kfeatures *kf, enum kfeature f, const char *env)
{
	return kf->have[f] == 1 && !(getenv(env) && !strcmp(getenv(env), "tracepoint"));
}

/* One record of the sample ring, from the queue: to the recorder. */
static int deliver(struct sampler *s, void *data, size_t size)
{
	if (size == sizeof(struct sp_exec_path))
		return s->exec_path_cb ? s->exec_path_cb(s->ctx, data) : 0;
	if (size < sizeof(struct sp_sample))
		return 0;
	return s->cb(s->ctx, data);
}

/* The ring's callback (qlock held): into the queue, compacted. */
static int handle_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (samplequeue__push(s->q, data, size))
		s->queue_lost++;
	return 0;
}

/* Bytes the queue keeps free for one whole ring (and a block): consume only with that room. */
#define QUEUE_SLACK (512u << 10)

/*
 * Moves what the sample ring holds into the queue, if the queue has room for all of it;
 * otherwise leaves it there (the ring then fills and BPF counts what it cannot keep, per type).
 * Returns 1 when the ring was consumed.
 */
static int ring_to_queue(struct sampler *s)
{
	int done = 0;

	pthread_mutex_lock(&s->qlock);
	if (samplequeue__bytes(s->q) + s->rb_bytes + QUEUE_SLACK <= s->queue_max) {
		ring_buffer__consume(s->rb);
		done = 1;
	} else {
		s->queue_full++;
	}
	pthread_mutex_unlock(&s->qlock);
	return done;
}

/*
 * Delivers the queued records, oldest first, for at most @budget_ns (0: until the queue is
 * empty), so that a main thread far behind still gets back to its other duties (the export
 * interval, the deadline) in time. Returns the records delivered.
 */
static int deliver_queue(struct sampler *s, uint64_t budget_ns)
{
	uint64_t end = budget_ns ? util__mono_ns() + budget_ns : UINT64_MAX;
	size_t size;
	void *rec;
	int n = 0;

	if (s->delivering) /* a callback that drains: the outer call delivers the rest */
		return 0;
	s->delivering = 1;
	for (;;) {
		rec = samplequeue__pop(s->qread, s->scratch, &size);
		if (!rec) {
			pthread_mutex_lock(&s->qlock);
			samplequeue__take(s->q, s->qread);
			pthread_mutex_unlock(&s->qlock);
			rec = samplequeue__pop(s->qread, s->scratch, &size);
		}
		if (!rec)
			break;
		deliver(s, rec, size);
		if (++n % 64 == 0 && util__mono_ns() > end)
			break;
	}
	s->delivering = 0;
	return n;
}

/* Per sampler__poll(): the main loop's other duties come back at least this often. */
#define DELIVER_BUDGET_NS (200 * 1000000ull)

/*
 * Maps the notification ring's two position pages read-only and opens the eventfd the drain
 * thread counts: the layout of a BPF_MAP_TYPE_RINGBUF's mmap (kernel/bpf/ringbuf.c: the
 * consumer position at offset 0, the producer position one page further, each an unsigned
 * long). Without them the main thread reads the ring at each of its polls.
 */
static void watch_notifications(struct sampler *s)
{
	int fd = bpf_map__fd(s->skel->maps.unwind_events);
	void *cons, *prod;

	s->unw_page = (size_t)sysconf(_SC_PAGESIZE);
	cons = mmap(NULL, s->unw_page, PROT_READ, MAP_SHARED, fd, 0);
	prod = mmap(NULL, s->unw_page, PROT_READ, MAP_SHARED, fd, (off_t)s->unw_page);
	s->unw_kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cons == MAP_FAILED || prod == MAP_FAILED || s->unw_kick < 0) {
		fprintf(stderr,
			"spanprof: warning: cannot watch the unwinder's notifications (%s): they "
			"are read every 100 ms\n",
			strerror(errno));
		if (cons != MAP_FAILED)
			munmap(cons, s->unw_page);
		if (prod != MAP_FAILED)
			munmap(prod, s->unw_page);
		if (s->unw_kick >= 0)
			close(s->unw_kick);
		s->unw_kick = -1;
		return;
	}
	s->unw_cons = cons;
	s->unw_prod = prod;
}

/* The drain thread: notifications are waiting (the ring's positions differ): wake the main one. */
static void kick_notifications(struct sampler *s)
{
	uint64_t one = 1;

	if (!s->unw_cons || __atomic_load_n(s->unw_cons, __ATOMIC_ACQUIRE) ==
				__atomic_load_n(s->unw_prod, __ATOMIC_ACQUIRE))
		return;
	if (write(s->unw_kick, &one, sizeof(one)) < 0) {
		/* EAGAIN only (the count is at its maximum): the main thread is woken already */
	}
}

/* The drain thread: moves records from the ring to the queue, wakes the main thread for
 * notifications. */
#define DRAIN_PERIOD_MS 10

static void *drainer_main(void *arg)
{
	struct sampler *s = arg;
	struct pollfd pfd = {.fd = ring_buffer__epoll_fd(s->rb), .events = POLLIN};
	cap_t none = cap_init();

	/* It copies memory: no capability (the main thread drops its own after loading). */
	if (none) {
		cap_set_proc(none);
		cap_free(none);
	}
	while (!__atomic_load_n(&s->drainer_stop, __ATOMIC_ACQUIRE)) {
		poll(&pfd, 1, DRAIN_PERIOD_MS);
		ring_to_queue(s);
		kick_notifications(s);
	}
	return NULL;
}

static int open_cpu_clock(int cpu, uint32_t freq)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .sample_freq = freq,
	    .freq = 1,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * libbpf's messages while the object loads (CO-RE relocations, the verifier log of a refused
 * program): kept in memory, written to a file named in the message when the load fails. libbpf's
 * print callback takes no context, hence the file-scope state (the load is single-threaded).
 */
static FILE *load_log;
static char load_last_warning[256]; /* libbpf's first warning: what failed */

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	va_list copy;
	int debug = getenv("SPANPROF_DEBUG") != NULL;

	if (load_log) {
		va_copy(copy, ap);
		vfprintf(load_log, fmt, copy);
		va_end(copy);
		if (level == LIBBPF_WARN) {
			va_copy(copy, ap);
			/* The verifier's log is WARN too: keep libbpf's first line of its own. */
			if (!load_last_warning[0] && strncmp(fmt, "libbpf: ", 8) == 0 &&
			    !strstr(fmt, "LOAD LOG"))
				vsnprintf(load_last_warning, sizeof(load_last_warning), fmt, copy);
			va_end(copy);
		}
		return debug && level != LIBBPF_DEBUG ? vfprintf(stderr, fmt, ap) : 0;
	}
	if (level == LIBBPF_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && !debug)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void sampler__startup_mark(FILE *f, uint64_t t0_ns, const char *fmt, ...)
{
	va_list ap;

	if (!f)
		return;
	fprintf(f, "spanprof: start-up +%.3f s: ", (util__mono_ns() - t0_ns) / 1e9);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

static uint64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * The start-up timeline's line per loaded program, in load order: the instructions the verifier
 * processed (bpf_prog_info.verified_insns, Linux 5.16) and its load time, from the kernel's
 * CLOCK_BOOTTIME at the start of its load (bpf_prog_info.load_time, taken before the verifier
 * runs) to the next program's, the last one's to @load_end_boot_ns (libbpf loads them one after
 * the other). What comes before the first (@load_start_boot_ns on) is map creation and
 * relocation.
 */
struct prog_load {
	const char *name;
	uint32_t insns;
	uint64_t start;
};

static int prog_load_cmp(const void *a, const void *b)
{
	const struct prog_load *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void log_program_loads(const struct sampler *s, FILE *f, uint64_t t0_ns,
			      uint64_t load_start_boot_ns, uint64_t load_end_boot_ns)
{
	struct prog_load pl[64];
	struct bpf_program *prog;
	uint64_t total = 0;
	size_t n = 0;

	bpf_object__for_each_program(prog, s->skel->obj)
	{
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (n == sizeof(pl) / sizeof(pl[0]) || fd < 0 ||
		    bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		pl[n].name = bpf_program__name(prog);
		pl[n].insns = info.verified_insns;
		pl[n++].start = info.load_time;
		total += info.verified_insns;
	}
	qsort(pl, n, sizeof(pl[0]), prog_load_cmp);
	if (n && pl[0].start > load_start_boot_ns)
		sampler__startup_mark(f, t0_ns, "maps created, relocations done: %.3f s",
				      (pl[0].start - load_start_boot_ns) / 1e9);
	for (size_t i = 0; i < n; i++) {
		uint64_t end = i + 1 < n ? pl[i + 1].start : load_end_boot_ns;

		sampler__startup_mark(f, t0_ns, "program %s: %u instructions verified, %.3f s",
				      pl[i].name, pl[i].insns,
				      end > pl[i].start ? (end - pl[i].start) / 1e9 : 0.0);
	}
	sampler__startup_mark(f, t0_ns, "BPF object loaded: %llu instructions verified in all",
			      (unsigned long long)total);
}

/* kernel.perf_event_max_stack: where bpf_get_stack()'s frame-pointer walk stops (127 if unread). */
static __u32 fp_max_depth(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "re");
	unsigned int v = 0;

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 127;
}

/*
 * After a failed load: the messages libbpf gave while loading (@buf, @len bytes) go to a new
 * file /tmp/spanprof-bpf-load-XXXXXX.log; its name is written into @path (empty if none).
 */
static void save_load_log(const char *buf, size_t len, char *path, size_t path_size)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int fd;

	snprintf(path, path_size, "%s/spanprof-bpf-load-XXXXXX.log", dir);
	fd = mkstemps(path, 4);
	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		if (fd >= 0)
			unlink(path);
		path[0] = '\0';
	}
	if (fd >= 0)
		close(fd);
}

/*
 * The verifier's reason for refusing a program: in the log libbpf printed (@buf, @len), the last
 * line before the statistics ending the first "-- END PROG LOAD LOG --". "" when there is none.
 */
static void verifier_reason(const char *buf, size_t len, char *out, size_t out_size)
{
	const char *end = memmem(buf, len, "-- END PROG LOAD LOG --", 23), *line;

	out[0] = '\0';
	while (end && end > buf) {
		line = end - 1; /* the '\n' ending the previous line */
		while (line > buf && line[-1] != '\n')
			line--;
		if (end - line > 1 && strncmp(line, "processed ", 10) &&
		    strncmp(line, "verification time", 17) && strncmp(line, "stack depth", 11)) {
			snprintf(out, out_size, "%.*s", (int)(end - 1 - line), line);
			return;
		}
		end = line;
	}
}

/* Requirements (docs/kernels.md), as masks of 1 << KFEAT_*. */
#define KF(f) (1u << KFEAT_##f)
#define NEED_CORE (KF(BTF) | KF(RINGBUF) | KF(BOOT_NS) | KF(TASK_BTF) | KF(TASK_PT_REGS))
#define NEED_CPU KF(PERF_EVENT_PROG)
#define NEED_UPROBES KF(ATTACH_COOKIE)
#define NEED_OFFCPU (KF(TASK_STORAGE) | KF(GET_TASK_STACK) | KF(SWITCH_PREV_STATE))
#define NEED_UNWIND (KF(LOOP) | KF(FIND_VMA))
#define NEED_FILEIDS (KF(FIND_VMA) | KF(MAPLE_TREE))

/*
 * Probes the running kernel (sampling/features.h) and fits the run to it: what the agent cannot
 * do without is refused with one line naming the feature and the kernel that brings it; the CFI
 * unwinder and file identities are turned off (with a warning) where the kernel lacks theirs.
 * Returns 0 or -EOPNOTSUPP.
 */
static int fit_to_kernel(struct sampler *s, const struct sampler_opts *opts, int *fileids)
{
	struct kfeatures kf;
	enum kfeature f;
	const char *what = "spanprof";
	uint32_t need = NEED_CORE;

	kfeatures__probe(&kf);
	if (getenv("SPANPROF_DEBUG"))
		kfeatures__print(&kf, stderr);
	f = kfeatures__first_missing(&kf, need);
	if (f == KFEAT_COUNT && (s->types & (1u << SP_PROF_CPU))) {
		f = kfeatures__first_missing(&kf, NEED_CPU);
		what = "--profile cpu";
	}
	if (f == KFEAT_COUNT &&
	    ((s->types & (1u << SP_PROF_ALLOC)) || (opts->threadctx && opts->ctx_uprobes))) {
		f = kfeatures__first_missing(&kf, NEED_UPROBES);
		what = s->types & (1u << SP_PROF_ALLOC) ? "--profile alloc" : "--context-uprobe";
	}
	if (f == KFEAT_COUNT && (s->types & (1u << SP_PROF_OFFCPU))) {
		f = kfeatures__first_missing(&kf, NEED_OFFCPU);
		what = "--profile offcpu";
	}
	if (f != KFEAT_COUNT) {
		fprintf(stderr,
			"spanprof: %s needs %s, which this kernel lacks (Linux %s and later have "
			"it; docs/kernels.md)\n",
			what, kfeature__name(f), kfeature__since(f));
		return -EOPNOTSUPP;
	}
	f = kfeatures__first_missing(&kf, NEED_UNWIND);
	if (s->unwind && f != KFEAT_COUNT) {
		fprintf(stderr,
			"spanprof: warning: CFI unwinding off: it needs %s (Linux %s); user "
			"stacks by frame pointers only\n",
			kfeature__name(f), kfeature__since(f));
		s->unwind = 0;
	}
	/*
	 * The mmap and prctl hooks as fentry programs where the kernel allows it, not syscall
	 * tracepoints: one of those puts every task on the slow system-call path.
	 */
	s->mmap_fentry = syscall_hook_fentry(&kf, KFEAT_MMAP_FENTRY, "SPANPROF_MMAP_HOOK");
	s->prctl_fentry = syscall_hook_fentry(&kf, KFEAT_PRCTL_FENTRY, "SPANPROF_PRCTL_HOOK");
	f = kfeatures__first_missing(&kf, NEED_FILEIDS);
	if (*fileids && f != KFEAT_COUNT) {
		fprintf(stderr,
			"spanprof: warning: file identities off: they need %s (Linux %s); "
			"processes gone before their maps are read stay unnamed\n",
			kfeature__name(f), kfeature__since(f));
		*fileids = 0;
	}
	return 0;
}

struct sampler *sampler__new(const struct sampler_opts *opts)
{
	struct sampler *s;
	uint32_t rb_bytes = opts->ringbuf_bytes ? opts->ringbuf_bytes : 4u << 20;
	int err, cpu, fileids;
	uint64_t load_start;
	uint8_t one = 1;
	char *log_buf = NULL;
	size_t log_len = 0;

	libbpf_set_print(libbpf_quiet);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->qlock, NULL);
	s->qlock_on = 1;
	s->unw_kick = -1;
	s->cb = opts->cb;
	s->ctx = opts->ctx;
	s->event_cb = opts->event_cb;
	s->types = opts->profile_types ? opts->profile_types : 1u << SP_PROF_CPU;
	s->unwind = opts->unwind_max_chunks > 0;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		err = s->ncpus ? s->ncpus : -EINVAL;
		fprintf(stderr, "spanprof: cannot count the possible CPUs: %s\n", strerror(-err));
		goto cleanup;
	}

	/* File identities (bpf/fileid.bpf.h); SPANPROF_FILEIDS=0 turns them off, to measure. */
	fileids = !getenv("SPANPROF_FILEIDS") || strcmp(getenv("SPANPROF_FILEIDS"), "0") != 0;
	sampler__startup_mark(opts->startup_log, opts->startup_t0_ns, "probing the kernel");
	err = fit_to_kernel(s, opts, &fileids);
	if (err)
		goto cleanup;
	sampler__startup_mark(opts->startup_log, opts->startup_t0_ns,
			      "kernel probed (BTF parsed); opening the BPF object");

	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = -errno;
		fprintf(stderr, "spanprof: cannot open the BPF object: %s\n", strerror(-err));
		goto cleanup;
	}
	/* Targeting (bpf/filter.bpf.h): only the filters asked for are loaded. */
	s->skel->rodata->filter_mask = (opts->npids ? SP_FILTER_PID : 0) |
				       (opts->filter_exe_max ? SP_FILTER_EXE : 0) |
				       (opts->filter_cgroup_max ? SP_FILTER_CGROUP : 0);
	if (opts->npids > 0)
		bpf_map__set_max_entries(s->skel->maps.pid_filter, opts->npids);
	if (opts->filter_exe_max)
		bpf_map__set_max_entries(s->skel->maps.exe_filter, opts->filter_exe_max);
	if (opts->filter_cgroup_max)
		bpf_map__set_max_entries(s->skel->maps.cgroup_filter, opts->filter_cgroup_max);
	s->filter_exe_max = opts->filter_exe_max;
	s->filter_cgroup_max = opts->filter_cgroup_max;
	bpf_map__set_max_entries(s->skel->maps.events, rb_bytes);
	s->skel->rodata->ringbuf_wakeup_bytes = rb_bytes / 4;
	s->skel->rodata->unwind_enabled = s->unwind;
	s->skel->rodata->fp_max_depth = fp_max_depth();
	/* File identities (bpf/fileid.bpf.h), where the kernel has what they need. */
	s->skel->rodata->fileid_enabled = fileids;
	/* Only the programs of the selected profile types load (and are verified). */
	if (!(s->types & (1u << SP_PROF_CPU)))
		bpf_program__set_autoload(s->skel->progs.on_cpu_sample, false);
	s->exec_path_cb = opts->exec_path_cb;
	s->skel->rodata->exec_paths_enabled = s->exec_path_cb && fileids;
	if (s->unwind) {
		s->unw.max_chunks = opts->unwind_max_chunks;
		s->unw.max_tables = opts->unwind_max_tables ? opts->unwind_max_tables : 16384;
		s->unw.max_procs = opts->unwind_max_procs ? opts->unwind_max_procs : 8192;
		bpf_map__set_max_entries(s->skel->maps.unwind_chunks, s->unw.max_chunks);
		bpf_map__set_max_entries(s->skel->maps.unwind_tables, s->unw.max_tables);
		bpf_map__set_max_entries(s->skel->maps.unwind_procs, s->unw.max_procs);
	} else {
		/* Nothing of the walker is created: one-entry maps, hooks not loaded. */
		bpf_map__set_max_entries(s->skel->maps.unwind_chunks, 1);
		bpf_map__set_max_entries(s->skel->maps.unwind_tables, 1);
		bpf_map__set_max_entries(s->skel->maps.unwind_procs, 1);
		bpf_program__set_autoload(s->skel->progs.on_unw_mmap, false);
	}
	/* The tracepoint loads too: the fallback where the fentry does not attach. */
	bpf_program__set_autoload(s->skel->progs.on_mmap_fentry, s->unwind && s->mmap_fentry);

	s->python = opts->python_max_procs > 0;
	s->skel->rodata->python_enabled = s->python;
	bpf_map__set_max_entries(s->skel->maps.py_procs, s->python ? opts->python_max_procs : 1);
	s->py_code_cache = s->python && opts->python_code_cache;
	bpf_map__set_max_entries(s->skel->maps.py_code_epochs,
				 s->py_code_cache ? opts->python_max_procs : 1);
	bpf_program__set_autoload(s->skel->progs.on_py_code_dealloc, s->py_code_cache);
	/* Only the per-process maps of the walkers have bits (one word: every PID looks up). */
	if (!s->unwind && !s->python)
		bpf_map__set_max_entries(s->skel->maps.proc_known, 1);

	s->threadctx = opts->threadctx;
	s->skel->rodata->threadctx_enabled = opts->threadctx;
	if (opts->threadctx) {
		bpf_map__set_max_entries(s->skel->maps.tls_procs, opts->threadctx_max_procs
								      ? opts->threadctx_max_procs
								      : 8192);
		bpf_map__set_max_entries(s->skel->maps.go_procs, opts->threadctx_max_procs
								     ? opts->threadctx_max_procs
								     : 8192);
	} else {
		bpf_map__set_max_entries(s->skel->maps.tls_procs, 1);
		bpf_map__set_max_entries(s->skel->maps.go_procs, 1);
	}
	if (!opts->threadctx || !s->unwind)
		bpf_program__set_autoload(s->skel->progs.on_ctx_prctl, false);
	/* As for the mmap hook, the tracepoint loads too. */
	bpf_program__set_autoload(s->skel->progs.on_ctx_prctl_fentry,
				  opts->threadctx && s->unwind && s->prctl_fentry);
	if (!opts->threadctx || !opts->ctx_uprobes) {
		bpf_map__set_max_entries(s->skel->maps.ctx_threads, 1);
		bpf_program__set_autoload(s->skel->progs.on_ctx_enter, false);
		bpf_program__set_autoload(s->skel->progs.on_ctx_return, false);
	} else {
		s->skel->rodata->ctx_threads_enabled = 1;
		s->max_uprobe_links = opts->ctx_uprobes * 2;
		s->uprobe_links = calloc(s->max_uprobe_links, sizeof(*s->uprobe_links));
		if (!s->uprobe_links) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	/* The process hooks load when one of their parts is on (bpf/prochooks.bpf.h). */
	bpf_program__set_autoload(s->skel->progs.on_proc_exec,
				  s->unwind || s->python || s->skel->rodata->exec_paths_enabled);
	bpf_program__set_autoload(s->skel->progs.on_proc_exit,
				  s->unwind || s->python || s->skel->rodata->ctx_threads_enabled);

	for (int t = 0; t < SP_PROF_NTYPES; t++) {
		if (!event_types[t])
			continue;
		err = event_types[t]->configure(s->skel, opts, !!(s->types & (1u << t)));
		if (err)
			goto cleanup;
	}

	load_log = open_memstream(&log_buf, &log_len);
	load_last_warning[0] = '\0';
	libbpf_set_print(libbpf_quiet); /* a probe above may have reset it */
	sampler__startup_mark(opts->startup_log, opts->startup_t0_ns,
			      "loading the BPF object (maps, then each program)");
	load_start = boot_ns();
	err = sampler_bpf__load(s->skel);
	if (load_log) {
		fclose(load_log);
		load_log = NULL;
	}
	if (err) {
		char path[256] = "", reason[256] = "", *nl = strchr(load_last_warning, '\n');

		if (nl)
			*nl = '\0';
		if (log_buf) {
			save_load_log(log_buf, log_len, path, sizeof(path));
			verifier_reason(log_buf, log_len, reason, sizeof(reason));
		}
		fprintf(stderr,
			"spanprof: loading the BPF sampler failed: %s (%s%s%s); libbpf's and the "
			"verifier's log: %s (supported kernels: docs/kernels.md)\n",
			strerror(-err),
			load_last_warning[0] ? load_last_warning : "libbpf said no more",
			reason[0] ? "; verifier: " : "", reason, path[0] ? path : "not saved");
	}
	free(log_buf);
	if (err)
		goto cleanup;
	if (opts->startup_log)
		log_program_loads(s, opts->startup_log, opts->startup_t0_ns, load_start, boot_ns());
	for (size_t i = 0; i < opts->npids; i++) {
		err = bpf_map_update_elem(bpf_map__fd(s->skel->maps.pid_filter), &opts->pids[i],
					  &one, BPF_ANY);
		if (err) {
			err = -errno;
			fprintf(stderr, "spanprof: cannot fill the PID filter: %s\n",
				strerror(-err));
			goto cleanup;
		}
	}

	if (s->unwind || s->python) {
		/*
		 * Without it the walkers' entries would have no bits and the hooks would forget
		 * none of them: stop here.
		 */
		void *known =
		    mmap(NULL, SP_PROC_KNOWN_WORDS * sizeof(__u64), PROT_READ | PROT_WRITE,
			 MAP_SHARED, bpf_map__fd(s->skel->maps.proc_known), 0);

		if (known == MAP_FAILED) {
			err = -errno;
			fprintf(stderr, "spanprof: cannot map the BPF map proc_known: %s\n",
				strerror(-err));
			goto cleanup;
		}
		s->proc_known = known;
		s->unw.proc_known = known;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->rb) {
		err = -errno;
		fprintf(stderr, "spanprof: cannot map the ring buffer: %s\n", strerror(-err));
		goto cleanup;
	}
	/* Four rings' worth (at least 32 MiB), used only while the main thread is behind. */
	s->rb_bytes = rb_bytes;
	s->queue_max = 4 * (size_t)rb_bytes < (32u << 20) ? (32u << 20) : 4 * (size_t)rb_bytes;
	s->q = samplequeue__new(s->queue_max);
	s->qread = samplequeue__new(s->queue_max);
	s->scratch = malloc(sizeof(struct sp_sample));
	if (!s->q || !s->qread || !s->scratch) {
		err = -ENOMEM;
		fprintf(stderr, "spanprof: cannot allocate the sample queue\n");
		goto cleanup;
	}
	if (s->unwind) {
		s->rb_unw = ring_buffer__new(bpf_map__fd(s->skel->maps.unwind_events),
					     handle_unwind_event, s, NULL);
		err = s->rb_unw ? 0 : -errno;
		if (err) {
			fprintf(stderr, "spanprof: cannot map the unwinder's ring buffer: %s\n",
				strerror(-err));
			goto cleanup;
		}
		watch_notifications(s);
		s->unw.chunks_fd = bpf_map__fd(s->skel->maps.unwind_chunks);
		s->unw.tables_fd = bpf_map__fd(s->skel->maps.unwind_tables);
		s->unw.procs_fd = bpf_map__fd(s->skel->maps.unwind_procs);
		s->unw_mmap_link =
		    attach_syscall_hook("mmap", s->skel->progs.on_mmap_fentry, s->mmap_fentry,
					s->skel->progs.on_unw_mmap,
					"code mapped later is found when its first PC is sampled");
		/* Without it, contexts published later are found by the periodic re-check. */
		if (s->threadctx)
			s->ctx_prctl_link = attach_syscall_hook(
			    "prctl", s->skel->progs.on_ctx_prctl_fentry, s->prctl_fentry,
			    s->skel->progs.on_ctx_prctl,
			    "process contexts published later are found within a minute");
	}
	err = attach_proc_hooks(s);
	if (err)
		goto cleanup;
	sampler__startup_mark(opts->startup_log, opts->startup_t0_ns,
			      "process and mmap hooks attached");

	for (int t = 0; t < SP_PROF_NTYPES; t++) {
		if (!event_types[t] || !(s->types & (1u << t)))
			continue;
		err = event_types[t]->attach(s->skel, opts, &s->ev_state[t]);
		if (err)
			goto cleanup;
		sampler__startup_mark(opts->startup_log, opts->startup_t0_ns,
				      "--profile %s attached", profile__type_info(t)->name);
	}

	s->pfds = malloc(sizeof(*s->pfds) * s->ncpus);
	s->links = calloc(s->ncpus, sizeof(*s->links));
	if (!s->pfds || !s->links) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (cpu = 0; cpu < s->ncpus; cpu++)
		s->pfds[cpu] = -1;
	for (cpu = 0; cpu < s->ncpus && (s->types & (1u << SP_PROF_CPU)); cpu++) {
		s->pfds[cpu] = open_cpu_clock(cpu, opts->frequency_hz);
		if (s->pfds[cpu] < 0) {
			err = -errno;
			if (err == -ENODEV) /* offline CPU */
				continue;
			fprintf(
			    stderr,
			    "spanprof: perf_event_open(cpu-clock) on CPU %d failed: %s "
			    "(needs CAP_PERFMON or root, and kernel.perf_event_paranoid <= 2)\n",
			    cpu, strerror(-err));
			goto cleanup;
		}
		s->links[cpu] =
		    bpf_program__attach_perf_event(s->skel->progs.on_cpu_sample, s->pfds[cpu]);
		if (!s->links[cpu]) {
			err = -errno;
			fprintf(stderr, "spanprof: attaching the sampler to CPU %d failed: %s\n",
				cpu, strerror(-err));
			goto cleanup;
		}
		s->nattached++;
	}
	if (!s->nattached && (s->types & (1u << SP_PROF_CPU))) {
		err = -ENODEV;
		fprintf(stderr, "spanprof: no online CPU accepted a perf event\n");
		goto cleanup;
	}
	err = pthread_create(&s->drainer, NULL, drainer_main, s);
	if (err) /* the main thread drains alone, as before */
		fprintf(stderr,
			"spanprof: warning: no drain thread (%s): samples may be lost "
			"while the agent is busy\n",
			strerror(err));
	s->drainer_on = !err;
	err = 0;
	sampler__startup_mark(opts->startup_log, opts->startup_t0_ns,
			      "perf events attached on %d CPUs", s->nattached);
	if (!opts->start_disabled)
		sampler__start(s);
	return s;

cleanup:
	sampler__free(s);
	errno = -err;
	return NULL;
}

void sampler__start(struct sampler *s)
{
	/* The perf events run from attach on; the program ignores them until this flag is set. */
	s->skel->bss->sampling = 1;
}

void sampler__stop(struct sampler *s)
{
	if (s && s->skel && s->skel->bss) /* the event types too, at the same moment */
		s->skel->bss->sampling = 0;
	for (int cpu = 0; s && s->pfds && cpu < s->ncpus; cpu++)
		if (s->pfds[cpu] >= 0)
			ioctl(s->pfds[cpu], PERF_EVENT_IOC_DISABLE, 0);
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	/* First: a tracepoint link's program is released a grace period after it goes. */
	for (int cpu = 0; s->links && cpu < s->ncpus; cpu++)
		bpf_link__destroy(s->links[cpu]);
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(s->proc_links[i]);
	bpf_link__destroy(s->unw_mmap_link);
	bpf_link__destroy(s->ctx_prctl_link);
	for (size_t i = 0; i < s->nuprobe_links; i++)
		bpf_link__destroy(s->uprobe_links[i]);
	free(s->uprobe_links);
	for (size_t i = 0; i < s->npy_dealloc_links; i++)
		bpf_link__destroy(s->py_dealloc_links[i].link);
	free(s->py_dealloc_links);
	for (int t = 0; t < SP_PROF_NTYPES; t++)
		if (event_types[t] && s->ev_state[t])
			event_types[t]->free(s->ev_state[t]);
	for (int cpu = 0; s->pfds && cpu < s->ncpus; cpu++)
		if (s->pfds[cpu] >= 0)
			close(s->pfds[cpu]);
	if (s->drainer_on) {
		__atomic_store_n(&s->drainer_stop, 1, __ATOMIC_RELEASE);
		pthread_join(s->drainer, NULL);
	}
	ring_buffer__free(s->rb);
	ring_buffer__free(s->rb_unw);
	if (s->unw_cons) {
		munmap((void *)s->unw_cons, s->unw_page);
		munmap((void *)s->unw_prod, s->unw_page);
	}
	if (s->unw_kick >= 0)
		close(s->unw_kick);
	if (s->proc_known)
		munmap(s->proc_known, SP_PROC_KNOWN_WORDS * sizeof(__u64));
	samplequeue__free(s->q);
	samplequeue__free(s->qread);
	free(s->scratch);
	if (s->qlock_on)
		pthread_mutex_destroy(&s->qlock);
	sampler_bpf__destroy(s->skel);
	free(s->links);
	free(s->pfds);
	free(s);
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n = 0;

	if (s->rb_unw) {
		/* The ring wakes its epoll descriptor only when filling: the drain thread kicks. */
		struct pollfd pfd[2] = {{.fd = ring_buffer__epoll_fd(s->rb_unw), .events = POLLIN},
					{.fd = s->unw_kick, .events = POLLIN}};
		uint64_t count;

		poll(pfd, s->unw_kick >= 0 ? 2 : 1, timeout_ms);
		if (s->unw_kick >= 0 && read(s->unw_kick, &count, sizeof(count)) < 0) {
			/* EAGAIN: not kicked */
		}
		n = ring_buffer__consume(s->rb_unw);
	} else if (timeout_ms > 0) {
		poll(NULL, 0, timeout_ms);
	}
	if (n < 0)
		return n;
	/* Samples wake nobody until the ring is a quarter full (ringbuf_wakeup_bytes). */
	ring_to_queue(s);
	return n + deliver_queue(s, DELIVER_BUDGET_NS);
}

int sampler__drain(struct sampler *s)
{
	int n = 0;

	/* Until the ring is empty: a queue short of room for it is delivered first. */
	for (int i = 0; i < 64 && !ring_to_queue(s); i++)
		n += deliver_queue(s, 0);
	if (s->rb_unw) {
		int m = ring_buffer__consume(s->rb_unw);

		n += m > 0 ? m : 0;
	}
	return n + deliver_queue(s, 0);
}

void sampler__queue_stats(struct sampler *s, struct sampler_queue_stats *out)
{
	pthread_mutex_lock(&s->qlock);
	out->lost = s->queue_lost;
	out->full = s->queue_full;
	out->peak_bytes = s->q ? samplequeue__peak_bytes(s->q) : 0;
	out->max_bytes = s->queue_max;
	pthread_mutex_unlock(&s->qlock);
}

int sampler__stats(struct sampler *s, uint64_t out[SP_STAT_MAX])
{
	uint64_t *vals;
	int fd = bpf_map__fd(s->skel->maps.stats);

	vals = calloc(s->ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < SP_STAT_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int cpu = 0; cpu < s->ncpus; cpu++)
			out[k] += vals[cpu];
	}
	free(vals);
	return 0;
}

int sampler__unwind_maps(const struct sampler *s, struct sampler_unwind_maps *out)
{
	if (!s->unwind)
		return -ENOTSUP;
	*out = s->unw;
	return 0;
}

int sampler__python_maps(const struct sampler *s, struct sampler_python_maps *out)
{
	if (!s->python)
		return -ENOTSUP;
	out->procs_fd = bpf_map__fd(s->skel->maps.py_procs);
	out->stats_fd = bpf_map__fd(s->skel->maps.py_stats);
	out->proc_known = s->proc_known;
	out->epochs_fd = s->py_code_cache ? bpf_map__fd(s->skel->maps.py_code_epochs) : -1;
	return 0;
}

int sampler__attach_python_dealloc(struct sampler *s, uint32_t pid, const char *path,
				   uint64_t offset)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	char what[PATH_MAX + 64];
	struct py_dealloc_link *grown;
	struct bpf_link *l;
	size_t i;

	if (!s->py_code_cache)
		return -ENOTSUP;
	for (i = 0; i < s->npy_dealloc_links && s->py_dealloc_links[i].link; i++)
		;
	if (i == s->npy_dealloc_links) {
		if (i >= INT_MAX)
			return -ENOSPC;
		grown = realloc(s->py_dealloc_links, (i + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->py_dealloc_links = grown;
		s->py_dealloc_links[s->npy_dealloc_links++] = (struct py_dealloc_link){0};
	}
	snprintf(what, sizeof(what), "python: code deallocation in %s", path);
	l = uprobe__attach(s->skel->progs.on_py_code_dealloc, (pid_t)pid, path, offset, &uo, what);
	if (!l)
		return errno ? -errno : -EIO;
	s->py_dealloc_links[i] = (struct py_dealloc_link){.link = l, .pid = pid};
	return (int)i;
}

void sampler__detach_python_dealloc(struct sampler *s, int handle, uint32_t pid)
{
	struct py_dealloc_link *d;

	if (handle < 0 || (size_t)handle >= s->npy_dealloc_links)
		return;
	d = &s->py_dealloc_links[handle];
	if (!d->link || d->pid != pid)
		return; /* not that process's: never another's uprobe */
	bpf_link__destroy(d->link);
	*d = (struct py_dealloc_link){0};
}

/* Sums per-CPU array @fd's first @n counters over the CPUs into @out. 0 or -ENOMEM. */
static int percpu_sums(const struct sampler *s, int fd, uint64_t *out, uint32_t n)
{
	uint64_t *vals = calloc(s->ncpus, sizeof(*vals));

	memset(out, 0, n * sizeof(*out));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < n; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int cpu = 0; cpu < s->ncpus; cpu++)
			out[k] += vals[cpu];
	}
	free(vals);
	return 0;
}

int sampler__python_stats(struct sampler *s, uint64_t *out, uint32_t n)
{
	if (!s->python) {
		memset(out, 0, n * sizeof(*out));
		return -ENOTSUP;
	}
	return percpu_sums(s, bpf_map__fd(s->skel->maps.py_stats), out, n);
}

int sampler__v8_procs_fd(const struct sampler *s)
{
	return s->unwind ? bpf_map__fd(s->skel->maps.v8_procs) : -ENOTSUP;
}

int sampler__hs_procs_fd(const struct sampler *s)
{
	return s->unwind ? bpf_map__fd(s->skel->maps.hs_procs) : -ENOTSUP;
}

int sampler__hs_stats(struct sampler *s, uint64_t *out, uint32_t n)
{
	if (!s->unwind) {
		memset(out, 0, n * sizeof(*out));
		return -ENOTSUP;
	}
	return percpu_sums(s, bpf_map__fd(s->skel->maps.hs_stats), out, n);
}

int sampler__php_procs_fd(const struct sampler *s)
{
	return s->unwind ? bpf_map__fd(s->skel->maps.php_procs) : -ENOTSUP;
}

int sampler__php_stats(struct sampler *s, uint64_t *out, uint32_t n)
{
	if (!s->unwind) {
		memset(out, 0, n * sizeof(*out));
		return -ENOTSUP;
	}
	return percpu_sums(s, bpf_map__fd(s->skel->maps.php_stats), out, n);
}

__u64 *sampler__proc_known(const struct sampler *s)
{
	return s->proc_known;
}

int sampler__v8_stats(struct sampler *s, uint64_t *out, uint32_t n)
{
	if (!s->unwind) {
		memset(out, 0, n * sizeof(*out));
		return -ENOTSUP;
	}
	return percpu_sums(s, bpf_map__fd(s->skel->maps.v8_stats), out, n);
}

int sampler__threadctx_maps(const struct sampler *s, struct sampler_threadctx_maps *out)
{
	if (!s->threadctx)
		return -ENOTSUP;
	out->procs_fd = bpf_map__fd(s->skel->maps.tls_procs);
	out->threads_fd = bpf_map__fd(s->skel->maps.ctx_threads);
	out->go_procs_fd = bpf_map__fd(s->skel->maps.go_procs);
	return 0;
}

static int attach_one_uprobe(struct sampler *s, struct bpf_program *prog, const char *binary,
			     const char *func, uint32_t mode, int retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = retprobe,
		    .bpf_cookie = mode);
	char what[PATH_MAX + 64];
	struct bpf_link *l;

	if (s->nuprobe_links == s->max_uprobe_links)
		return -ENOSPC;
	snprintf(what, sizeof(what), "--context-uprobe %s:%s", binary, func);
	l = uprobe__attach(prog, -1, binary, 0, &uo, what);
	if (!l) {
		int err = -errno;
		char why[128];

		/* libbpf's own codes (not an ELF file, ...) are beyond strerror's range. */
		if (err == -LIBBPF_ERRNO__FORMAT || err == -LIBBPF_ERRNO__LIBELF)
			snprintf(why, sizeof(why), "not a readable ELF file");
		else
			libbpf_strerror(err, why, sizeof(why));
		fprintf(stderr, "spanprof: --context-uprobe %s:%s: attaching the %s failed: %s\n",
			binary, func, retprobe ? "uretprobe" : "uprobe", why);
		return err;
	}
	s->uprobe_links[s->nuprobe_links++] = l;
	return 0;
}

int sampler__attach_ctx_uprobe(struct sampler *s, const char *binary, const char *func,
			       uint32_t mode)
{
	int err = 0;

	if (!s->uprobe_links)
		return -ENOTSUP;
	if (mode & SP_CTXP_ARG_MASK)
		err = attach_one_uprobe(s, s->skel->progs.on_ctx_enter, binary, func, mode, 0);
	if (!err && (mode & (SP_CTXP_TLS | SP_CTXP_CLEAR)))
		err = attach_one_uprobe(s, s->skel->progs.on_ctx_return, binary, func, mode, 1);
	return err;
}

void sampler__filter_maps(const struct sampler *s, struct sampler_filter_maps *out)
{
	out->exe_fd = s->filter_exe_max ? bpf_map__fd(s->skel->maps.exe_filter) : -1;
	out->cgroup_fd = s->filter_cgroup_max ? bpf_map__fd(s->skel->maps.cgroup_filter) : -1;
	out->exe_max = s->filter_exe_max;
	out->cgroup_max = s->filter_cgroup_max;
}

int sampler__ncpus(const struct sampler *s)
{
	return s->nattached;
}

void sampler__maps_hook(struct sampler *s, uint32_t pid, const struct procmaps *maps)
{
	for (int t = 0; t < SP_PROF_NTYPES; t++)
		if (event_types[t] && event_types[t]->maps_hook && s->ev_state[t])
			event_types[t]->maps_hook(s->ev_state[t], pid, maps);
}

void sampler__event_values(struct sampler *s, const struct sp_sample *e, uint64_t *count,
			   uint64_t *value)
{
	const struct sampler_event_type *et =
	    e->type < SP_PROF_NTYPES ? event_types[e->type] : NULL;

	*count = 1;
	*value = e->type == SP_PROF_CPU ? 0 : e->value;
	if (et && et->values)
		et->values(s->ev_state[e->type], e, count, value);
}

void sampler__event_summary(struct sampler *s, FILE *f)
{
	uint64_t st[SP_STAT_MAX];

	if (sampler__stats(s, st))
		return;
	for (int t = 0; t < SP_PROF_NTYPES; t++)
		if (event_types[t] && event_types[t]->summary && s->ev_state[t])
			event_types[t]->summary(s->ev_state[t], st, f);
}

size_t sampler__event_counters(struct sampler *s, uint32_t type, struct sampler_counter *out)
{
	if (type >= SP_PROF_NTYPES || !event_types[type] || !event_types[type]->counters ||
	    !s->ev_state[type])
		return 0;
	return event_types[type]->counters(s->ev_state[type], out);
}
