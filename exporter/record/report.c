/* SPDX-License-Identifier: Apache-2.0 */
/* report: the progress line and the end of a run (report.h). */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/status.h>

#include "process/k8smeta.h"
#include "process/proctab.h"
#include "runtime/jit/jitproc.h"
#include "record/record_describe.h"
#include "record/recorder.h"
#include "record/report.h"
#include "resolve/objtally.h"
#include "resolve/resolve.h"
#include "sampling/targets.h"
#include "spans/spanlinks.h"
#include "symbols/symbolize.h"
#include "unwind/unwinder.h"

static unsigned long long u(uint64_t v)
{
	return (unsigned long long)v;
}

/* Samples lost in BPF to a full ring buffer, every profile type recorded. */
static uint64_t ringbuf_drops(const struct record_opts *o, const uint64_t *st)
{
	return selfstats_ringbuf_drops(st, record__selected_types(o));
}

/* Samples BPF handed to user space, every profile type. */
static uint64_t samples_taken(const uint64_t *st)
{
	uint64_t taken = 0;

	for (uint32_t t = 0; t < SP_PROF_NTYPES; t++)
		taken += st[sp_stat_type_samples(t)];
	return taken;
}

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

/* --- the progress line --- */

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
					profile__type_info(t)->name, u(r->type_samples[t]));
	return buf;
}

/*
 * "N dropped", then where they were lost when any were: in BPF to a full ring buffer (the
 * drain thread late, or the queue it empties the ring into full: the agent behind), in the
 * sample queue (no memory), in the agent (no memory).
 */
static const char *drop_counts(uint64_t ring, const struct sampler_queue_stats *q, uint64_t oom,
			       char *buf, size_t size)
{
	uint64_t all = ring + q->lost + oom;
	int len = snprintf(buf, size, "%llu dropped", u(all));

	if (all && len >= 0 && (size_t)len < size)
		snprintf(buf + len, size - len, " (ring buffer %llu%s, queue %llu, memory %llu)",
			 u(ring), q->full ? " with the queue full" : "", u(q->lost), u(oom));
	return buf;
}

void report__progress(struct recorder *r, struct sampler *s, uint64_t t0, uint64_t now, int final)
{
	uint64_t st[SP_STAT_MAX] = {0};
	struct sampler_queue_stats qs;
	char events[96], drops[128];
	double elapsed = (now - t0) / 1e9;
	int tty = isatty(STDERR_FILENO);

	char export[160] = "";

	sampler__stats(s, st);
	sampler__queue_stats(s, &qs);
	if (r->exporter) {
		struct otlp_exporter_stats es;

		otlp_exporter__stats(r->exporter, &es);
		snprintf(export, sizeof(export),
			 "  | export: %llu sent (%.1f KiB), %llu retries, %llu dropped, %zu queued",
			 u(es.requests_sent), es.bytes_sent / 1024.0, u(es.retries), u(es.dropped),
			 es.queued);
	}
	fprintf(stderr,
		"%sspanprof: %6.1fs  %8llu samples  %s  %llu processes  %llu in spans%s%s%s",
		tty ? "\r\033[K" : "", elapsed, u(r->samples),
		drop_counts(ringbuf_drops(r->opts, st), &qs, r->user_drops, drops, sizeof(drops)),
		u(proctab__stats(r->procs)->processes), u(st[SP_STAT_CTX_LINKED]),
		event_counts(r, events, sizeof(events)), export, tty && !final ? "" : "\n");
}

/* --- the full accounting (--verbose): one line per stage, wording kept for scripts --- */

static void span_links_lines(FILE *f, const struct report_data *d)
{
	const uint64_t *st = d->bpf;

	if (!d->links_on)
		return;
	fprintf(
	    f,
	    "spanprof: span links: %llu samples linked (%llu by uprobe); not linked: %llu "
	    "outside spans, %llu record not valid, %llu zero trace/span id, %llu attrs too big, "
	    "%llu unreadable, %llu no TLS block yet, %llu stale; %llu processes with a "
	    "thread context, %llu with a process context, %llu descriptor errors\n",
	    u(st[SP_STAT_CTX_LINKED]), u(st[SP_STAT_CTX_UPROBE]), u(st[SP_STAT_CTX_NO_SPAN]),
	    u(st[SP_STAT_CTX_NOT_VALID]), u(st[SP_STAT_CTX_ZERO_TRACE]),
	    u(st[SP_STAT_CTX_ATTRS_TOO_BIG]), u(st[SP_STAT_CTX_READ_FAILED]),
	    u(st[SP_STAT_CTX_UNALLOCATED]), u(st[SP_STAT_CTX_STALE]), u(d->links.processes_seen),
	    u(d->links.contexts_seen), u(d->links.resolve_errors));
	/* Go goroutine labels (docs/go.md): silent without a Go process. */
	if (d->links.go_processes || d->links.go_unsupported)
		fprintf(
		    f,
		    "spanprof: Go labels: %llu samples with goroutine labels, %llu linked by "
		    "span_id/trace_id, %llu ids not hex; not read: %llu no labels or no "
		    "goroutine, %llu on g0 or gsignal (runtime or signal handler), %llu off the "
		    "goroutine's stack, %llu unreadable or inconsistent (dropped), %llu maps being "
		    "grown or too big (Go 1.18-1.23, skipped), %llu stale; %llu "
		    "labels left out (too many or too long); %llu Go processes read, %llu "
		    "unsupported\n",
		    u(d->links.go_labeled), u(d->links.go_links), u(d->links.go_bad_ids),
		    u(st[SP_STAT_GOL_NONE]), u(st[SP_STAT_GOL_SYSTEM_G]),
		    u(st[SP_STAT_GOL_OFF_STACK]), u(st[SP_STAT_GOL_BAD]),
		    u(st[SP_STAT_GOL_MAP_SKIPPED]), u(st[SP_STAT_GOL_STALE]),
		    u(st[SP_STAT_GOL_TRUNCATED]), u(d->links.go_processes),
		    u(d->links.go_unsupported));
}

