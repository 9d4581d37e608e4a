/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "record/callbacks.h"
#include "record/record_util.h"
#include "record/stages.h"
#include "resolve/resolve.h"
#include "runtime/jit/jitprocs.h"
#include "runtime/python/pytab.h"
#include "runtime/jvm/hstab.h"
#include "runtime/php/phptab.h"
#include "runtime/v8/v8tab.h"
#include "spans/spanlinks.h"
#include "unwind/unwinder.h"

/* --- CFI unwinder (docs/unwinding.md) --- */
static int refresh_proc(void *ctx, uint32_t pid)
{
	struct recorder *r = ctx;

	return proctab__refresh(r->procs, pid);
}

void record__start_unwinder(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	struct unwinder_opts uo = {.refresh = refresh_proc, .ctx = r};

	if (sampler__unwind_maps(s, &uo.maps))
		return;
	r->unwinder = unwinder__new(&uo);
	if (!r->unwinder) {
		fprintf(stderr,
			"spanprof: warning: CFI unwinding off (%s): user stacks by frame "
			"pointers only\n",
			strerror(errno));
		return;
	}
	for (size_t i = 0; i < n; i++)
		unwinder__preload(r->unwinder, pids[i]);
}

int record__start_span_links(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	struct sampler_threadctx_maps tm;
	struct spanlinks_opts lo = {0};

	if (r->opts->no_span_links || sampler__threadctx_maps(s, &tm))
		return 0;
	lo.procs_fd = tm.procs_fd;
	lo.go_procs_fd = tm.go_procs_fd;
	/* .symtab too: static executables have no .dynsym at all. */
	lo.allow_symtab = 1;
	r->in.links = spanlinks__new(&lo);
	if (!r->in.links)
		return record__fail("out of memory while starting");
	for (size_t i = 0; i < r->opts->nctx_uprobes; i++) {
		const struct record_ctx_uprobe *u = &r->opts->ctx_uprobes[i];

		if (sampler__attach_ctx_uprobe(s, u->binary, u->symbol, u->mode))
			return record__fail(
			    "--context-uprobe %s:%s could not be attached (see above)", u->binary,
			    u->symbol);
	}
	for (size_t i = 0; i < n; i++)
		spanlinks__maps_hook(r->in.links, pids[i], 0, NULL);
	return 0;
}

/* --- the runtimes' tables of processes (runtime/runtime.h) --- */
static void runtimes_add(struct recorder *r, struct runtime_table *t)
{
	if (r->nruntimes < RECORD_MAX_RUNTIMES)
		r->runtimes[r->nruntimes++] = t;
}

static void runtimes_remove(struct recorder *r, const struct runtime_table *t)
{
	for (size_t i = 0; i < r->nruntimes; i++) {
		if (r->runtimes[i] != t)
			continue;
		memmove(&r->runtimes[i], &r->runtimes[i + 1],
			(r->nruntimes - i - 1) * sizeof(r->runtimes[0]));
		r->nruntimes--;
		return;
	}
}

void record__start_jit(struct recorder *r)
{
	struct jitprocs_opts jo = {
	    .flags = r->opts->java_perfmap ? JITPROC_JAVA_PERFMAP : 0,
	    .cfi_hook = record__jit_cfi_hook,
	    .cfi_ctx = r,
	};

	r->jit = jitprocs__new(&jo);
	if (!r->jit) {
		fprintf(stderr, "spanprof: warning: no JIT frames named (%s)\n", strerror(errno));
		return;
	}
	resolve__set_jit(r->in.resolve, r->jit);
	runtimes_add(r, jitprocs__table(r->jit));
}

void record__stop_jit(struct recorder *r)
{
	if (r->in.resolve)
		resolve__set_jit(r->in.resolve, NULL);
	if (r->jit)
		runtimes_remove(r, jitprocs__table(r->jit));
	jitprocs__free(r->jit);
	r->jit = NULL;
}

/*
 * A CPython process running before the agent: its CFI tables first, as a --pid process's, when
 * every process is sampled (with --exe, --cgroup, ... it may be none of the targets: its first
 * sample queues them then, and the scan's descriptor costs a map entry only).
 */
static void python_found(void *ctx, uint32_t pid)
{
	struct recorder *r = ctx;

	if (r->unwinder && !r->targets)
		unwinder__preload(r->unwinder, pid);
}

