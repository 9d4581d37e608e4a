/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checks: what `spanprof record` makes sure of before it starts anything: its capabilities, the
 * kernel's BTF, that the output directory and the --stats-json file can be written. Each
 * returns 0, or 1 after one line naming what is wrong and what to do. Private to
 * exporter/record/.
 */
#ifndef SPANPROF_RECORD_CHECKS_H
#define SPANPROF_RECORD_CHECKS_H

/* The capabilities sampling needs: 0, or 1 with a message naming what is missing. */
int record__check_privileges(void);

/* The kernel's BTF (CO-RE): 0, or 1 with a message. */
int record__check_btf(void);

/*
 * Makes sure the outputs can be written before sampling starts. Sets
 * *created when the directory did not exist (so a failed run removes it).
 */
int record__check_output_dir(const char *dir, int *created);

/*
 * --stats-json FILE is written at the end, through a temporary file in its directory: make sure
 * that directory takes a file before sampling starts.
 */
int record__check_stats_json(const char *path);

#endif /* SPANPROF_RECORD_CHECKS_H */
