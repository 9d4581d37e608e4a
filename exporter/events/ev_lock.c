/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lock profile type (--profile lock): see exporter/sampling/sampler_events.h, bpf/lock.bpf.h
 * and docs/profile-types.md. Two classic tracepoints (syscalls/sys_enter_futex, sys_exit_futex) for
 * every process: no uprobes, so nothing to attach per file or per process (--pid filters in BPF);
 * samples count 1 with their wait as value (the defaults of sampler_event_type).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "sampler.skel.h"
#include "sampling/sampler_events.h"
#include "sampling/sampler_user.h"
#include "sampling/tracefs.h"

struct lock_state {
	struct bpf_link *enter, *exit;
};

static int lock_configure(struct sampler_bpf *skel, const struct sampler_opts *o, int selected)
{
	skel->rodata->lock_min_wait_ns = o->lock_min_wait_ns;
	bpf_program__set_autoload(skel->progs.on_lock_futex_enter, selected);
	bpf_program__set_autoload(skel->progs.on_lock_futex_exit, selected);
	return 0;
}

static void lock_free(void *state)
{
	struct lock_state *st = state;

	if (!st)
		return;
	bpf_link__destroy(st->exit);
	bpf_link__destroy(st->enter);
	free(st);
}

/* Attaches @prog (tracepoint syscalls/@tp) into *@link. 0 or -errno (message on stderr). */
static int attach_one(struct bpf_program *prog, const char *tp, struct bpf_link **link)
{
	int err;

	*link = bpf_program__attach(prog);
	if (*link)
		return 0;
	err = errno ? -errno : -EINVAL;
	fprintf(stderr,
		"spanprof: --profile lock: attaching the tracepoint syscalls/%s failed: %s (is "
		"tracefs mounted at " TRACEFS_DIR "?)\n",
		tp, strerror(-err));
	return err;
}

static int lock_attach(struct sampler_bpf *skel, const struct sampler_opts *o, void **state)
{
	struct lock_state *st = calloc(1, sizeof(*st));
	int err;

	(void)o;
	*state = st;
	if (!st)
		return -ENOMEM;
	/* libbpf finds a tracepoint's id in tracefs (mounted, if need be, without touching
	 * other processes' mounts). */
	tracefs__ensure();
	/* Exit first: a wait that starts between the two attachments is then still timed. */
	err = attach_one(skel->progs.on_lock_futex_exit, "sys_exit_futex", &st->exit);
	if (!err)
		err = attach_one(skel->progs.on_lock_futex_enter, "sys_enter_futex", &st->enter);
	return err;
}

static void lock_summary(void *state, const uint64_t *st, FILE *f)
{
	(void)state;
	fprintf(f,
		"spanprof: lock profile: %llu futex lock waits, %llu under --lock-min-wait (not "
		"sampled), missed: %llu no task storage, %llu exit not seen\n",
		(unsigned long long)st[SP_STAT_LOCK_WAITS],
		(unsigned long long)st[SP_STAT_LOCK_SHORT],
		(unsigned long long)st[SP_STAT_LOCK_NO_STORAGE],
		(unsigned long long)st[SP_STAT_LOCK_LOST]);
}

const struct sampler_event_type sampler_ev_lock = {
    .type = SP_PROF_LOCK,
    .configure = lock_configure,
    .attach = lock_attach,
    .free = lock_free,
    .summary = lock_summary,
};
