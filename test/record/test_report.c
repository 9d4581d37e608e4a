// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the end-of-run report (exporter/record/report.h: report*.c): a clean run is
 * two lines and no problem; each actionable problem is named with its advice; at most four
 * lines by default; --verbose keeps the full accounting's lines; the --stats-json document has
 * the fields of docs/stats-json.md and is written atomically. No root: the report reads only a
 * struct report_data, filled by hand here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <grpc/status.h>
#include <json-c/json.h>

#include "profile/profile.h"
#include "record/report.h"

static struct record_opts opts;
static struct report_data data;

/* A clean local run of 10 s at 19 Hz on 2 CPUs: 380 samples from 12 processes. */
static struct report_data *clean(void)
{
	memset(&opts, 0, sizeof(opts));
	opts.frequency_hz = RECORD_DEFAULT_HZ;
	opts.profile_types = 1u << PROFILE_CPU;
	opts.output_dir = "out";
	opts.unwind_max_mb = RECORD_DEFAULT_UNWIND_MB;
	memset(&data, 0, sizeof(data));
	data.opts = &opts;
	data.secs = 10;
	data.ncpus = 2;
	data.ringbuf_bytes = 2u << 20;
	data.ksyms_on = 1;
	data.samples = 380;
	data.type_samples[PROFILE_CPU] = 380;
	data.bpf[SP_STAT_SAMPLES] = 380;
	data.procs.processes = 12;
	data.procs_in_table = 12;
	data.frames_in_files = 4000;
	data.unwind_on = 1;
	data.links_on = 1;
	/* A few unnamed frames in a file with symbols: PLT stubs, not a problem. */
	snprintf(data.files[0].path, sizeof(data.files[0].path), "/usr/lib/libc.so.6");
	data.files[0].frames = 900;
	data.files[0].unnamed = 12;
	data.nfiles = 1;
	return &data;
}

/* What a printer wrote, malloc'd. */
static char *capture(void (*print)(FILE *, const struct report_data *), const struct report_data *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	print(f, d);
	fclose(f);
	return buf;
}

static void print_problems(FILE *f, const struct report_data *d)
{
	report__print_problems(f, d);
}

