/* SPDX-License-Identifier: Apache-2.0 */
#include <malloc.h>
#include <bpf/libbpf.h>

#include "profile/profile.h"
#include "record/sizing.h"
#include "sampler.h"

#define MALLOC_MMAP_THRESHOLD (128 << 10)

uint32_t record__ringbuf_size(const struct record_opts *o)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t want =
	    (uint64_t)(ncpus > 0 ? ncpus : 1) * o->frequency_hz * sizeof(struct sp_sample);
	/*
	 * At least ~320 records (6.4 KiB each): the agent may be busy for seconds building the
	 * first CFI tables while samples keep coming. Event profiles come in bursts (an
	 * allocation loop): room for ~1300 samples; at their most detailed settings (every
	 * allocation, off-CPU periods from a few us) a loop makes hundreds of thousands a second:
	 * ~5000.
	 */
	uint32_t size = o->profile_types & ~(1u << PROFILE_CPU) ? 8u << 20 : 2u << 20;
	int detailed =
	    ((o->profile_types & (1u << PROFILE_ALLOC)) && o->alloc_sample_bytes < 4096) ||
	    ((o->profile_types & (1u << PROFILE_OFFCPU)) && o->offcpu_min_ns < 100000);

	if (detailed)
		size = 32u << 20;
	while (size < want && size < (64u << 20))
		size <<= 1;
	return size;
}

void record__tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 2 * MALLOC_MMAP_THRESHOLD);
	mallopt(M_ARENA_MAX, 2);
}
