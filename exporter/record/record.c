/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record: the conductor of `spanprof record` (record.h). It starts the stages in order (checks,
 * the resolve pipeline, the sampler, the optional stages, sampling on), runs the main loop, stops
 * (drain, export, report, outputs) and frees the stages in reverse. Each concern is a module of
 * its own: signals.c, checks.c, targeting.c, sizing.c, stages.c, callbacks.c, export.c,
 * selftel.c, debugfiles.c; the report is report.c.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "otlp/otlp_export.h"
#include "output/outputs.h"
#include "process/k8smeta.h"
#include "process/proctab.h"
#include "profile/profile.h"
#include "record/callbacks.h"
#include "record/checks.h"
#include "record/debugfiles.h"
#include "record/export.h"
#include "record/record.h"
#include "record/record_describe.h"
#include "record/record_util.h"
#include "record/recorder.h"
#include "record/report.h"
#include "record/selftel.h"
#include "record/signals.h"
#include "record/sizing.h"
#include "record/stages.h"
#include "record/targeting.h"
#include "resolve/resolve.h"
#include "runtime/runtime.h"
#include "sampling/caps.h"
#include "sampling/deadline.h"
#include "sampling/pidwatch.h"
#include "sampling/sampler_user.h"
#include "sampling/targets.h"
#include "sampling/tracefs.h"
#include "spans/spanlinks.h"
#include "symbols/debuginfod.h"
#include "symbols/symbolize.h"
#include "telemetry/selfstats.h"
#include "unwind/unwinder.h"
#include "util/regfile.h"
#include "util/util.h"

/* Entries of exited processes leave the process table this often (proctab__sweep()). */
#define PROC_SWEEP_NS (5 * 1000000000ull)

/* One run: the recorder (shared with the other modules of record/) and what only it holds. */
struct run {
	struct recorder r;
	uint32_t *tgids; /* the --pid processes' thread groups */
	size_t ntgids;
	struct ksyms *ksyms;
	pthread_t ksyms_thread;
	int ksyms_loading, ksyms_err;
	int dir_created; /* the output directory did not exist: a failed start removes it */
	FILE *slog;	 /* the start-up timeline (--verbose, not --quiet); NULL: none */
	uint64_t launch; /* util__mono_ns() at launch: the timeline counts from there */
	/* CLOCK_MONOTONIC: sampling on and off; the main loop's last periodic tasks. */
	uint64_t t0, t_stop, last_progress, last_trim, last_sweep, last_stats;
	int tables_wait; /* a line is due when the --pid processes' tables are in */
};

