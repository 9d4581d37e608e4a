/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_json: --stats-json, every counter of the end-of-run accounting as one JSON document
 * (report.h; the schema, field by field, in docs/stats-json.md). Built with json-c, written to a
 * temporary file and renamed over the target, so a reader sees the whole file or none.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "record/record_describe.h"
#include "record/report.h"
#include "runtime/jit/jitfile.h"
#include "runtime/jit/jitproc.h"

/* A builder: every allocation failure sets err (json-c answers NULL). */
struct jb {
	int err;
};

static struct json_object *obj(struct jb *b)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		b->err = -ENOMEM;
	return o;
}

/* Adds @v under @key of @o (NULL @o: nothing, the error is set already). Takes @v. */
static void put(struct jb *b, struct json_object *o, const char *key, struct json_object *v)
{
	if (!o || !v) {
		if (o && !v)
			b->err = -ENOMEM;
		json_object_put(v);
		return;
	}
	if (json_object_object_add(o, key, v)) {
		json_object_put(v);
		b->err = -ENOMEM;
	}
}

static void put_u(struct jb *b, struct json_object *o, const char *key, uint64_t v)
{
	put(b, o, key, json_object_new_uint64(v));
}

static void put_d(struct jb *b, struct json_object *o, const char *key, double v)
{
	put(b, o, key, json_object_new_double(v));
}

static void put_b(struct jb *b, struct json_object *o, const char *key, int v)
{
	put(b, o, key, json_object_new_boolean(v));
}

/* A string, or null for NULL. */
static void put_s(struct jb *b, struct json_object *o, const char *key, const char *v)
{
	if (!v) {
		if (o && json_object_object_add(o, key, NULL))
			b->err = -ENOMEM;
		return;
	}
	put(b, o, key, json_object_new_string(v));
}

/* A section that is null when its stage did not run. */
static void put_null(struct jb *b, struct json_object *o, const char *key)
{
	if (o && json_object_object_add(o, key, NULL))
		b->err = -ENOMEM;
}

static struct json_object *run_section(struct jb *b, const struct report_data *d)
{
	const struct record_opts *o = d->opts;
	struct json_object *s = obj(b), *types = json_object_new_array();

	put_d(b, s, "duration_s", d->secs);
	put_u(b, s, "frequency_hz", o->frequency_hz);
	put_u(b, s, "cpus", d->ncpus > 0 ? (uint64_t)d->ncpus : 0);
	for (uint32_t t = 0; types && t < PROFILE_NTYPES; t++)
		if (record__selected_types(o) & (1u << t) &&
		    json_object_array_add(types,
					  json_object_new_string(profile__type_info(t)->name)))
			b->err = -ENOMEM;
	put(b, s, "profile_types", types);
	put_b(b, s, "targeted", d->targeted);
	put_u(b, s, "ring_buffer_bytes", d->ringbuf_bytes);
	put_s(b, s, "output_dir", o->output_dir);
	put_s(b, s, "endpoint", o->endpoint);
	return s;
}

static struct json_object *samples_section(struct jb *b, const struct report_data *d)
{
	const uint64_t *st = d->bpf;
	struct json_object *s = obj(b), *by_type = obj(b);
	uint64_t taken = 0, lost = 0;
	uint32_t types = record__selected_types(d->opts);

	for (uint32_t t = 0; t < SP_PROF_NTYPES; t++) {
		taken += st[sp_stat_type_samples(t)];
		if (types & (1u << t))
			lost += st[sp_stat_type_drop(t)];
	}
	put_u(b, s, "recorded", d->samples);
	put_u(b, s, "taken", taken);
	put_u(b, s, "lost_ring_buffer", lost);
	put_u(b, s, "lost_out_of_memory", d->user_drops + d->queue.lost);
	put_u(b, s, "lost_queue", d->queue.lost);
	put_u(b, s, "queue_full", d->queue.full);
	put_u(b, s, "queue_peak_bytes", d->queue.peak_bytes);
	put_u(b, s, "link_dropped", d->link_drops);
	put_u(b, s, "idle", st[SP_STAT_IDLE]);
	put_u(b, s, "filtered", st[SP_STAT_FILTERED]);
	put_u(b, s, "kernel_stack_failures", st[SP_STAT_KSTACK_ERR]);
	put_u(b, s, "user_stack_failures", st[SP_STAT_USTACK_ERR]);
	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		struct json_object *ty;

		if (!(types & (1u << t)))
			continue;
		ty = obj(b);
		put_u(b, ty, "recorded", d->type_samples[t]);
		put_u(b, ty, "taken", st[sp_stat_type_samples(t)]);
		put_u(b, ty, "lost_ring_buffer", st[sp_stat_type_drop(t)]);
		put(b, by_type, profile__type_info(t)->name, ty);
	}
	put(b, s, "by_type", by_type);
	return s;
}

static struct json_object *frames_section(struct jb *b, const struct report_data *d)
{
	const struct resolve_stats *rs = &d->resolve;
	struct json_object *s = obj(b), *files = json_object_new_array();

