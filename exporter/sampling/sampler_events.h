/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event profile types (--profile alloc,lock,offcpu; docs/profile-types.md): the agent side of
 * the programs in bpf/alloc.bpf.h, bpf/lock.bpf.h and bpf/offcpu.bpf.h. Each type is one
 * struct sampler_event_type (exporter/ev_<type>.c); the sampler calls it at set-up and the
 * recorder on each sample and on each new set of mappings of a process. The samples
 * themselves come through the sampler's ring buffer with the CPU samples (struct sp_sample,
 * sp_sample.type). Not thread-safe: the recorder's thread only.
 */
#ifndef SPANPROF_SAMPLER_EVENTS_H
#define SPANPROF_SAMPLER_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sampler.h"
#include "sampling/sampler_user.h"

struct sampler_bpf;
struct sampler_opts;
struct procmaps;

struct sampler_event_type {
	uint32_t type; /* SP_PROF_* */
	/*
	 * Before the BPF object is loaded: set the type's read-only data and map sizes, and turn
	 * the autoload of its programs off when @selected is 0 (they must not load then).
	 * 0 or -errno (message on stderr).
	 */
	int (*configure)(struct sampler_bpf *skel, const struct sampler_opts *o, int selected);
	/*
	 * After loading, only when selected: attach what can be attached now (tracepoints; the
	 * uprobes of files already known). *@state: the type's own state, freed by free().
	 * 0 or -errno (message on stderr naming what failed).
	 */
	int (*attach)(struct sampler_bpf *skel, const struct sampler_opts *o, void **state);
	/* A process's mappings were (re)read: attach to new files it maps. May be NULL. */
	void (*maps_hook)(void *state, uint32_t pid, const struct procmaps *maps);
	/*
	 * The sample's count and value for the profile (e.g. unbiased estimates for sampled
	 * allocations). May be NULL: count 1, value s->value.
	 */
	void (*values)(void *state, const struct sp_sample *s, uint64_t *count, uint64_t *value);
	/*
	 * End of the run: the type's own lines for the summary on @f, from its state and the BPF
	 * counters @st[SP_STAT_MAX]. May be NULL.
	 */
	void (*summary)(void *state, const uint64_t *st, FILE *f);
	/*
	 * End of the run: the type's own counters kept in its state (not the BPF ones), for
	 * --stats-json: at most SAMPLER_MAX_COUNTERS into @out; returns how many. May be NULL.
	 */
	size_t (*counters)(void *state, struct sampler_counter *out);
	/* Detaches and frees @state (NULL: nothing attached). */
	void (*free)(void *state);
};

extern const struct sampler_event_type sampler_ev_alloc, sampler_ev_lock, sampler_ev_offcpu;

#endif /* SPANPROF_SAMPLER_EVENTS_H */
