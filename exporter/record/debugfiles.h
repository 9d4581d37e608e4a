/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugfiles: debug files from debuginfod during a run (--debuginfod, DEBUGINFOD_URLS;
 * symbols/debuginfod.h): the fetcher's start, and at the end the wait for those still coming and
 * the frames they name. Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_DEBUGFILES_H
#define SPANPROF_RECORD_DEBUGFILES_H

#include "record/recorder.h"
#include "record/report.h"

/* Fetches debug files from --debuginfod or DEBUGINFOD_URLS, if any (after the capabilities drop).
 */
void record__start_debuginfod(struct recorder *r, struct symcache *syms);

/*
 * End of the run: a local run waits a bounded time for the debug files still coming and names
 * the frames they cover (the profile's locations made before they arrived); then requests in
 * flight are cancelled and the outcome goes into @out for the report. 0, or -ENOENT when
 * debuginfod was off.
 */
int record__finish_debuginfod(struct recorder *r, struct symcache *syms,
			      struct report_debuginfod *out);

#endif /* SPANPROF_RECORD_DEBUGFILES_H */
