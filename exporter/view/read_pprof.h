/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view/read_pprof: the reader of pprof profiles (github.com/google/pprof proto/profile.proto),
 * for `spanprof view`; internal to exporter/view/ (the face is view/read.h).
 */
#ifndef SPANPROF_VIEW_READ_PPROF_H
#define SPANPROF_VIEW_READ_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "view/read_common.h"

/*
 * One uncompressed pprof Profile, @n bytes at @data: checked whole (every id and string index),
 * then merged into @r's document. Returns 0, -EINVAL (the reason in @r) or -ENOMEM.
 */
int rd__pprof(struct rd *r, const uint8_t *data, size_t n);

#endif /* SPANPROF_VIEW_READ_PPROF_H */
