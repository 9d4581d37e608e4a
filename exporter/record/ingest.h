/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ingest: one sample's whole path into the profile model, the conductor's single step per
 * sample: resolve its PCs into locations (resolve/resolve.h), intern its stack, thread and
 * process names, attach its span link and attributes (spans/spanlinks.h), and add it to the
 * model (profile/profile.h) at its wall-clock time.
 *
 * The stages are borrowed; the ingest state holds only the clock offsets and a scratch array.
 * Not thread-safe.
 */
#ifndef SPANPROF_INGEST_H
#define SPANPROF_INGEST_H

#include <stdint.h>

#include "resolve/resolve.h"
#include "sampler.h"

struct resolve;
struct spanlinks;
struct profile;

struct ingest {
	struct resolve *resolve;      /* required */
	struct spanlinks *links;      /* NULL: samples carry no span */
	struct profile *profile;      /* the model of the current export interval */
	uint64_t boot_to_unix_ns;     /* added to CLOCK_BOOTTIME stamps (bpf_ktime_get_boot_ns) */
	uint64_t interval_start_unix; /* events stamped earlier are moved to this time */
	uint64_t link_drops;	      /* samples kept without their span (ENOMEM) */
	uint32_t locs[RESOLVE_MAX_LOCATIONS];
};

/*
 * Adds sample @s to the model. @count and @value: what an event sample (every type but CPU)
 * weighs (sampler__event_values()); a CPU sample counts 1. Returns the profile type it was
 * recorded under (enum profile_type), or the model's -ENOMEM / -EINVAL (the sample is lost:
 * count it).
 */
int ingest__sample(struct ingest *in, const struct sp_sample *s, uint64_t count, uint64_t value);

#endif
