/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
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

#include "caps.h"
#include "flamegraph.h"
#include "k8smeta.h"
#include "otel_env.h"
#include "otlp_encode.h"
#include "otlp_export.h"
#include "pidwatch.h"
#include "deadline.h"
#include "endpoint.h"
#include "folded.h"
#include "pprof.h"
#include "profile.h"
#include "proctab.h"
#include "record.h"
#include "record_describe.h"
#include "sampler_user.h"
#include "selfstats.h"
#include "spanlinks.h"
#include "symbolize.h"
#include "targets.h"
#include "unwinder.h"

struct recorder {
	const struct record_opts *opts;
	struct otlp_exporter *exporter; /* NULL: local files only */
	uint64_t interval_start_unix;	/* wall clock when the current export interval began */
	uint64_t interval_start_mono;
	uint64_t encode_failures;  /* intervals (or parts) that could not be encoded */
	uint64_t interval_samples; /* samples added since the last export_interval() */
	uint64_t interval_queued;  /* of those, handed to the exporter (queued or counted there) */
	uint64_t encode_dropped;   /* samples of intervals (or parts) that could not be encoded */
	struct profile *profile;
	struct proctab *procs;
	uint64_t boot_to_unix_ns;	       /* add to CLOCK_BOOTTIME to get the wall clock */
	uint64_t samples;		       /* samples added to the profile */
	uint64_t type_samples[PROFILE_NTYPES]; /* the same, per profile type */
	struct sampler *sampler;
	uint64_t user_drops;	   /* samples lost in user space (ENOMEM) */
	struct unwinder *unwinder; /* CFI tables; NULL: frame pointers only */
	struct spanlinks *links;   /* thread contexts; NULL: --no-span-links */
	uint64_t link_drops;	   /* samples whose link could not be stored (ENOMEM) */
	struct targets *targets;   /* --exe, --cgroup, --container-id, --k8s-pod; NULL: none */
	struct k8smeta *k8s;	   /* --k8s; NULL: no Kubernetes attributes */
	struct pidwatch *pidwatch; /* --pid alone: stop when they have all exited; else NULL */
	struct deadline *deadline; /* --duration: stops sampling on time; NULL: none */
	const char *k8s_node;	   /* K8S_NODE_NAME / NODE_NAME with --k8s */
	/*
	 * Exits seen but not handled yet: the process's last samples may still wait in the
	 * sample ring (woken less often), and need its tables, maps and context. Handled after
	 * the next drain of the sample ring.
	 */
	struct unwind_event exits[256];
	uint32_t nexits;
	uint32_t locs[SP_MAX_KSTACK + SP_MAX_USTACK];
	/* Self-telemetry (docs/self-telemetry.md): --self-metrics sender, the agent's resource. */
	struct otlp_exporter *metrics;
	struct selfstats_resource self_res;
	uint64_t start_unix;
};

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
 * The end of --duration, on the deadline thread: the main thread may be busy for seconds (the
 * first pass over every process of the host reads maps and builds CFI tables) before it looks
 * at the clock again. Sampling stops now; what the ring holds is still drained and kept.
 */
static void on_deadline(void *ctx)
{
	struct recorder *r = ctx;

	sampler__stop(r->sampler);
}

static int on_sample(void *ctx, const struct sp_sample *s)
{
	struct recorder *r = ctx;
	struct profile_sample_key key = {0};
	uint32_t n = 0, ku = s->kstack_len, uu = s->ustack_len;
	char comm[SP_COMM_LEN + 1], pcomm[SP_COMM_LEN + 1];
	struct proc *proc = NULL;
	int err;

	if (ku > SP_MAX_KSTACK)
		ku = SP_MAX_KSTACK;
	if (uu > SP_MAX_USTACK)
		uu = SP_MAX_USTACK;
	/* Read the maps before anything slow: the process may be about to exit. */
	if (!(s->flags & SP_SAMPLE_KERNEL_THREAD))
		proc = proctab__get(r->procs, s->pid, s->pstart_boot_ns);

	n += proctab__kernel_locations(r->procs, r->profile, (const uint64_t *)s->kstack, ku,
				       r->locs);
	if (proc)
		n += proctab__sample_user_locations(r->procs, proc, r->profile,
						    (const uint64_t *)s->ustack, uu, &s->vmas,
						    r->locs + n);

	memcpy(comm, s->comm, SP_COMM_LEN);
	comm[SP_COMM_LEN] = '\0';
	memcpy(pcomm, s->pcomm, SP_COMM_LEN);
	pcomm[SP_COMM_LEN] = '\0';
	key.stack = profile__intern_stack(r->profile, r->locs, n);
	key.type = s->type < PROFILE_NTYPES ? s->type : PROFILE_CPU;
	key.addr = s->addr;
	key.pid = s->pid;
	key.tid = s->tid;
	key.cpu = s->cpu;
	key.comm = profile__intern_string(r->profile, comm);
	key.process_name = profile__intern_string(r->profile, pcomm[0] ? pcomm : comm);
	if (r->links && s->ctx_len &&
	    spanlinks__sample(r->links, r->profile, s, &key.link, &key.attrs)) {
		key.link = key.attrs = 0; /* keep the sample, without its span */
		r->link_drops++;
	}
	if (key.type == PROFILE_CPU) {
		err =
		    profile__add_sample(r->profile, &key, s->time_boot_ns + r->boot_to_unix_ns, 1);
	} else {
		uint64_t count, value, ts = s->time_boot_ns + r->boot_to_unix_ns;

		sampler__event_values(r->sampler, s, &count, &value);
		/* An event stamped when it began (offcpu: switch-out) may have begun before the
		 * current export interval: keep it inside the interval it is exported in. */
		if (ts < r->interval_start_unix)
			ts = r->interval_start_unix;
		err = profile__add_event(r->profile, &key, ts, count, value);
	}
	if (err) {
		r->user_drops++;
	} else {
		r->samples++;
		r->type_samples[key.type]++;
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
	if (r->unwinder && e->kind != UNWIND_EVENT_NAME)
		unwinder__note_event(r->unwinder, e);
	if (r->links)
		spanlinks__note_event(r->links, e);
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
		if (r->links)
			spanlinks__note_event(r->links, &r->exits[i]);
	}
}