/* pytab_opts.attach_dealloc, detach_dealloc: the sampler's code-deallocation uprobes. */
static int attach_python_dealloc(void *ctx, uint32_t pid, const char *path, uint64_t offset)
{
	return sampler__attach_python_dealloc(ctx, pid, path, offset);
}

static void detach_python_dealloc(void *ctx, int handle, uint32_t pid)
{
	sampler__detach_python_dealloc(ctx, handle, pid);
}

void record__start_python(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	struct sampler_python_maps pm;
	struct pytab_opts po = {.log = stderr};

	if (sampler__python_maps(s, &pm))
		return;
	po.procs_fd = pm.procs_fd;
	po.proc_known = pm.proc_known;
	po.epochs_fd = pm.epochs_fd;
	po.cache_after_ns = (uint64_t)(r->opts->python_code_cache_after_s * 1e9);
	if (pm.epochs_fd >= 0) {
		po.attach_dealloc = attach_python_dealloc;
		po.detach_dealloc = detach_python_dealloc;
		po.attach_ctx = s;
	}
	r->python = pytab__new(&po);
	if (!r->python) {
		fprintf(stderr, "spanprof: warning: no Python frames (%s)\n", strerror(errno));
		return;
	}
	resolve__set_python(r->in.resolve, r->python);
	runtimes_add(r, pytab__table(r->python));
	for (size_t i = 0; i < n; i++)
		pytab__maps_hook(r->python, pids[i], 0, NULL);
}

void record__scan_python(struct recorder *r, size_t npids)
{
	if (r->python && !npids)
		pytab__scan(r->python, python_found, r);
}

void record__stop_python(struct recorder *r)
{
	if (r->in.resolve)
		resolve__set_python(r->in.resolve, NULL);
	if (r->python)
		runtimes_remove(r, pytab__table(r->python));
	pytab__free(r->python);
	r->python = NULL;
}

void record__start_v8(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	int fd = r->opts->no_v8 ? -1 : sampler__v8_procs_fd(s);

	if (fd < 0)
		return;
	r->v8 = v8tab__new(fd, sampler__proc_known(s));
	if (!r->v8) {
		fprintf(stderr, "spanprof: warning: no JavaScript frames (%s)\n", strerror(errno));
		return;
	}
	resolve__set_v8(r->in.resolve, r->v8);
	runtimes_add(r, v8tab__table(r->v8));
	for (size_t i = 0; i < n; i++)
		v8tab__maps_hook(r->v8, pids[i], 0, NULL);
}

void record__stop_v8(struct recorder *r)
{
	if (r->in.resolve)
		resolve__set_v8(r->in.resolve, NULL);
	if (r->v8)
		runtimes_remove(r, v8tab__table(r->v8));
	v8tab__free(r->v8);
	r->v8 = NULL;
}

void record__start_jvm(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	int fd = r->opts->no_jvm ? -1 : sampler__hs_procs_fd(s);

	if (fd < 0)
		return;
	r->jvm = hstab__new(fd, sampler__proc_known(s));
	if (!r->jvm) {
		fprintf(stderr, "spanprof: warning: no Java frames (%s)\n", strerror(errno));
		return;
	}
	resolve__set_jvm(r->in.resolve, r->jvm);
	runtimes_add(r, hstab__table(r->jvm));
	for (size_t i = 0; i < n; i++)
		hstab__maps_hook(r->jvm, pids[i], 0, NULL);
}

void record__stop_jvm(struct recorder *r)
{
	if (r->in.resolve)
		resolve__set_jvm(r->in.resolve, NULL);
	if (r->jvm)
		runtimes_remove(r, hstab__table(r->jvm));
	hstab__free(r->jvm);
	r->jvm = NULL;
}

void record__start_php(struct recorder *r, struct sampler *s, const uint32_t *pids, size_t n)
{
	int fd = sampler__php_procs_fd(s);

	if (fd < 0)
		return;
	r->php = phptab__new(fd, sampler__proc_known(s));
	if (!r->php) {
		fprintf(stderr, "spanprof: warning: no PHP frames (%s)\n", strerror(errno));
		return;
	}
	resolve__set_php(r->in.resolve, r->php);
	runtimes_add(r, phptab__table(r->php));
	for (size_t i = 0; i < n; i++)
		phptab__maps_hook(r->php, pids[i], 0, NULL);
}

void record__stop_php(struct recorder *r)
{
	if (r->in.resolve)
		resolve__set_php(r->in.resolve, NULL);
	if (r->php)
		runtimes_remove(r, phptab__table(r->php));
	phptab__free(r->php);
	r->php = NULL;
}
