/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "sampling/caps.h"
#include "process/k8smeta.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_export.h"
#include "sampling/pidwatch.h"
#include "sampling/deadline.h"
#include "otlp/endpoint.h"
#include "output/outputs.h"
#include "profile/profile.h"
#include "process/proctab.h"
#include "resolve/resolve.h"
#include "record/ingest.h"
#include "record/record.h"
#include "record/record_describe.h"
#include "record/recorder.h"
#include "record/report.h"
#include "runtime/python/pytab.h"
#include "runtime/v8/v8tab.h"
#include "sampling/sampler_user.h"
#include "telemetry/selfstats.h"
#include "spans/spanlinks.h"
#include "symbols/debuginfod.h"
#include "symbols/symbolize.h"
#include "util/util.h"
#include "sampling/targets.h"
#include "sampling/tracefs.h"
#include "unwind/unwinder.h"

static volatile sig_atomic_t stop_requested; /* the first SIGINT/SIGTERM/SIGHUP */
static volatile sig_atomic_t abort_flush;    /* a second one: stop waiting for the Collector */

static void on_signal(int sig)
{
	if (stop_requested)
		abort_flush = 1;
	stop_requested = sig;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Offset from CLOCK_BOOTTIME (bpf_ktime_get_boot_ns) to the Unix wall clock. */
static uint64_t boot_to_unix_offset(void)
{
	uint64_t best = UINT64_MAX, off = 0;

	/* The tightest bracket of three reads gives the best estimate. */
	for (int i = 0; i < 3; i++) {
		uint64_t b0 = clock_ns(CLOCK_BOOTTIME), r = clock_ns(CLOCK_REALTIME);
		uint64_t b1 = clock_ns(CLOCK_BOOTTIME);

		if (b1 - b0 < best) {
			best = b1 - b0;
			off = r - (b0 + (b1 - b0) / 2);
		}
	}
	return off;
}

/*
 * The kernel's symbols (/proc/kallsyms: a few hundred thousand lines), on a thread of their own
 * while the main thread loads the BPF programs. Returns the table or NULL with *arg (int) the
 * errno. The thread is created before the capabilities are dropped and ends before sampling's
 * first sample is named.
 */
static void *load_ksyms(void *arg)
{
	struct ksyms *k = ksyms__load("/proc/kallsyms");

	*(int *)arg = k ? 0 : errno;
	return k;
}

/*
 * The end of --duration, on the deadline thread: the main thread may be busy for seconds (the
 * first pass over every process of the host reads maps and builds CFI tables) before it looks
 * at the clock again. Sampling stops now; what the ring holds is still drained and kept.
 */
static void on_deadline(void *ctx)
{
	struct recorder *r = ctx;

	sampler__stop(r->sampler);
}

static void export_interval(struct recorder *r, uint64_t end_boot);

/*
 * Ends the export intervals that ended before @boot_ns (CLOCK_BOOTTIME): one request each that
 * holds samples, none for an empty one.
 */
static void export_due(struct recorder *r, uint64_t boot_ns)
{
	while (r->exporter && boot_ns >= r->interval_end_boot) {
		export_interval(r, r->interval_end_boot);
		r->interval_end_boot += r->interval_ns;
	}
}

static int on_sample(void *ctx, const struct sp_sample *s)
{
	struct recorder *r = ctx;
	uint64_t count = 1, value = 0;
	int type;

	/* Taken after the interval's end: the interval goes first, however late this is. */
	export_due(r, s->time_boot_ns);

	if (s->type != PROFILE_CPU && s->type < PROFILE_NTYPES)
		sampler__event_values(r->sampler, s, &count, &value);
	type = ingest__sample(&r->in, s, count, value);
	if (type < 0) {
		r->user_drops++;
	} else {
		r->samples++;
		r->type_samples[type]++;
		r->interval_samples++;
	}
	return 0;
}

/* File identities (bpf/fileid.bpf.h): a process exec'd this file. */
static int on_exec_path(void *ctx, const struct sp_exec_path *e)
{
	struct recorder *r = ctx;

	proctab__exec_path(r->procs, e);
	return 0;
}

/* --- CFI unwinder (docs/unwinding.md) --- */
static int refresh_proc(void *ctx, uint32_t pid)
{
	struct recorder *r = ctx;

	return proctab__refresh(r->procs, pid);
}

static int on_unwind_event(void *ctx, const struct unwind_event *e)
{
	struct recorder *r = ctx;

	if (e->kind == UNWIND_EVENT_EXIT && r->nexits < sizeof(r->exits) / sizeof(r->exits[0])) {
		r->exits[r->nexits++] = *e;
		return 0;
	}
	/* Before the unwinder's re-read of the new image's maps, which looks for CPython again. */
	if (r->python && e->kind == UNWIND_EVENT_EXEC)
		pytab__exec(r->python, e->pid);
	if (r->v8 && e->kind == UNWIND_EVENT_EXEC)
		v8tab__exec(r->v8, e->pid);
	if (r->unwinder && e->kind != UNWIND_EVENT_NAME)
		unwinder__note_event(r->unwinder, e);
	if (r->in.links && e->kind != UNWIND_EVENT_NEW)
		spanlinks__note_event(r->in.links, e);
	return 0;
}

/* The exits noted by on_unwind_event(), once the samples taken before them are in. */
static void handle_exits(struct recorder *r, struct sampler *s)
{
	uint32_t n = r->nexits;

	if (!n)
		return;
	sampler__drain(s);
	r->nexits = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (r->unwinder)
			unwinder__note_event(r->unwinder, &r->exits[i]);
		if (r->in.links)
			spanlinks__note_event(r->in.links, &r->exits[i]);
	}
}

/* Every reader of a process's maps: the CFI unwinder, the span links, the CPython finder. */
static void maps_hooks(void *ctx, uint32_t pid, uint64_t start_boot_ns, const struct procmaps *maps)
{
	struct recorder *r = ctx;

	if (r->unwinder)
		unwinder__maps_hook(r->unwinder, pid, start_boot_ns, maps);
	if (r->in.links)
		spanlinks__maps_hook(r->in.links, pid, start_boot_ns, maps);
	if (r->python)
		pytab__maps_hook(r->python, pid, start_boot_ns, maps);
	if (r->v8)
		v8tab__maps_hook(r->v8, pid, start_boot_ns, maps);
	if (r->sampler) /* event profile types: uprobes on newly mapped files */
		sampler__maps_hook(r->sampler, pid, maps);
}

