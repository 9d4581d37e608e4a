/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view: `spanprof view`, one self-contained HTML page from profiles: the readers (view/read.h)
 * merge the inputs into a document (view/doc.h), which the page template carries.
 */
#ifndef SPANPROF_VIEW_H
#define SPANPROF_VIEW_H

/* `spanprof view INPUT... [OPTION...]`; argv[0] is "view". Returns the exit status. */
int view__main(int argc, char **argv);

#endif /* SPANPROF_VIEW_H */