static void unwind_lines(FILE *f, const struct report_data *d)
{
	const uint64_t *st = d->bpf;
	const struct unwinder_stats *us = &d->unwind;

	fprintf(
	    f,
	    "spanprof: user stacks: %llu by CFI (%llu frames CFI, %llu frame pointer), %llu by "
	    "frame pointers (%llu stale entries, %llu no registers); CFI walks ended: %llu at "
	    "the outermost frame, %llu frame pointer end, %llu no mapping, %llu no table, %llu "
	    "unsupported row, %llu read failed, %llu bad CFA, %llu depth limit, %llu unproven "
	    "return address\n"
	    "spanprof: unwind tables: %llu tables of %llu files, %.1f MiB rows in %llu chunks "
	    "(%.1f of %.0f MiB), %llu processes (%.1f MiB); %llu built in %.0f ms, %llu without "
	    "CFI, %llu refused (full), %llu freed, %llu files unopenable, %llu processes "
	    "refused, %llu mappings dropped; %llu notifications (%llu lost), %llu maps "
	    "re-reads, %llu new processes read at exec; builder thread: %llu jobs (waited "
	    "%.0f ms in all, up to %llu queued at once, %llu not queued)\n",
	    u(st[SP_STAT_UNW_CFI]), u(st[SP_STAT_UNW_FRAMES_CFI]), u(st[SP_STAT_UNW_FRAMES_FP]),
	    u(st[SP_STAT_UNW_FP]), u(st[SP_STAT_UNW_STALE]), u(st[SP_STAT_UNW_NO_REGS]),
	    u(st[SP_STAT_UNW_END]), u(st[SP_STAT_UNW_FP_END]), u(st[SP_STAT_UNW_NO_MAPPING]),
	    u(st[SP_STAT_UNW_NO_TABLE]), u(st[SP_STAT_UNW_UNSUPPORTED]),
	    u(st[SP_STAT_UNW_READ_FAILED]), u(st[SP_STAT_UNW_BAD_CFA]), u(st[SP_STAT_UNW_DEPTH]),
	    u(st[SP_STAT_UNW_BAD_RA]), u(us->tables), u(us->files), us->row_bytes / 1048576.0,
	    u(us->chunks), us->chunk_bytes / 1048576.0, us->max_bytes / 1048576.0, u(us->processes),
	    us->proc_bytes / 1048576.0, u(us->builds), us->build_ns / 1e6, u(us->no_cfi),
	    u(us->tables_full), u(us->tables_freed), u(us->open_failed), u(us->procs_full),
	    u(us->mappings_dropped), u(st[SP_STAT_EVENTS]), u(st[SP_STAT_EVENT_DROP]),
	    u(us->refreshes), u(us->new_execs), u(us->jobs), us->queue_wait_ns / 1e6,
	    u(us->queue_max), u(us->jobs_dropped));
}

static void targeting_lines(FILE *f, const struct report_data *d)
{
	const struct record_opts *o = d->opts;
	const struct targets_stats *ts = &d->targets;
	const struct k8smeta_stats *ks = &d->k8s;

	if (d->targeted)
		fprintf(f,
			"spanprof: targeting: %llu samples of other processes filtered "
			"out in BPF\n",
			u(d->bpf[SP_STAT_FILTERED]));
	if (d->targets_on)
		fprintf(f,
			"spanprof: targets now: %u of %zu --exe (%u files), %u of %zu --cgroup, %u "
			"of %zu --container-id (%u ambiguous), %u of %zu --k8s-pod; %u cgroup ids; "
			"%llu cgroup walks (%llu directories, %.2f ms each), %llu map errors\n",
			ts->exes_found, o->nexes, ts->exe_keys, ts->cgroups_found, o->ncgroups,
			ts->containers_found, o->ncontainer_ids, ts->containers_ambiguous,
			ts->pods_found, o->nk8s_pods, ts->cgroup_ids, u(ts->walks),
			u(ts->walk_dirs), ts->walks ? ts->walk_ns / 1e6 / ts->walks : 0.0,
			u(ts->map_errors));
	if (d->k8s_on)
		fprintf(
		    f,
		    "spanprof: kubernetes: %llu processes named, %llu in pods without a kubelet "
		    "log entry; %llu reads of the kubelet's log directories (%u pods, %u "
		    "containers)%s\n",
		    u(ks->hits), u(ks->misses), u(ks->scans), ks->pods, ks->containers,
		    d->k8s_node ? "" : "; no K8S_NODE_NAME/NODE_NAME: no k8s.node.name");
}