/* A process's JIT CFI changed (its jitdump unwinding records): the unwinder's, if CFI is on. */
static void jit_cfi_hook(void *ctx, uint32_t pid, uint64_t start_boot_ns,
			 const struct procmaps *maps, struct jitproc_cfi *cfi)
{
	struct recorder *r = ctx;

	if (r->unwinder)
		unwinder__jit_cfi_hook(r->unwinder, pid, start_boot_ns, maps, cfi);
	else
		jitproc_cfi__free(cfi);
}

/* Before sampling starts, so that even the first samples of --pid processes get CFI. */
static void start_unwinder(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	struct unwinder_opts uo = {.refresh = refresh_proc, .ctx = r};

	if (sampler__unwind_maps(s, &uo.maps))
		return;
	r->unwinder = unwinder__new(&uo);
	if (!r->unwinder) {
		fprintf(stderr,
			"spanprof: warning: CFI unwinding off (%s): user stacks by frame "
			"pointers only\n",
			strerror(errno));
		return;
	}
	for (size_t i = 0; i < n; i++)
		unwinder__preload(r->unwinder, pids[i]);
}

static int fail(const char *fmt, ...);

/* Span links (docs/span-links.md): descriptors of the --pid processes before sampling starts. */
static int start_span_links(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	struct sampler_threadctx_maps tm;
	struct spanlinks_opts lo = {0};

	if (r->opts->no_span_links || sampler__threadctx_maps(s, &tm))
		return 0;
	lo.procs_fd = tm.procs_fd;
	lo.go_procs_fd = tm.go_procs_fd;
	/* .symtab too: static executables have no .dynsym at all. */
	lo.allow_symtab = 1;
	r->in.links = spanlinks__new(&lo);
	if (!r->in.links)
		return fail("out of memory while starting");
	for (size_t i = 0; i < r->opts->nctx_uprobes; i++) {
		const struct record_ctx_uprobe *u = &r->opts->ctx_uprobes[i];

		if (sampler__attach_ctx_uprobe(s, u->binary, u->symbol, u->mode))
			return fail("--context-uprobe %s:%s could not be attached (see above)",
				    u->binary, u->symbol);
	}
	for (size_t i = 0; i < n; i++)
		spanlinks__maps_hook(r->in.links, pids[i], 0, NULL);
	return 0;
}

/*
 * A CPython process running before the agent: its CFI tables first, as a --pid process's, when
 * every process is sampled (with --exe, --cgroup, ... it may be none of the targets: its first
 * sample queues them then, and the scan's descriptor costs a map entry only).
 */
static void python_found(void *ctx, uint32_t pid)
{
	struct recorder *r = ctx;

	if (r->unwinder && !r->targets)
		unwinder__preload(r->unwinder, pid);
}

/* pytab_opts.attach_dealloc, detach_dealloc: the sampler's code-deallocation uprobes. */
static int attach_python_dealloc(void *ctx, uint32_t pid, const char *path, uint64_t offset)
{
	return sampler__attach_python_dealloc(ctx, pid, path, offset);
}

static void detach_python_dealloc(void *ctx, int handle, uint32_t pid)
{
	sampler__detach_python_dealloc(ctx, handle, pid);
}

/*
 * CPython frames (docs/python.md): the table that describes CPython processes to the BPF walk
 * and names their frames; the --pid processes are looked at before sampling starts (so that
 * their first samples carry Python frames), the host's others by scan_python() once it runs.
 */
static void start_python(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	struct sampler_python_maps pm;
	struct pytab_opts po = {.log = stderr};

	if (sampler__python_maps(s, &pm))
		return;
	po.procs_fd = pm.procs_fd;
	po.proc_known = pm.proc_known;
	po.epochs_fd = pm.epochs_fd;
	po.cache_after_ns = (uint64_t)(r->opts->python_code_cache_after_s * 1e9);
	if (pm.epochs_fd >= 0) {
		po.attach_dealloc = attach_python_dealloc;
		po.detach_dealloc = detach_python_dealloc;
		po.attach_ctx = s;
	}
	r->python = pytab__new(&po);
	if (!r->python) {
		fprintf(stderr, "spanprof: warning: no Python frames (%s)\n", strerror(errno));
		return;
	}
	resolve__set_python(r->in.resolve, r->python);
	for (size_t i = 0; i < n; i++)
		pytab__maps_hook(r->python, pids[i], 0, NULL);
}

/*
 * Without --pid, the CPython processes already running, found by a /proc scan right after
 * sampling starts (as the unwinder's scan: start-up does not wait for the host's processes),
 * so that they get Python frames before their first sample reaches the agent.
 */
static void scan_python(struct recorder *r, size_t npids)
{
	if (r->python && !npids)
		pytab__scan(r->python, python_found, r);
}

/* Before the sampler whose map it writes to. */
static void stop_python(struct recorder *r)
{
	if (r->in.resolve)
		resolve__set_python(r->in.resolve, NULL);
	pytab__free(r->python);
	r->python = NULL;
}

/*
 * V8 frames (docs/node.md): the table that describes node processes to the BPF frame reader and
 * names their JavaScript functions; the --pid processes are looked at before sampling starts.
 */
static void start_v8(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	int fd = r->opts->no_v8 ? -1 : sampler__v8_procs_fd(s);

	if (fd < 0)
		return;
	r->v8 = v8tab__new(fd, sampler__proc_known(s));
	if (!r->v8) {
		fprintf(stderr, "spanprof: warning: no JavaScript frames (%s)\n", strerror(errno));
		return;
	}
	resolve__set_v8(r->in.resolve, r->v8);
	for (size_t i = 0; i < n; i++)
		v8tab__maps_hook(r->v8, pids[i], 0, NULL);
}