/* Offset from CLOCK_BOOTTIME (bpf_ktime_get_boot_ns) to the Unix wall clock. */
static uint64_t boot_to_unix_offset(void)
{
	uint64_t best = UINT64_MAX, off = 0;

	/* The tightest bracket of three reads gives the best estimate. */
	for (int i = 0; i < 3; i++) {
		uint64_t b0 = record__clock_ns(CLOCK_BOOTTIME),
			 r = record__clock_ns(CLOCK_REALTIME);
		uint64_t b1 = record__clock_ns(CLOCK_BOOTTIME);

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

/* A signal during start-up: 0, or the exit code (128 + the signal) after a line. */
static int interrupted(void)
{
	int sig = record__stop_requested();

	if (!sig)
		return 0;
	record__fail("interrupted while starting: nothing was recorded");
	return 128 + sig;
}

/*
 * Start, step 1: what must hold before anything starts (capabilities, BTF, the --pid processes,
 * the targeting filters, the output files). 0, or 1 after a message.
 */
static int start_checks(struct run *run)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};

	record__tune_malloc();
	/* From the start: a signal during start-up must end the run cleanly too. */
	record__signals_install();
	if (record__check_privileges() || record__check_btf())
		return 1;
	/* Before any thread: a mount namespace of the agent's own is the whole process's. */
	tracefs__ensure();
	run->tgids = calloc(o->npids ? o->npids : 1, sizeof(*run->tgids));
	if (!run->tgids)
		return record__fail("out of memory");
	if (record__resolve_pids(o, run->tgids, &run->ntgids))
		return 1;
	if (record__make_targets(r))
		return 1;
	if (record__watch_pids(r, run->tgids, run->ntgids))
		return 1;
	if (o->output_dir && record__check_output_dir(o->output_dir, &run->dir_created)) {
		run->dir_created = 0; /* removed there already, when it made it */
		return 1;
	}
	if (o->stats_json && record__check_stats_json(o->stats_json))
		return 1;
	/* Kernels since 5.11 charge BPF memory to the cgroup: a refusal here is harmless. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) && getenv("SPANPROF_DEBUG"))
		fprintf(stderr, "spanprof: warning: setrlimit(RLIMIT_MEMLOCK): %s\n",
			strerror(errno));
	return 0;
}

/*
 * Start, step 2: the path a sample takes (symbol cache, profile model, process table, resolver;
 * the kernel's symbols on a thread of their own) and the OTLP export. 0, or 1 after a message.
 */
static int start_pipeline(struct run *run)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;

	r->syms = symcache__new(&(struct symcache_opts){
	    .max_bytes = (size_t)o->symcache_mb << 20,
	    .max_bytes_bound = (size_t)o->symcache_max_mb << 20,
	});
	r->in.profile = profile__new();
	if (!r->syms || !r->in.profile)
		return record__fail("out of memory while starting");
	/* Read while the kernel verifies the BPF programs: nothing before sampling waits on it. */
	run->ksyms_loading = !pthread_create(&run->ksyms_thread, NULL, load_ksyms, &run->ksyms_err);
	if (!run->ksyms_loading)
		run->ksyms = load_ksyms(&run->ksyms_err);
	r->procs = proctab__new(r->syms);
	r->in.resolve = r->procs ? resolve__new(r->procs, r->syms, NULL) : NULL;
	if (r->in.resolve)
		resolve__set_short_names(r->in.resolve, o->short_names);
	if (!r->in.resolve || record__start_k8s(r))
		return record__fail("out of memory while starting");
	record__start_jit(r);
	r->in.boot_to_unix_ns = boot_to_unix_offset();
	return record__start_export(r);
}

/*
 * Start, step 3: the sampler (the BPF programs loaded, not sampling yet), the process table's
 * hooks, the targeting filters filled. 0, 1 after a message, or 128 + a signal.
 */
static int start_sampler(struct run *run)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;
	struct sampler_opts so = {0};
	int rc;

	so.frequency_hz = o->frequency_hz;
	so.ringbuf_bytes = o->ringbuf_mb ? o->ringbuf_mb << 20 : record__ringbuf_size(o);
	r->ringbuf_bytes = so.ringbuf_bytes;
	so.pids = run->tgids;
	so.npids = run->ntgids;
	so.cb = record__on_sample;
	so.ctx = r;
	/* CFI unwinder: chunks of rows within the byte limit, and its notifications. */
	so.unwind_max_chunks = (uint64_t)o->unwind_max_mb * (1 << 20) / UNWIND_CHUNK_BYTES;
	so.event_cb = record__on_unwind_event;
	so.start_disabled = 1;
	so.threadctx = !o->no_span_links;
	so.ctx_uprobes = o->no_span_links ? 0 : o->nctx_uprobes;
	so.profile_types = o->profile_types;
	so.alloc_sample_bytes = o->alloc_sample_bytes;
	so.alloc_min_bytes = o->alloc_min_bytes;
	so.lock_min_wait_ns = o->lock_min_wait_ns;
	so.offcpu_min_ns = o->offcpu_min_ns;
	if (r->targets) {
		so.filter_exe_max = targets__exe_max(r->targets);
		so.filter_cgroup_max = targets__cgroup_max(r->targets);
	}
	so.exec_path_cb = record__on_exec_path; /* file identities */
	so.python_max_procs = o->no_python ? 0 : RECORD_PYTHON_MAX_PROCS;
	so.python_code_cache = !o->no_python_code_cache;
	sampler__startup_mark(run->slog, run->launch, "targets resolved, exporter set up");
	so.startup_log = run->slog;
	so.startup_t0_ns = run->launch;
	r->sampler = sampler__new(&so);
	if (!r->sampler) {
		rc = interrupted();
		return rc ? rc : 1;
	}
	proctab__set_maps_hook(r->procs, record__maps_hooks, r);
	if (r->targets) {
		struct sampler_filter_maps fm;

		sampler__filter_maps(r->sampler, &fm);
		if (targets__start(r->targets, &fm))
			return record__fail("cannot fill the targeting filters: %s",
					    strerror(errno));
	}
	return 0;
}