/* File identities carried by samples of processes not loaded yet (bpf/fileid.bpf.h). */
static void fileid_line(FILE *f, const struct report_data *d)
{
	const uint64_t *st = d->bpf;

	fprintf(f,
		"spanprof: file identities (processes not loaded yet): %llu samples carried "
		"them (%llu mappings, %llu lookups failed, %llu frames beyond the table); %llu "
		"frames named from them, %llu frames unnamed (file unknown), %llu executables "
		"named; executable paths: %llu sent, %llu lost (ring buffer full), %llu opened, "
		"%llu unopenable or replaced; %llu walks' last return address outside code "
		"(dropped)\n",
		u(st[SP_STAT_FILEID_SAMPLES]), u(st[SP_STAT_FILEID_VMAS]),
		u(st[SP_STAT_FILEID_FAILED]), u(st[SP_STAT_FILEID_FULL]),
		u(d->resolve.frames_fileid), u(d->resolve.frames_fileid_unknown),
		u(d->procs.exe_fileid), u(st[SP_STAT_FILEID_EXECS]),
		u(st[SP_STAT_FILEID_EXEC_DROP]), u(d->procs.exec_paths_opened),
		u(d->procs.exec_paths_failed), u(st[SP_STAT_FILEID_NOT_CODE]));
}

/* JIT code named from perf maps and jitdump files (runtime/jit/jitproc.h); silent without JIT. */
static void jit_line(FILE *f, const struct report_data *d)
{
	const struct jitproc_stats *j = &d->procs.jit;
	const uint64_t *o = j->open.by_reason;

	if (!j->frames_named && !j->frames_unnamed && !j->java_failed && !o[JITFILE_SYMLINK] &&
	    !o[JITFILE_OWNER] && !o[JITFILE_NOT_REGULAR] && !o[JITFILE_TOO_BIG])
		return;
	fprintf(f,
		"spanprof: JIT code: %llu frames named, %llu unnamed (%llu of a map over its cap, "
		"%llu replaced since the sample); "
		"%llu perf maps, %llu jitdump files read (%llu lines, %llu records skipped, %llu "
		"ranges replaced by newer code); files refused: %llu symlink, %llu other owner, "
		"%llu not regular, %llu too big; %llu processes told which flag names them; "
		"%llu perf maps written by JVMs on request, %llu requests failed\n",
		u(j->frames_named), u(j->frames_unnamed), u(j->frames_full), u(j->frames_stale),
		u(j->perfmaps), u(j->jitdumps), u(j->lines_bad), u(j->records_bad), u(j->replaced),
		u(o[JITFILE_SYMLINK]), u(o[JITFILE_OWNER]), u(o[JITFILE_NOT_REGULAR]),
		u(o[JITFILE_TOO_BIG]), u(j->hints), u(j->java_requests), u(j->java_failed));
	if (!j->unwind_records)
		return;
	/* CFI of JIT code from jitdump unwinding records (docs/jit.md, "Unwinding"). */
	fprintf(
	    f,
	    "spanprof: JIT unwinding records: %llu read, %llu used; skipped: %llu without "
	    ".eh_frame, %llu bad sizes, %llu without a code load, %llu over the cap; %llu dropped "
	    "(code replaced); %llu "
	    "JIT CFI tables built (%llu FDEs, %llu FDEs skipped, %llu without rows, %llu refused "
	    "(full)), %llu loaded now, %llu JIT mappings walked by them\n",
	    u(j->unwind_records), u(j->unwind_used), u(j->unwind_empty), u(j->unwind_bad),
	    u(j->unwind_unused), u(j->unwind_full), u(j->unwind_dropped), u(d->unwind.jit_builds),
	    u(d->unwind.jit_fdes), u(d->unwind.jit_fdes_skipped), u(d->unwind.jit_empty),
	    u(d->unwind.jit_full), u(d->unwind.jit_tables), u(d->unwind.jit_mappings));
}

static void export_lines(FILE *f, const struct report_data *d)
{
	const struct otlp_exporter_stats *es = &d->export, *ms = &d->metrics;

	if (d->export_on)
		fprintf(f,
			"spanprof: export to %s: %llu requests sent (%llu bytes, %llu samples), "
			"%llu retries, %llu failed, %llu dropped (%llu samples), %llu profiles "
			"rejected by the Collector, %llu encoding failures (%llu samples lost "
			"encoding)\n",
			d->opts->endpoint, u(es->requests_sent), u(es->bytes_sent),
			u(es->samples_sent), u(es->retries), u(es->failed), u(es->dropped),
			u(es->dropped_samples), u(es->rejected_profiles), u(d->encode_failures),
			u(d->encode_dropped));
	if (d->metrics_on)
		fprintf(f,
			"spanprof: self-metrics: %llu requests sent, %llu retries, %llu failed, "
			"%llu dropped\n",
			u(ms->requests_sent), u(ms->retries), u(ms->failed), u(ms->dropped));
}