/* Every reader of a process's maps: the CFI unwinder and the span links. */
static void maps_hooks(void *ctx, uint32_t pid, uint64_t start_boot_ns, const struct procmaps *maps)
{
	struct recorder *r = ctx;

	if (r->unwinder)
		unwinder__maps_hook(r->unwinder, pid, start_boot_ns, maps);
	if (r->links)
		spanlinks__maps_hook(r->links, pid, start_boot_ns, maps);
	if (r->sampler) /* event profile types: uprobes on newly mapped files */
		sampler__maps_hook(r->sampler, pid, maps);
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
	/* .symtab too: static executables have no .dynsym at all. */
	lo.allow_symtab = 1;
	r->links = spanlinks__new(&lo);
	if (!r->links)
		return fail("out of memory while starting");
	for (size_t i = 0; i < r->opts->nctx_uprobes; i++) {
		const struct record_ctx_uprobe *u = &r->opts->ctx_uprobes[i];

		if (sampler__attach_ctx_uprobe(s, u->binary, u->symbol, u->mode))
			return fail("--context-uprobe %s:%s could not be attached (see above)",
				    u->binary, u->symbol);
	}
	for (size_t i = 0; i < n; i++)
		spanlinks__maps_hook(r->links, pids[i], 0, NULL);
	return 0;
}

static void span_links_summary(struct recorder *r, const uint64_t *st)
{
	struct spanlinks_stats ls = {0};

	if (!r->links)
		return;
	spanlinks__stats(r->links, &ls);
	fprintf(
	    stderr,
	    "spanprof: span links: %llu samples linked (%llu by uprobe); not linked: %llu "
	    "outside spans, %llu record not valid, %llu zero trace/span id, %llu attrs too big, "
	    "%llu unreadable, %llu no TLS block yet, %llu stale; %llu processes with a "
	    "thread context, %llu with a process context, %llu descriptor errors\n",
	    (unsigned long long)st[SP_STAT_CTX_LINKED], (unsigned long long)st[SP_STAT_CTX_UPROBE],
	    (unsigned long long)st[SP_STAT_CTX_NO_SPAN],
	    (unsigned long long)st[SP_STAT_CTX_NOT_VALID],
	    (unsigned long long)st[SP_STAT_CTX_ZERO_TRACE],
	    (unsigned long long)st[SP_STAT_CTX_ATTRS_TOO_BIG],
	    (unsigned long long)st[SP_STAT_CTX_READ_FAILED],
	    (unsigned long long)st[SP_STAT_CTX_UNALLOCATED],
	    (unsigned long long)st[SP_STAT_CTX_STALE], (unsigned long long)ls.processes_seen,
	    (unsigned long long)ls.contexts_seen, (unsigned long long)ls.resolve_errors);
}