/*
 * Start, step 4: the optional stages on the sampler's maps (CFI unwinder, CPython, V8, span
 * links), the --pid processes described before sampling starts. 0, or 1 after a message.
 */
static int start_stages(struct run *run)
{
	struct recorder *r = &run->r;
	struct sampler *s = r->sampler;

	record__start_unwinder(r, s, run->tgids, run->ntgids);
	sampler__startup_mark(run->slog, run->launch, "CFI unwinder started");
	record__start_python(r, s, run->tgids, run->ntgids);
	record__start_v8(r, s, run->tgids, run->ntgids);
	record__start_jvm(r, s, run->tgids, run->ntgids);
	record__start_php(r, s, run->tgids, run->ntgids);
	if (record__start_span_links(r, s, run->tgids, run->ntgids))
		return 1;
	sampler__startup_mark(run->slog, run->launch, "Python, V8 and span links started");
	/*
	 * The --pid processes' maps and files, read now: a machine slower than its samples (a
	 * loaded one, an emulated guest) may read a short-lived target's samples after it exited,
	 * and they are named only from what was read while it ran.
	 */
	for (size_t i = 0; i < run->ntgids; i++)
		proctab__preload(r->procs, run->tgids[i]);
	sampler__startup_mark(run->slog, run->launch, "--pid processes read");
	return 0;
}

/* Everything that needs CAP_PERFMON and the like is loaded and attached: let it go. */
static void drop_caps(void)
{
	int n = caps__drop_after_load();

	if (getenv("SPANPROF_DEBUG")) {
		char left[512];

		caps__describe(left, sizeof(left));
		fprintf(stderr, "spanprof: capabilities: %d dropped, kept %s\n", n, left);
	}
}

/* The kernel's symbols, read on their thread: before the first sample is named. */
static void join_ksyms(struct run *run)
{
	struct recorder *r = &run->r;

	if (run->ksyms_loading) { /* before the first sample is named */
		pthread_join(run->ksyms_thread, (void **)&run->ksyms);
		sampler__startup_mark(run->slog, run->launch, "kernel symbols read");
	}
	run->ksyms_loading = 0;
	if (!run->ksyms)
		fprintf(stderr,
			"spanprof: warning: kernel symbols unavailable (%s): kernel frames "
			"stay addresses\n",
			strerror(run->ksyms_err));
	r->ksyms_on = run->ksyms && ksyms__count(run->ksyms);
	resolve__set_ksyms(r->in.resolve, run->ksyms);
}

/* "spanprof: sampling ..." (unless --quiet): what is sampled, until when, where it goes. */
static void announce(struct run *run)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;

	if (!o->quiet) {
		char what[256];

		/* "spanprof: sampling" starts the line: tests and scripts wait for it. */
		fprintf(
		    stderr, "spanprof: sampling %s: %s%s%s%s; Ctrl-C to stop\n",
		    targeted(r) ? "the targeted processes" : "every process",
		    record__describe_types(what, sizeof(what), o, sampler__ncpus(r->sampler), NULL),
		    o->duration_s > 0 ? ""
		    : r->pidwatch     ? " until they exit"
				      : " until interrupted",
		    o->endpoint ? ", exporting OTLP profiles to " : "",
		    o->endpoint ? o->endpoint : "");
	}
}

/*
 * Start, step 5: sampling on, capabilities dropped, the kernel's symbols in, the clocks of the
 * run and of its export intervals set, debuginfod and the --duration deadline started, the
 * start line. Returns 0, or 128 + a signal received while starting (nothing sampled).
 */
