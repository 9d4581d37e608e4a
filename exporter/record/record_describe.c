/* SPDX-License-Identifier: Apache-2.0 */
/* record_describe: what record samples, in words (record_describe.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"
#include "record/record_describe.h"

/* 524288 -> "512 KiB"; 1000 -> "1000 bytes". */
static const char *size_words(uint64_t v, char *buf, size_t size)
{
	static const char *const units[] = {"bytes", "KiB", "MiB", "GiB"};
	unsigned u = 0;

	while (u + 1 < sizeof(units) / sizeof(units[0]) && v && !(v % 1024)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%" PRIu64 " %s", v, units[u]);
	return buf;
}

/* 10000 -> "10us"; 1500000 -> "1500us"; 0 -> "0". */
static const char *time_words(uint64_t ns, char *buf, size_t size)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"s", 1000000000ull}, {"ms", 1000000}, {"us", 1000}, {"ns", 1}};

	if (!ns) {
		snprintf(buf, size, "0");
		return buf;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!(ns % units[i].ns)) {
			snprintf(buf, size, "%" PRIu64 "%s", ns / units[i].ns, units[i].unit);
			break;
		}
	return buf;
}

uint32_t record__selected_types(const struct record_opts *o)
{
	return o->profile_types ? o->profile_types : 1u << PROFILE_CPU;
}

unsigned record__ntypes(const struct record_opts *o)
{
	return __builtin_popcount(record__selected_types(o));
}

const char *record__describe_types(char *buf, size_t size, const struct record_opts *o, int ncpus,
				   const uint64_t *counts)
{
	uint32_t types = record__selected_types(o);
	char a[32], b[32], count[32];
	size_t len = 0;

	if (!size)
		return buf;
	buf[0] = '\0';
	for (uint32_t t = 0; t < PROFILE_NTYPES; t++) {
		const char *name = profile__type_info(t)->name, *sep = len ? ", " : "";
		int n = 0;

		if (!(types & (1u << t)) || len >= size)
			continue;
		count[0] = '\0';
		if (counts)
			snprintf(count, sizeof(count), " %" PRIu64, counts[t]);
		switch (t) {
		case PROFILE_CPU:
			n = snprintf(buf + len, size - len, "%s%s%s at %u Hz on %d CPU%s", sep,
				     name, count, o->frequency_hz, ncpus, ncpus == 1 ? "" : "s");
			break;
		case PROFILE_ALLOC:
			if (o->alloc_sample_bytes)
				n = snprintf(buf + len, size - len, "%s%s%s every %s allocated",
					     sep, name, count,
					     size_words(o->alloc_sample_bytes, a, 32));
			else
				n = snprintf(buf + len, size - len, "%s%s%s of every allocation",
					     sep, name, count);
			if (n > 0 && o->alloc_min_bytes && len + n < size)
				n += snprintf(buf + len + n, size - len - n, " from %s",
					      size_words(o->alloc_min_bytes, b, 32));
			break;
		case PROFILE_LOCK:
			n = snprintf(buf + len, size - len, "%s%s%s waits from %s", sep, name,
				     count, time_words(o->lock_min_wait_ns, a, 32));
			break;
		case PROFILE_OFFCPU:
			n = snprintf(buf + len, size - len, "%s%s%s periods from %s", sep, name,
				     count, time_words(o->offcpu_min_ns, a, 32));
			break;
		}
		if (n > 0)
			len += n;
	}
	if (len >= size)
		buf[size - 1] = '\0';
	return buf;
}

const char *record__describe_no_samples(char *buf, size_t size, const struct record_opts *o,
					int targeted)
{
	uint32_t types = record__selected_types(o);
	int cpu = !!(types & 1u << PROFILE_CPU);
	char others[64] = "";
	size_t len = 0;

	for (int t = PROFILE_CPU + 1; t < PROFILE_NTYPES; t++)
		if (types & 1u << t && len < sizeof(others))
			len += snprintf(others + len, sizeof(others) - len, "%s%s", len ? ", " : "",
					profile__type_info(t)->name);
	if (cpu && !len)
		snprintf(buf, size, "no samples: %s",
			 targeted ? "the selected processes never ran on a CPU while sampling "
				    "(idle or sleeping the whole time)"
				  : "no process ran on a CPU while sampling (every CPU idle the "
				    "whole time)");
	else if (cpu)
		snprintf(buf, size, "no samples: %s (%s)",
			 targeted ? "the selected processes neither ran on a CPU nor had an event "
				    "of the other selected profile types"
				  : "no process ran on a CPU or had an event of the other selected "
				    "profile types",
			 others);
	else
		snprintf(buf, size, "no samples: %s (%s)",
			 targeted ? "the selected processes had no event of the selected profile "
				    "types"
				  : "no process had an event of the selected profile types",
			 others);
	return buf;
}