static void unwind_summary(struct recorder *r, const uint64_t *st)
{
	struct unwinder_stats us = {0};

	if (r->unwinder)
		unwinder__stats(r->unwinder, &us);
	fprintf(
	    stderr,
	    "spanprof: user stacks: %llu by CFI (%llu frames CFI, %llu frame pointer), %llu by "
	    "frame pointers (%llu stale entries, %llu no registers); CFI walks ended: %llu at "
	    "the outermost frame, %llu frame pointer end, %llu no mapping, %llu no table, %llu "
	    "unsupported row, %llu read failed, %llu bad CFA, %llu depth limit\n"
	    "spanprof: unwind tables: %llu tables of %llu files, %.1f MiB rows in %llu chunks "
	    "(%.1f of %.0f MiB), %llu processes (%.1f MiB); %llu built in %.0f ms, %llu without "
	    "CFI, %llu refused (full), %llu freed, %llu files unopenable, %llu processes refused, "
	    "%llu mappings dropped; %llu notifications (%llu lost), %llu maps re-reads\n",
	    (unsigned long long)st[SP_STAT_UNW_CFI], (unsigned long long)st[SP_STAT_UNW_FRAMES_CFI],
	    (unsigned long long)st[SP_STAT_UNW_FRAMES_FP], (unsigned long long)st[SP_STAT_UNW_FP],
	    (unsigned long long)st[SP_STAT_UNW_STALE], (unsigned long long)st[SP_STAT_UNW_NO_REGS],
	    (unsigned long long)st[SP_STAT_UNW_END], (unsigned long long)st[SP_STAT_UNW_FP_END],
	    (unsigned long long)st[SP_STAT_UNW_NO_MAPPING],
	    (unsigned long long)st[SP_STAT_UNW_NO_TABLE],
	    (unsigned long long)st[SP_STAT_UNW_UNSUPPORTED],
	    (unsigned long long)st[SP_STAT_UNW_READ_FAILED],
	    (unsigned long long)st[SP_STAT_UNW_BAD_CFA], (unsigned long long)st[SP_STAT_UNW_DEPTH],
	    (unsigned long long)us.tables, (unsigned long long)us.files, us.row_bytes / 1048576.0,
	    (unsigned long long)us.chunks, us.chunk_bytes / 1048576.0, us.max_bytes / 1048576.0,
	    (unsigned long long)us.processes, us.proc_bytes / 1048576.0,
	    (unsigned long long)us.builds, us.build_ns / 1e6, (unsigned long long)us.no_cfi,
	    (unsigned long long)us.tables_full, (unsigned long long)us.tables_freed,
	    (unsigned long long)us.open_failed, (unsigned long long)us.procs_full,
	    (unsigned long long)us.mappings_dropped, (unsigned long long)st[SP_STAT_EVENTS],
	    (unsigned long long)st[SP_STAT_EVENT_DROP], (unsigned long long)us.refreshes);
}
/* --- end of CFI unwinder --- */

/* --- targeting and Kubernetes metadata (targets.h, k8smeta.h, docs/deploy.md) --- */
static const char *host_root(void)
{
	const char *r = getenv("SPANPROF_HOST_ROOT");

	return r && *r ? r : "";
}

static int targeted(const struct recorder *r)
{
	return r->opts->npids || r->targets;
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

static void targeting_summary(struct recorder *r, const uint64_t *st)
{
	struct targets_stats ts = {0};
	struct k8smeta_stats ks;

	if (targeted(r))
		fprintf(stderr,
			"spanprof: targeting: %llu samples of other processes filtered "
			"out in BPF\n",
			(unsigned long long)st[SP_STAT_FILTERED]);
	if (r->targets) {
		targets__stats(r->targets, &ts);
		fprintf(stderr,
			"spanprof: targets now: %u of %zu --exe (%u files), %u of %zu --cgroup, %u "
			"of %zu --container-id (%u ambiguous), %u of %zu --k8s-pod; %u cgroup ids; "
			"%llu cgroup walks (%llu directories, %.2f ms each), %llu map errors\n",
			ts.exes_found, r->opts->nexes, ts.exe_keys, ts.cgroups_found,
			r->opts->ncgroups, ts.containers_found, r->opts->ncontainer_ids,
			ts.containers_ambiguous, ts.pods_found, r->opts->nk8s_pods, ts.cgroup_ids,
			(unsigned long long)ts.walks, (unsigned long long)ts.walk_dirs,
			ts.walks ? ts.walk_ns / 1e6 / ts.walks : 0.0,
			(unsigned long long)ts.map_errors);
	}
	if (r->k8s) {
		k8smeta__stats(r->k8s, &ks);
		fprintf(
		    stderr,
		    "spanprof: kubernetes: %llu processes named, %llu in pods without a kubelet "
		    "log entry; %llu reads of the kubelet's log directories (%u pods, %u "
		    "containers)%s\n",
		    (unsigned long long)ks.hits, (unsigned long long)ks.misses,
		    (unsigned long long)ks.scans, ks.pods, ks.containers,
		    r->k8s_node ? "" : "; no K8S_NODE_NAME/NODE_NAME: no k8s.node.name");
	}
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
 * two within [512 KiB, 64 MiB]. The consumer polls every 100 ms, so this
 * leaves room for a slow symbolization or a loaded machine without pinning
 * memory that an idle machine never touches.
 */
static uint32_t ringbuf_size(uint32_t hz, uint32_t types)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t want = (uint64_t)(ncpus > 0 ? ncpus : 1) * hz * sizeof(struct sp_sample);
	/*
	 * At least ~320 records (6.4 KiB each): the agent may be busy for seconds building the
	 * first CFI tables while samples keep coming. Event profiles come in bursts (an
	 * allocation loop): room for ~1300 samples.
	 */
	uint32_t size = types & ~(1u << PROFILE_CPU) ? 8u << 20 : 2u << 20;

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
/* Entries of exited processes leave the process table this often (proctab__sweep()). */
#define PROC_SWEEP_NS (5 * 1000000000ull)

static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 2 * MALLOC_MMAP_THRESHOLD);
	mallopt(M_ARENA_MAX, 2);
}