static int start_sampling(struct run *run)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;
	int rc = interrupted();

	if (rc)
		return rc;
	sampler__start(r->sampler);
	sampler__startup_mark(run->slog, run->launch, "sampling on");
	drop_caps();
	join_ksyms(run);
	malloc_trim(0); /* start-up: BTF, kernel symbols, the first CFI tables */
	run->t0 = run->last_progress = run->last_trim = run->last_sweep = run->last_stats =
	    record__clock_ns(CLOCK_MONOTONIC);
	r->start_unix = record__clock_ns(CLOCK_REALTIME);
	r->interval_ns = (uint64_t)(o->export_interval_s * 1e9);
	r->interval_end_boot = record__clock_ns(CLOCK_BOOTTIME);
	/* In sample time, so that the intervals follow one another exactly. */
	r->in.interval_start_unix = r->interval_end_boot + r->in.boot_to_unix_ns;
	r->interval_end_boot += r->interval_ns;
	/* After the capabilities are dropped: a thread keeps those it was created with. */
	record__start_debuginfod(r, r->syms);
	if (o->duration_s > 0) {
		r->deadline =
		    deadline__new(run->t0 + (uint64_t)(o->duration_s * 1e9), on_deadline, r);
		if (!r->deadline) /* the main loop's check below still ends the run */
			fprintf(stderr, "spanprof: warning: no deadline thread (%s)\n",
				strerror(errno));
	}
	announce(run);
	record__scan_python(r, run->ntgids);
	/*
	 * The --pid processes' tables are built while sampling runs (their samples before are
	 * marked): one line says when they are in, for who wants whole stacks from the start.
	 */
	run->tables_wait = run->ntgids > 0 && !o->quiet;
	if (run->tables_wait && !r->unwinder) {
		fprintf(stderr, "spanprof: unwind tables of the targeted processes: none (CFI "
				"unwinding off)\n");
		run->tables_wait = 0;
	}
	return 0;
}

/*
 * How long the main loop waits for samples at @now (CLOCK_MONOTONIC): 100 ms, less to end
 * --duration on time or for a notified re-read of the unwinder; -1 when the run is over.
 */
static int poll_ms(struct run *run, uint64_t now)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;
	int wait_ms = 100;

	if (deadline__fired(r->deadline)) /* maybe while the main thread was busy */
		return -1;
	if (o->duration_s > 0) {
		uint64_t end = run->t0 + (uint64_t)(o->duration_s * 1e9);

		if (now >= end)
			return -1;
		/* End on time, not at the next 100 ms poll. */
		if (end - now < 100000000ull)
			wait_ms = (end - now + 999999) / 1000000;
	}
	if (r->unwinder) { /* a notified re-read is due before the usual 100 ms */
		int due = unwinder__next_due_ms(r->unwinder);

		if (due >= 0 && due < wait_ms)
			wait_ms = due;
	}
	return wait_ms;
}

/* After each poll: the stages' own work (re-reads, exits, targets) and a due export interval. */
static void tick_stages(struct run *run, uint64_t now)
{
	struct recorder *r = &run->r;

	if (r->unwinder) /* CFI unwinder: notified re-reads */
		unwinder__tick(r->unwinder);
	if (run->tables_wait && !unwinder__preloads_pending(r->unwinder)) {
		fprintf(stderr,
			"%sspanprof: unwind tables of the targeted processes loaded, %.2f s "
			"after sampling started\n",
			isatty(2) ? "\r\033[K" : "",
			(record__clock_ns(CLOCK_MONOTONIC) - run->t0) / 1e9);
		run->tables_wait = 0;
	}
	if (r->in.links)
		spanlinks__tick(r->in.links);
	for (size_t i = 0; i < r->nruntimes; i++) /* exited CPython and node processes */
		runtime_table__tick(r->runtimes[i]);
	if (r->targets) /* containers and pods started since, binaries replaced */
		targets__tick(r->targets, now);
	/*
	 * No sample taken since has closed the interval (record__on_sample()): close it on the
	 * clock, once the samples taken before its end have had time to reach the queue.
	 */
	if (r->exporter)
		record__export_due(r, record__clock_ns(CLOCK_BOOTTIME) - RECORD_EXPORT_GRACE_NS);
}

