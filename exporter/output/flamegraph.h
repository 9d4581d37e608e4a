/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flamegraph: a self-contained SVG flame graph of a profile.
 */
#ifndef SPANPROF_FLAMEGRAPH_H
#define SPANPROF_FLAMEGRAPH_H

#include "profile/profile.h"

/*
 * Writes @p to @path (via @path.tmp, renamed on success) as an SVG 1.1
 * flame graph, 1200 px wide: roots at the bottom ("all", then one frame per
 * process), callees above their callers, width proportional to samples.
 * Frames are those of folded__write (same tree, same names); frames under
 * 0.1% of all samples are left out with their children. Each frame has a
 * <title> tooltip "NAME (N samples, P%)"; clicking one zooms into it, and the search box
 * (top right, #search) highlights the frames whose name matches a regular expression (or,
 * when the text is not one, contains it) in magenta, with the matched share of all samples
 * in #matched ("Matched: P%", a match inside a match counted once), as flamegraph.pl's
 * search does (short embedded scripts). Colours: warm for native code, blue for kernel code, grey
 * (blue-grey in the kernel) for frames without a symbol, violet for processes.
 * @title (NULL: "CPU flame graph") is shown on top. Returns 0 or -errno.
 */
int flamegraph__write_svg(const struct profile *p, const char *path, const char *title);
/* The flame graph of one profile type (enum profile_type; weights as in folded__write_type()). */
int flamegraph__write_svg_type(const struct profile *p, const char *path, const char *title,
			       uint32_t type);

#endif /* SPANPROF_FLAMEGRAPH_H */