static void debuginfod_line(FILE *f, const struct report_data *d)
{
	const struct report_debuginfod *g = &d->debuginfod;

	if (!d->debuginfod_on)
		return;
	fprintf(f,
		"spanprof: debuginfod: %llu debug files fetched, %llu not on the servers, %llu "
		"failed, %llu dropped, %llu unfinished, %llu rejected; %llu frames named at the "
		"end%s%s\n",
		u(g->st.found), u(g->st.missing), u(g->st.failed), u(g->st.dropped),
		u(g->st.pending), u(g->rejected), u(g->named),
		g->st.last_error ? "; last failure: " : "",
		g->st.last_error ? strerror(-g->st.last_error) : "");
}

/*
 * Where every sample BPF took went: into the profile (and then, with --endpoint, sent or
 * counted as dropped by the exporter or the encoder) or into a drop counter. Ring-buffer drops
 * happen before BPF counts a sample as taken.
 */
/*
 * node's JavaScript frames from V8's structures (docs/node.md): processes described, what the BPF
 * reader recorded, the names and every failure by reason; silent when no V8 file was seen.
 */
static void v8_lines(FILE *f, const struct report_data *d)
{
	const struct v8tab_stats *vs = &d->v8;
	const struct resolve_stats *rs = &d->resolve;
	char errs[256];
	size_t len = 0;

	if (!d->v8_on || (!vs->processes && !vs->unsupported))
		return;
	for (int i = 0; i < V8PROC_ERR_COUNT; i++)
		if (len < sizeof(errs))
			len += snprintf(errs + len, sizeof(errs) - len, "%s%llu %s",
					len ? ", " : "", u(vs->naming.errors[i]),
					v8proc__error_name((enum v8proc_error)i));
	fprintf(
	    f,
	    "spanprof: v8: %llu node processes described (%llu now), %llu failed, %llu files "
	    "with V8 metadata not read (unsupported); BPF: %llu samples, %llu frames recorded, "
	    "%llu typed frames, %llu not a function, %llu unreadable, %llu past the depth\n"
	    "spanprof: v8: %llu samples with JavaScript frames placed, %llu not placed, %llu of "
	    "processes not described; %llu frames named, %llu not (reads failed: %s); perf map "
	    "names: %llu agree, %llu disagree; functions: %llu cached, %llu read\n",
	    u(vs->processes), u(vs->live), u(vs->failed), u(vs->unsupported),
	    u(d->v8_bpf[V8_STAT_SAMPLES]), u(d->v8_bpf[V8_STAT_FRAMES]),
	    u(d->v8_bpf[V8_STAT_TYPED]), u(d->v8_bpf[V8_STAT_NOT_FUNCTION]),
	    u(d->v8_bpf[V8_STAT_READ_FAILED]), u(d->v8_bpf[V8_STAT_DEPTH]), u(rs->v8.merged),
	    u(rs->v8.not_placed), u(rs->v8.no_process), u(rs->v8.frames_named),
	    u(rs->v8.frames_unnamed), errs, u(rs->v8.perfmap_agree), u(rs->v8.perfmap_disagree),
	    u(vs->naming.hits), u(vs->naming.misses));
}

/*
 * CPython frames (docs/python.md): processes described, the BPF walk's ends, the merges and the
 * names, every failure by reason; silent when no CPython process was seen.
 */