/* After each poll, when due: the process table's sweep, memory trims, stats, progress. */
static void housekeeping(struct run *run, uint64_t now)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;

	if (now - run->last_sweep >= PROC_SWEEP_NS) {
		/*
		 * Samples of a process that is gone may still wait in the ring: drain
		 * it first. Exporting, an entry also outlives the interval holding its
		 * samples.
		 */
		sampler__drain(r->sampler);
		proctab__sweep(r->procs, r->exporter != NULL);
		run->last_sweep = now;
	}
	if (now - run->last_trim >= RECORD_TRIM_NS) {
		symcache__trim(r->syms); /* mapped DWARF pages touched since */
		malloc_trim(0);
		run->last_trim = now;
	}
	if (o->stats_interval_s > 0 &&
	    now - run->last_stats >= (uint64_t)(o->stats_interval_s * 1e9)) {
		record__self_telemetry(r, r->sampler, r->syms, 1);
		run->last_stats = now;
	}
	if (!o->quiet && now - run->last_progress >= (isatty(2) ? 1000000000ull : 10000000000ull)) {
		report__progress(r, r->sampler, run->t0, now, 0);
		run->last_progress = now;
	}
}

/*
 * Run: poll the sample ring until a signal, the end of --duration, the exit of every --pid
 * process or a failure of the ring.
 */
static void run_loop(struct run *run)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;
	int n;

	while (!record__stop_requested()) {
		uint64_t now = record__clock_ns(CLOCK_MONOTONIC);
		int wait_ms = poll_ms(run, now);

		if (wait_ms < 0)
			break;
		/* Each batch of samples: CPython checks its cached code objects once. */
		for (size_t i = 0; i < r->nruntimes; i++)
			runtime_table__new_batch(r->runtimes[i]);
		n = sampler__poll(r->sampler, wait_ms);
		record__handle_exits(r, r->sampler);
		if (n < 0) {
			record__fail("reading the ring buffer failed: %s", strerror(-n));
			break;
		}
		if (r->pidwatch && !pidwatch__running(r->pidwatch)) {
			/* As at the end of --duration: the ring is drained below. */
			fprintf(stderr, "%sspanprof: all target processes exited; stopping\n",
				!o->quiet && isatty(2) ? "\r\033[K" : "");
			break;
		}
		tick_stages(run, now);
		housekeeping(run, now);
	}
}

/*
 * Stop, step 1: sampling off (at the deadline's time if it fired) and the ring drained.
 * Returns the stop in sample time (CLOCK_BOOTTIME ns).
 */
static uint64_t stop_sampling(struct run *run)
{
	struct recorder *r = &run->r;
	uint64_t t_stop_boot;

	deadline__cancel(r->deadline); /* if it has not fired: no stop from it from here on */
	run->t_stop = deadline__fired(r->deadline);
	if (!run->t_stop) {
		sampler__stop(r->sampler);
		run->t_stop = record__clock_ns(CLOCK_MONOTONIC);
	}
	/* The stop in sample time: the deadline's may have been a while ago. */
	t_stop_boot =
	    record__clock_ns(CLOCK_BOOTTIME) - (record__clock_ns(CLOCK_MONOTONIC) - run->t_stop);
	/* Samples taken before the stop may still wait in the ring: none is lost. */
	sampler__drain(r->sampler);
	if (getenv("SPANPROF_DEBUG")) {
		struct sampler_queue_stats qs;

		sampler__queue_stats(r->sampler, &qs);
		fprintf(stderr, "spanprof: debug: sample queue peak %.1f MiB\n",
			qs.peak_bytes / 1048576.0);
	}
	return t_stop_boot;
}

/* Detach before the (possibly slow) writes: nothing stays attached longer than needed. */
static void detach_stages(struct run *run)
{
	struct recorder *r = &run->r;
	struct sampler *s = r->sampler;

	proctab__set_maps_hook(r->procs, NULL, NULL); /* CFI unwinder, span links, runtimes */
	unwinder__free(r->unwinder);
	r->unwinder = NULL;
	spanlinks__free(r->in.links);
	r->in.links = NULL;
	record__stop_python(r);
	record__stop_v8(r);
	record__stop_jvm(r);
	record__stop_php(r);
	record__stop_jit(r);
	r->sampler = NULL;
	sampler__free(s);
}

/*
 * Stop, step 2: debug files still coming, the last export, the report, the outputs (or the
 * export's outcome) and --stats-json. Returns the exit code.
 */