/* Before the sampler whose map it writes to. */
static void stop_v8(struct recorder *r)
{
	if (r->in.resolve)
		resolve__set_v8(r->in.resolve, NULL);
	v8tab__free(r->v8);
	r->v8 = NULL;
}

/* --- end of CFI unwinder --- */

/* --- targeting and Kubernetes metadata (targets.h, k8smeta.h, docs/deploy.md) --- */
static const char *host_root(void)
{
	const char *r = getenv("SPANPROF_HOST_ROOT");

	return r && *r ? r : "";
}

/* The filters BPF cannot check by name: resolved here, before the sampler is made. */
static int make_targets(struct recorder *r)
{
	const struct record_opts *o = r->opts;
	struct targets_opts to = {
	    .host_root = host_root(),
	    .exes = o->exes,
	    .nexes = o->nexes,
	    .cgroups = o->cgroups,
	    .ncgroups = o->ncgroups,
	    .container_ids = o->container_ids,
	    .ncontainer_ids = o->ncontainer_ids,
	    .pods = o->k8s_pods,
	    .npods = o->nk8s_pods,
	};

	if (!o->nexes && !o->ncgroups && !o->ncontainer_ids && !o->nk8s_pods)
		return 0;
	r->targets = targets__new(&to);
	return r->targets ? 0 : -errno; /* message printed */
}

/*
 * With --pid as the only targeting option, the run ends once all those processes have exited,
 * as 'perf record -p' does (the other options can match processes started later).
 */
static int watch_pids(struct recorder *r, const uint32_t *tgids, size_t n)
{
	if (!n || r->targets)
		return 0;
	r->pidwatch = pidwatch__new(tgids, n);
	if (r->pidwatch)
		return 0;
	if (errno == ESRCH)
		return fail("a --pid process exited while starting (is it still running?)");
	if (errno == ENOMEM)
		return fail("out of memory while starting");
	fprintf(stderr,
		"spanprof: warning: cannot watch the --pid processes (%s): the run will not end "
		"when they exit\n",
		strerror(errno));
	return 0;
}

static void k8s_meta_hook(void *ctx, uint32_t pid, struct procmeta *m)
{
	struct recorder *r = ctx;

	k8smeta__fill(r->k8s, m); /* ENOMEM: the process goes without pod names */
}

static int start_k8s(struct recorder *r)
{
	if (!r->opts->k8s)
		return 0;
	r->k8s = k8smeta__new(host_root());
	if (!r->k8s)
		return -ENOMEM;
	r->k8s_node = getenv("K8S_NODE_NAME");
	if (!r->k8s_node || !*r->k8s_node)
		r->k8s_node = getenv("NODE_NAME");
	proctab__set_meta_hook(r->procs, k8s_meta_hook, r);
	return 0;
}

/* --- end of targeting --- */

/* One line, naming what is wrong and what to do. */
static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("spanprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/*
 * Ring buffer size: one second of samples with every CPU busy, as a power of
 * two within [512 KiB, 64 MiB]. A thread of the sampler empties it into a queue every 10 ms
 * (sampling/samplequeue.h), so it only has to hold what comes while that thread waits for a
 * CPU on a loaded machine, without pinning memory that an idle machine never touches.
 */
static uint32_t ringbuf_size(const struct record_opts *o)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t want =
	    (uint64_t)(ncpus > 0 ? ncpus : 1) * o->frequency_hz * sizeof(struct sp_sample);
	/*
	 * At least ~320 records (6.4 KiB each): the agent may be busy for seconds building the
	 * first CFI tables while samples keep coming. Event profiles come in bursts (an
	 * allocation loop): room for ~1300 samples; at their most detailed settings (every
	 * allocation, off-CPU periods from a few us) a loop makes hundreds of thousands a second:
	 * ~5000.
	 */
	uint32_t size = o->profile_types & ~(1u << PROFILE_CPU) ? 8u << 20 : 2u << 20;
	int detailed =
	    ((o->profile_types & (1u << PROFILE_ALLOC)) && o->alloc_sample_bytes < 4096) ||
	    ((o->profile_types & (1u << PROFILE_OFFCPU)) && o->offcpu_min_ns < 100000);

	if (detailed)
		size = 32u << 20;
	while (size < want && size < (64u << 20))
		size <<= 1;
	return size;
}

/*
 * glibc malloc, tuned for a long-running agent with a memory target (docs/performance.md):
 * a fixed mmap threshold sends the large, short-lived buffers (CFI tables being built, inflated
 * DWARF, encoded requests) to their own mappings, returned whole on free, instead of letting the
 * dynamic threshold grow and leave them as holes in the heap; two arenas for the few threads;
 * free heap pages are handed back every TRIM_NS.
 */
#define MALLOC_MMAP_THRESHOLD (128 << 10)
#define TRIM_NS (2 * 1000000000ull)
/*
 * An export interval closes on the clock this long after its end when no later sample closed
 * it: the drain thread moves samples to the queue every 10 ms, so those taken before the end
 * are in by then (unless the agent is behind: then a later sample closes it).
 */
#define EXPORT_GRACE_NS (250 * 1000000ull)
/* Entries of exited processes leave the process table this often (proctab__sweep()). */
#define PROC_SWEEP_NS (5 * 1000000000ull)

static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 2 * MALLOC_MMAP_THRESHOLD);
	mallopt(M_ARENA_MAX, 2);
}

static int check_privileges(void)
{
	char msg[256];
	int err = caps__check(msg, sizeof(msg));

	if (err == -EPERM)
		return fail("%s", msg);
	if (err)
		return fail("cannot read this process's capabilities: %s", strerror(-err));
	return 0;
}