static void python_lines(FILE *f, const struct report_data *d)
{
	const struct pytab_stats *ps = &d->python;
	const struct resolve_stats *rs = &d->resolve;
	char fails[256], stops[512], errs[256];
	uint64_t failed = 0;
	size_t len = 0;

	if (!d->python_on)
		return;
	for (int i = 0; i < PYTAB_FAIL_COUNT; i++) {
		failed += ps->failed[i];
		if (len < sizeof(fails))
			len +=
			    snprintf(fails + len, sizeof(fails) - len, "%s%llu %s", len ? ", " : "",
				     u(ps->failed[i]), pytab__failure_name((enum pytab_failure)i));
	}
	if (!ps->processes && !failed && !d->python_walks[0])
		return;
	len = 0;
#define PY_STOP_PART(n, desc)                                                                      \
	if (len < sizeof(stops))                                                                   \
		len += snprintf(stops + len, sizeof(stops) - len, "%s%llu %s", len ? ", " : "",    \
				u(d->python_walks[PY_STOP_##n]), #n);
	PY_STOPS(PY_STOP_PART)
#undef PY_STOP_PART
	len = 0;
	for (int i = 0; i < PYPROC_ERR_COUNT; i++)
		if (len < sizeof(errs))
			len += snprintf(errs + len, sizeof(errs) - len, "%s%llu %s",
					len ? ", " : "", u(ps->name_errors[i]),
					pyproc__error_name((enum pyproc_error)i));
	fprintf(
	    f,
	    "spanprof: python: %llu CPython processes described (%llu now), %llu not (%s); "
	    "%llu files found not CPython; BPF walks: %llu (ended: %s)\n"
	    "spanprof: python: %llu samples with Python frames placed (%llu cut, marked), %llu "
	    "not placed (marked), %llu dropped with a cut native stack, %llu of processes not "
	    "described; %llu frames named, %llu not named (%llu of a code object freed since); "
	    "reads failed: %s; code objects: %llu cached, %llu read\n"
	    "spanprof: python: BPF code-object cache: %llu frames cached, %llu read, %llu "
	    "code objects freed; deallocation uprobe in %llu files (%llu failed, %llu taken off)\n",
	    u(ps->processes), u(ps->live), u(failed), fails, u(ps->files_inspected),
	    u(d->python_walks[0]), stops, u(rs->py.merged), u(rs->py.cut), u(rs->py.unplaced),
	    u(rs->py.dropped), u(rs->py.no_process), u(rs->py.frames_named),
	    u(rs->py.frames_unnamed), u(rs->py.frames_stale), errs, u(ps->code_hits),
	    u(ps->code_misses), u(d->python_walks[PY_STAT_CODE_CACHED]),
	    u(d->python_walks[PY_STAT_CODE_READ]), u(d->python_walks[PY_STAT_CODE_FREED]),
	    u(ps->dealloc_hooks), u(ps->dealloc_failed), u(ps->dealloc_dropped));
}

static void accounting_line(FILE *f, const struct report_data *d)
{
	fprintf(f,
		"spanprof: accounting: %llu samples taken by BPF = %llu recorded + %llu dropped "
		"in the agent (out of memory); %llu more lost to a full ring buffer\n",
		u(samples_taken(d->bpf)), u(d->samples), u(d->user_drops + d->queue.lost),
		u(ringbuf_drops(d->opts, d->bpf)));
}

static void full_accounting(FILE *f, const struct report_data *d)
{
	const struct resolve_stats *rs = &d->resolve;
	const struct proctab_stats *ps = &d->procs;
	const uint64_t *st = d->bpf;

	fprintf(f,
		"spanprof: dropped %llu (ring buffer full %llu, agent out of memory %llu, sample "
		"queue out of memory %llu); sample queue: full %llu times, peak %.1f of %.0f MiB; "
		"stack read failures: kernel %llu, user %llu\n"
		"spanprof: frames: %llu outside any mapping, %llu without a symbol, %llu kernel "
		"without a symbol; %llu maps unreadable, %llu files unopenable, %llu maps reads "
		"dropped (PID reused)\n"
		"spanprof: processes: %llu seen, %llu exited and forgotten, %zu in the table\n",
		u(ringbuf_drops(d->opts, st) + d->user_drops + d->queue.lost),
		u(ringbuf_drops(d->opts, st)), u(d->user_drops), u(d->queue.lost), u(d->queue.full),
		d->queue.peak_bytes / 1048576.0, d->queue.max_bytes / 1048576.0,
		u(st[SP_STAT_KSTACK_ERR]), u(st[SP_STAT_USTACK_ERR]), u(rs->frames_unmapped),
		u(rs->frames_unsymbolized), u(rs->kernel_unsymbolized), u(ps->maps_read_failed),
		u(ps->objects_failed), u(ps->pid_reused), u(ps->processes), u(ps->processes_freed),
		d->procs_in_table);
	for (uint32_t t = PROFILE_CPU + 1; t < PROFILE_NTYPES; t++)
		if (d->opts->profile_types & (1u << t))
			fprintf(
			    f, "spanprof: %s profile: %llu samples, %llu lost (ring buffer full)\n",
			    profile__type_info(t)->name, u(d->type_samples[t]),
			    u(st[sp_stat_type_drop(t)]));
	if (d->event_lines)
		fputs(d->event_lines, f); /* the event types' own counters */
	unwind_lines(f, d);
	/* docs/go.md: a frame-pointer walk can't see the caller of Go code without its frame. */
	if (rs->go_callers_missing)
		fprintf(f,
			"spanprof: Go: %llu samples in Go code without its frame yet: caller shown "
			"as unknown\n",
			u(rs->go_callers_missing));
	/* docs/unwinding.md, known limits: libgcc rewrites a frame while installing a handler. */
	if (rs->eh_install_cut)
		fprintf(f,
			"spanprof: %llu stacks cut above libgcc installing an exception handler "
			"(a caller not proven by its call instruction)\n",
			u(rs->eh_install_cut));
	fileid_line(f, d);
	jit_line(f, d);
	python_lines(f, d);
	v8_lines(f, d);
	span_links_lines(f, d);
	targeting_lines(f, d);
	export_lines(f, d);
	debuginfod_line(f, d);
	accounting_line(f, d);
}

void report__print_head(FILE *f, const struct report_data *d)
{
	char what[256];

	fprintf(f, "spanprof: %llu samples from %llu processes in %.1f s (%s)\n", u(d->samples),
		u(d->procs.processes), d->secs,
		record__describe_types(what, sizeof(what), d->opts, d->ncpus,
				       record__ntypes(d->opts) > 1 ? d->type_samples : NULL));
	if (d->opts->verbose)
		full_accounting(f, d);
}

void report__print_where(FILE *f, const struct report_data *d)
{
	const struct otlp_exporter_stats *es = &d->export;

	if (!d->export_on)
		return;
	fprintf(f, "spanprof: sent %llu samples to %s in %llu requests (%.1f KiB)%s%s\n",
		u(es->samples_sent), d->opts->endpoint, u(es->requests_sent),
		es->bytes_sent / 1024.0, d->opts->output_dir ? "; copies of the requests in " : "",
		d->opts->output_dir ? d->opts->output_dir : "");
}

/* --- the problems a user can act on: one table, a predicate and a message each --- */

/* Below this share of samples (or frames), a loss is not worth a line. */
#define MIN_SHARE 0.01
/* A file is reported when at least this share of its frames is unnamed. */
#define FILE_UNNAMED_SHARE 0.5
/* ... and it holds at least this many unnamed frames. */
#define FILE_MIN_UNNAMED 20

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / whole : 0;
}

static int say(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return 1;
}

/* The last path component. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static int no_samples(const struct report_data *d)
{
	return !d->samples;
}

static void no_samples_msg(const struct report_data *d, char *buf, size_t size)
{
	record__describe_no_samples(buf, size, d->opts, d->targeted);
}

static int ringbuf_full(const struct report_data *d)
{
	uint64_t lost = ringbuf_drops(d->opts, d->bpf);

	return lost && share(lost, lost + samples_taken(d->bpf)) >= MIN_SHARE;
}

static void ringbuf_full_msg(const struct report_data *d, char *buf, size_t size)
{
	uint64_t lost = ringbuf_drops(d->opts, d->bpf);

	/* The drain thread found the queue full: the agent was behind, not the drain thread. */
	if (d->queue.full)
		say(buf, size,
		    "%.0f%% of samples lost (%llu): the ring buffer (%u MiB) was full while the "
		    "agent's sample queue (%.0f MiB) was full too (the agent was behind); lower "
		    "--frequency or give the agent more CPU",
		    100 * share(lost, lost + samples_taken(d->bpf)), u(lost),
		    d->ringbuf_bytes >> 20, d->queue.max_bytes / 1048576.0);
	else
		say(buf, size,
		    "%.0f%% of samples lost (%llu): the ring buffer (%u MiB) was full; raise "
		    "--ring-buffer-mb or lower --frequency",
		    100 * share(lost, lost + samples_taken(d->bpf)), u(lost),
		    d->ringbuf_bytes >> 20);
}

static int out_of_memory(const struct report_data *d)
{
	return d->user_drops || d->link_drops || d->queue.lost;
}

static void out_of_memory_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "%llu samples lost (%llu of them in the sample queue) and %llu kept without their "
	    "span: the agent ran out of memory; give it more (its cgroup's memory.max) or lower "
	    "--symbol-cache-mb",
	    u(d->user_drops + d->queue.lost), u(d->queue.lost), u(d->link_drops));
}

