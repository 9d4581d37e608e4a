/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "record/callbacks.h"
#include "record/export.h"
#include "runtime/runtime.h"
#include "spans/spanlinks.h"
#include "unwind/unwinder.h"

int record__on_sample(void *ctx, const struct sp_sample *s)
{
	struct recorder *r = ctx;
	uint64_t count = 1, value = 0;
	int type;

	/* Taken after the interval's end: the interval goes first, however late this is. */
	record__export_due(r, s->time_boot_ns);

	if (s->type != PROFILE_CPU && s->type < PROFILE_NTYPES)
		sampler__event_values(r->sampler, s, &count, &value);
	type = ingest__sample(&r->in, s, count, value);
	if (type < 0) {
		r->user_drops++;
	} else {
		r->samples++;
		r->type_samples[type]++;
		r->interval_samples++;
	}
	return 0;
}

int record__on_exec_path(void *ctx, const struct sp_exec_path *e)
{
	struct recorder *r = ctx;

	proctab__exec_path(r->procs, e);
	return 0;
}

int record__on_unwind_event(void *ctx, const struct unwind_event *e)
{
	struct recorder *r = ctx;

	if (e->kind == UNWIND_EVENT_EXIT && r->nexits < sizeof(r->exits) / sizeof(r->exits[0])) {
		r->exits[r->nexits++] = *e;
		return 0;
	}
	/* Before the unwinder's re-read of the new image's maps, which looks for runtimes again. */
	for (size_t i = 0; i < r->nruntimes && e->kind == UNWIND_EVENT_EXEC; i++)
		runtime_table__exec(r->runtimes[i], e->pid);
	if (r->unwinder && e->kind != UNWIND_EVENT_NAME)
		unwinder__note_event(r->unwinder, e);
	if (r->in.links && e->kind != UNWIND_EVENT_NEW)
		spanlinks__note_event(r->in.links, e);
	return 0;
}

void record__handle_exits(struct recorder *r, struct sampler *s)
{
	uint32_t n = r->nexits;

	if (!n)
		return;
	sampler__drain(s);
	r->nexits = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (r->unwinder)
			unwinder__note_event(r->unwinder, &r->exits[i]);
		if (r->in.links)
			spanlinks__note_event(r->in.links, &r->exits[i]);
	}
}

void record__maps_hooks(void *ctx, uint32_t pid, uint64_t start_boot_ns,
			const struct procmaps *maps)
{
	struct recorder *r = ctx;

	if (r->unwinder)
		unwinder__maps_hook(r->unwinder, pid, start_boot_ns, maps);
	if (r->in.links)
		spanlinks__maps_hook(r->in.links, pid, start_boot_ns, maps);
	for (size_t i = 0; i < r->nruntimes; i++) /* CPython, node: their descriptors */
		runtime_table__maps_hook(r->runtimes[i], pid, start_boot_ns, maps);
	if (r->sampler) /* event profile types: uprobes on newly mapped files */
		sampler__maps_hook(r->sampler, pid, maps);
}

void record__jit_cfi_hook(void *ctx, uint32_t pid, struct jitproc_cfi *cfi)
{
	struct recorder *r = ctx;
	const struct procmaps *maps;
	uint64_t start_boot_ns;

	/* With the process's maps as the process table holds them. */
	if (r->unwinder && !proctab__maps(r->procs, pid, &start_boot_ns, &maps))
		unwinder__jit_cfi_hook(r->unwinder, pid, start_boot_ns, maps, cfi);
	else
		jitproc_cfi__free(cfi);
}