static int check_btf(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 0;
	return fail("this kernel exposes no BTF (/sys/kernel/btf/vmlinux is missing): "
		    "spanprof needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
}

/* Maps each --pid to its thread group (a thread id names its process). */
static int resolve_pids(const struct record_opts *o, uint32_t *tgids, size_t *n)
{
	char path[64], line[256];

	*n = 0;
	for (size_t i = 0; i < o->npids; i++) {
		uint32_t tgid = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%u/status", o->pids[i]);
		f = fopen(path, "re");
		if (!f)
			return fail("no process with PID %u (is it still running?)", o->pids[i]);
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Tgid: %u", &tgid) == 1)
				break;
		fclose(f);
		if (!tgid)
			return fail("cannot read the thread group of PID %u", o->pids[i]);
		tgids[(*n)++] = tgid;
	}
	return 0;
}

/*
 * Makes sure the outputs can be written before sampling starts. Sets
 * *created when the directory did not exist (so a failed run removes it).
 */
static int check_output_dir(const char *dir, int *created)
{
	char path[PATH_MAX];
	int fd;

	*created = 0;
	/* Parents are made as `mkdir -p` would; only the last one is removed on failure. */
	snprintf(path, sizeof(path), "%s", dir);
	for (char *c = path + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return fail("cannot create output directory %s: %s", path, strerror(errno));
		*c = '/';
	}
	if (mkdir(dir, 0755) == 0)
		*created = 1;
	else if (errno != EEXIST)
		return fail("cannot create output directory %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/.spanprof-write-test-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		int err = errno;

		if (*created)
			rmdir(dir);
		return fail("output directory %s is not writable: %s (choose another with "
			    "--output-dir)",
			    dir, strerror(err));
	}
	close(fd);
	unlink(path);
	return 0;
}

/*
 * --stats-json FILE is written at the end, through a temporary file in its directory: make sure
 * that directory takes a file before sampling starts.
 */
static int check_stats_json(const char *path)
{
	const char *slash = strrchr(path, '/');
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%.*s.spanprof-write-test-XXXXXX",
		     slash ? (int)(slash - path + 1) : 0, path) >= (int)sizeof(tmp))
		return fail("--stats-json %s: path too long", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return fail(
		    "--stats-json %s: its directory does not take files: %s (choose another "
		    "path)",
		    path, strerror(errno));
	close(fd);
	unlink(tmp);
	return 0;
}

/* Longest wait at the end of a local run for debug files still on their way. */
#define RECORD_DEBUGINFOD_WAIT_S 5

/* Fetches debug files from --debuginfod or DEBUGINFOD_URLS, if any (after the capabilities drop).
 */
static void start_debuginfod(struct recorder *r, struct symcache *syms)
{
	struct dbgfetch_opts fo = {.urls = r->opts->debuginfod_urls,
				   .cache_max_bytes = (uint64_t)r->opts->debuginfod_cache_mb << 20};

	r->fetch = dbgfetch__new(&fo);
	if (!r->fetch && errno != ENOENT)
		fprintf(stderr,
			"spanprof: warning: debuginfod unavailable (%s): no debug files fetched\n",
			strerror(errno));
	symcache__set_debuginfod(syms, r->fetch);
}

/*
 * End of the run: a local run waits a bounded time for the debug files still coming and names
 * the frames they cover (the profile's locations made before they arrived); then requests in
 * flight are cancelled and the outcome goes into @out for the report. 0, or -ENOENT when
 * debuginfod was off.
 */
static int finish_debuginfod(struct recorder *r, struct symcache *syms,
			     struct report_debuginfod *out)
{
	const struct record_opts *o = r->opts;
	struct dbgfetch_stats st;
	struct symcache_stats ss;
	int named = 0;

	if (!r->fetch)
		return -ENOENT;
	dbgfetch__stats(r->fetch, &st);
	if (!r->exporter && st.pending) {
		if (!o->quiet)
			fprintf(
			    stderr,
			    "spanprof: waiting up to %d s for %llu debug files from debuginfod\n",
			    RECORD_DEBUGINFOD_WAIT_S, (unsigned long long)st.pending);
		dbgfetch__wait(r->fetch, RECORD_DEBUGINFOD_WAIT_S * 1000);
	}
	symcache__pick_up_debug_files(syms);
	if (!r->exporter)
		named = resolve__name_again(r->in.resolve, r->in.profile);
	symcache__set_debuginfod(syms, NULL);
	dbgfetch__stats(r->fetch, &st);
	dbgfetch__free(r->fetch); /* cancels what is still in flight */
	r->fetch = NULL;
	symcache__stats(syms, &ss);
	out->st = st;
	out->rejected = ss.debuginfod_rejected;
	out->named = named > 0 ? named : 0;
	return 0;
}

/*
 * Milliseconds from now to @end_ns (CLOCK_MONOTONIC) less @keep_ns, 0 when that is past: the
 * profiles' and the self-metrics' flushes share one --flush-timeout deadline.
 */
static uint32_t flush_ms_left(uint64_t end_ns, uint64_t keep_ns)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), ms;

	if (now + keep_ns >= end_ns)
		return 0;
	ms = (end_ns - keep_ns - now) / 1000000;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

/*
 * The end of the flush kept for the final self-metrics request (one call): a quarter of
 * --flush-timeout, at most 1 s, so the profiles' flush cannot use it all when the Collector is
 * away.
 */
static uint64_t metrics_reserve(const struct record_opts *o)
{
	double ns = o->flush_timeout_s * 1e9 / 4;

	return ns > 1e9 ? 1000000000ull : (uint64_t)ns;
}

/*
 * Exit status of an exporting run: 1 when samples were taken but none reached the Collector (the
 * report's problem line says so, report.c).
 */
static int export_result(const struct report_data *d)
{
	return d->samples && !d->export.samples_sent;
}

/* Self-telemetry (docs/self-telemetry.md): the stats lines and the --self-metrics request. */
static void self_telemetry(struct recorder *r, struct sampler *s, const struct symcache *syms,
			   int log)
{
	struct selfstats_sources src = {
	    .start_unix_ns = r->start_unix,
	    .sampler = s,
	    .procs = r->procs,
	    .resolve = r->in.resolve,
	    .syms = syms,
	    .unwinder = r->unwinder,
	    .links = r->in.links,
	    .python = r->python,
	    .profiles = r->exporter,
	    .metrics = r->metrics,
	    .samples = r->samples,
	    .samples_oom = r->user_drops,
	    .link_drops = r->in.link_drops,
	    .encode_failures = r->encode_failures,
	    .profile_types = r->opts->profile_types,
	    .type_samples = r->type_samples,
	};
	struct selfstats st;
	uint8_t *buf;
	size_t len;

	selfstats__collect(&src, &st);
	if (log && r->opts->log_level >= SELFSTATS_LOG_INFO) {
		if (!r->opts->quiet && isatty(STDERR_FILENO))
			fputs("\r\033[K", stderr); /* over the progress line */
		selfstats__log(stderr, &st);
	}
	if (r->metrics && !selfstats__encode(&st, &r->self_res, SPANPROF_VERSION, &buf, &len))
		otlp_exporter__submit(r->metrics, buf, len, 0);
}