/* The whole end of the run as record.c prints it (the "wrote" line is output/outputs.c's). */
static void print_all(FILE *f, const struct report_data *d)
{
	report__print_head(f, d);
	report__print_where(f, d);
	report__print_problems(f, d);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The one problem of @d: its id and message; fails unless exactly one is found. */
static const struct report_found *only_problem(const struct report_data *d)
{
	static struct report_found found[16];

	assert_int_equal(report__problems(d, found, 16), 1);
	return &found[0];
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' not in:\n%s", needle, hay);
}

static void test_clean_run(void **unused)
{
	struct report_found found[16];
	char *out = capture(print_all, clean());

	assert_string_equal(out, "spanprof: 380 samples from 12 processes in 10.0 s (cpu at 19 Hz "
				 "on 2 CPUs)\n");
	assert_int_equal(report__problems(&data, found, 16), 0);
	free(out);
	out = capture(print_problems, &data);
	assert_string_equal(out, "");
	free(out);
}

static void test_export_where(void **unused)
{
	char *out;

	clean();
	opts.output_dir = NULL;
	opts.endpoint = "localhost:4317";
	data.export_on = 1;
	data.export.samples_sent = 380;
	data.export.requests_sent = 2;
	data.export.bytes_sent = 20480;
	out = capture(print_all, &data);
	assert_int_equal(count_lines(out), 2);
	assert_contains(out,
			"spanprof: sent 380 samples to localhost:4317 in 2 requests (20.0 KiB)\n");
	free(out);
}

static void test_no_samples(void **unused)
{
	const struct report_found *p;

	clean();
	data.samples = data.type_samples[PROFILE_CPU] = data.bpf[SP_STAT_SAMPLES] = 0;
	p = only_problem(&data);
	assert_string_equal(p->id, "no_samples");
	assert_contains(p->message, "no samples: no process ran on a CPU");
}

static void test_ringbuf_full(void **unused)
{
	const struct report_found *p;

	clean();
	data.bpf[SP_STAT_DROP_RINGBUF] = 120; /* of 500 */
	p = only_problem(&data);
	assert_string_equal(p->id, "ringbuf_full");
	assert_contains(p->message, "24% of samples lost (120): the ring buffer (2 MiB) was full");
	assert_contains(p->message, "raise --ring-buffer-mb");
	/* The drain thread found the agent's queue full: the agent was behind, not the ring. */
	data.queue.full = 3;
	data.queue.max_bytes = 32u << 20;
	p = only_problem(&data);
	assert_string_equal(p->id, "ringbuf_full");
	assert_contains(p->message, "the ring buffer (2 MiB) was full while the agent's sample "
				    "queue (32 MiB) was full too (the agent was behind)");
	data.queue.full = 0;
	/* A loss under 1% is not worth a line. */
	data.bpf[SP_STAT_DROP_RINGBUF] = 2;
	assert_int_equal(report__problems(&data, (struct report_found[4]){0}, 4), 0);
}

static void test_out_of_memory(void **unused)
{
	const struct report_found *p;

	clean();
	data.user_drops = 7;
	p = only_problem(&data);
	assert_string_equal(p->id, "out_of_memory");
	assert_contains(p->message, "7 samples lost");
	assert_contains(p->message, "the agent ran out of memory; give it more");
	/* Records the sample queue had no memory for count too, and are named. */
	data.queue.lost = 5;
	p = only_problem(&data);
	assert_string_equal(p->id, "out_of_memory");
	assert_contains(p->message, "12 samples lost (5 of them in the sample queue)");
	data.user_drops = 0;
	p = only_problem(&data);
	assert_string_equal(p->id, "out_of_memory");
}

static void test_no_symbols(void **unused)
{
	const struct report_found *p;

	clean();
	snprintf(data.files[0].path, sizeof(data.files[0].path),
		 "/usr/lib/x86_64-linux-gnu/libz.so.1");
	data.files[0].frames = 500;
	data.files[0].unnamed = 420;
	p = only_problem(&data);
	assert_string_equal(p->id, "no_symbols");
	assert_string_equal(p->message, "libz.so.1: no symbols, 84% of its frames unnamed; install "
					"its debug package or set DEBUGINFOD_URLS");
	/* With debuginfod on, the servers had nothing for it. */
	data.debuginfod_on = 1;
	p = only_problem(&data);
	assert_contains(p->message,
			"no debug file from debuginfod either: install its debug package");
	/* A file with few frames in the run does not matter. */
	data.debuginfod_on = 0;
	data.files[0].frames = 12;
	data.files[0].unnamed = 10;
	assert_int_equal(report__problems(&data, (struct report_found[4]){0}, 4), 0);
}

static void test_jit_unnamed(void **unused)
{
	const struct report_found *p;

	clean();
	data.jit.frames_unnamed = 300;
	data.jit.hints = 1;
	data.jit.first_hint.pid = 1234;
	snprintf(data.jit.first_hint.comm, sizeof(data.jit.first_hint.comm), "java");
	data.jit.first_hint.what = "run spanprof with --java-perfmap (and java with "
				   "-XX:+PreserveFramePointer), or run jcmd PID "
				   "Compiler.perfmap";
	p = only_problem(&data);
	assert_string_equal(p->id, "jit_unnamed");
	assert_contains(p->message, "java (pid 1234): JIT frames unnamed: run spanprof with "
				    "--java-perfmap (and java with -XX:+PreserveFramePointer)");
}

static void test_export_failed(void **unused)
{
	const struct report_found *p;

	clean();
	opts.output_dir = NULL;
	opts.endpoint = "collector:4317";
	data.export_on = 1;
	data.export.calls_by_status[GRPC_STATUS_UNAVAILABLE] = 9;
	data.export.dropped_samples = 380;
	p = only_problem(&data);
	assert_string_equal(p->id, "export_failed");
	assert_string_equal(p->message, "no sample reached the Collector at collector:4317 (calls "
					"ended with UNAVAILABLE); check that the Collector runs "
					"and is reachable at that address");
	/* Some delivered: how many were not, and the status that says why. */
	data.export.samples_sent = 300;
	data.export.dropped_samples = 0;
	data.export.failed_samples = 80;
	data.export.calls_by_status[GRPC_STATUS_UNAVAILABLE] = 0;
	data.export.calls_by_status[GRPC_STATUS_UNAUTHENTICATED] = 2;
	p = only_problem(&data);
	assert_contains(p->message, "export to collector:4317: 80 of 380 samples not delivered "
				    "(calls ended with UNAUTHENTICATED); check the --header");
}

static void test_export_rejected_and_metrics(void **unused)
{
	struct report_found found[8];

	clean();
	opts.endpoint = "localhost:4317";
	data.export_on = 1;
	data.export.samples_sent = 380;
	data.export.rejected_profiles = 3;
	data.metrics_on = 1;
	data.metrics.failed = 2;
	data.metrics.calls_by_status[GRPC_STATUS_UNIMPLEMENTED] = 2;
	assert_int_equal(report__problems(&data, found, 8), 2);
	assert_string_equal(found[0].id, "export_rejected");
	assert_contains(found[0].message, "rejected 3 profiles");
	assert_string_equal(found[1].id, "self_metrics_failed");
	assert_contains(found[1].message, "2 requests not delivered (UNIMPLEMENTED); the Collector "
					  "has no OTLP metrics receiver");
}

static void test_unwind_full(void **unused)
{
	const struct report_found *p;

	clean();
	data.unwind.tables_full = 4;
	p = only_problem(&data);
	assert_string_equal(p->id, "unwind_tables_full");
	assert_contains(p->message, "4 files walked by frame pointers only");
	assert_contains(p->message, "raise it");
	assert_contains(p->message, "--unwind-max-mb (256)");
}

/* Mapped files not parsed as ELF: a problem only while frames went unnamed. */
static void test_not_elf(void **unused)
{
	const struct report_found *p;

	clean();
	data.procs.objects_failed = 3;
	data.procs.objects_not_elf = 2;
	snprintf(data.procs.first_not_elf, sizeof(data.procs.first_not_elf), "/opt/app/packed");
	assert_int_equal(report__problems(&data, (struct report_found[4]){0}, 4), 0);
	data.resolve.frames_unsymbolized = 30;
	p = only_problem(&data);
	assert_string_equal(p->id, "mapped_files_not_elf");
	assert_contains(p->message, "2 mapped files could not be parsed as ELF (frames in them "
				    "unnamed), e.g. /opt/app/packed");
	assert_contains(p->message, "restart its process");
}

/* Mappings over the unwinder's cap: a problem only while walks were cut at unknown mappings. */
static void test_mappings_dropped(void **unused)
{
	const struct report_found *p;

	clean();
	data.unwind.mappings_dropped = 17;
	assert_int_equal(report__problems(&data, (struct report_found[4]){0}, 4), 0);
	data.bpf[SP_STAT_UNW_NO_MAPPING] = 9;
	p = only_problem(&data);
	assert_string_equal(p->id, "unwind_mappings_dropped");
	assert_contains(p->message, "17 executable mappings left out of the CFI unwinder (over "
				    "256 in one process)");
	assert_contains(p->message, "9 stacks cut");
	assert_contains(p->message, "load fewer shared libraries");
	data.unwind_on = 0;
	assert_int_equal(report__problems(&data, (struct report_found[4]){0}, 4), 0);
}

static void test_kernel_unnamed(void **unused)
{
	const struct report_found *p;

	clean();
	data.ksyms_on = 0;
	data.resolve.kernel_unsymbolized = 40;
	p = only_problem(&data);
	assert_string_equal(p->id, "kernel_unnamed");
	assert_contains(p->message, "kernel.kptr_restrict=0");
}

static void test_targets_missing(void **unused)
{
	const struct report_found *p;
	const char *ids[] = {"abcdef123456", "0123456789ab"};

	clean();
	data.targeted = 1;
	data.targets_on = 1;
	opts.container_ids[0] = ids[0];
	opts.container_ids[1] = ids[1];
	opts.ncontainer_ids = 2;
	data.targets.containers_found = 1;
	p = only_problem(&data);
	assert_string_equal(p->id, "targets_missing");
	assert_contains(p->message, "--container-id: 1 of 2 name no running container; check");
	data.targets.containers_ambiguous = 1;
	p = only_problem(&data);
	assert_contains(p->message, "give more of the id");
}

static void test_k8s_and_debuginfod(void **unused)
{
	struct report_found found[8];

	clean();
	opts.k8s = 1;
	data.k8s_on = 1;
	data.debuginfod_on = 1;
	data.debuginfod.st.failed = 3;
	data.debuginfod.st.last_error = -ECONNREFUSED;
	assert_int_equal(report__problems(&data, found, 8), 2);
	assert_string_equal(found[0].id, "debuginfod_failed");
	assert_contains(found[0].message,
			"debuginfod: 3 fetches failed (last: Connection refused); "
			"check DEBUGINFOD_URLS");
	assert_string_equal(found[1].id, "k8s_no_node_name");
	assert_contains(found[1].message, "set K8S_NODE_NAME");
}

/* Many problems: still at most four lines, the last one saying how many more. */
static void test_at_most_four_lines(void **unused)
{
	char *out;

	clean();
	data.bpf[SP_STAT_DROP_RINGBUF] = 120;
	data.user_drops = 7;
	data.unwind.tables_full = 4;
	data.ksyms_on = 0;
	data.resolve.kernel_unsymbolized = 40;
	out = capture(print_all, &data);
	assert_true(count_lines(out) <= 4);
	assert_contains(out, "ring buffer");
	assert_contains(out, "out of memory");
	assert_contains(out, " (+2 more: --verbose)\n");
	free(out);
	/* --verbose: every problem line, after the full accounting. */
	opts.verbose = 1;
	out = capture(print_all, &data);
	assert_contains(out, "kernel.kptr_restrict");
	assert_contains(out, "4 files walked by frame pointers only");
	free(out);
}

/* The full accounting's lines, as scripts read them, with --verbose only. */
static void test_verbose_lines(void **unused)
{
	char *out;

	clean();
	opts.endpoint = "localhost:4317";
	data.export_on = 1;
	data.export.requests_sent = 2;
	data.export.bytes_sent = 100;
	data.export.samples_sent = 380;
	data.bpf[SP_STAT_CTX_LINKED] = 5;
	data.bpf[SP_STAT_UNW_FRAMES_CFI] = 17;
	data.bpf[SP_STAT_UNW_FRAMES_FP] = 3;
	out = capture(print_all, &data);
	assert_null(strstr(out, "accounting:"));
	free(out);
	opts.verbose = 1;
	out = capture(print_all, &data);
	assert_contains(out, "spanprof: 380 samples from 12 processes in 10.0 s (cpu at 19 Hz on 2 "
			     "CPUs)\n");
	assert_contains(out, "spanprof: span links: 5 samples linked (0 by uprobe)");
	assert_contains(out, "(17 frames CFI, 3 frame pointer)");
	assert_contains(out, "spanprof: export to localhost:4317: 2 requests sent (100 bytes, 380 "
			     "samples), 0 retries, 0 failed, 0 dropped (0 samples)");
	assert_contains(out, "spanprof: accounting: 380 samples taken by BPF = 380 recorded + 0 "
			     "dropped in the agent (out of memory); 0 more lost to a full ring "
			     "buffer\n");
	free(out);
}

static struct json_object *get(struct json_object *o, const char *path)
{
	char buf[256], *save, *tok;
	struct json_object *cur = o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok; tok = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(cur, tok, &cur))
			fail_msg("no field %s (at %s)", path, tok);
	return cur;
}

