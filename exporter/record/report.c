/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report: the end of a run read from the live stages (report.h): report__collect() copies their
 * counters into a struct report_data, report__memory() prints the memory line. The other parts
 * read only that data or the stages' counters: report_progress.c (the progress line),
 * report_accounting.c (the first lines and --verbose), report_problems.c (the table of
 * problems), report_json.c (--stats-json).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/k8smeta.h"
#include "process/procmaps.h"
#include "process/proctab.h"
#include "record/recorder.h"
#include "record/report.h"
#include "record/report_common.h"
#include "resolve/objtally.h"
#include "resolve/resolve.h"
#include "runtime/jit/jitprocs.h"
#include "sampling/targets.h"
#include "spans/spanlinks.h"
#include "symbols/symbolize.h"
#include "unwind/unwinder.h"

/* --- collection --- */

void report__collect(struct recorder *r, struct sampler *s, double secs,
		     const struct report_debuginfod *dbg, struct report_data *out)
{
	struct objtally_entry top[REPORT_MAX_FILES];
	const struct objtally *objs;
	size_t len = 0;
	FILE *f;

	memset(out, 0, sizeof(*out));
	out->opts = r->opts;
	out->secs = secs;
	out->ncpus = s ? sampler__ncpus(s) : 0;
	out->ringbuf_bytes = r->ringbuf_bytes;
	out->targeted = targeted(r);
	out->ksyms_on = r->ksyms_on;
	out->samples = r->samples;
	out->user_drops = r->user_drops;
	out->link_drops = r->in.link_drops;
	memcpy(out->type_samples, r->type_samples, sizeof(out->type_samples));
	if (s) {
		sampler__stats(s, out->bpf);
		sampler__queue_stats(s, &out->queue);
	}
	out->procs = *proctab__stats(r->procs);
	out->procs_in_table = proctab__count(r->procs);
	out->mapped_not_regular = procmaps__not_regular();
	regfile__stats(&out->slow_files);
	out->resolve = *resolve__stats(r->in.resolve);
	objs = resolve__objects(r->in.resolve);
	out->frames_in_files = objtally__frames(objs);
	out->nfiles = objtally__top_unnamed(objs, top, REPORT_MAX_FILES);
	for (size_t i = 0; i < out->nfiles; i++) {
		const char *path = elf_object__orig_path(top[i].obj);

		snprintf(out->files[i].path, sizeof(out->files[i].path), "%s", path ? path : "?");
		out->files[i].frames = top[i].frames;
		out->files[i].unnamed = top[i].unnamed;
	}
	if (r->syms)
		symcache__stats(r->syms, &out->syms);
	out->unwind_on = r->unwinder != NULL;
	if (r->unwinder)
		unwinder__stats(r->unwinder, &out->unwind);
	out->links_on = r->in.links != NULL;
	if (r->in.links)
		spanlinks__stats(r->in.links, &out->links);
	out->targets_on = r->targets != NULL;
	if (r->targets)
		targets__stats(r->targets, &out->targets);
	out->k8s_on = r->k8s != NULL;
	out->k8s_node = r->k8s_node != NULL;
	if (r->k8s)
		k8smeta__stats(r->k8s, &out->k8s);
	out->export_on = r->exporter != NULL;
	if (r->exporter)
		otlp_exporter__stats(r->exporter, &out->export);
	out->encode_failures = r->encode_failures;
	out->encode_dropped = r->encode_dropped;
	out->metrics_on = r->metrics != NULL;
	if (r->metrics)
		otlp_exporter__stats(r->metrics, &out->metrics);
	out->debuginfod_on = dbg != NULL;
	if (dbg)
		out->debuginfod = *dbg;
	out->jit_on = r->jit != NULL;
	if (r->jit)
		out->jit = *jitprocs__stats(r->jit);
	out->python_on = r->python != NULL;
	if (r->python) {
		pytab__stats(r->python, &out->python);
		if (s)
			sampler__python_stats(s, out->python_walks, PY_STAT_COUNT);
	}
	out->v8_on = r->v8 != NULL;
	if (r->v8) {
		v8tab__stats(r->v8, &out->v8);
		if (s)
			sampler__v8_stats(s, out->v8_bpf, V8_STAT_COUNT);
	}
	out->php_on = r->php != NULL;
	if (r->php) {
		phptab__stats(r->php, &out->php);
		if (s)
			sampler__php_stats(s, out->php_bpf, PHP_STAT_COUNT);
	}
	out->jvm_on = r->jvm != NULL;
	if (r->jvm) {
		hstab__stats(r->jvm, &out->jvm);
		if (s)
			sampler__hs_stats(s, out->jvm_bpf, HS_STAT_COUNT);
	}
	for (uint32_t t = PROFILE_CPU + 1; s && t < PROFILE_NTYPES; t++)
		if (r->opts->profile_types & (1u << t))
			out->nevent_counters[t] =
			    sampler__event_counters(s, t, out->event_counters[t]);
	f = s ? open_memstream(&out->event_lines, &len) : NULL;
	if (f) {
		sampler__event_summary(s, f); /* the event types' own lines */
		fclose(f);
	}
}

void report__data_clear(struct report_data *d)
{
	free(d->event_lines);
	d->event_lines = NULL;
}

/* SPANPROF_DEBUG: where the memory went (docs/performance.md). */
void report__memory(struct symcache *syms)
{
	struct symcache_stats ss;
	struct mallinfo2 mi = mallinfo2();

	symcache__stats(syms, &ss);
	fprintf(
	    stderr,
	    "spanprof: memory: symbol cache %.1f MiB now, %.1f MiB peak, budget %.0f MiB (grown "
	    "%llu times), %llu loads (%llu re-loads), %llu evictions, %llu lookups (%llu cached), "
	    "%llu DWARF skipped, %llu descriptors "
	    "(%llu idle closes, %llu re-read, %llu gone); malloc: heap %.1f "
	    "MiB (%.1f MiB free), mmapped %.1f MiB\n",
	    ss.bytes / 1048576.0, ss.bytes_peak / 1048576.0, ss.budget / 1048576.0,
	    u(ss.budget_grown), u(ss.loads), u(ss.reloads), u(ss.evictions), u(ss.lookups),
	    u(ss.cache_hits), u(ss.dwarf_skipped), u(ss.fds), u(ss.idle_closes), u(ss.idle_reloads),
	    u(ss.idle_reopen_errors), mi.arena / 1048576.0, mi.fordblks / 1048576.0,
	    mi.hblkhd / 1048576.0);
}