/* The --self-metrics sender: the profiles' endpoint, TLS and headers, its own bounded queue. */
static int start_self_metrics(struct recorder *r, const struct otlp_exporter_opts *profiles)
{
	struct otlp_exporter_opts mo = *profiles;

	if (selfstats__resource_from_env(&r->self_res))
		return fail("out of memory while starting");
	mo.method = OTLP_METRICS_METHOD;
	mo.what = "data points";
	mo.binpb_dir = NULL;
	mo.queue_bytes = SELFSTATS_QUEUE_BYTES;
	r->metrics = otlp_exporter__new(&mo);
	if (!r->metrics)
		return fail("cannot set up the --self-metrics export to '%s': %s",
			    r->opts->endpoint, strerror(errno));
	return 0;
}

static int process_meta(void *ctx, uint32_t pid, const struct procmeta **out)
{
	struct recorder *r = ctx;
	int err = proctab__meta(r->procs, pid, out);

	/* The process context (OTEP 4719) names the service better than the environment. */
	if (!err && r->in.links)
		*out = spanlinks__meta(r->in.links, pid, *out);
	return err;
}

static int submit_request(void *ctx, const uint8_t *buf, size_t len, uint64_t samples)
{
	struct recorder *r = ctx;
	uint8_t *copy = malloc(len);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	/* From here the exporter counts these samples as sent or dropped. */
	r->interval_queued += samples;
	otlp_exporter__submit(r->exporter, copy, len, samples);
	return 0;
}

/*
 * Ends the current export interval at @end_boot (CLOCK_BOOTTIME ns): encodes its samples into
 * requests, queues them, and starts a new interval with an empty profile.
 */
static void export_interval(struct recorder *r, uint64_t end_boot)
{
	struct otlp_encode_opts eo = {
	    .max_request_bytes = r->opts->max_request_bytes,
	    .process_meta = process_meta,
	    .ctx = r,
	    .k8s_node_name = r->k8s_node,
	};
	struct profile_meta meta = {0};
	uint64_t end_unix = end_boot + r->in.boot_to_unix_ns;
	int err;

	if (end_unix < r->in.interval_start_unix)
		end_unix = r->in.interval_start_unix;
	meta.start_unix_nano = r->in.interval_start_unix;
	meta.duration_nano = end_unix - r->in.interval_start_unix;
	meta.frequency_hz = r->opts->frequency_hz;
	meta.period_nano = 1000000000ull / r->opts->frequency_hz;
	profile__set_meta(r->in.profile, &meta);
	if (profile__nsamples(r->in.profile)) {
		err = otlp__encode(r->in.profile, &eo, submit_request, r);
		if (err) {
			r->encode_failures++;
			fprintf(stderr, "\nspanprof: encoding OTLP profiles failed: %s\n",
				strerror(err < 0 ? -err : err));
		}
	}
	/* What never reached the exporter (an encoding failure, even a partial one) is counted. */
	if (r->interval_samples > r->interval_queued)
		r->encode_dropped += r->interval_samples - r->interval_queued;
	r->interval_samples = r->interval_queued = 0;
	profile__reset(r->in.profile);
	proctab__next_interval(r->procs);
	resolve__profile_reset(r->in.resolve);
	r->in.interval_start_unix = end_unix;
}

/*
 * After writing @path (@err: 0 or -errno): names the failure, or appends ", PATH" (the first
 * without the comma) to @names (@len bytes used of @size). Returns 1 when it failed, else 0.
 */
/*
 * Plaintext for http://, TLS for https://; without a scheme, as
 * --insecure / OTEL_EXPORTER_OTLP_INSECURE say, else plaintext for loopback
 * hosts (unless TLS files are given) and TLS for everything else.
 */
static int endpoint_is_plaintext(const struct record_opts *o)
{
	const char *ep = o->endpoint;

	if (!strncmp(ep, "http://", 7))
		return 1;
	if (!strncmp(ep, "https://", 8))
		return 0;
	if (o->insecure >= 0)
		return o->insecure;
	if (o->tls_ca || o->tls_cert)
		return 0;
	return !strncmp(ep, "localhost:", 10) || !strncmp(ep, "127.", 4) ||
	       !strncmp(ep, "[::1]:", 6) || !strncmp(ep, "ip6-localhost:", 14) ||
	       !strncmp(ep, "0.0.0.0:", 8) || !strncmp(ep, "[::]:", 5);
}

