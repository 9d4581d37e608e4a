/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record_describe: what `spanprof record` samples, per profile type, in words for the start
 * line and the summary ("cpu at 19 Hz on 2 CPUs, alloc every 512 KiB allocated").
 */
#ifndef SPANPROF_RECORD_DESCRIBE_H
#define SPANPROF_RECORD_DESCRIBE_H

#include <stddef.h>
#include <stdint.h>

#include "record/record_opts.h"

/* The profile types of @o, bit t = enum profile_type t: o->profile_types, or cpu when none. */
uint32_t record__selected_types(const struct record_opts *o);

/*
 * Writes into @buf (@size bytes, always NUL-terminated, cut short if too small) one phrase per
 * profile type selected in o->profile_types (none: cpu), in type order, separated by ", ":
 *   cpu     "cpu at HZ Hz on N CPUs"       (@ncpus: the CPUs sampled)
 *   alloc   "alloc every SIZE allocated"   (o->alloc_sample_bytes; 0: "alloc of every
 *           allocation"), then " from SIZE" with o->alloc_min_bytes
 *   lock    "lock waits from TIME"         (o->lock_min_wait_ns)
 *   offcpu  "offcpu periods from TIME"     (o->offcpu_min_ns)
 * SIZE is bytes, KiB, MiB or GiB when a whole number of them; TIME is ns, us, ms or s, likewise
 * (the units --lock-min-wait and --offcpu-min accept). With @counts (PROFILE_NTYPES samples per
 * type), each phrase starts with the type's name and its count: "cpu 120 at 19 Hz on 2 CPUs".
 * Returns @buf.
 */
const char *record__describe_types(char *buf, size_t size, const struct record_opts *o, int ncpus,
				   const uint64_t *counts);

/*
 * Writes into @buf (@size bytes, always NUL-terminated, cut short if too small) why a run has no
 * samples, without "spanprof: " and newline, for the profile types of @o (none: cpu) and
 * @targeted (processes were selected, else the whole host), e.g. "no samples: no process ran on
 * a CPU while sampling (every CPU idle the whole time)". Returns @buf.
 */
const char *record__describe_no_samples(char *buf, size_t size, const struct record_opts *o,
					int targeted);

/* Number of profile types selected in @o (none: cpu, so 1). */
unsigned record__ntypes(const struct record_opts *o);

#endif