/* The gRPC status most Export calls failed with, or NULL when none failed. */
static const char *worst_status(const struct otlp_exporter_stats *es, int *code)
{
	int best = 0;

	for (int s = 1; s < OTLP_GRPC_STATUS_COUNT; s++)
		if (es->calls_by_status[s] &&
		    (!best || es->calls_by_status[s] > es->calls_by_status[best]))
			best = s;
	*code = best;
	return best ? otlp_exporter__status_name(best) : NULL;
}

/* What to do about Export calls ending with gRPC status @code (grpc/doc/statuscodes.md). */
static const char *status_advice(int code, int dropped)
{
	switch (code) {
	case GRPC_STATUS_UNAUTHENTICATED:
	case GRPC_STATUS_PERMISSION_DENIED:
		return "check the --header credentials and the TLS files";
	case GRPC_STATUS_UNIMPLEMENTED:
		return "the endpoint has no such OTLP service: check that it is a Collector with "
		       "the OTLP receiver";
	case GRPC_STATUS_RESOURCE_EXHAUSTED:
		return "the Collector is overloaded or the requests too big: lower "
		       "--max-request-bytes or raise its limits";
	case GRPC_STATUS_INVALID_ARGUMENT:
		return "the Collector refused the requests: see its log";
	case GRPC_STATUS_UNAVAILABLE:
		return "check that the Collector runs and is reachable at that address";
	case GRPC_STATUS_DEADLINE_EXCEEDED:
	case GRPC_STATUS_CANCELLED:
		return "the Collector answers too slowly: raise --export-timeout or check its load";
	default:
		return dropped ? "raise --queue-bytes or --flush-timeout" : "see the errors above";
	}
}