static uint64_t get_u(struct json_object *o, const char *path)
{
	return json_object_get_uint64(get(o, path));
}

/* Every section and a field of each, as docs/stats-json.md lists them. */
static void test_json_schema(void **unused)
{
	static const char *const fields[] = {
	    "run.duration_s",
	    "run.frequency_hz",
	    "run.cpus",
	    "run.profile_types",
	    "run.targeted",
	    "run.ring_buffer_bytes",
	    "run.output_dir",
	    "run.endpoint",
	    "samples.recorded",
	    "samples.taken",
	    "samples.lost_ring_buffer",
	    "samples.lost_out_of_memory",
	    "samples.lost_queue",
	    "samples.queue_full",
	    "samples.queue_peak_bytes",
	    "samples.link_dropped",
	    "samples.idle",
	    "samples.filtered",
	    "samples.kernel_stack_failures",
	    "samples.user_stack_failures",
	    "samples.by_type.cpu.recorded",
	    "samples.by_type.cpu.taken",
	    "samples.by_type.cpu.lost_ring_buffer",
	    "frames.user_in_files",
	    "frames.unmapped",
	    "frames.unsymbolized",
	    "frames.kernel_unsymbolized",
	    "frames.go_callers_missing",
	    "frames.exception_install_callers_dropped",
	    "frames.frame_pointer_steps_unproven",
	    "frames.frame_pointer_walks_proven",
	    "frames.unnamed_files",
	    "processes.seen",
	    "processes.exited_forgotten",
	    "processes.in_table",
	    "processes.maps_unreadable",
	    "processes.files_unopenable",
	    "processes.maps_reads_dropped_pid_reused",
	    "file_identities.samples",
	    "file_identities.frames_named",
	    "file_identities.exec_paths_failed",
	    "file_identities.return_addresses_not_code",
	    "file_identities.parent_maps_read",
	    "unwind.cfi_enabled",
	    "unwind.samples_cfi",
	    "unwind.samples_fp",
	    "unwind.frames_cfi",
	    "unwind.frames_fp",
	    "unwind.stops.depth_limit",
	    "unwind.stops.bad_return_address",
	    "unwind.tables.refused_full",
	    "unwind.tables.max_bytes",
	    "unwind.notifications",
	    "unwind.notifications_lost",
	    "unwind.maps_rereads",
	    "jit.frames_named",
	    "jit.frames_unnamed",
	    "jit.perf_maps",
	    "jit.jitdumps",
	    "jit.unwinding.records",
	    "jit.unwinding.skipped.bad_size",
	    "jit.unwinding.fdes",
	    "jit.unwinding.mappings",
	    "jit.files_refused.symlink",
	    "jit.processes_hinted",
	    "jit.java_perfmap_requests",
	    "span_links.linked",
	    "span_links.by_uprobe",
	    "span_links.not_linked.outside_spans",
	    "span_links.descriptor_errors",
	    "events",
	    "targeting",
	    "kubernetes",
	    "export",
	    "self_metrics",
	    "debuginfod",
	    "symbols.lookups",
	    "symbols.dwarf_hits",
	    "problems",
	};
	struct json_object *j;

	clean();
	data.bpf[SP_STAT_CTX_LINKED] = 5;
	data.bpf[SP_STAT_UNW_DEPTH] = 2;
	j = report__json(&data);
	assert_non_null(j);
	assert_string_equal(json_object_get_string(get(j, "schema")), "spanprof-stats");
	assert_int_equal(get_u(j, "version"), REPORT_JSON_VERSION);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		get(j, fields[i]);
	assert_int_equal(get_u(j, "samples.recorded"), 380);
	assert_int_equal(get_u(j, "span_links.linked"), 5);
	assert_int_equal(get_u(j, "unwind.stops.depth_limit"), 2);
	assert_int_equal(json_object_array_length(get(j, "problems")), 0);
	assert_int_equal(json_object_get_type(get(j, "export")), json_type_null);
	assert_int_equal(json_object_get_type(get(j, "targeting")), json_type_null);
	json_object_put(j);

	/* The stages that ran get their sections; the problems carry their ids. */
	opts.endpoint = "localhost:4317";
	opts.profile_types |= 1u << PROFILE_LOCK;
	data.export_on = data.metrics_on = data.debuginfod_on = 1;
	data.export.samples_sent = 300;
	data.export.dropped_samples = 80;
	data.export.calls_by_status[GRPC_STATUS_OK] = 3;
	data.bpf[SP_STAT_LOCK_WAITS] = 9;
	data.debuginfod.st.found = 1;
	data.debuginfod.named = 4;
	j = report__json(&data);
	assert_non_null(j);
	assert_int_equal(get_u(j, "export.samples_sent"), 300);
	assert_int_equal(get_u(j, "export.dropped_samples"), 80);
	assert_int_equal(get_u(j, "export.calls_by_status.OK"), 3);
	get(j, "export.encode_dropped_samples");
	get(j, "self_metrics.requests_sent");
	assert_int_equal(get_u(j, "events.lock.waits"), 9);
	assert_int_equal(get_u(j, "debuginfod.fetched"), 1);
	assert_int_equal(get_u(j, "debuginfod.named_at_end"), 4);
	assert_int_equal(json_object_array_length(get(j, "run.profile_types")), 2);
	assert_int_equal(json_object_array_length(get(j, "problems")), 1);
	assert_string_equal(
	    json_object_get_string(get(json_object_array_get_idx(get(j, "problems"), 0), "id")),
	    "export_failed");
	json_object_put(j);
}

