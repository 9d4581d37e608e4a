/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offcpu profile type (--profile offcpu): see exporter/sampling/sampler_events.h,
 * bpf/offcpu.bpf.h and docs/profile-types.md. Two tracepoint programs, nothing per process:
 * sched_switch measures the blocked periods, sys_exit sends them from the thread's own context.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.skel.h"
#include "sampling/sampler_events.h"
#include "sampling/sampler_user.h"

struct offcpu_state {
	struct bpf_link *links[2];
};

static int offcpu_configure(struct sampler_bpf *skel, const struct sampler_opts *o, int selected)
{
	if (!selected) {
		bpf_program__set_autoload(skel->progs.on_offcpu_switch, false);
		bpf_program__set_autoload(skel->progs.on_offcpu_sys_exit, false);
		bpf_map__set_autocreate(skel->maps.offcpu_outs, false);
		bpf_map__set_autocreate(skel->maps.offcpu_pend, false);
		return 0;
	}
	skel->rodata->offcpu_min_ns = o->offcpu_min_ns;
	return 0;
}

static void offcpu_free(void *state)
{
	struct offcpu_state *st = state;

	if (!st)
		return;
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(st->links[i]);
	free(st);
}

static int offcpu_attach(struct sampler_bpf *skel, const struct sampler_opts *o, void **state)
{
	static const char *const what[2] = {"tp_btf/sched_switch", "tp_btf/sys_exit"};
	struct bpf_program *progs[2] = {skel->progs.on_offcpu_switch,
					skel->progs.on_offcpu_sys_exit};
	struct offcpu_state *st;
	int err;

	(void)o;
	*state = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	/* sys_exit first: a pending event never waits for a program not attached yet. */
	for (int i = 1; i >= 0; i--) {
		st->links[i] = bpf_program__attach(progs[i]);
		if (!st->links[i]) {
			err = -errno;
			fprintf(stderr, "spanprof: --profile offcpu: attaching %s failed: %s\n",
				what[i], strerror(-err));
			offcpu_free(st);
			return err;
		}
	}
	*state = st;
	return 0;
}

/* The periods not reported besides a full ring buffer (bpf/offcpu.bpf.h), and merged ones. */
static void offcpu_summary(void *state, const uint64_t *st, FILE *f)
{
	(void)state;
	fprintf(f,
		"spanprof: offcpu: %llu stale (blocked outside a syscall: stack gone), %llu not "
		"measured (task storage unavailable); %llu further periods of one syscall added to "
		"its sample\n",
		(unsigned long long)st[SP_STAT_OFFCPU_STALE],
		(unsigned long long)st[SP_STAT_OFFCPU_NO_STORAGE],
		(unsigned long long)st[SP_STAT_OFFCPU_MERGED]);
}

const struct sampler_event_type sampler_ev_offcpu = {
    .type = SP_PROF_OFFCPU,
    .configure = offcpu_configure,
    .attach = offcpu_attach,
    .summary = offcpu_summary,
    .free = offcpu_free,
};
