/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfstats_collect: fills a struct selfstats from the live agent (selfstats.h): its modules'
 * counters, the BPF maps that can fill up, and the process's own CPU time and memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "profile/profile.h"
#include "process/proctab.h"
#include "resolve/resolve.h"
#include "runtime/jit/jitprocs.h"
#include "sampling/sampler_user.h"
#include "telemetry/selfstats.h"
#include "spans/spanlinks.h"
#include "symbols/symbolize.h"
#include "unwind/unwinder.h"

_Static_assert((int)PROFILE_NTYPES == (int)SP_PROF_NTYPES,
	       "profile types: one table for both sides");

/* What /proc/self/fdinfo/FD says of a BPF map (fields as in kernel/bpf/syscall.c). */
struct map_fdinfo {
	uint32_t type, key_size, max_entries;
	uint64_t memlock;
};

static int read_map_fdinfo(int fd, struct map_fdinfo *out)
{
	char path[64], line[128];
	unsigned long long v;
	FILE *f;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "map_type: %llu", &v) == 1)
			out->type = v;
		else if (sscanf(line, "key_size: %llu", &v) == 1)
			out->key_size = v;
		else if (sscanf(line, "max_entries: %llu", &v) == 1)
			out->max_entries = v;
		else if (sscanf(line, "memlock: %llu", &v) == 1)
			out->memlock = v;
	}
	fclose(f);
	return 0;
}

/*
 * Entries of a hash map, by walking its keys. At most max_entries + 1 steps: a key deleted
 * meanwhile makes the kernel restart from the first key, and the walk must end anyway.
 */
static uint64_t count_keys(int fd, const struct map_fdinfo *mi)
{
	uint8_t key[2][64];
	uint64_t n = 0;
	void *prev = NULL;
	int cur = 0;

	if (mi->key_size == 0 || mi->key_size > sizeof(key[0]))
		return 0;
	while (n <= mi->max_entries && !bpf_map_get_next_key(fd, prev, key[cur])) {
		n++;
		prev = key[cur];
		cur ^= 1;
	}
	return n > mi->max_entries ? mi->max_entries : n;
}

/* Appends one map; @entries < 0: count the keys (hash maps). */
static void add_map(struct selfstats *out, const char *name, int fd, int64_t entries,
		    uint64_t capacity, uint64_t bytes)
{
	struct selfstats_map *m;
	struct map_fdinfo mi = {0};

	if (out->nmaps >= SELFSTATS_MAX_MAPS || fd < 0)
		return;
	if (read_map_fdinfo(fd, &mi) || mi.max_entries <= 1)
		return; /* unreadable, or a placeholder shrunk to one entry (feature off) */
	m = &out->maps[out->nmaps++];
	m->name = name;
	m->capacity = capacity ? capacity : mi.max_entries;
	m->entries = entries >= 0 ? (uint64_t)entries : count_keys(fd, &mi);
	m->bytes = bytes ? bytes : mi.memlock;
}

static void collect_agent(struct selfstats *out)
{
	struct rusage ru;
	char buf[256];
	ssize_t n;
	int fd;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		out->cpu_user_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
		out->cpu_system_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	}
	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		selfstats__parse_statm(buf, sysconf(_SC_PAGESIZE), &out->rss_bytes);
	}
}