static int export_failed(const struct report_data *d)
{
	const struct otlp_exporter_stats *es = &d->export;

	return d->export_on && (es->failed_samples || es->dropped_samples || d->encode_dropped ||
				(d->samples && !es->samples_sent));
}

static void export_failed_msg(const struct report_data *d, char *buf, size_t size)
{
	const struct otlp_exporter_stats *es = &d->export;
	uint64_t lost = es->failed_samples + es->dropped_samples + d->encode_dropped;
	int code;
	const char *status = worst_status(es, &code);

	if (d->samples && !es->samples_sent)
		say(buf, size, "no sample reached the Collector at %s (%s%s%s); %s",
		    d->opts->endpoint,
		    status ? "calls ended with " : "queue full or flush timed out",
		    status ? status : "", d->encode_failures ? ", encoding failed" : "",
		    status ? status_advice(code, es->dropped_samples > 0)
			   : "raise --queue-bytes or --flush-timeout");
	else
		say(buf, size, "export to %s: %llu of %llu samples not delivered (%s%s%s); %s",
		    d->opts->endpoint, u(lost), u(d->samples),
		    status ? "calls ended with " : "queue full or flush timed out",
		    status ? status : "", d->encode_failures ? ", encoding failed" : "",
		    status ? status_advice(code, es->dropped_samples > 0)
			   : "raise --queue-bytes or --flush-timeout");
}

static int export_rejected(const struct report_data *d)
{
	return d->export_on && d->export.rejected_profiles;
}

static void export_rejected_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "the Collector at %s rejected %llu profiles (partial success): see its log for why",
	    d->opts->endpoint, u(d->export.rejected_profiles));
}

static int metrics_failed(const struct report_data *d)
{
	return d->metrics_on && (d->metrics.failed || d->metrics.dropped);
}

static void metrics_failed_msg(const struct report_data *d, char *buf, size_t size)
{
	int code;
	const char *status = worst_status(&d->metrics, &code);

	say(buf, size, "self-metrics to %s: %llu requests not delivered (%s); %s",
	    d->opts->endpoint, u(d->metrics.failed + d->metrics.dropped),
	    status ? status : "queue full or flush timed out",
	    code == GRPC_STATUS_UNIMPLEMENTED
		? "the Collector has no OTLP metrics receiver: add one or drop "
		  "--self-metrics"
		: status_advice(code, d->metrics.dropped > 0));
}

static int jit_unnamed(const struct report_data *d)
{
	const struct jitproc_stats *j = &d->procs.jit;

	return j->first_hint.pid && j->frames_unnamed &&
	       share(j->frames_unnamed, j->frames_named + j->frames_unnamed) >= MIN_SHARE;
}

static void jit_unnamed_msg(const struct report_data *d, char *buf, size_t size)
{
	const struct jitproc_stats *j = &d->procs.jit;

	say(buf, size, "%s (pid %u): JIT frames unnamed: %s%s", j->first_hint.comm,
	    j->first_hint.pid, j->first_hint.what ? j->first_hint.what : "see the hint above",
	    j->hints > 1 ? " (and in other processes: --verbose)" : "");
}

/* The file with the most unnamed frames, when it is mostly unnamed and matters; else NULL. */
static const struct report_file *unnamed_file(const struct report_data *d, size_t *more)
{
	const struct report_file *first = NULL;

	*more = 0;
	for (size_t i = 0; i < d->nfiles; i++) {
		const struct report_file *rf = &d->files[i];

		if (rf->unnamed < FILE_MIN_UNNAMED ||
		    share(rf->unnamed, rf->frames) < FILE_UNNAMED_SHARE ||
		    share(rf->unnamed, d->frames_in_files) < MIN_SHARE)
			continue;
		if (first)
			(*more)++;
		else
			first = rf;
	}
	return first;
}

static int no_symbols(const struct report_data *d)
{
	size_t more;

	return unnamed_file(d, &more) != NULL;
}

static void no_symbols_msg(const struct report_data *d, char *buf, size_t size)
{
	size_t more;
	const struct report_file *rf = unnamed_file(d, &more);
	char others[64] = "";

	if (more)
		snprintf(others, sizeof(others), " (%zu more files like it in --stats-json)", more);
	say(buf, size, "%s: no symbols, %.0f%% of its frames unnamed%s; %s", base_name(rf->path),
	    100 * share(rf->unnamed, rf->frames), others,
	    d->debuginfod_on ? "no debug file from debuginfod either: install its debug package"
			     : "install its debug package or set DEBUGINFOD_URLS");
}

static int kernel_unnamed(const struct report_data *d)
{
	return !d->ksyms_on && d->resolve.kernel_unsymbolized;
}

static void kernel_unnamed_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "kernel frames unnamed: /proc/kallsyms was unreadable or hid its addresses; run as "
	    "root with sysctl kernel.kptr_restrict=0 (or 1)");
}

static int unwind_full(const struct report_data *d)
{
	return d->unwind_on && d->unwind.tables_full;
}

