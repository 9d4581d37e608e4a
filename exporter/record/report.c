/* SPDX-License-Identifier: Apache-2.0 */
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "process/k8smeta.h"
#include "process/proctab.h"
#include "runtime/jit/jitproc.h"
#include "record/record_describe.h"
#include "record/recorder.h"
#include "record/report.h"
#include "resolve/resolve.h"
#include "sampling/targets.h"
#include "spans/spanlinks.h"
#include "symbols/symbolize.h"
#include "unwind/unwinder.h"

static void span_links_summary(struct recorder *r, const uint64_t *st)
{
	struct spanlinks_stats ls = {0};

	if (!r->in.links)
		return;
	spanlinks__stats(r->in.links, &ls);
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
	    "unsupported row, %llu read failed, %llu bad CFA, %llu depth limit, %llu unproven "
	    "return address\n"
	    "spanprof: unwind tables: %llu tables of %llu files, %.1f MiB rows in %llu chunks "
	    "(%.1f of %.0f MiB), %llu processes (%.1f MiB); %llu built in %.0f ms, %llu without "
	    "CFI, %llu refused (full), %llu freed, %llu files unopenable, %llu processes refused, "
	    "%llu mappings dropped; %llu notifications (%llu lost), %llu maps re-reads, %llu new "
	    "processes read at exec\n",
	    (unsigned long long)st[SP_STAT_UNW_CFI], (unsigned long long)st[SP_STAT_UNW_FRAMES_CFI],
	    (unsigned long long)st[SP_STAT_UNW_FRAMES_FP], (unsigned long long)st[SP_STAT_UNW_FP],
	    (unsigned long long)st[SP_STAT_UNW_STALE], (unsigned long long)st[SP_STAT_UNW_NO_REGS],
	    (unsigned long long)st[SP_STAT_UNW_END], (unsigned long long)st[SP_STAT_UNW_FP_END],
	    (unsigned long long)st[SP_STAT_UNW_NO_MAPPING],
	    (unsigned long long)st[SP_STAT_UNW_NO_TABLE],
	    (unsigned long long)st[SP_STAT_UNW_UNSUPPORTED],
	    (unsigned long long)st[SP_STAT_UNW_READ_FAILED],
	    (unsigned long long)st[SP_STAT_UNW_BAD_CFA], (unsigned long long)st[SP_STAT_UNW_DEPTH],
	    (unsigned long long)st[SP_STAT_UNW_BAD_RA], (unsigned long long)us.tables,
	    (unsigned long long)us.files, us.row_bytes / 1048576.0, (unsigned long long)us.chunks,
	    us.chunk_bytes / 1048576.0, us.max_bytes / 1048576.0, (unsigned long long)us.processes,
	    us.proc_bytes / 1048576.0, (unsigned long long)us.builds, us.build_ns / 1e6,
	    (unsigned long long)us.no_cfi, (unsigned long long)us.tables_full,
	    (unsigned long long)us.tables_freed, (unsigned long long)us.open_failed,
	    (unsigned long long)us.procs_full, (unsigned long long)us.mappings_dropped,
	    (unsigned long long)st[SP_STAT_EVENTS], (unsigned long long)st[SP_STAT_EVENT_DROP],
	    (unsigned long long)us.refreshes, (unsigned long long)us.new_execs);
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

/* SPANPROF_DEBUG: where the memory went (docs/performance.md). */
void report__memory(struct symcache *syms)
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

void report__progress(struct recorder *r, struct sampler *s, uint64_t t0, uint64_t now, int final)
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
	const struct resolve_stats *rs = resolve__stats(r->in.resolve);

	fprintf(stderr,
		"spanprof: file identities (processes not loaded yet): %llu samples carried "
		"them (%llu mappings, %llu lookups failed, %llu frames beyond the table); %llu "
		"frames named from them, %llu frames unnamed (file unknown), %llu executables "
		"named; executable paths: %llu sent, %llu lost (ring buffer full), %llu opened, "
		"%llu unopenable or replaced\n",
		(unsigned long long)st[SP_STAT_FILEID_SAMPLES],
		(unsigned long long)st[SP_STAT_FILEID_VMAS],
		(unsigned long long)st[SP_STAT_FILEID_FAILED],
		(unsigned long long)st[SP_STAT_FILEID_FULL], (unsigned long long)rs->frames_fileid,
		(unsigned long long)rs->frames_fileid_unknown, (unsigned long long)ps->exe_fileid,
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

void report__summary(struct recorder *r, struct sampler *s, double secs)
{
	char why[256];

	if (!r->samples)
		fprintf(stderr, "spanprof: %s\n",
			record__describe_no_samples(why, sizeof(why), r->opts, targeted(r)));
	const struct proctab_stats *ps = proctab__stats(r->procs);
	const struct resolve_stats *rs = resolve__stats(r->in.resolve);
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
		(unsigned long long)st[SP_STAT_USTACK_ERR], (unsigned long long)rs->frames_unmapped,
		(unsigned long long)rs->frames_unsymbolized,
		(unsigned long long)rs->kernel_unsymbolized,
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
	/* docs/go.md: a frame-pointer walk can't see the caller of Go code without its frame. */
	if (resolve__stats(r->in.resolve)->go_callers_missing)
		fprintf(stderr,
			"spanprof: Go: %llu samples in Go code without its frame yet: caller shown "
			"as unknown\n",
			(unsigned long long)resolve__stats(r->in.resolve)->go_callers_missing);
	fileid_summary(r, st); /* file identities */
	jit_summary(r);	       /* JIT code names */
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