/* SPANPROF_DEBUG: where the memory went (docs/performance.md). */
static void memory_summary(struct symcache *syms)
{
	struct symcache_stats ss;
	struct mallinfo2 mi = mallinfo2();

	symcache__stats(syms, &ss);
	fprintf(stderr,
		"spanprof: memory: symbol cache %.1f MiB now, %.1f MiB peak, %llu loads, %llu "
		"evictions, %llu lookups (%llu cached), %llu DWARF skipped, %llu descriptors "
		"(%llu idle closes, %llu re-read, %llu gone); malloc: heap %.1f "
		"MiB (%.1f MiB free), mmapped %.1f MiB\n",
		ss.bytes / 1048576.0, ss.bytes_peak / 1048576.0, (unsigned long long)ss.loads,
		(unsigned long long)ss.evictions, (unsigned long long)ss.lookups,
		(unsigned long long)ss.cache_hits, (unsigned long long)ss.dwarf_skipped,
		(unsigned long long)ss.fds, (unsigned long long)ss.idle_closes,
		(unsigned long long)ss.idle_reloads, (unsigned long long)ss.idle_reopen_errors,
		mi.arena / 1048576.0, mi.fordblks / 1048576.0, mi.hblkhd / 1048576.0);
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

/* Samples lost in BPF to a full ring buffer, every profile type recorded. */
static uint64_t ringbuf_drops(const struct recorder *r, const uint64_t *st)
{
	return selfstats_ringbuf_drops(st, record__selected_types(r->opts));
}

/* "  | cpu 120 alloc 12" with more than one profile type selected, else "". */
static const char *event_counts(struct recorder *r, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	if (record__ntypes(r->opts) < 2)
		return buf;
	for (uint32_t t = 0; t < PROFILE_NTYPES && len < size; t++)
		if (r->opts->profile_types & (1u << t))
			len += snprintf(buf + len, size - len, "%s %s %llu", len ? " " : "  |",
					profile__type_info(t)->name,
					(unsigned long long)r->type_samples[t]);
	return buf;
}

static void progress(struct recorder *r, struct sampler *s, uint64_t t0, uint64_t now, int final)
{
	uint64_t st[SP_STAT_MAX] = {0};
	char events[96];
	double elapsed = (now - t0) / 1e9;
	int tty = isatty(STDERR_FILENO);

	char export[160] = "";

	sampler__stats(s, st);
	if (r->exporter) {
		struct otlp_exporter_stats es;

		otlp_exporter__stats(r->exporter, &es);
		snprintf(export, sizeof(export),
			 "  | export: %llu sent (%.1f KiB), %llu retries, %llu dropped, %zu queued",
			 (unsigned long long)es.requests_sent, es.bytes_sent / 1024.0,
			 (unsigned long long)es.retries, (unsigned long long)es.dropped, es.queued);
	}
	fprintf(
	    stderr,
	    "%sspanprof: %6.1fs  %8llu samples  %llu dropped  %llu processes  %llu in spans%s%s%s",
	    tty ? "\r\033[K" : "", elapsed, (unsigned long long)r->samples,
	    (unsigned long long)(ringbuf_drops(r, st) + r->user_drops),
	    (unsigned long long)proctab__stats(r->procs)->processes,
	    (unsigned long long)st[SP_STAT_CTX_LINKED], event_counts(r, events, sizeof(events)),
	    export, tty && !final ? "" : "\n");
}

/*
 * Where every sample BPF took went: into the profile (and then, with --endpoint, sent or
 * counted as dropped by the exporter or the encoder) or into a drop counter. Ring-buffer drops
 * happen before BPF counts a sample as taken.
 */
static void accounting_summary(struct recorder *r, const uint64_t *st)
{
	uint64_t taken = 0;

	/* Every profile type's samples handed to user space. */
	for (uint32_t t = 0; t < SP_PROF_NTYPES; t++)
		taken += st[sp_stat_type_samples(t)];
	fprintf(stderr,
		"spanprof: accounting: %llu samples taken by BPF = %llu recorded + %llu dropped "
		"in the agent (out of memory); %llu more lost to a full ring buffer\n",
		(unsigned long long)taken, (unsigned long long)r->samples,
		(unsigned long long)r->user_drops, (unsigned long long)ringbuf_drops(r, st));
}

/* File identities carried by samples of processes not loaded yet (bpf/fileid.bpf.h). */
static void fileid_summary(struct recorder *r, const uint64_t *st)
{
	const struct proctab_stats *ps = proctab__stats(r->procs);

	fprintf(stderr,
		"spanprof: file identities (processes not loaded yet): %llu samples carried "
		"them (%llu mappings, %llu lookups failed, %llu frames beyond the table); %llu "
		"frames named from them, %llu frames unnamed (file unknown), %llu executables "
		"named; executable paths: %llu sent, %llu lost (ring buffer full), %llu opened, "
		"%llu unopenable or replaced\n",
		(unsigned long long)st[SP_STAT_FILEID_SAMPLES],
		(unsigned long long)st[SP_STAT_FILEID_VMAS],
		(unsigned long long)st[SP_STAT_FILEID_FAILED],
		(unsigned long long)st[SP_STAT_FILEID_FULL], (unsigned long long)ps->frames_fileid,
		(unsigned long long)ps->frames_fileid_unknown, (unsigned long long)ps->exe_fileid,
		(unsigned long long)st[SP_STAT_FILEID_EXECS],
		(unsigned long long)st[SP_STAT_FILEID_EXEC_DROP],
		(unsigned long long)ps->exec_paths_opened,
		(unsigned long long)ps->exec_paths_failed);
}

/* JIT code named from perf maps and jitdump files (runtime/jit/jitproc.h); silent without JIT. */
static void jit_summary(struct recorder *r)
{
	const struct jitproc_stats *j = &proctab__stats(r->procs)->jit;
	const uint64_t *o = j->open.by_reason;

	if (!j->frames_named && !j->frames_unnamed && !j->java_failed && !o[JITFILE_SYMLINK] &&
	    !o[JITFILE_OWNER] && !o[JITFILE_NOT_REGULAR] && !o[JITFILE_TOO_BIG])
		return;
	fprintf(stderr,
		"spanprof: JIT code: %llu frames named, %llu unnamed (%llu of a map over its cap); "
		"%llu perf maps, %llu jitdump files read (%llu lines, %llu records skipped, %llu "
		"ranges replaced by newer code); files refused: %llu symlink, %llu other owner, "
		"%llu not regular, %llu too big; %llu processes told which flag names them; "
		"%llu perf maps written by JVMs on request, %llu requests failed\n",
		(unsigned long long)j->frames_named, (unsigned long long)j->frames_unnamed,
		(unsigned long long)j->frames_full, (unsigned long long)j->perfmaps,
		(unsigned long long)j->jitdumps, (unsigned long long)j->lines_bad,
		(unsigned long long)j->records_bad, (unsigned long long)j->replaced,
		(unsigned long long)o[JITFILE_SYMLINK], (unsigned long long)o[JITFILE_OWNER],
		(unsigned long long)o[JITFILE_NOT_REGULAR], (unsigned long long)o[JITFILE_TOO_BIG],
		(unsigned long long)j->hints, (unsigned long long)j->java_requests,
		(unsigned long long)j->java_failed);
}

static void summary(struct recorder *r, struct sampler *s, double secs)
{
	char why[256];

	if (!r->samples)
		fprintf(stderr, "spanprof: %s\n",
			record__describe_no_samples(why, sizeof(why), r->opts, targeted(r)));
	const struct proctab_stats *ps = proctab__stats(r->procs);
	uint64_t st[SP_STAT_MAX] = {0};
	char what[256];

	sampler__stats(s, st);
	fprintf(stderr,
		"spanprof: %llu samples from %llu processes in %.1f s (%s)\n"
		"spanprof: dropped %llu (ring buffer full %llu, agent out of memory %llu); "
		"stack read failures: kernel %llu, user %llu\n"
		"spanprof: frames: %llu outside any mapping, %llu without a symbol, %llu kernel "
		"without a symbol; %llu maps unreadable, %llu files unopenable, %llu maps reads "
		"dropped (PID reused)\n"
		"spanprof: processes: %llu seen, %llu exited and forgotten, %zu in the table\n",
		(unsigned long long)r->samples, (unsigned long long)ps->processes, secs,
		record__describe_types(what, sizeof(what), r->opts, sampler__ncpus(s),
				       record__ntypes(r->opts) > 1 ? r->type_samples : NULL),
		(unsigned long long)(ringbuf_drops(r, st) + r->user_drops),
		(unsigned long long)ringbuf_drops(r, st), (unsigned long long)r->user_drops,
		(unsigned long long)st[SP_STAT_KSTACK_ERR],
		(unsigned long long)st[SP_STAT_USTACK_ERR], (unsigned long long)ps->frames_unmapped,
		(unsigned long long)ps->frames_unsymbolized,
		(unsigned long long)ps->kernel_unsymbolized,
		(unsigned long long)ps->maps_read_failed, (unsigned long long)ps->objects_failed,
		(unsigned long long)ps->pid_reused, (unsigned long long)ps->processes,
		(unsigned long long)ps->processes_freed, proctab__count(r->procs));
	for (uint32_t t = PROFILE_CPU + 1; t < PROFILE_NTYPES; t++)
		if (r->opts->profile_types & (1u << t))
			fprintf(
			    stderr,
			    "spanprof: %s profile: %llu samples, %llu lost (ring buffer full)\n",
			    profile__type_info(t)->name, (unsigned long long)r->type_samples[t],
			    (unsigned long long)st[sp_stat_type_drop(t)]);
	sampler__event_summary(s, stderr); /* the event types' own counters */
	unwind_summary(r, st);		   /* CFI unwinder */
	fileid_summary(r, st);		   /* file identities */
	jit_summary(r);			   /* JIT code names */
	span_links_summary(r, st);
	targeting_summary(r, st);
	if (r->exporter) {
		struct otlp_exporter_stats es;

		otlp_exporter__stats(r->exporter, &es);
		fprintf(stderr,
			"spanprof: export to %s: %llu requests sent (%llu bytes, %llu samples), "
			"%llu retries, %llu failed, %llu dropped (%llu samples), %llu profiles "
			"rejected by the Collector, %llu encoding failures (%llu samples lost "
			"encoding)\n",
			r->opts->endpoint, (unsigned long long)es.requests_sent,
			(unsigned long long)es.bytes_sent, (unsigned long long)es.samples_sent,
			(unsigned long long)es.retries, (unsigned long long)es.failed,
			(unsigned long long)es.dropped, (unsigned long long)es.dropped_samples,
			(unsigned long long)es.rejected_profiles,
			(unsigned long long)r->encode_failures,
			(unsigned long long)r->encode_dropped);
	}
	if (r->metrics) {
		struct otlp_exporter_stats ms;

		otlp_exporter__stats(r->metrics, &ms);
		fprintf(stderr,
			"spanprof: self-metrics: %llu requests sent, %llu retries, %llu failed, "
			"%llu dropped\n",
			(unsigned long long)ms.requests_sent, (unsigned long long)ms.retries,
			(unsigned long long)ms.failed, (unsigned long long)ms.dropped);
	}
	accounting_summary(r, st);
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

/* Exit status of an exporting run: 1 when samples were taken but none reached the Collector. */
static int export_result(struct recorder *r)
{
	struct otlp_exporter_stats es;

	otlp_exporter__stats(r->exporter, &es);
	if (r->samples && !es.samples_sent)
		return fail("no sample reached the Collector at %s (see the errors above)",
			    r->opts->endpoint);
	return 0;
}

/* Self-telemetry (docs/self-telemetry.md): the stats lines and the --self-metrics request. */
static void self_telemetry(struct recorder *r, struct sampler *s, const struct symcache *syms,
			   int log)
{
	struct selfstats_sources src = {
	    .start_unix_ns = r->start_unix,
	    .sampler = s,
	    .procs = r->procs,
	    .syms = syms,
	    .unwinder = r->unwinder,
	    .links = r->links,
	    .profiles = r->exporter,
	    .metrics = r->metrics,
	    .samples = r->samples,
	    .samples_oom = r->user_drops,
	    .link_drops = r->link_drops,
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
	if (!err && r->links)
		*out = spanlinks__meta(r->links, pid, *out);
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
 * Ends the current export interval: encodes its samples into requests,
 * queues them, and starts a new interval with an empty profile.
 */
static void export_interval(struct recorder *r)
{
	struct otlp_encode_opts eo = {
	    .max_request_bytes = r->opts->max_request_bytes,
	    .process_meta = process_meta,
	    .ctx = r,
	    .k8s_node_name = r->k8s_node,
	};
	struct profile_meta meta = {0};
	uint64_t now_unix = clock_ns(CLOCK_REALTIME), now_mono = clock_ns(CLOCK_MONOTONIC);
	int err;

	meta.start_unix_nano = r->interval_start_unix;
	meta.duration_nano = now_mono - r->interval_start_mono;
	meta.frequency_hz = r->opts->frequency_hz;
	meta.period_nano = 1000000000ull / r->opts->frequency_hz;
	profile__set_meta(r->profile, &meta);
	if (profile__nsamples(r->profile)) {
		err = otlp__encode(r->profile, &eo, submit_request, r);
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
	profile__reset(r->profile);
	proctab__profile_reset(r->procs);
	r->interval_start_unix = now_unix;
	r->interval_start_mono = now_mono;
}

/*
 * After writing @path (@err: 0 or -errno): names the failure, or appends ", PATH" (the first
 * without the comma) to @names (@len bytes used of @size). Returns 1 when it failed, else 0.
 */
static int written(int err, const char *path, char *names, size_t size, size_t *len)
{
	if (err)
		return fail("writing %s failed: %s", path, strerror(-err));
	if (*len < size)
		*len += snprintf(names + *len, size - *len, "%s%s", *len ? ", " : "", path);
	return 0;
}

/*
 * Local outputs: the CPU profile as profile.pb.gz, profile.folded and flamegraph.svg; each
 * other selected profile type as TYPE.pb.gz, TYPE.folded and flamegraph-TYPE.svg. A file that
 * can't be written is named and the others are still written. Returns 0, or 1 when any failed.
 */
static int write_outputs(struct recorder *r, const char *dir)
{
	uint32_t types = record__selected_types(r->opts);
	char path[PATH_MAX], names[1024] = "";
	size_t len = 0;
	int failed = 0;

	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const struct profile_type_info *ti = profile__type_info(t);

		if (!(types & (1u << t)))
			continue;
		snprintf(path, sizeof(path), "%s/%s.pb.gz", dir, ti->file_stem);
		failed |= written(pprof__write_type(r->profile, path, t), path, names,
				  sizeof(names), &len);
		snprintf(path, sizeof(path), "%s/%s.folded", dir, ti->file_stem);
		failed |= written(folded__write_type(r->profile, path, t), path, names,
				  sizeof(names), &len);
		if (t == PROFILE_CPU)
			snprintf(path, sizeof(path), "%s/flamegraph.svg", dir);
		else
			snprintf(path, sizeof(path), "%s/flamegraph-%s.svg", dir, ti->name);
		failed |= written(flamegraph__write_svg_type(r->profile, path, ti->title, t), path,
				  names, sizeof(names), &len);
	}
	if (len)
		fprintf(stderr, "spanprof: wrote %s\n", names);
	return failed;
}

static int add_env_header(void *ctx, const char *key, const char *value)
{
	struct record_opts *o = ctx;

	if (o->nheaders >= RECORD_MAX_HEADERS)
		return -E2BIG;
	/* Options live as long as the process: these copies are never freed. */
	o->headers[o->nheaders].key = strdup(key);
	o->headers[o->nheaders].value = strdup(value);
	if (!o->headers[o->nheaders].key || !o->headers[o->nheaders].value)
		return -ENOMEM;
	o->nheaders++;
	return 0;
}

int record__apply_env(struct record_opts *o, const struct record_flags_set *f)
{
	char why[256];
	const char *v;
	char *end;
	double ms;
	int b;

	if (!f->endpoint && (v = otel_env__exporter("ENDPOINT"))) {
		if (endpoint__parse(v, NULL, why, sizeof(why)))
			return fail(
			    "OTEL_EXPORTER_OTLP_%sENDPOINT: %s",
			    v == getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") ? "PROFILES_" : "",
			    why);
		o->endpoint = v;
	}
	if (!f->insecure && (v = otel_env__exporter("INSECURE"))) {
		b = otel_env__bool(v);
		if (b < 0)
			return fail("OTEL_EXPORTER_OTLP_INSECURE wants true or false, not '%s'", v);
		o->insecure = b; /* false: TLS even for a loopback endpoint without a scheme */
	}
	if (!f->export_timeout && (v = otel_env__exporter("TIMEOUT"))) {
		errno = 0;
		ms = strtod(v, &end);
		if (errno || end == v || *end || !(ms > 0))
			return fail("OTEL_EXPORTER_OTLP_TIMEOUT wants milliseconds, not '%s'", v);
		o->export_timeout_s = ms / 1000;
	}
	if (!f->gzip && (v = otel_env__exporter("COMPRESSION"))) {
		if (strcmp(v, "gzip") && strcmp(v, "none"))
			return fail("OTEL_EXPORTER_OTLP_COMPRESSION wants gzip or none, not '%s'",
				    v);
		o->gzip = !strcmp(v, "gzip");
	}
	if (!f->tls_ca && (v = otel_env__exporter("CERTIFICATE")))
		o->tls_ca = v;
	if (!f->tls_cert && (v = otel_env__exporter("CLIENT_CERTIFICATE")))
		o->tls_cert = v;
	if (!f->tls_key && (v = otel_env__exporter("CLIENT_KEY")))
		o->tls_key = v;
	/*
	 * Environment headers first; a flag's header with the same key replaces them. Without
	 * --header the headers are the configuration file's, and the environment's win instead.
	 */
	if ((v = otel_env__exporter("HEADERS"))) {
		struct record_header flag_headers[RECORD_MAX_HEADERS];
		size_t nflag = o->nheaders;
		int skipped;

		memcpy(flag_headers, o->headers, sizeof(flag_headers[0]) * nflag);
		o->nheaders = 0;
		skipped = otel_env__parse_list(v, add_env_header, o);
		if (skipped < 0)
			return fail("OTEL_EXPORTER_OTLP_HEADERS: %s", strerror(-skipped));
		if (skipped > 0)
			fprintf(stderr,
				"spanprof: warning: %d malformed entries in "
				"OTEL_EXPORTER_OTLP_HEADERS ignored (want key=value,...)\n",
				skipped);
		for (size_t i = 0; i < nflag; i++) {
			size_t j;

			for (j = 0; j < o->nheaders; j++)
				if (!strcasecmp(o->headers[j].key, flag_headers[i].key))
					break;
			if (j < o->nheaders && !f->headers)
				continue;
			if (j == o->nheaders && o->nheaders >= RECORD_MAX_HEADERS)
				return fail("at most %d headers", RECORD_MAX_HEADERS);
			if (j == o->nheaders)
				o->nheaders++;
			o->headers[j] = flag_headers[i];
		}
	}
	/* gRPC metadata keys are lower-case; keys and values are checked here, not per call. */
	for (size_t i = 0; i < o->nheaders; i++) {
		for (char *c = o->headers[i].key; *c; c++) {
			*c = tolower((unsigned char)*c);
			if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
				return fail(
				    "header name '%s' is not valid gRPC metadata (letters, digits, "
				    "'-', '_' and '.' only)",
				    o->headers[i].key);
		}
		if (strlen(o->headers[i].key) > 4 &&
		    !strcmp(o->headers[i].key + strlen(o->headers[i].key) - 4, "-bin"))
			return fail("binary header '%s' is not supported", o->headers[i].key);
		for (const char *c = o->headers[i].value; *c; c++)
			if (*c < 0x20 || *c > 0x7e)
				return fail("the value of header '%s' has a control or non-ASCII "
					    "character",
					    o->headers[i].key);
	}
	/* The checks across options (TLS files, endpoint scheme): check_across() in main.c. */
	return 0;
}

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
	struct sigaction sa = {.sa_handler = on_signal}, old_hup;
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
	uint32_t *tgids = NULL;
	size_t ntgids = 0;
	uint64_t t0, t_stop, last_progress, last_export, last_trim, last_sweep, start_unix,
	    last_stats, flush_end;
	int rc = 1, dir_created = 0, n;

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
	/* Kernels since 5.11 charge BPF memory to the cgroup: a refusal here is harmless. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) && getenv("SPANPROF_DEBUG"))
		fprintf(stderr, "spanprof: warning: setrlimit(RLIMIT_MEMLOCK): %s\n",
			strerror(errno));

	syms = symcache__new(&(struct symcache_opts){.max_bytes = (size_t)o->symcache_mb << 20});
	r.profile = profile__new();
	if (!syms || !r.profile)
		goto fail_nomem;
	ksyms = ksyms__load("/proc/kallsyms");
	if (!ksyms)
		fprintf(stderr,
			"spanprof: warning: kernel symbols unavailable (%s): kernel frames "
			"stay addresses\n",
			strerror(errno));
	r.procs = proctab__new(syms, ksyms);
	if (!r.procs || start_k8s(&r))
		goto fail_nomem;
	proctab__set_jit_flags(r.procs, o->java_perfmap ? JITPROC_JAVA_PERFMAP : 0);
	r.boot_to_unix_ns = boot_to_unix_offset();

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
	so.ringbuf_bytes = ringbuf_size(o->frequency_hz, o->profile_types);
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
	if (r.targets) {
		struct sampler_filter_maps fm;

		sampler__filter_maps(s, &fm);
		if (targets__start(r.targets, &fm)) {
			fail("cannot fill the targeting filters: %s", strerror(errno));
			goto cleanup_dir;
		}
	}
	start_unwinder(&r, s, tgids, ntgids);
	if (start_span_links(&r, s, tgids, ntgids))
		goto cleanup_dir;
	if (stop_requested) {
		fail("interrupted while starting: nothing was recorded");
		rc = 128 + stop_requested;
		goto cleanup_dir;
	}
	sampler__start(s);
	/* Everything that needs CAP_PERFMON and the like is loaded and attached: let it go. */
	n = caps__drop_after_load();
	if (getenv("SPANPROF_DEBUG")) {
		char left[512];

		caps__describe(left, sizeof(left));
		fprintf(stderr, "spanprof: capabilities: %d dropped, kept %s\n", n, left);
	}

	malloc_trim(0); /* start-up: BTF, kernel symbols, the first CFI tables */
	t0 = last_progress = last_export = last_trim = last_sweep = last_stats =
	    clock_ns(CLOCK_MONOTONIC);
	start_unix = r.start_unix = clock_ns(CLOCK_REALTIME);
	r.interval_start_mono = t0;
	r.interval_start_unix = start_unix;
	/* After the capabilities are dropped: a thread keeps those it was created with. */
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
		if (r.links)
			spanlinks__tick(r.links);
		if (r.targets) /* containers and pods started since, binaries replaced */
			targets__tick(r.targets, now);
		if (r.exporter && now - last_export >= (uint64_t)(o->export_interval_s * 1e9)) {
			export_interval(&r);
			last_export = now;
		}
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
			progress(&r, s, t0, now, 0);
			last_progress = now;
		}
	}
	deadline__cancel(r.deadline); /* if it has not fired: no stop from it from here on */
	t_stop = deadline__fired(r.deadline);
	if (!t_stop) {
		sampler__stop(s);
		t_stop = clock_ns(CLOCK_MONOTONIC);
	}
	/* Samples taken before the stop may still wait in the ring: none is lost. */
	sampler__drain(s);
	/* One flush deadline for both senders: SIGTERM -> exit within --flush-timeout. */
	flush_end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)(o->flush_timeout_s * 1e9);
	if (r.exporter) {
		struct otlp_exporter_stats es;

		/* The last, partial interval; then give the queue a bounded time to drain. */
		export_interval(&r);
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
		progress(&r, s, t0, t_stop, 1);

	meta.start_unix_nano = start_unix;
	meta.duration_nano = t_stop - t0;
	meta.frequency_hz = o->frequency_hz;
	meta.period_nano = 1000000000ull / o->frequency_hz;
	profile__set_meta(r.profile, &meta);
	summary(&r, s, meta.duration_nano / 1e9);
	if (getenv("SPANPROF_DEBUG"))
		memory_summary(syms);
	/* Detach before the (possibly slow) writes: nothing stays attached longer than needed. */
	proctab__set_maps_hook(r.procs, NULL, NULL); /* CFI unwinder, span links */
	unwinder__free(r.unwinder);
	r.unwinder = NULL;
	spanlinks__free(r.links);
	r.links = NULL;
	r.sampler = NULL;
	sampler__free(s);
	s = NULL;
	rc = r.exporter ? export_result(&r) : write_outputs(&r, o->output_dir);
	goto cleanup;

fail_nomem:
	fail("out of memory while starting");
cleanup_dir:
	if (dir_created && o->output_dir)
		rmdir(o->output_dir);
cleanup:
	deadline__free(r.deadline); /* before the sampler it stops */
	unwinder__free(r.unwinder); /* CFI unwinder: its chunks before the sampler's maps */
	spanlinks__free(r.links);   /* its map entries, before the sampler's maps */
	r.sampler = NULL;
	sampler__free(s);
	otlp_exporter__free(r.exporter);
	otlp_exporter__free(r.metrics);
	selfstats__resource_clear(&r.self_res);
	proctab__free(r.procs);
	profile__free(r.profile);
	ksyms__free(ksyms);
	symcache__free(syms);
	free(tgids);
	targets__free(r.targets);
	k8smeta__free(r.k8s);
	pidwatch__free(r.pidwatch);
	return rc;
}