	put_u(b, s, "user_in_files", d->frames_in_files);
	put_u(b, s, "unmapped", rs->frames_unmapped);
	put_u(b, s, "unsymbolized", rs->frames_unsymbolized);
	put_u(b, s, "kernel_unsymbolized", rs->kernel_unsymbolized);
	put_u(b, s, "go_callers_missing", rs->go_callers_missing);
	put_u(b, s, "exception_install_callers_dropped", rs->eh_install_cut);
	put_u(b, s, "frame_pointer_steps_unproven", rs->fp_unproven_cut);
	put_u(b, s, "frame_pointer_walks_proven", rs->fp_root_proven);
	for (size_t i = 0; files && i < d->nfiles; i++) {
		struct json_object *f = obj(b);

		put_s(b, f, "path", d->files[i].path);
		put_u(b, f, "frames", d->files[i].frames);
		put_u(b, f, "unnamed", d->files[i].unnamed);
		if (f && json_object_array_add(files, f)) {
			json_object_put(f);
			b->err = -ENOMEM;
		}
	}
	put(b, s, "unnamed_files", files);
	return s;
}

static struct json_object *processes_section(struct jb *b, const struct report_data *d)
{
	const struct proctab_stats *ps = &d->procs;
	struct json_object *s = obj(b);

	put_u(b, s, "seen", ps->processes);
	put_u(b, s, "exited_forgotten", ps->processes_freed);
	put_u(b, s, "read_before_sampling", ps->preloads);
	put_u(b, s, "read_before_sampling_used", ps->preloads_used);
	put_u(b, s, "in_table", d->procs_in_table);
	put_u(b, s, "maps_unreadable", ps->maps_read_failed);
	put_u(b, s, "files_unopenable", ps->objects_failed);
	put_u(b, s, "files_not_elf", ps->objects_not_elf);
	put_u(b, s, "maps_reads_dropped_pid_reused", ps->pid_reused);
	put_u(b, s, "mapped_files_not_regular", d->mapped_not_regular);
	return s;
}

static struct json_object *fileid_section(struct jb *b, const struct report_data *d)
{
	const uint64_t *st = d->bpf;
	struct json_object *s = obj(b);

	put_u(b, s, "samples", st[SP_STAT_FILEID_SAMPLES]);
	put_u(b, s, "mappings", st[SP_STAT_FILEID_VMAS]);
	put_u(b, s, "lookups_failed", st[SP_STAT_FILEID_FAILED]);
	put_u(b, s, "frames_beyond_table", st[SP_STAT_FILEID_FULL]);
	put_u(b, s, "frames_named", d->resolve.frames_fileid);
	put_u(b, s, "frames_unnamed", d->resolve.frames_fileid_unknown);
	put_u(b, s, "executables_named", d->procs.exe_fileid);
	put_u(b, s, "exec_paths_sent", st[SP_STAT_FILEID_EXECS]);
	put_u(b, s, "exec_paths_lost", st[SP_STAT_FILEID_EXEC_DROP]);
	put_u(b, s, "exec_paths_opened", d->procs.exec_paths_opened);
	put_u(b, s, "exec_paths_failed", d->procs.exec_paths_failed);
	put_u(b, s, "return_addresses_not_code", st[SP_STAT_FILEID_NOT_CODE]);
	put_u(b, s, "parent_maps_read", d->procs.parent_maps_read);
	return s;
}

static struct json_object *unwind_section(struct jb *b, const struct report_data *d)
{
	const uint64_t *st = d->bpf;
	const struct unwinder_stats *us = &d->unwind;
	struct json_object *s = obj(b), *stops = obj(b), *tables = obj(b);

	put_b(b, s, "cfi_enabled", d->unwind_on);
	put_u(b, s, "samples_cfi", st[SP_STAT_UNW_CFI]);
	put_u(b, s, "samples_fp", st[SP_STAT_UNW_FP]);
	put_u(b, s, "frames_cfi", st[SP_STAT_UNW_FRAMES_CFI]);
	put_u(b, s, "frames_fp", st[SP_STAT_UNW_FRAMES_FP]);
	put_u(b, s, "stale_entries", st[SP_STAT_UNW_STALE]);
	put_u(b, s, "no_registers", st[SP_STAT_UNW_NO_REGS]);
	put_u(b, stops, "end", st[SP_STAT_UNW_END]);
	put_u(b, stops, "fp_end", st[SP_STAT_UNW_FP_END]);
	put_u(b, stops, "no_mapping", st[SP_STAT_UNW_NO_MAPPING]);
	put_u(b, stops, "no_table", st[SP_STAT_UNW_NO_TABLE]);
	put_u(b, stops, "unsupported", st[SP_STAT_UNW_UNSUPPORTED]);
	put_u(b, stops, "read_failed", st[SP_STAT_UNW_READ_FAILED]);
	put_u(b, stops, "bad_cfa", st[SP_STAT_UNW_BAD_CFA]);
	put_u(b, stops, "depth_limit", st[SP_STAT_UNW_DEPTH]);
	put_u(b, stops, "bad_return_address", st[SP_STAT_UNW_BAD_RA]);
	put(b, s, "stops", stops);
	put_u(b, tables, "tables", us->tables);
	put_u(b, tables, "files", us->files);
	put_u(b, tables, "row_bytes", us->row_bytes);
	put_u(b, tables, "chunks", us->chunks);
	put_u(b, tables, "chunk_bytes", us->chunk_bytes);
	put_u(b, tables, "max_bytes", us->max_bytes);
	put_u(b, tables, "processes", us->processes);
	put_u(b, tables, "process_bytes", us->proc_bytes);
	put_u(b, tables, "built", us->builds);
	put_d(b, tables, "build_ms", us->build_ns / 1e6);
	put_u(b, tables, "without_cfi", us->no_cfi);
	put_u(b, tables, "refused_full", us->tables_full);
	put_u(b, tables, "freed", us->tables_freed);
	put_u(b, tables, "files_unopenable", us->open_failed);
	put_u(b, tables, "processes_refused", us->procs_full);
	put_u(b, tables, "mappings_dropped", us->mappings_dropped);
	put(b, s, "tables", tables);
	put_u(b, s, "notifications", st[SP_STAT_EVENTS]);
	put_u(b, s, "notifications_lost", st[SP_STAT_EVENT_DROP]);
	put_u(b, s, "maps_rereads", us->refreshes);
	put_u(b, s, "new_processes_read_at_exec", us->new_execs);
	put_u(b, s, "builder_jobs", us->jobs);
	put_d(b, s, "builder_wait_ms", us->queue_wait_ns / 1e6);
	put_u(b, s, "builder_queue_max", us->queue_max);
	put_u(b, s, "builder_jobs_dropped", us->jobs_dropped);
	return s;
}

