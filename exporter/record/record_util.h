/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record_util: what every module of exporter/record/ uses: the one-line failure message and the
 * clocks. Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_RECORD_UTIL_H
#define SPANPROF_RECORD_RECORD_UTIL_H

#include <stdint.h>
#include <time.h>

/* The clock @id now, in ns. */
uint64_t record__clock_ns(clockid_t id);

/* One line, naming what is wrong and what to do. */
int record__fail(const char *fmt, ...);

#endif /* SPANPROF_RECORD_RECORD_UTIL_H */
