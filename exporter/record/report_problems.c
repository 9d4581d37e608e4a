/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_problems: the problems a user can act on at the end of a run (report__problems(),
 * report__print_problems(), report.h): one table, a predicate and a message each, most
 * important first; a stable id each (docs/stats-json.md). Reads only a struct report_data.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <grpc/status.h>

#include "record/record_describe.h"
#include "record/report.h"
#include "record/report_common.h"
#include "runtime/jit/jitproc.h"

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

/* Samples of requests refused for their profile type (export_type_refused says which). */
static uint64_t type_refused_samples(const struct otlp_exporter_stats *es)
{
	uint64_t n = 0;

	for (int t = 0; t < PROFILE_NTYPES; t++)
		n += es->by_type[t].failed_samples;
	return n;
}

static int export_failed(const struct report_data *d)
{
	const struct otlp_exporter_stats *es = &d->export;

	return d->export_on &&
	       (es->failed_samples > type_refused_samples(es) || es->dropped_samples ||
		d->encode_dropped || (d->samples && !es->samples_sent));
}

static void export_failed_msg(const struct report_data *d, char *buf, size_t size)
{
	const struct otlp_exporter_stats *es = &d->export;
	uint64_t lost =
	    es->failed_samples - type_refused_samples(es) + es->dropped_samples + d->encode_dropped;
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

/*
 * A profile type the Collector (or the backend behind it) refused with a non-retryable status:
 * each request carries one type, so the other types were not lost with it.
 */
static int export_type_refused(const struct report_data *d)
{
	return d->export_on && type_refused_samples(&d->export);
}

static void export_type_refused_msg(const struct report_data *d, char *buf, size_t size)
{
	const struct otlp_exporter_stats *es = &d->export;
	size_t off = 0;

	for (int t = 0; t < PROFILE_NTYPES && off < size; t++) {
		const struct otlp_type_stats *ts = &es->by_type[t];

		if (!ts->failed_samples)
			continue;
		off += snprintf(buf + off, size - off,
				"%s%s: %llu samples refused by the Collector at %s (%s%s%.100s): "
				"not retried",
				off ? "; " : "", profile__type_info((uint32_t)t)->name,
				u(ts->failed_samples), d->opts->endpoint,
				otlp_exporter__status_name(ts->failed_status),
				ts->failed_message[0] ? ": " : "", ts->failed_message);
	}
	if (off < size)
		snprintf(buf + off, size - off,
			 "; other types go in requests of their own; the backend does not take "
			 "this type: leave it out of --profile or send it to one that does");
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
	const struct jitproc_stats *j = &d->jit;

	return j->first_hint.pid && j->frames_unnamed &&
	       share(j->frames_unnamed, j->frames_named + j->frames_unnamed) >= MIN_SHARE;
}

static void jit_unnamed_msg(const struct report_data *d, char *buf, size_t size)
{
	const struct jitproc_stats *j = &d->jit;

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

/* Mapped files symcache__open() could not parse as ELF, while some frames went unnamed. */
static int not_elf(const struct report_data *d)
{
	return d->procs.objects_not_elf && d->resolve.frames_unsymbolized;
}

static void not_elf_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "%llu mapped files could not be parsed as ELF (frames in them unnamed), e.g. %s: "
	    "a file rewritten or truncated while mapped (restart its process), a packed "
	    "executable (profile an unpacked build) or no ELF file at all",
	    u(d->procs.objects_not_elf), d->procs.first_not_elf);
}

/* Executable mappings over the unwinder's per-process cap, while walks met unknown mappings. */
static int mappings_dropped(const struct report_data *d)
{
	return d->unwind_on && d->unwind.mappings_dropped && d->bpf[SP_STAT_UNW_NO_MAPPING];
}

static void mappings_dropped_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "%llu executable mappings left out of the CFI unwinder (over %d in one process): "
	    "stacks reaching them are cut ([truncated: unknown mapping], %llu stacks cut so "
	    "for any reason); such a process maps too many executable files or regions: load "
	    "fewer shared libraries in it (link them statically)",
	    u(d->unwind.mappings_dropped), UNWIND_MAX_MAPPINGS, u(d->bpf[SP_STAT_UNW_NO_MAPPING]));
}

static int kernel_unnamed(const struct report_data *d)
{
	return !d->ksyms_on && d->resolve.kernel_unsymbolized;
}

static void kernel_unnamed_msg(const struct report_data *d, char *buf, size_t size)
{
	say(buf, size,
	    "kernel frames unnamed: /proc/kallsyms was unreadable or hid its addresses; give the "
	    "agent CAP_SYSLOG (with sysctl kernel.kptr_restrict=0 or 1), or set "
	    "kernel.kptr_restrict=0 and kernel.perf_event_paranoid<=1");
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
    {"export_type_refused", export_type_refused, export_type_refused_msg},
    {"ringbuf_full", ringbuf_full, ringbuf_full_msg},
    {"out_of_memory", out_of_memory, out_of_memory_msg},
    {"targets_missing", targets_missing, targets_missing_msg},
    {"jit_unnamed", jit_unnamed, jit_unnamed_msg},
    {"no_symbols", no_symbols, no_symbols_msg},
    {"mapped_files_not_elf", not_elf, not_elf_msg},
    {"unwind_mappings_dropped", mappings_dropped, mappings_dropped_msg},
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
