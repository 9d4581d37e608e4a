/* SPDX-License-Identifier: Apache-2.0 */
/* The offcpu profile type (--profile offcpu): see exporter/sampler_events.h, bpf/offcpu.bpf.h. */
#include <errno.h>
#include <stdio.h>

#include "sampler.skel.h"
#include "sampler_events.h"
#include "sampler_user.h"

static int offcpu_configure(struct sampler_bpf *skel, const struct sampler_opts *o, int selected)
{
	(void)skel;
	(void)o;
	(void)selected;
	return 0;
}

static int offcpu_attach(struct sampler_bpf *skel, const struct sampler_opts *o, void **state)
{
	(void)skel;
	(void)o;
	*state = NULL;
	fprintf(stderr, "spanprof: --profile offcpu: not implemented yet\n");
	return -ENOTSUP;
}

static void offcpu_free(void *state)
{
	(void)state;
}

const struct sampler_event_type sampler_ev_offcpu = {
    .type = SP_PROF_OFFCPU,
    .configure = offcpu_configure,
    .attach = offcpu_attach,
    .free = offcpu_free,
};