static int finish(struct run *run, uint64_t t_stop_boot)
{
	struct recorder *r = &run->r;
	const struct record_opts *o = r->opts;
	struct profile_meta meta = {0};
	struct report_debuginfod dbg = {0};
	struct report_data rep = {0};
	int dbg_on, rc;

	dbg_on = !record__finish_debuginfod(r, r->syms, &dbg);
	record__finish_export(r, r->sampler, t_stop_boot);
	if (!o->quiet)
		report__progress(r, r->sampler, run->t0, run->t_stop, 1);

	meta.start_unix_nano = r->start_unix;
	meta.duration_nano = run->t_stop - run->t0;
	meta.frequency_hz = o->frequency_hz;
	meta.period_nano = 1000000000ull / o->frequency_hz;
	profile__set_meta(r->in.profile, &meta);
	/* The end of the run: what was sampled, where it went, the problems (record/report.h). */
	report__collect(r, r->sampler, meta.duration_nano / 1e9, dbg_on ? &dbg : NULL, &rep);
	report__print_head(stderr, &rep);
	if (getenv("SPANPROF_DEBUG"))
		report__memory(r->syms);
	detach_stages(run);
	rc = r->exporter
		 ? record__export_result(&rep)
		 : outputs__write_dir(r->in.profile, o->output_dir, record__selected_types(o));
	report__print_where(stderr, &rep);
	report__print_problems(stderr, &rep);
	if (o->stats_json) {
		int err = report__write_json(o->stats_json, &rep);

		if (err)
			rc = record__fail("writing --stats-json %s failed: %s", o->stats_json,
					  strerror(-err));
	}
	report__data_clear(&rep);
	return rc;
}

/* Frees what the run made, in reverse (what a failed start left too). */
static void cleanup(struct run *run)
{
	struct recorder *r = &run->r;
	struct sampler *s = r->sampler;

	if (run->ksyms_loading) /* a start-up that failed before the join */
		pthread_join(run->ksyms_thread, (void **)&run->ksyms);
	deadline__free(r->deadline);  /* before the sampler it stops */
	unwinder__free(r->unwinder);  /* CFI unwinder: its chunks before the sampler's maps */
	spanlinks__free(r->in.links); /* its map entries, before the sampler's maps */
	record__stop_python(r);	      /* likewise */
	record__stop_v8(r);	      /* likewise */
	record__stop_jvm(r);	      /* likewise */
	record__stop_php(r);	      /* likewise */
	record__stop_jit(r);
	r->sampler = NULL;
	sampler__free(s);
	otlp_exporter__free(r->exporter);
	otlp_exporter__free(r->metrics);
	selfstats__resource_clear(&r->self_res);
	resolve__free(r->in.resolve);
	proctab__free(r->procs);
	profile__free(r->in.profile);
	ksyms__free(run->ksyms);
	symcache__free(r->syms);
	dbgfetch__free(r->fetch); /* after the cache that borrowed it */
	free(run->tgids);
	targets__free(r->targets);
	k8smeta__free(r->k8s);
	pidwatch__free(r->pidwatch);
}

int record__run(const struct record_opts *o)
{
	struct run run = {.r = {.opts = o}};
	int rc;

	/* The start-up timeline (--verbose, not --quiet) counts from here. */
	run.slog = o->verbose && !o->quiet ? stderr : NULL;
	run.launch = util__mono_ns();
	/* At most 10^7 s: past 2^32 ms, the longest deadline regfile takes. */
	regfile__set_deadline_ms(o->slow_file_timeout_s * 1000 >= UINT32_MAX
				     ? UINT32_MAX
				     : (unsigned int)(o->slow_file_timeout_s * 1000 + 0.5));
	rc = start_checks(&run);
	if (rc)
		goto cleanup_dir;
	rc = start_pipeline(&run);
	if (rc)
		goto cleanup_dir;
	rc = start_sampler(&run);
	if (rc)
		goto cleanup_dir;
	rc = start_stages(&run);
	if (rc)
		goto cleanup_dir;
	rc = start_sampling(&run);
	if (rc)
		goto cleanup_dir;
	run_loop(&run);
	rc = finish(&run, stop_sampling(&run));
	goto cleanup;

cleanup_dir:
	if (run.dir_created && o->output_dir)
		rmdir(o->output_dir);
cleanup:
	cleanup(&run);
	return rc;
}