int record__run(const struct record_opts *o)
{
	struct recorder r = {.opts = o};
	struct sampler_opts so = {0};
	struct sampler *s = NULL;
	struct symcache *syms = NULL;
	struct ksyms *ksyms = NULL;
	struct profile_meta meta = {0};
	struct report_debuginfod dbg = {0};
	struct report_data rep = {0};
	int dbg_on = 0;
	struct sigaction sa = {.sa_handler = on_signal}, old_hup;
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
	uint32_t *tgids = NULL;
	size_t ntgids = 0;
	pthread_t ksyms_thread;
	int ksyms_loading = 0, ksyms_err = 0;
	uint64_t t0, t_stop, t_stop_boot, last_progress, last_trim, last_sweep, start_unix,
	    last_stats, flush_end;
	int rc = 1, dir_created = 0, n, tables_wait;

	/* The start-up timeline (--verbose, not --quiet) counts from here. */
	FILE *slog = o->verbose && !o->quiet ? stderr : NULL;
	uint64_t launch = util__mono_ns();

	tune_malloc();
	/* From the start: a signal during start-up must end the run cleanly too. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed terminal: a clean stop too, unless started ignoring it (nohup). */
	if (sigaction(SIGHUP, NULL, &old_hup) || old_hup.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	/* A reader of stderr gone (| head) fails log writes with EPIPE; the run goes on. */
	signal(SIGPIPE, SIG_IGN);
	if (check_privileges() || check_btf())
		return 1;
	/* Before any thread: a mount namespace of the agent's own is the whole process's. */
	tracefs__ensure();
	tgids = calloc(o->npids ? o->npids : 1, sizeof(*tgids));
	if (!tgids)
		return fail("out of memory");
	if (resolve_pids(o, tgids, &ntgids))
		goto cleanup;
	if (make_targets(&r))
		goto cleanup;
	if (watch_pids(&r, tgids, ntgids))
		goto cleanup;
	if (o->output_dir && check_output_dir(o->output_dir, &dir_created))
		goto cleanup;
	if (o->stats_json && check_stats_json(o->stats_json))
		goto cleanup_dir;
	/* Kernels since 5.11 charge BPF memory to the cgroup: a refusal here is harmless. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) && getenv("SPANPROF_DEBUG"))
		fprintf(stderr, "spanprof: warning: setrlimit(RLIMIT_MEMLOCK): %s\n",
			strerror(errno));

	syms = symcache__new(&(struct symcache_opts){
	    .max_bytes = (size_t)o->symcache_mb << 20,
	    .max_bytes_bound = (size_t)o->symcache_max_mb << 20,
	});
	r.in.profile = profile__new();
	if (!syms || !r.in.profile)
		goto fail_nomem;
	/* Read while the kernel verifies the BPF programs: nothing before sampling waits on it. */
	ksyms_loading = !pthread_create(&ksyms_thread, NULL, load_ksyms, &ksyms_err);
	if (!ksyms_loading)
		ksyms = load_ksyms(&ksyms_err);
	r.syms = syms;
	r.procs = proctab__new(syms);
	r.in.resolve = r.procs ? resolve__new(r.procs, syms, NULL) : NULL;
	if (r.in.resolve)
		resolve__set_short_names(r.in.resolve, o->short_names);
	if (!r.in.resolve || start_k8s(&r))
		goto fail_nomem;
	proctab__set_jit_flags(r.procs, o->java_perfmap ? JITPROC_JAVA_PERFMAP : 0);
	r.in.boot_to_unix_ns = boot_to_unix_offset();

	if (o->endpoint) {
		struct otlp_exporter_opts eo = {0};
		struct grpc_header hdrs[RECORD_MAX_HEADERS];
		char why[PATH_MAX + 64];

		for (size_t i = 0; i < o->nheaders; i++) {
			hdrs[i].key = o->headers[i].key;
			hdrs[i].value = o->headers[i].value;
		}
		eo.grpc.endpoint = o->endpoint;
		eo.grpc.insecure = endpoint_is_plaintext(o);
		eo.grpc.ca_file = o->tls_ca;
		eo.grpc.cert_file = o->tls_cert;
		eo.grpc.key_file = o->tls_key;
		eo.grpc.headers = hdrs;
		eo.grpc.nheaders = o->nheaders;
		eo.grpc.gzip = o->gzip;
		eo.timeout_ms = o->export_timeout_s * 1000;
		eo.queue_bytes = o->queue_bytes;
		eo.binpb_dir = o->output_dir;
		if (!eo.grpc.insecure && grpc_client__check_tls_files(&eo.grpc, why, sizeof(why))) {
			fail("TLS for %s: %s", o->endpoint, why);
			goto cleanup_dir;
		}
		r.exporter = otlp_exporter__new(&eo);
		if (!r.exporter) {
			fail(
			    "cannot set up OTLP export to '%s': %s (check the endpoint and the TLS "
			    "files)",
			    o->endpoint, strerror(errno));
			goto cleanup_dir;
		}
		if (o->self_metrics && start_self_metrics(&r, &eo))
			goto cleanup_dir;
	}

	so.frequency_hz = o->frequency_hz;
	so.ringbuf_bytes = o->ringbuf_mb ? o->ringbuf_mb << 20 : ringbuf_size(o);
	r.ringbuf_bytes = so.ringbuf_bytes;
	so.pids = tgids;
	so.npids = ntgids;
	so.cb = on_sample;
	so.ctx = &r;
	/* CFI unwinder: chunks of rows within the byte limit, and its notifications. */
	so.unwind_max_chunks = (uint64_t)o->unwind_max_mb * (1 << 20) / UNWIND_CHUNK_BYTES;
	so.event_cb = on_unwind_event;
	so.start_disabled = 1;
	so.threadctx = !o->no_span_links;
	so.ctx_uprobes = o->no_span_links ? 0 : o->nctx_uprobes;
	so.profile_types = o->profile_types;
	so.alloc_sample_bytes = o->alloc_sample_bytes;
	so.alloc_min_bytes = o->alloc_min_bytes;
	so.lock_min_wait_ns = o->lock_min_wait_ns;
	so.offcpu_min_ns = o->offcpu_min_ns;
	if (r.targets) {
		so.filter_exe_max = targets__exe_max(r.targets);
		so.filter_cgroup_max = targets__cgroup_max(r.targets);
	}
	so.exec_path_cb = on_exec_path; /* file identities */
	so.python_max_procs = o->no_python ? 0 : RECORD_PYTHON_MAX_PROCS;
	so.python_code_cache = !o->no_python_code_cache;
	sampler__startup_mark(slog, launch, "targets resolved, exporter set up");
	so.startup_log = slog;
	so.startup_t0_ns = launch;
	s = sampler__new(&so);
	if (!s) {
		if (stop_requested) {
			fail("interrupted while starting: nothing was recorded");
			rc = 128 + stop_requested;
		}
		goto cleanup_dir;
	}
	r.sampler = s;
	proctab__set_maps_hook(r.procs, maps_hooks, &r);
	proctab__set_jit_cfi_hook(r.procs, jit_cfi_hook, &r);
	if (r.targets) {
		struct sampler_filter_maps fm;

		sampler__filter_maps(s, &fm);
		if (targets__start(r.targets, &fm)) {
			fail("cannot fill the targeting filters: %s", strerror(errno));
			goto cleanup_dir;
		}
	}
	start_unwinder(&r, s, tgids, ntgids);
	sampler__startup_mark(slog, launch, "CFI unwinder started");
	start_python(&r, s, tgids, ntgids);
	start_v8(&r, s, tgids, ntgids);
	if (start_span_links(&r, s, tgids, ntgids))
		goto cleanup_dir;
	sampler__startup_mark(slog, launch, "Python, V8 and span links started");
	if (stop_requested) {
		fail("interrupted while starting: nothing was recorded");
		rc = 128 + stop_requested;
		goto cleanup_dir;
	}
	sampler__start(s);
	sampler__startup_mark(slog, launch, "sampling on");
	/* Everything that needs CAP_PERFMON and the like is loaded and attached: let it go. */
	n = caps__drop_after_load();
	if (getenv("SPANPROF_DEBUG")) {
		char left[512];

		caps__describe(left, sizeof(left));
		fprintf(stderr, "spanprof: capabilities: %d dropped, kept %s\n", n, left);
	}

	if (ksyms_loading) { /* before the first sample is named */
		pthread_join(ksyms_thread, (void **)&ksyms);
		sampler__startup_mark(slog, launch, "kernel symbols read");
	}
	ksyms_loading = 0;
	if (!ksyms)
		fprintf(stderr,
			"spanprof: warning: kernel symbols unavailable (%s): kernel frames "
			"stay addresses\n",
			strerror(ksyms_err));
	r.ksyms_on = ksyms && ksyms__count(ksyms);
	resolve__set_ksyms(r.in.resolve, ksyms);
	malloc_trim(0); /* start-up: BTF, kernel symbols, the first CFI tables */
	t0 = last_progress = last_trim = last_sweep = last_stats = clock_ns(CLOCK_MONOTONIC);
	start_unix = r.start_unix = clock_ns(CLOCK_REALTIME);
	r.interval_ns = (uint64_t)(o->export_interval_s * 1e9);
	r.interval_end_boot = clock_ns(CLOCK_BOOTTIME);
	/* In sample time, so that the intervals follow one another exactly. */
	r.in.interval_start_unix = r.interval_end_boot + r.in.boot_to_unix_ns;
	r.interval_end_boot += r.interval_ns;
	/* After the capabilities are dropped: a thread keeps those it was created with. */
	start_debuginfod(&r, syms);
	if (o->duration_s > 0) {
		r.deadline = deadline__new(t0 + (uint64_t)(o->duration_s * 1e9), on_deadline, &r);
		if (!r.deadline) /* the main loop's check below still ends the run */
			fprintf(stderr, "spanprof: warning: no deadline thread (%s)\n",
				strerror(errno));
	}
	if (!o->quiet) {
		char what[256];

		/* "spanprof: sampling" starts the line: tests and scripts wait for it. */
		fprintf(stderr, "spanprof: sampling %s: %s%s%s%s; Ctrl-C to stop\n",
			targeted(&r) ? "the targeted processes" : "every process",
			record__describe_types(what, sizeof(what), o, sampler__ncpus(s), NULL),
			o->duration_s > 0 ? ""
			: r.pidwatch	  ? " until they exit"
					  : " until interrupted",
			o->endpoint ? ", exporting OTLP profiles to " : "",
			o->endpoint ? o->endpoint : "");
	}
	scan_python(&r, ntgids);
	/*
	 * The --pid processes' tables are built while sampling runs (their samples before are
	 * marked): one line says when they are in, for who wants whole stacks from the start.
	 */
	tables_wait = ntgids > 0 && !o->quiet;
	if (tables_wait && !r.unwinder) {
		fprintf(stderr, "spanprof: unwind tables of the targeted processes: none (CFI "
				"unwinding off)\n");
		tables_wait = 0;
	}
	while (!stop_requested) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);

		int wait_ms = 100;

		if (deadline__fired(r.deadline)) /* maybe while the main thread was busy */
			break;
		if (o->duration_s > 0) {
			uint64_t end = t0 + (uint64_t)(o->duration_s * 1e9);

			if (now >= end)
				break;
			/* End on time, not at the next 100 ms poll. */
			if (end - now < 100000000ull)
				wait_ms = (end - now + 999999) / 1000000;
		}
		if (r.unwinder) { /* a notified re-read is due before the usual 100 ms */
			int due = unwinder__next_due_ms(r.unwinder);

			if (due >= 0 && due < wait_ms)
				wait_ms = due;
		}
		if (r.python) /* each batch of samples checks its cached code objects once */
			pytab__new_epoch(r.python);
		n = sampler__poll(s, wait_ms);
		handle_exits(&r, s);
		if (n < 0) {
			fail("reading the ring buffer failed: %s", strerror(-n));
			break;
		}
		if (r.pidwatch && !pidwatch__running(r.pidwatch)) {
			/* As at the end of --duration: the ring is drained below. */
			fprintf(stderr, "%sspanprof: all target processes exited; stopping\n",
				!o->quiet && isatty(2) ? "\r\033[K" : "");
			break;
		}
		if (r.unwinder) /* CFI unwinder: notified re-reads */
			unwinder__tick(r.unwinder);
		if (tables_wait && !unwinder__preloads_pending(r.unwinder)) {
			fprintf(
			    stderr,
			    "%sspanprof: unwind tables of the targeted processes loaded, %.2f s "
			    "after sampling started\n",
			    isatty(2) ? "\r\033[K" : "", (clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
			tables_wait = 0;
		}
		if (r.in.links)
			spanlinks__tick(r.in.links);
		if (r.python) /* exited CPython processes */
			pytab__tick(r.python);
		if (r.v8) /* exited node processes */
			v8tab__tick(r.v8);
		if (r.targets) /* containers and pods started since, binaries replaced */
			targets__tick(r.targets, now);
		/*
		 * No sample taken since has closed the interval (on_sample()): close it on the
		 * clock, once the samples taken before its end have had time to reach the queue.
		 */
		if (r.exporter)
			export_due(&r, clock_ns(CLOCK_BOOTTIME) - EXPORT_GRACE_NS);
		if (now - last_sweep >= PROC_SWEEP_NS) {
			/*
			 * Samples of a process that is gone may still wait in the ring: drain
			 * it first. Exporting, an entry also outlives the interval holding its
			 * samples.
			 */
			sampler__drain(s);
			proctab__sweep(r.procs, r.exporter != NULL);
			last_sweep = now;
		}
		if (now - last_trim >= TRIM_NS) {
			symcache__trim(syms); /* mapped DWARF pages touched since */
			malloc_trim(0);
			last_trim = now;
		}
		if (o->stats_interval_s > 0 &&
		    now - last_stats >= (uint64_t)(o->stats_interval_s * 1e9)) {
			self_telemetry(&r, s, syms, 1);
			last_stats = now;
		}
		if (!o->quiet &&
		    now - last_progress >= (isatty(2) ? 1000000000ull : 10000000000ull)) {
			report__progress(&r, s, t0, now, 0);
			last_progress = now;
		}
	}
	deadline__cancel(r.deadline); /* if it has not fired: no stop from it from here on */
	t_stop = deadline__fired(r.deadline);
	if (!t_stop) {
		sampler__stop(s);
		t_stop = clock_ns(CLOCK_MONOTONIC);
	}
	/* The stop in sample time: the deadline's may have been a while ago. */
	t_stop_boot = clock_ns(CLOCK_BOOTTIME) - (clock_ns(CLOCK_MONOTONIC) - t_stop);
	/* Samples taken before the stop may still wait in the ring: none is lost. */
	sampler__drain(s);
	if (getenv("SPANPROF_DEBUG")) {
		struct sampler_queue_stats qs;

		sampler__queue_stats(s, &qs);
		fprintf(stderr, "spanprof: debug: sample queue peak %.1f MiB\n",
			qs.peak_bytes / 1048576.0);
	}
	dbg_on = !finish_debuginfod(&r, syms, &dbg);
	/* One flush deadline for both senders: SIGTERM -> exit within --flush-timeout. */
	flush_end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)(o->flush_timeout_s * 1e9);
	if (r.exporter) {
		struct otlp_exporter_stats es;

		/* The last, partial interval; then give the queue a bounded time to drain. */
		export_due(&r, t_stop_boot);
		export_interval(&r, t_stop_boot);
		otlp_exporter__stats(r.exporter, &es);
		if (es.queued) /* even with --quiet: the one sign of life during a long stop */
			fprintf(
			    stderr,
			    "%sspanprof: sending %zu queued requests (up to %.0f s; Ctrl-C again "
			    "to give up)\n",
			    !o->quiet && isatty(2) ? "\n" : "", es.queued, o->flush_timeout_s);
		otlp_exporter__shutdown(
		    r.exporter, flush_ms_left(flush_end, r.metrics ? metrics_reserve(o) : 0),
		    &abort_flush);
	}
	if (r.metrics) { /* the final figures, the profiles' flush included */
		self_telemetry(&r, s, syms, 0);
		otlp_exporter__shutdown(r.metrics, flush_ms_left(flush_end, 0), &abort_flush);
	}
	if (!o->quiet)
		report__progress(&r, s, t0, t_stop, 1);

	meta.start_unix_nano = start_unix;
	meta.duration_nano = t_stop - t0;
	meta.frequency_hz = o->frequency_hz;
	meta.period_nano = 1000000000ull / o->frequency_hz;
	profile__set_meta(r.in.profile, &meta);
	/* The end of the run: what was sampled, where it went, the problems (record/report.h). */
	report__collect(&r, s, meta.duration_nano / 1e9, dbg_on ? &dbg : NULL, &rep);
	report__print_head(stderr, &rep);
	if (getenv("SPANPROF_DEBUG"))
		report__memory(syms);
	/* Detach before the (possibly slow) writes: nothing stays attached longer than needed. */
	proctab__set_maps_hook(r.procs, NULL, NULL); /* CFI unwinder, span links */
	proctab__set_jit_cfi_hook(r.procs, NULL, NULL);
	unwinder__free(r.unwinder);
	r.unwinder = NULL;
	spanlinks__free(r.in.links);
	r.in.links = NULL;
	stop_python(&r);
	stop_v8(&r);
	r.sampler = NULL;
	sampler__free(s);
	s = NULL;
	rc = r.exporter
		 ? export_result(&rep)
		 : outputs__write_dir(r.in.profile, o->output_dir, record__selected_types(o));
	report__print_where(stderr, &rep);
	report__print_problems(stderr, &rep);
	if (o->stats_json) {
		int err = report__write_json(o->stats_json, &rep);

		if (err)
			rc = fail("writing --stats-json %s failed: %s", o->stats_json,
				  strerror(-err));
	}
	report__data_clear(&rep);
	goto cleanup;

fail_nomem:
	fail("out of memory while starting");
cleanup_dir:
	if (dir_created && o->output_dir)
		rmdir(o->output_dir);
cleanup:
	if (ksyms_loading) /* a start-up that failed before the join */
		pthread_join(ksyms_thread, (void **)&ksyms);
	deadline__free(r.deadline);  /* before the sampler it stops */
	unwinder__free(r.unwinder);  /* CFI unwinder: its chunks before the sampler's maps */
	spanlinks__free(r.in.links); /* its map entries, before the sampler's maps */
	stop_python(&r);	     /* likewise */
	stop_v8(&r);		     /* likewise */
	r.sampler = NULL;
	sampler__free(s);
	otlp_exporter__free(r.exporter);
	otlp_exporter__free(r.metrics);
	selfstats__resource_clear(&r.self_res);
	resolve__free(r.in.resolve);
	proctab__free(r.procs);
	profile__free(r.in.profile);
	ksyms__free(ksyms);
	symcache__free(syms);
	dbgfetch__free(r.fetch); /* after the cache that borrowed it */
	free(tgids);
	targets__free(r.targets);
	k8smeta__free(r.k8s);
	pidwatch__free(r.pidwatch);
	return rc;
}