/* Written whole through a temporary file: the target holds the document, nothing else stays. */
static void test_json_write(void **unused)
{
	char dir[] = "/tmp/spanprof-report-XXXXXX", path[128], cmd[160];
	struct json_object *j;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stats.json", dir);
	clean();
	f = fopen(path, "w"); /* an older file is replaced */
	fputs("old", f);
	fclose(f);
	assert_int_equal(report__write_json(path, &data), 0);
	j = json_object_from_file(path);
	assert_non_null(j);
	assert_int_equal(get_u(j, "samples.recorded"), 380);
	json_object_put(j);
	snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) = 1", dir);
	assert_int_equal(system(cmd), 0);
	/* A directory that does not exist: an error, nothing written. */
	snprintf(path, sizeof(path), "%s/missing/stats.json", dir);
	assert_int_equal(report__write_json(path, &data), -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_run),
	    cmocka_unit_test(test_export_where),
	    cmocka_unit_test(test_no_samples),
	    cmocka_unit_test(test_ringbuf_full),
	    cmocka_unit_test(test_out_of_memory),
	    cmocka_unit_test(test_no_symbols),
	    cmocka_unit_test(test_jit_unnamed),
	    cmocka_unit_test(test_export_failed),
	    cmocka_unit_test(test_export_rejected_and_metrics),
	    cmocka_unit_test(test_unwind_full),
	    cmocka_unit_test(test_kernel_unnamed),
	    cmocka_unit_test(test_not_elf),
	    cmocka_unit_test(test_mappings_dropped),
	    cmocka_unit_test(test_targets_missing),
	    cmocka_unit_test(test_k8s_and_debuginfod),
	    cmocka_unit_test(test_at_most_four_lines),
	    cmocka_unit_test(test_verbose_lines),
	    cmocka_unit_test(test_json_schema),
	    cmocka_unit_test(test_json_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