void selfstats__collect(const struct selfstats_sources *src, struct selfstats *out)
{
	struct unwinder_stats us = {0};
	struct timespec ts;

	memset(out, 0, sizeof(*out));
	clock_gettime(CLOCK_REALTIME, &ts);
	out->time_unix_ns = ts.tv_sec * 1000000000ull + ts.tv_nsec;
	out->start_unix_ns = src->start_unix_ns;
	out->samples = src->samples;
	out->samples_oom = src->samples_oom;
	out->link_drops = src->link_drops;
	out->encode_failures = src->encode_failures;
	out->profile_types = src->profile_types ? src->profile_types : 1u << SP_PROF_CPU;
	for (uint32_t t = 0; t < SP_PROF_NTYPES; t++) {
		const struct profile_type_info *ti = profile__type_info(t);

		out->type_names[t] = ti ? ti->name : "unknown";
		out->type_recorded[t] = src->type_samples ? src->type_samples[t] : 0;
	}
	out->cfi = src->unwinder != NULL;
	out->span_links = src->links != NULL;
	if (src->sampler)
		sampler__stats(src->sampler, out->bpf);
	if (src->procs) {
		const struct proctab_stats *ps = proctab__stats(src->procs);

		out->maps_read_failed = ps->maps_read_failed;
		out->objects_failed = ps->objects_failed;
		out->processes_seen = ps->processes;
		out->processes_tracked = proctab__count(src->procs);
	}
	if (src->jit) {
		const struct jitproc_stats *js = jitprocs__stats(src->jit);

		out->jit_named = js->frames_named;
		out->jit_unnamed = js->frames_unnamed;
	}
	if (src->resolve) {
		const struct resolve_stats *rs = resolve__stats(src->resolve);

		out->frames_unmapped = rs->frames_unmapped;
		out->frames_unsymbolized = rs->frames_unsymbolized;
		out->kernel_unsymbolized = rs->kernel_unsymbolized;
		out->frames_fileid = rs->frames_fileid;
		out->frames_fileid_unknown = rs->frames_fileid_unknown;
	}
	if (src->syms) {
		struct symcache_stats ss;

		symcache__stats(src->syms, &ss);
		out->symcache_bytes = ss.bytes;
		out->debuginfod_requests = ss.debuginfod_requests;
		out->debuginfod_files = ss.debuginfod_files;
	}
	if (src->unwinder) {
		unwinder__stats(src->unwinder, &us);
		out->processes_unwind = us.processes;
		out->unwind_tables_refused = us.tables_full;
		out->unwind_procs_refused = us.procs_full;
	}
	if (src->python) {
		out->python = 1;
		pytab__stats(src->python, &out->py_table);
		if (src->sampler)
			sampler__python_stats(src->sampler, out->py_walks, PY_STOP_COUNT);
	}
	if (src->python && src->resolve) {
		const struct resolve_stats *rs = resolve__stats(src->resolve);

		out->py_samples_placed = rs->py.merged;
		out->py_samples_cut = rs->py.cut;
		out->py_samples_unplaced = rs->py.unplaced;
		out->py_samples_dropped = rs->py.dropped;
		out->py_samples_no_process = rs->py.no_process;
		out->py_frames_named = rs->py.frames_named;
		out->py_frames_unnamed = rs->py.frames_unnamed;
		out->py_frames_stale = rs->py.frames_stale;
	}
	if (src->links) {
		struct spanlinks_stats ls;

		spanlinks__stats(src->links, &ls);
		out->processes_span_links = ls.processes;
	}
	if (src->sampler) {
		struct sampler_unwind_maps um;
		struct sampler_threadctx_maps tm;

		/* The maps that can fill up; the sample ring's losses are dropped.ringbuf_full. */
		if (!sampler__unwind_maps(src->sampler, &um)) {
			add_map(out, "unwind_procs", um.procs_fd, -1, um.max_procs, 0);
			add_map(out, "unwind_tables", um.tables_fd, us.tables, um.max_tables, 0);
			add_map(out, "unwind_chunks", um.chunks_fd, us.chunks, um.max_chunks,
				us.chunk_bytes);
		}
		if (!sampler__threadctx_maps(src->sampler, &tm)) {
			add_map(out, "tls_procs", tm.procs_fd, -1, 0, 0);
			add_map(out, "ctx_threads", tm.threads_fd, -1, 0, 0);
		}
	}
	if (src->profiles) {
		out->exports[out->nexports].signal = "profiles";
		otlp_exporter__stats(src->profiles, &out->exports[out->nexports++].st);
	}
	if (src->metrics) {
		out->exports[out->nexports].signal = "metrics";
		otlp_exporter__stats(src->metrics, &out->exports[out->nexports++].st);
	}
	collect_agent(out);
}
