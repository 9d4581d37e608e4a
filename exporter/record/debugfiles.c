/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "record/debugfiles.h"
#include "resolve/resolve.h"
#include "symbols/debuginfod.h"
#include "symbols/symbolize.h"

/* Longest wait at the end of a local run for debug files still on their way. */
#define RECORD_DEBUGINFOD_WAIT_S 5

void record__start_debuginfod(struct recorder *r, struct symcache *syms)
{
	struct dbgfetch_opts fo = {.urls = r->opts->debuginfod_urls,
				   .cache_max_bytes = (uint64_t)r->opts->debuginfod_cache_mb << 20};

	r->fetch = dbgfetch__new(&fo);
	if (!r->fetch && errno != ENOENT)
		fprintf(stderr,
			"spanprof: warning: debuginfod unavailable (%s): no debug files fetched\n",
			strerror(errno));
	symcache__set_debuginfod(syms, r->fetch);
}

int record__finish_debuginfod(struct recorder *r, struct symcache *syms,
			      struct report_debuginfod *out)
{
	const struct record_opts *o = r->opts;
	struct dbgfetch_stats st;
	struct symcache_stats ss;
	int named = 0;

	if (!r->fetch)
		return -ENOENT;
	dbgfetch__stats(r->fetch, &st);
	if (!r->exporter && st.pending) {
		if (!o->quiet)
			fprintf(
			    stderr,
			    "spanprof: waiting up to %d s for %llu debug files from debuginfod\n",
			    RECORD_DEBUGINFOD_WAIT_S, (unsigned long long)st.pending);
		dbgfetch__wait(r->fetch, RECORD_DEBUGINFOD_WAIT_S * 1000);
	}
	symcache__pick_up_debug_files(syms);
	if (!r->exporter)
		named = resolve__name_again(r->in.resolve, r->in.profile);
	symcache__set_debuginfod(syms, NULL);
	dbgfetch__stats(r->fetch, &st);
	dbgfetch__free(r->fetch); /* cancels what is still in flight */
	r->fetch = NULL;
	symcache__stats(syms, &ss);
	out->st = st;
	out->rejected = ss.debuginfod_rejected;
	out->named = named > 0 ? named : 0;
	return 0;
}