static void unwind_full_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "%llu files walked by frame pointers only (their stacks may be cut): the CFI tables "
	    "filled --unwind-max-mb (%u); raise it",
	    u(d->unwind.tables_full), d->opts->unwind_max_mb);
}

static int targets_missing(const struct report_data *d)
{
	const struct targets_stats *ts = &d->targets;
	const struct record_opts *o = d->opts;

	return d->targets_on &&
	       (ts->exes_found < o->nexes || ts->cgroups_found < o->ncgroups ||
		ts->containers_found < o->ncontainer_ids || ts->pods_found < o->nk8s_pods);
}

static void targets_missing_msg(const struct report_data *d, char *buf, size_t size)
{
	const struct targets_stats *ts = &d->targets;
	const struct record_opts *o = d->opts;

	if (ts->containers_ambiguous)
		say(buf, size,
		    "--container-id: %u of %zu are prefixes of several containers; give more of "
		    "the id",
		    ts->containers_ambiguous, o->ncontainer_ids);
	else if (ts->containers_found < o->ncontainer_ids)
		say(buf, size,
		    "--container-id: %zu of %zu name no running container; check the ids (docker "
		    "ps --no-trunc, crictl ps)",
		    o->ncontainer_ids - ts->containers_found, o->ncontainer_ids);
	else if (ts->pods_found < o->nk8s_pods)
		say(buf, size,
		    "--k8s-pod: %zu of %zu name no pod on this node; check the uid or "
		    "namespace/name (kubectl get pod -o wide)",
		    o->nk8s_pods - ts->pods_found, o->nk8s_pods);
	else if (ts->cgroups_found < o->ncgroups)
		say(buf, size, "--cgroup: %zu of %zu directories are not there; check the paths",
		    o->ncgroups - ts->cgroups_found, o->ncgroups);
	else
		say(buf, size, "--exe: %zu of %zu files are not there; check the paths",
		    o->nexes - ts->exes_found, o->nexes);
}

static int k8s_no_node(const struct report_data *d)
{
	return d->k8s_on && !d->k8s_node;
}

static void k8s_no_node_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "--k8s: no k8s.node.name: set K8S_NODE_NAME from the pod's spec.nodeName (the "
	    "downward API)");
}

static int debuginfod_failed(const struct report_data *d)
{
	return d->debuginfod_on && d->debuginfod.st.failed;
}

static void debuginfod_failed_msg(const struct report_data *d, char *buf, size_t size)
{
	const struct report_debuginfod *g = &d->debuginfod;

	say(buf, size,
	    "debuginfod: %llu fetches failed%s%s%s; check DEBUGINFOD_URLS (or --debuginfod) and "
	    "that the servers answer",
	    u(g->st.failed), g->st.last_error ? " (last: " : "",
	    g->st.last_error ? strerror(-g->st.last_error) : "", g->st.last_error ? ")" : "");
}

struct report_problem {
	const char *id; /* stable: docs/stats-json.md lists them */
	int (*present)(const struct report_data *d);
	void (*message)(const struct report_data *d, char *buf, size_t size);
};

/* Most important first: only the first REPORT_MAX_PROBLEM_LINES are printed by default. */
static const struct report_problem problems[] = {
    {"no_samples", no_samples, no_samples_msg},
    {"export_failed", export_failed, export_failed_msg},
    {"ringbuf_full", ringbuf_full, ringbuf_full_msg},
    {"out_of_memory", out_of_memory, out_of_memory_msg},
    {"targets_missing", targets_missing, targets_missing_msg},
    {"jit_unnamed", jit_unnamed, jit_unnamed_msg},
    {"no_symbols", no_symbols, no_symbols_msg},
    {"unwind_tables_full", unwind_full, unwind_full_msg},
    {"kernel_unnamed", kernel_unnamed, kernel_unnamed_msg},
    {"debuginfod_failed", debuginfod_failed, debuginfod_failed_msg},
    {"export_rejected", export_rejected, export_rejected_msg},
    {"self_metrics_failed", metrics_failed, metrics_failed_msg},
    {"k8s_no_node_name", k8s_no_node, k8s_no_node_msg},
};

size_t report__problems(const struct report_data *d, struct report_found *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(problems) / sizeof(problems[0]) && n < max; i++) {
		if (!problems[i].present(d))
			continue;
		out[n].id = problems[i].id;
		problems[i].message(d, out[n].message, sizeof(out[n].message));
		n++;
	}
	return n;
}

size_t report__print_problems(FILE *f, const struct report_data *d)
{
	struct report_found found[sizeof(problems) / sizeof(problems[0])];
	size_t n = report__problems(d, found, sizeof(found) / sizeof(found[0]));
	size_t shown =
	    d->opts->verbose || n <= REPORT_MAX_PROBLEM_LINES ? n : REPORT_MAX_PROBLEM_LINES;

	for (size_t i = 0; i < shown; i++) {
		fprintf(f, "spanprof: %s", found[i].message);
		if (i + 1 == shown && shown < n)
			fprintf(f, " (+%zu more: --verbose)", n - shown);
		fputc('\n', f);
	}
	return n;
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