static struct json_object *jit_section(struct jb *b, const struct report_data *d)
{
	const struct jitproc_stats *j = &d->jit;
	const uint64_t *o = j->open.by_reason;
	const struct unwinder_stats *us = &d->unwind;
	struct json_object *s = obj(b), *refused = obj(b), *unw = obj(b), *skipped = obj(b);

	put_u(b, s, "frames_named", j->frames_named);
	put_u(b, s, "frames_unnamed", j->frames_unnamed);
	put_u(b, s, "frames_runtime", j->frames_runtime);
	put_u(b, s, "frames_over_cap", j->frames_full);
	put_u(b, s, "frames_replaced_since_sample", j->frames_stale);
	put_u(b, s, "perf_maps", j->perfmaps);
	put_u(b, s, "jitdumps", j->jitdumps);
	put_u(b, s, "lines_skipped", j->lines_bad);
	put_u(b, s, "records_skipped", j->records_bad);
	put_u(b, s, "jitdumps_corrupt", j->dumps_corrupt);
	put_u(b, s, "jitdumps_bad_header", j->dumps_bad_header);
	put_u(b, s, "ranges_replaced", j->replaced);
	put_u(b, refused, "symlink", o[JITFILE_SYMLINK]);
	put_u(b, refused, "other_owner", o[JITFILE_OWNER]);
	put_u(b, refused, "not_regular", o[JITFILE_NOT_REGULAR]);
	put_u(b, refused, "too_big", o[JITFILE_TOO_BIG]);
	put_u(b, refused, "stalled", o[JITFILE_STALLED]);
	put(b, s, "files_refused", refused);
	put_u(b, s, "processes_hinted", j->hints);
	put_u(b, s, "java_perfmap_requests", j->java_requests);
	put_u(b, s, "java_perfmap_failed", j->java_failed);
	/* jitdump unwinding records and the JIT CFI tables built from them (docs/jit.md). */
	put_u(b, unw, "records", j->unwind_records);
	put_u(b, unw, "used", j->unwind_used);
	put_u(b, skipped, "no_eh_frame", j->unwind_empty);
	put_u(b, skipped, "bad_size", j->unwind_bad);
	put_u(b, skipped, "no_code_load", j->unwind_unused);
	put_u(b, skipped, "over_cap", j->unwind_full);
	put(b, unw, "skipped", skipped);
	put_u(b, unw, "dropped_code_replaced", j->unwind_dropped);
	put_u(b, unw, "updates", j->cfi_updates);
	put_u(b, unw, "tables_built", us->jit_builds);
	put_u(b, unw, "tables_loaded", us->jit_tables);
	put_u(b, unw, "fdes", us->jit_fdes);
	put_u(b, unw, "fdes_skipped", us->jit_fdes_skipped);
	put_u(b, unw, "tables_without_rows", us->jit_empty);
	put_u(b, unw, "tables_refused_full", us->jit_full);
	put_u(b, unw, "mappings", us->jit_mappings);
	put(b, s, "unwinding", unw);
	return s;
}

/* @name in lower case into @buf (JSON keys of enum names). */
static const char *lower(char *buf, size_t size, const char *name)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < size; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	buf[i] = '\0';
	return buf;
}

/* CPython frames (docs/python.md); null with --no-python. */
static struct json_object *python_section(struct jb *b, const struct report_data *d)
{
	const struct pytab_stats *ps = &d->python;
	const struct resolve_stats *rs = &d->resolve;
	struct json_object *s = obj(b), *failed = obj(b), *ends = obj(b), *errs = obj(b);
	char key[32];

