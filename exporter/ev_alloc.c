/* SPDX-License-Identifier: Apache-2.0 */
/* The alloc profile type (--profile alloc): see exporter/sampler_events.h, bpf/alloc.bpf.h. */
#include <errno.h>
#include <stdio.h>

#include "sampler.skel.h"
#include "sampler_events.h"
#include "sampler_user.h"

static int alloc_configure(struct sampler_bpf *skel, const struct sampler_opts *o, int selected)
{
	(void)skel;
	(void)o;
	(void)selected;
	return 0;
}

static int alloc_attach(struct sampler_bpf *skel, const struct sampler_opts *o, void **state)
{
	(void)skel;
	(void)o;
	*state = NULL;
	fprintf(stderr, "spanprof: --profile alloc: not implemented yet\n");
	return -ENOTSUP;
}

static void alloc_free(void *state)
{
	(void)state;
}

const struct sampler_event_type sampler_ev_alloc = {
    .type = SP_PROF_ALLOC,
    .configure = alloc_configure,
    .attach = alloc_attach,
    .free = alloc_free,
};
