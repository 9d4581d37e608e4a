/* SPDX-License-Identifier: Apache-2.0 */
/* The lock profile type (--profile lock): see exporter/sampler_events.h, bpf/lock.bpf.h. */
#include <errno.h>
#include <stdio.h>

#include "sampler.skel.h"
#include "sampler_events.h"
#include "sampler_user.h"

static int lock_configure(struct sampler_bpf *skel, const struct sampler_opts *o, int selected)
{
	(void)skel;
	(void)o;
	(void)selected;
	return 0;
}

static int lock_attach(struct sampler_bpf *skel, const struct sampler_opts *o, void **state)
{
	(void)skel;
	(void)o;
	*state = NULL;
	fprintf(stderr, "spanprof: --profile lock: not implemented yet\n");
	return -ENOTSUP;
}

static void lock_free(void *state)
{
	(void)state;
}

const struct sampler_event_type sampler_ev_lock = {
    .type = SP_PROF_LOCK,
    .configure = lock_configure,
    .attach = lock_attach,
    .free = lock_free,
};
