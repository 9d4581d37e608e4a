/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/k8smeta.h"
#include "record/record_util.h"
#include "record/targeting.h"
#include "sampling/pidwatch.h"
#include "sampling/targets.h"

/* --- targeting and Kubernetes metadata (targets.h, k8smeta.h, docs/deploy.md) --- */
static const char *host_root(void)
{
	const char *r = getenv("SPANPROF_HOST_ROOT");

	return r && *r ? r : "";
}

int record__resolve_pids(const struct record_opts *o, uint32_t *tgids, size_t *n)
{
	char path[64], line[256];

	*n = 0;
	for (size_t i = 0; i < o->npids; i++) {
		uint32_t tgid = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%u/status", o->pids[i]);
		f = fopen(path, "re");
		if (!f)
			return record__fail("no process with PID %u (is it still running?)",
					    o->pids[i]);
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Tgid: %u", &tgid) == 1)
				break;
		fclose(f);
		if (!tgid)
			return record__fail("cannot read the thread group of PID %u", o->pids[i]);
		tgids[(*n)++] = tgid;
	}
	return 0;
}

int record__make_targets(struct recorder *r)
{
	const struct record_opts *o = r->opts;
	struct targets_opts to = {
	    .host_root = host_root(),
	    .exes = o->exes,
	    .nexes = o->nexes,
	    .cgroups = o->cgroups,
	    .ncgroups = o->ncgroups,
	    .container_ids = o->container_ids,
	    .ncontainer_ids = o->ncontainer_ids,
	    .pods = o->k8s_pods,
	    .npods = o->nk8s_pods,
	};

	if (!o->nexes && !o->ncgroups && !o->ncontainer_ids && !o->nk8s_pods)
		return 0;
	r->targets = targets__new(&to);
	return r->targets ? 0 : -errno; /* message printed */
}

int record__watch_pids(struct recorder *r, const uint32_t *tgids, size_t n)
{
	if (!n || r->targets)
		return 0;
	r->pidwatch = pidwatch__new(tgids, n);
	if (r->pidwatch)
		return 0;
	if (errno == ESRCH)
		return record__fail("a --pid process exited while starting (is it still running?)");
	if (errno == ENOMEM)
		return record__fail("out of memory while starting");
	fprintf(stderr,
		"spanprof: warning: cannot watch the --pid processes (%s): the run will not end "
		"when they exit\n",
		strerror(errno));
	return 0;
}

static void k8s_meta_hook(void *ctx, uint32_t pid, struct procmeta *m)
{
	struct recorder *r = ctx;

	k8smeta__fill(r->k8s, m); /* ENOMEM: the process goes without pod names */
}

int record__start_k8s(struct recorder *r)
{
	if (!r->opts->k8s)
		return 0;
	r->k8s = k8smeta__new(host_root());
	if (!r->k8s)
		return -ENOMEM;
	r->k8s_node = getenv("K8S_NODE_NAME");
	if (!r->k8s_node || !*r->k8s_node)
		r->k8s_node = getenv("NODE_NAME");
	proctab__set_meta_hook(r->procs, k8s_meta_hook, r);
	return 0;
}
