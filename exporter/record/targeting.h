/* SPDX-License-Identifier: Apache-2.0 */
/*
 * targeting: which processes a run samples and when it ends for want of them: --pid mapped to
 * thread groups, the filters of --exe, --cgroup, --container-id and --k8s-pod (targets.h), the
 * watch of the --pid processes, and --k8s's pod names (k8smeta.h, docs/deploy.md). Private to
 * exporter/record/.
 */
#ifndef SPANPROF_RECORD_TARGETING_H
#define SPANPROF_RECORD_TARGETING_H

#include <stddef.h>
#include <stdint.h>

#include "record/recorder.h"

/*
 * Maps each --pid of @o to its thread group (a thread id names its process) into @tgids
 * (o->npids entries), *@n of them. 0, or 1 after a message (a PID gone).
 */
int record__resolve_pids(const struct record_opts *o, uint32_t *tgids, size_t *n);

/*
 * The filters BPF cannot check by name (r->targets; NULL without --exe, --cgroup,
 * --container-id, --k8s-pod): resolved here, before the sampler is made. 0, or -errno after
 * a message.
 */
int record__make_targets(struct recorder *r);

/*
 * With --pid as the only targeting option, the run ends once all those processes have exited,
 * as 'perf record -p' does (the other options can match processes started later). 0 (also when
 * it cannot watch them: a warning), or 1 after a message (a process gone, out of memory).
 */
int record__watch_pids(struct recorder *r, const uint32_t *tgids, size_t n);

/* --k8s: the pod names of each process (k8smeta.h). 0, or -ENOMEM. */
int record__start_k8s(struct recorder *r);

#endif /* SPANPROF_RECORD_TARGETING_H */
