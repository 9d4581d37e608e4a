/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_accounting: the first lines of the end of a run (report__print_head(),
 * report__print_where(), report.h) and, with --verbose, the full accounting: one line per stage
 * (samples and losses by reason, frames not named, unwinding, file identities, JIT, CPython, V8,
 * span links, targeting, export, debuginfod). The wording of every line is kept across versions:
 * scripts read them. Reads only a struct report_data.
 */
#include <stdio.h>
#include <string.h>

#include "record/record_describe.h"
#include "record/report.h"
#include "record/report_common.h"
#include "runtime/jit/jitproc.h"

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
	const struct jitproc_stats *j = &d->jit;
	const uint64_t *o = j->open.by_reason;

	if (j->dumps_corrupt)
		fprintf(
		    f,
		    "spanprof: jitdump files corrupt: %llu (%llu with a header this agent cannot "
		    "read: nothing of them read; the others were read up to a bad record)\n",
		    u(j->dumps_corrupt), u(j->dumps_bad_header));
	if (!j->frames_named && !j->frames_unnamed && !j->java_failed && !o[JITFILE_SYMLINK] &&
	    !o[JITFILE_OWNER] && !o[JITFILE_NOT_REGULAR] && !o[JITFILE_TOO_BIG] &&
	    !o[JITFILE_STALLED])
		return;
	fprintf(f,
		"spanprof: JIT code: %llu frames named, %llu unnamed (%llu of a map over its cap, "
		"%llu replaced since the sample); "
		"%llu perf maps, %llu jitdump files read (%llu lines, %llu records skipped, %llu "
		"ranges replaced by newer code); files refused: %llu symlink, %llu other owner, "
		"%llu not regular, %llu too big, %llu stalled; %llu processes told which flag "
		"names them; "
		"%llu perf maps written by JVMs on request, %llu requests failed\n",
		u(j->frames_named), u(j->frames_unnamed), u(j->frames_full), u(j->frames_stale),
		u(j->perfmaps), u(j->jitdumps), u(j->lines_bad), u(j->records_bad), u(j->replaced),
		u(o[JITFILE_SYMLINK]), u(o[JITFILE_OWNER]), u(o[JITFILE_NOT_REGULAR]),
		u(o[JITFILE_TOO_BIG]), u(o[JITFILE_STALLED]), u(j->hints), u(j->java_requests),
		u(j->java_failed));
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

/* Samples sent, refused and dropped for each profile type (one type per request). */
static void export_type_line(FILE *f, const struct otlp_exporter_stats *es)
{
	const char *sep = "";

	fprintf(f, "spanprof: export by profile type:");
	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const struct otlp_type_stats *ts = &es->by_type[t];

		if (!ts->requests_sent && !ts->failed && !ts->dropped_samples)
			continue;
		fprintf(f, "%s %s %llu samples sent (%llu requests), %llu refused", sep,
			profile__type_info(t)->name, u(ts->samples_sent), u(ts->requests_sent),
			u(ts->failed_samples));
		if (ts->failed_status)
			fprintf(f, " (%s)", otlp_exporter__status_name(ts->failed_status));
		fprintf(f, ", %llu dropped", u(ts->dropped_samples));
		sep = ";";
	}
	fprintf(f, "%s\n", *sep ? "" : " no requests");
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
	if (d->export_on)
		export_type_line(f, es);
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
	if (d->mapped_not_regular)
		fprintf(
		    f,
		    "spanprof: %llu mapped files not opened: not regular files (a mapped device, "
		    "a FIFO)\n",
		    u(d->mapped_not_regular));
	if (d->slow_files.slow_read || d->slow_files.stalled || d->slow_files.skipped ||
	    d->slow_files.too_big)
		fprintf(f,
			"spanprof: files on FUSE or network file systems: %llu read by a helper "
			"(%llu more opens from its copy), %llu given up (no answer within "
			"--slow-file-timeout), %llu refused unread "
			"(their file system stalled within 60 s), %llu too big to copy; %llu "
			"helpers still stuck\n",
			u(d->slow_files.slow_read), u(d->slow_files.reused),
			u(d->slow_files.stalled), u(d->slow_files.skipped),
			u(d->slow_files.too_big), u(d->slow_files.helpers_left));
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