	put_u(b, s, "processes", ps->processes);
	put_u(b, s, "processes_now", ps->live);
	for (int i = 0; i < PYTAB_FAIL_COUNT; i++)
		put_u(b, failed, pytab__failure_name((enum pytab_failure)i), ps->failed[i]);
	put(b, s, "processes_not_described", failed);
	put_u(b, s, "files_not_cpython", ps->files_inspected);
	put_u(b, s, "walks", d->python_walks[0]);
#define PY_STOP_KEY(n, desc)                                                                       \
	put_u(b, ends, lower(key, sizeof(key), #n), d->python_walks[PY_STOP_##n]);
	PY_STOPS(PY_STOP_KEY)
#undef PY_STOP_KEY
	put(b, s, "walks_ended", ends);
	put_u(b, s, "samples_placed", rs->py.merged);
	put_u(b, s, "samples_cut", rs->py.cut);
	put_u(b, s, "samples_not_placed", rs->py.unplaced);
	put_u(b, s, "samples_dropped", rs->py.dropped);
	put_u(b, s, "samples_not_described", rs->py.no_process);
	put_u(b, s, "frames_named", rs->py.frames_named);
	put_u(b, s, "frames_unnamed", rs->py.frames_unnamed);
	put_u(b, s, "frames_stale", rs->py.frames_stale);
	for (int i = 0; i < PYPROC_ERR_COUNT; i++)
		put_u(b, errs, pyproc__error_name((enum pyproc_error)i), ps->name_errors[i]);
	put(b, s, "reads_failed", errs);
	put_u(b, s, "code_objects_cached", ps->code_hits);
	put_u(b, s, "code_objects_read", ps->code_misses);
	put_u(b, s, "walk_code_objects_cached", d->python_walks[PY_STAT_CODE_CACHED]);
	put_u(b, s, "walk_code_objects_read", d->python_walks[PY_STAT_CODE_READ]);
	put_u(b, s, "walk_code_objects_freed", d->python_walks[PY_STAT_CODE_FREED]);
	put_u(b, s, "dealloc_hooks", ps->dealloc_hooks);
	put_u(b, s, "dealloc_hooks_failed", ps->dealloc_failed);
	put_u(b, s, "dealloc_hooks_dropped", ps->dealloc_dropped);
	return s;
}

/* JavaScript frames read from V8's structures (docs/node.md); null with the CFI walk off. */
static struct json_object *v8_section(struct jb *b, const struct report_data *d)
{
	const struct v8tab_stats *vs = &d->v8;
	const struct resolve_stats *rs = &d->resolve;
	struct json_object *s = obj(b), *bpf = obj(b), *errs = obj(b);
	char key[32];

	put_u(b, s, "processes", vs->processes);
	put_u(b, s, "processes_now", vs->live);
	put_u(b, s, "files_unsupported", vs->unsupported);
	put_u(b, s, "processes_failed", vs->failed);
	put_u(b, s, "files_not_v8", vs->files_inspected);
#define V8_STAT_KEY(n, desc) put_u(b, bpf, lower(key, sizeof(key), #n), d->v8_bpf[V8_STAT_##n]);
	V8_STATS(V8_STAT_KEY)
#undef V8_STAT_KEY
	put(b, s, "bpf", bpf);
	put_u(b, s, "samples_placed", rs->v8.merged);
	put_u(b, s, "samples_not_placed", rs->v8.not_placed);
	put_u(b, s, "samples_not_described", rs->v8.no_process);
	put_u(b, s, "frames_named", rs->v8.frames_named);
	put_u(b, s, "frames_unnamed", rs->v8.frames_unnamed);
	put_u(b, s, "perf_map_agrees", rs->v8.perfmap_agree);
	put_u(b, s, "perf_map_disagrees", rs->v8.perfmap_disagree);
	for (int i = 0; i < V8PROC_ERR_COUNT; i++)
		put_u(b, errs, lower(key, sizeof(key), v8proc__error_name((enum v8proc_error)i)),
		      vs->naming.errors[i]);
	put(b, s, "reads_failed", errs);
	put_u(b, s, "functions_cached", vs->naming.hits);
	put_u(b, s, "functions_read", vs->naming.misses);
	return s;
}

/* Java frames walked in HotSpot's structures (docs/java.md); null with the CFI walk off. */
static struct json_object *jvm_section(struct jb *b, const struct report_data *d)
{
	static const char *const failures[] = {
#define HSTAB_FAILURE_NAME(n, desc) #n,
	    HSTAB_FAILURES(HSTAB_FAILURE_NAME)
#undef HSTAB_FAILURE_NAME
	};
	const struct hstab_stats *js = &d->jvm;
	const struct resolve_stats *rs = &d->resolve;
	struct json_object *s = obj(b), *bpf = obj(b), *fails = obj(b), *errs = obj(b);
	char key[32];

	put_u(b, s, "processes", js->processes);
	put_u(b, s, "processes_now", js->live);
	put_u(b, s, "files_not_jvm", js->files_inspected);
	for (int i = 0; i < HSTAB_FAIL_COUNT; i++)
		put_u(b, fails, lower(key, sizeof(key), failures[i]), js->failed[i]);
	put(b, s, "processes_failed", fails);
#define HS_STAT_KEY(n, desc) put_u(b, bpf, lower(key, sizeof(key), #n), d->jvm_bpf[HS_STAT_##n]);
	HS_STATS(HS_STAT_KEY)
#undef HS_STAT_KEY
	put(b, s, "bpf", bpf);
	put_u(b, s, "samples_placed", rs->jvm.merged);
	put_u(b, s, "samples_not_placed", rs->jvm.not_placed);
	put_u(b, s, "samples_not_described", rs->jvm.no_process);
	put_u(b, s, "frames_named", rs->jvm.frames_named);
	put_u(b, s, "frames_unnamed", rs->jvm.frames_unnamed);
	for (int i = 0; i < HSNAME_ERR_COUNT; i++)
		put_u(b, errs, lower(key, sizeof(key), hsname__error_name((enum hsname_error)i)),
		      js->naming.errors[i]);
	put(b, s, "reads_failed", errs);
	put_u(b, s, "frames_cached", js->naming.hits);
	put_u(b, s, "frames_read", js->naming.misses);
	put_u(b, s, "leaves_without_debug_info", js->naming.no_pc_desc);
	put_u(b, s, "returns_without_debug_info", js->naming.bad_return);
	put_u(b, s, "scopes_failed", js->naming.scope_failed);
	return s;
}

/* PHP frames walked in the Zend engine's structures (docs/php.md); null with the CFI walk off.
 */
static struct json_object *php_section(struct jb *b, const struct report_data *d)
{
	static const char *const failures[] = {
#define PHPTAB_FAILURE_NAME(n, desc) #n,
	    PHPTAB_FAILURES(PHPTAB_FAILURE_NAME)
#undef PHPTAB_FAILURE_NAME
	};
	static const char *const unnamed[] = {
#define PHPPROC_UNNAMED_NAME(n, desc) #n,
	    PHPPROC_UNNAMED(PHPPROC_UNNAMED_NAME)
#undef PHPPROC_UNNAMED_NAME
	};
	const struct phptab_stats *ps = &d->php;
	const struct resolve_stats *rs = &d->resolve;
	struct json_object *s = obj(b), *bpf = obj(b), *fails = obj(b), *stops = obj(b),
			   *why = obj(b);
	char key[32];

	put_u(b, s, "processes", ps->processes);
	put_u(b, s, "processes_now", ps->live);
	put_u(b, s, "files_not_php", ps->files_inspected);
	for (int i = 0; i < PHPTAB_FAIL_COUNT; i++)
		put_u(b, fails, lower(key, sizeof(key), failures[i]), ps->failed[i]);
	put(b, s, "files_or_processes_failed", fails);
	put_u(b, bpf, "samples", d->php_bpf[0]);
#define PHP_STOP_KEY(n, desc)                                                                      \
	put_u(b, stops, lower(key, sizeof(key), #n), d->php_bpf[PHP_STOP_##n]);
	PHP_STOPS(PHP_STOP_KEY)
#undef PHP_STOP_KEY
	put(b, bpf, "stops", stops);
	put_u(b, bpf, "frames", d->php_bpf[PHP_STAT_FRAMES]);
	put_u(b, bpf, "leaf_lines_from_register", d->php_bpf[PHP_STAT_LINE_REG]);
	put(b, s, "bpf", bpf);
	put_u(b, s, "samples_placed", rs->php.merged);
	put_u(b, s, "samples_cut", rs->php.cut);
	put_u(b, s, "samples_unplaced", rs->php.unplaced);
	put_u(b, s, "samples_cut_in_jit", rs->php.jit_cut);
	put_u(b, s, "jit_leaf_lines_unknown", rs->php.jit_lines_unknown);
	put_u(b, s, "samples_not_placed", rs->php.not_placed);
	put_u(b, s, "samples_not_described", rs->php.no_process);
	put_u(b, s, "frames_named", rs->php.frames_named);
	put_u(b, s, "frames_named_from_cache", ps->names.cached);
	put_u(b, s, "frames_unnamed", rs->php.frames_unnamed);
	for (int i = 0; i < PHPPROC_UNNAMED_COUNT; i++)
		put_u(b, why, lower(key, sizeof(key), unnamed[i]), ps->names.unnamed[i]);
	put(b, s, "frames_unnamed_why", why);
	return s;
}

static struct json_object *links_section(struct jb *b, const struct report_data *d)
{
	const uint64_t *st = d->bpf;
	struct json_object *s = obj(b), *nl = obj(b), *go = obj(b);

	put_u(b, s, "linked", st[SP_STAT_CTX_LINKED]);
	put_u(b, s, "by_uprobe", st[SP_STAT_CTX_UPROBE]);
	put_u(b, nl, "outside_spans", st[SP_STAT_CTX_NO_SPAN]);
	put_u(b, nl, "record_not_valid", st[SP_STAT_CTX_NOT_VALID]);
	put_u(b, nl, "zero_ids", st[SP_STAT_CTX_ZERO_TRACE]);
	put_u(b, nl, "attrs_too_big", st[SP_STAT_CTX_ATTRS_TOO_BIG]);
	put_u(b, nl, "unreadable", st[SP_STAT_CTX_READ_FAILED]);
	put_u(b, nl, "no_tls_block", st[SP_STAT_CTX_UNALLOCATED]);
	put_u(b, nl, "stale", st[SP_STAT_CTX_STALE]);
	put(b, s, "not_linked", nl);
	put_u(b, s, "processes_with_thread_context", d->links.processes_seen);
	put_u(b, s, "processes_with_process_context", d->links.contexts_seen);
	put_u(b, s, "descriptor_errors", d->links.resolve_errors);
	put(b, s, "go_labels", go);
	put_u(b, go, "samples_labeled", d->links.go_labeled);
	put_u(b, go, "linked", d->links.go_links);
	put_u(b, go, "ids_not_hex", d->links.go_bad_ids);
	put_u(b, go, "none", st[SP_STAT_GOL_NONE]);
	put_u(b, go, "system_goroutine", st[SP_STAT_GOL_SYSTEM_G]);
	put_u(b, go, "off_goroutine_stack", st[SP_STAT_GOL_OFF_STACK]);
	put_u(b, go, "dropped_inconsistent", st[SP_STAT_GOL_BAD]);
	put_u(b, go, "maps_skipped", st[SP_STAT_GOL_MAP_SKIPPED]);
	put_u(b, go, "stale", st[SP_STAT_GOL_STALE]);
	put_u(b, go, "labels_left_out", st[SP_STAT_GOL_TRUNCATED]);
	put_u(b, go, "processes", d->links.go_processes);
	put_u(b, go, "processes_unsupported", d->links.go_unsupported);
	return s;
}

/* The event profile types: their BPF counters and their own (sampler__event_counters()). */
static struct json_object *events_section(struct jb *b, const struct report_data *d)
{
	const uint64_t *st = d->bpf;
	struct json_object *s = obj(b);

	for (uint32_t t = PROFILE_CPU + 1; t < PROFILE_NTYPES; t++) {
		struct json_object *e;

		if (!(d->opts->profile_types & (1u << t)))
			continue;
		e = obj(b);
		switch (t) {
		case PROFILE_ALLOC:
			put_u(b, e, "calls", st[SP_STAT_ALLOC_CALLS]);
			put_u(b, e, "below_min_bytes", st[SP_STAT_ALLOC_SMALL]);
			put_u(b, e, "nested", st[SP_STAT_ALLOC_NESTED]);
			put_u(b, e, "no_storage", st[SP_STAT_ALLOC_NO_STORAGE]);
			break;
		case PROFILE_LOCK:
			put_u(b, e, "waits", st[SP_STAT_LOCK_WAITS]);
			put_u(b, e, "below_min_wait", st[SP_STAT_LOCK_SHORT]);
			put_u(b, e, "no_storage", st[SP_STAT_LOCK_NO_STORAGE]);
			put_u(b, e, "exit_not_seen", st[SP_STAT_LOCK_LOST]);
			break;
		case PROFILE_OFFCPU:
			put_u(b, e, "stale", st[SP_STAT_OFFCPU_STALE]);
			put_u(b, e, "no_storage", st[SP_STAT_OFFCPU_NO_STORAGE]);
			put_u(b, e, "merged", st[SP_STAT_OFFCPU_MERGED]);
			break;
		}
		for (size_t i = 0; i < d->nevent_counters[t]; i++)
			put_u(b, e, d->event_counters[t][i].name, d->event_counters[t][i].value);
		put(b, s, profile__type_info(t)->name, e);
	}
	return s;
}

static struct json_object *targeting_section(struct jb *b, const struct report_data *d)
{
	const struct targets_stats *ts = &d->targets;
	const struct record_opts *o = d->opts;
	struct json_object *s = obj(b);

	put_u(b, s, "exes", o->nexes);
	put_u(b, s, "exes_found", ts->exes_found);
	put_u(b, s, "exe_files", ts->exe_keys);
	put_u(b, s, "cgroups", o->ncgroups);
	put_u(b, s, "cgroups_found", ts->cgroups_found);
	put_u(b, s, "container_ids", o->ncontainer_ids);
	put_u(b, s, "containers_found", ts->containers_found);
	put_u(b, s, "containers_ambiguous", ts->containers_ambiguous);
	put_u(b, s, "k8s_pods", o->nk8s_pods);
	put_u(b, s, "k8s_pods_found", ts->pods_found);
	put_u(b, s, "cgroup_ids", ts->cgroup_ids);
	put_u(b, s, "cgroup_walks", ts->walks);
	put_u(b, s, "cgroup_walk_dirs", ts->walk_dirs);
	put_d(b, s, "cgroup_walk_ms", ts->walk_ns / 1e6);
	put_u(b, s, "map_errors", ts->map_errors);
	return s;
}

static struct json_object *k8s_section(struct jb *b, const struct report_data *d)
{
	struct json_object *s = obj(b);

	put_u(b, s, "processes_named", d->k8s.hits);
	put_u(b, s, "processes_unnamed", d->k8s.misses);
	put_u(b, s, "log_dir_reads", d->k8s.scans);
	put_u(b, s, "pods", d->k8s.pods);
	put_u(b, s, "containers", d->k8s.containers);
	put_b(b, s, "node_name", d->k8s_node);
	return s;
}

/* The requests of each profile type that had any (each request carries one type). */
static struct json_object *export_by_type(struct jb *b, const struct otlp_exporter_stats *es)
{
	struct json_object *s = obj(b);

	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const struct otlp_type_stats *ts = &es->by_type[t];
		struct json_object *o;

		if (!ts->requests_sent && !ts->failed && !ts->dropped_samples)
			continue;
		o = obj(b);
		put_u(b, o, "requests_sent", ts->requests_sent);
		put_u(b, o, "samples_sent", ts->samples_sent);
		put_u(b, o, "failed", ts->failed);
		put_u(b, o, "failed_samples", ts->failed_samples);
		put_u(b, o, "dropped_samples", ts->dropped_samples);
		if (ts->failed_status) {
			put_s(b, o, "failed_status", otlp_exporter__status_name(ts->failed_status));
			put_s(b, o, "failed_message", ts->failed_message);
		} else {
			put_null(b, o, "failed_status");
			put_null(b, o, "failed_message");
		}
		put(b, s, profile__type_info(t)->name, o);
	}
	return s;
}

/* One OTLP sender (profiles or self-metrics). */
static struct json_object *export_section(struct jb *b, const struct otlp_exporter_stats *es)
{
	struct json_object *s = obj(b), *calls = obj(b);

	put_u(b, s, "requests_sent", es->requests_sent);
	put_u(b, s, "bytes_sent", es->bytes_sent);
	put_u(b, s, "samples_sent", es->samples_sent);
	put_u(b, s, "retries", es->retries);
	put_u(b, s, "failed", es->failed);
	put_u(b, s, "failed_samples", es->failed_samples);
	put_u(b, s, "dropped", es->dropped);
	put_u(b, s, "dropped_samples", es->dropped_samples);
	put_u(b, s, "rejected_profiles", es->rejected_profiles);
	put_u(b, s, "queued", es->queued);
	for (int st = 0; st < OTLP_GRPC_STATUS_COUNT; st++)
		if (es->calls_by_status[st])
			put_u(b, calls, otlp_exporter__status_name(st), es->calls_by_status[st]);
	put(b, s, "calls_by_status", calls);
	put_d(b, s, "call_seconds_sum", es->call_seconds_sum);
	put_d(b, s, "call_seconds_max", es->call_seconds_max);
	put(b, s, "by_type", export_by_type(b, es));
	return s;
}

static struct json_object *debuginfod_section(struct jb *b, const struct report_data *d)
{
	const struct report_debuginfod *g = &d->debuginfod;
	struct json_object *s = obj(b);

	put_u(b, s, "requests", g->st.requests);
	put_u(b, s, "fetched", g->st.found);
	put_u(b, s, "missing", g->st.missing);
	put_u(b, s, "failed", g->st.failed);
	put_u(b, s, "dropped", g->st.dropped);
	put_u(b, s, "unfinished", g->st.pending);
	put_u(b, s, "rejected", g->rejected);
	put_u(b, s, "named_at_end", g->named);
	put_u(b, s, "cache_evicted", g->st.cache_evicted);
	put_u(b, s, "cache_bytes", g->st.cache_bytes);
	put_s(b, s, "last_error", g->st.last_error ? strerror(-g->st.last_error) : NULL);
	return s;
}

static struct json_object *symbols_section(struct jb *b, const struct report_data *d)
{
	const struct symcache_stats *ss = &d->syms;
	struct json_object *s = obj(b);

	put_u(b, s, "objects", ss->objects);
	put_u(b, s, "open_errors", ss->open_errors);
	put_u(b, s, "not_regular", ss->not_regular);
	put_u(b, s, "lookups", ss->lookups);
	put_u(b, s, "cache_hits", ss->cache_hits);
	put_u(b, s, "dwarf_hits", ss->dwarf_hits);
	put_u(b, s, "symtab_hits", ss->symtab_hits);
	put_u(b, s, "go_hits", ss->go_hits);
	put_u(b, s, "plt_hits", ss->plt_hits);
	put_u(b, s, "misses", ss->misses);
	put_u(b, s, "loads", ss->loads);
	put_u(b, s, "evictions", ss->evictions);
	put_u(b, s, "reloads", ss->reloads);
	put_u(b, s, "budget", ss->budget);
	put_u(b, s, "budget_grown", ss->budget_grown);
	put_u(b, s, "answers_dropped", ss->answers_dropped);
	put_u(b, s, "load_errors", ss->load_errors);
	put_u(b, s, "dwarf_skipped", ss->dwarf_skipped);
	put_u(b, s, "minidebuginfo", ss->minidebuginfo);
	put_u(b, s, "minidebuginfo_errors", ss->minidebuginfo_errors);
	put_u(b, s, "debuginfod_requests", ss->debuginfod_requests);
	put_u(b, s, "debuginfod_files", ss->debuginfod_files);
	put_u(b, s, "bytes_peak", ss->bytes_peak);
	return s;
}

/* Files on file systems that can stall (FUSE, network): copied, given up, refused. */
static struct json_object *slow_files_section(struct jb *b, const struct report_data *d)
{
	const struct regfile_stats *r = &d->slow_files;
	struct json_object *s = obj(b);

	put_u(b, s, "read", r->slow_read);
	put_u(b, s, "reused", r->reused);
	put_u(b, s, "stalled", r->stalled);
	put_u(b, s, "skipped", r->skipped);
	put_u(b, s, "too_big", r->too_big);
	put_u(b, s, "helpers_left", r->helpers_left);
	return s;
}

static struct json_object *problems_section(struct jb *b, const struct report_data *d)
{
	struct report_found found[32];
	size_t n = report__problems(d, found, sizeof(found) / sizeof(found[0]));
	struct json_object *a = json_object_new_array();

	if (!a)
		b->err = -ENOMEM;
	for (size_t i = 0; a && i < n; i++) {
		struct json_object *p = obj(b);

		put_s(b, p, "id", found[i].id);
		put_s(b, p, "message", found[i].message);
		if (p && json_object_array_add(a, p)) {
			json_object_put(p);
			b->err = -ENOMEM;
		}
	}
	return a;
}

struct json_object *report__json(const struct report_data *d)
{
	struct jb b = {0};
	struct json_object *root = obj(&b);

	put_s(&b, root, "schema", "spanprof-stats");
	put_u(&b, root, "version", REPORT_JSON_VERSION);
	put_s(&b, root, "spanprof_version", SPANPROF_VERSION);
	put(&b, root, "run", run_section(&b, d));
	put(&b, root, "samples", samples_section(&b, d));
	put(&b, root, "frames", frames_section(&b, d));
	put(&b, root, "processes", processes_section(&b, d));
	put(&b, root, "file_identities", fileid_section(&b, d));
	put(&b, root, "unwind", unwind_section(&b, d));
	put(&b, root, "jit", jit_section(&b, d));
	if (d->python_on)
		put(&b, root, "python", python_section(&b, d));
	else
		put_null(&b, root, "python");
	if (d->v8_on)
		put(&b, root, "v8", v8_section(&b, d));
	else
		put_null(&b, root, "v8");
	if (d->jvm_on)
		put(&b, root, "jvm", jvm_section(&b, d));
	else
		put_null(&b, root, "jvm");
	if (d->php_on)
		put(&b, root, "php", php_section(&b, d));
	else
		put_null(&b, root, "php");
	if (d->links_on)
		put(&b, root, "span_links", links_section(&b, d));
	else
		put_null(&b, root, "span_links");
	put(&b, root, "events", events_section(&b, d));
	if (d->targeted)
		put(&b, root, "targeting", targeting_section(&b, d));
	else
		put_null(&b, root, "targeting");
	if (d->k8s_on)
		put(&b, root, "kubernetes", k8s_section(&b, d));
	else
		put_null(&b, root, "kubernetes");
	if (d->export_on) {
		struct json_object *e = export_section(&b, &d->export);

		put_u(&b, e, "encode_failures", d->encode_failures);
		put_u(&b, e, "encode_dropped_samples", d->encode_dropped);
		put(&b, root, "export", e);
	} else {
		put_null(&b, root, "export");
	}
	if (d->metrics_on)
		put(&b, root, "self_metrics", export_section(&b, &d->metrics));
	else
		put_null(&b, root, "self_metrics");
	if (d->debuginfod_on)
		put(&b, root, "debuginfod", debuginfod_section(&b, d));
	else
		put_null(&b, root, "debuginfod");
	put(&b, root, "symbols", symbols_section(&b, d));
	put(&b, root, "slow_files", slow_files_section(&b, d));
	put(&b, root, "problems", problems_section(&b, d));
	if (b.err) {
		json_object_put(root);
		errno = -b.err;
		return NULL;
	}
	return root;
}

int report__write_json(const char *path, const struct report_data *d)
{
	struct json_object *root = report__json(d);
	const char *slash = strrchr(path, '/'), *text;
	char tmp[PATH_MAX] = "";
	size_t len, off = 0;
	int fd = -1, err = 0;

	if (!root)
		return -errno;
	/* In the same directory: rename() does not cross file systems. */
	if (snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", slash ? (int)(slash - path + 1) : 0, path,
		     slash ? slash + 1 : path) >= (int)sizeof(tmp)) {
		tmp[0] = '\0';
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	text =
	    json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text) {
		err = -ENOMEM;
		goto cleanup;
	}
	len = strlen(text);
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		tmp[0] = '\0';
		goto cleanup;
	}
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		off += n;
	}
	if (write(fd, "\n", 1) != 1 || fchmod(fd, 0644) || fsync(fd)) {
		err = errno ? -errno : -EIO;
		goto cleanup;
	}
	if (close(fd)) {
		fd = -1;
		err = -errno;
		goto cleanup;
	}
	fd = -1;
	if (rename(tmp, path))
		err = -errno;
cleanup:
	if (fd >= 0)
		close(fd);
	if (err && tmp[0])
		unlink(tmp);
	json_object_put(root);
	return err;
}
