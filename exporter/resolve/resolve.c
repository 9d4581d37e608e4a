/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The resolve step's face (resolve.h): the resolver, and one sample's way through resolve/ top to
 * bottom (resolve__sample()). The steps it calls are files of this folder (resolve_impl.h).
 */
#include <stdlib.h>

#include "process/proctab.h"
#include "profile/stackend.h"
#include "resolve/objtally.h"
#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "runtime/jit/jitprocs.h"
#include "runtime/jvm/hstab.h"
#include "runtime/v8/v8tab.h"
#include "sampler.h"
#include "symbols/symbolize.h"

struct resolve *resolve__new(struct proctab *procs, struct symcache *syms, struct ksyms *ksyms)
{
	struct resolve *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->objs = objtally__new();
	if (!r->objs) {
		free(r);
		return NULL;
	}
	r->procs = procs;
	r->sample_boot_ns = UINT64_MAX;
	r->syms = syms;
	r->ksyms = ksyms;
	r->gen = 1;
	return r;
}

void resolve__set_ksyms(struct resolve *r, struct ksyms *ksyms)
{
	r->ksyms = ksyms;
}

void resolve__free(struct resolve *r)
{
	if (r) {
		resolve_callers__clear(r);
		free(r->pys);
		free(r->v8locs);
		free(r->phps);
		objtally__free(r->objs);
	}
	free(r);
}

void resolve__set_python(struct resolve *r, struct pytab *py)
{
	r->python = py;
}

void resolve__set_jit(struct resolve *r, struct jitprocs *jit)
{
	r->jit = jit;
}

void resolve__set_jvm(struct resolve *r, struct hstab *jvm)
{
	r->jvm = jvm;
}

void resolve__set_php(struct resolve *r, struct phptab *php)
{
	r->php = php;
}

void resolve__set_v8(struct resolve *r, struct v8tab *v8)
{
	r->v8 = v8;
}

void resolve__set_short_names(struct resolve *r, int on)
{
	r->short_names = on;
}

uint32_t resolve__kernel(struct resolve *r, struct profile *p, const uint64_t *pcs, uint32_t n,
			 uint32_t *locs)
{
	struct sym_frame frame = {0};
	uint32_t out = 0, loc;
	uint64_t off;

	for (uint32_t i = 0; i < n; i++) {
		enum profile_pc at = i > 0 ? PC_RETURN : PC_EXACT;

		loc = profile__find_code_location(p, 0, pcs[i], FRAME_KERNEL, at);
		if (!loc) {
			frame.function =
			    r->ksyms ? ksyms__lookup(r->ksyms, pcs[i] - (i > 0), &off) : NULL;
			frame.system_name = frame.function;
			if (!frame.function)
				r->stats.kernel_unsymbolized++;
			loc = resolve_names__intern_frames(p, 0, pcs[i], FRAME_KERNEL, at, &frame,
							   frame.function ? 1 : 0, 0);
		}
		if (loc)
			locs[out++] = loc;
	}
	return out;
}

/*
 * The moment of sample @s, for the steps that name its PCs: JIT code announced after it does
 * not name it (jitproc__lookup()), and a PC outside the maps read before it asks a re-read
 * (proctab__sample_time()). sample_end() forgets it.
 */
static void sample_begin(struct resolve *r, const struct sp_sample *s)
{
	r->sample_boot_ns = s->time_boot_ns;
	proctab__sample_time(r->procs, s->time_boot_ns);
}

static void sample_end(struct resolve *r)
{
	r->sample_boot_ns = UINT64_MAX;
	proctab__sample_time(r->procs, 0);
}

/*
 * The process of sample @s, its maps read on its first sample; NULL for a kernel thread (no user
 * address space), or when the table cannot hold it (no memory).
 */
static struct proc *sample_process(struct resolve *r, const struct sp_sample *s)
{
	if (s->flags & SP_SAMPLE_KERNEL_THREAD)
		return NULL;
	return proctab__get(r->procs, s->pid, s->pstart_boot_ns);
}

/*
 * The frames runtimes walked in BPF, put among the @nu native user locations @locs of sample @s
 * (@uu user PCs; room for @cap). Returns the new number of locations.
 */
static uint32_t runtime_frames(struct resolve *r, struct profile *p, const struct sp_sample *s,
			       uint32_t uu, uint32_t *locs, uint32_t nu, uint32_t cap)
{
	/* Python frames in place of the interpreter loop's (runtime/python/). */
	if (r->python && s->py_stop)
		return resolve_py__merge(r, p, s, uu, locs, nu, cap);
	/* JavaScript frames in place of, or after, V8's native ones (runtime/v8/): placed by
	 * native frame index, so only while each PC gave one location. */
	if (r->v8 && s->v8_len && nu == uu)
		return resolve_v8__merge(r, p, s, uu + 2u * s->py_len, locs, nu, cap);
	if (s->v8_len)
		r->stats.v8.not_placed++;
	/* Java frames in place of their JIT and interpreter frames (runtime/jvm/). */
	if (r->jvm && s->hs_len && nu == uu)
		return resolve_jvm__merge(r, p, s, uu + 2u * s->py_len + 3u * s->v8_len, locs, nu,
					  uu);
	if (s->hs_len)
		r->stats.jvm.not_placed++;
	/* PHP frames in place of the Zend VM's executor frames (runtime/php/). */
	if (r->php && s->php_stop && s->php_len && nu == uu)
		return resolve_php__merge(
		    r, p, s, uu + 2u * s->py_len + 3u * s->v8_len + 2u * s->hs_len, locs, nu, cap);
	if (s->php_len)
		r->stats.php.not_placed++;
	return nu;
}

/*
 * The user stack of sample @s of @proc (@uu user PCs) into @locs (room for @cap): its frames
 * (resolve__user(): each PC found once, then named), the runtimes' frames among them, then,
 * when it does not end at an outermost frame, the marker saying why (profile/stackend.h).
 * Returns the number of locations.
 */
static uint32_t user_stack(struct resolve *r, struct profile *p, struct proc *proc,
			   const struct sp_sample *s, uint32_t uu, uint32_t *locs, uint32_t cap)
{
	struct jitproc *jit = r->jit ? jitprocs__find(r->jit, s->pid, s->pstart_boot_ns) : NULL;
	uint32_t n, marker, end;

	/* A node process V8's own structures name: its JIT misses are no reason for a hint. */
	if (r->v8 && jit && v8tab__find(r->v8, s->pid, s->pstart_boot_ns))
		jitproc__runtime_names(jit);
	/* Likewise a JVM whose frames HotSpot's own tables name. */
	if (r->jvm && jit && hstab__namer(r->jvm, s->pid, s->pstart_boot_ns))
		jitproc__runtime_names(jit);
	/* The interpreter loop's PCs wait for the Python frames' merge, which may replace them. */
	resolve_py__defer_loop(r, s, uu);
	r->fp_steps = s->fp_steps;
	r->fp_end = s->ustack_end == SP_USTACK_NO_UNWIND_INFO;
	n = resolve__user(r, proc, p, (const uint64_t *)s->ustack, uu, &s->vmas, s->flags, locs);
	r->fp_steps = 0;
	n = runtime_frames(r, p, s, uu, locs, n, cap - 1);
	r->defer_py = NULL;
	end = s->ustack_end;
	if (r->user_cut)
		end = r->cut_end;
	else if (r->fp_complete && end == SP_USTACK_NO_UNWIND_INFO)
		end = SP_USTACK_COMPLETE; /* a frame-pointer walk proven to _start (fpproof.c) */
	marker = stackend__location(p, end);
	if (marker)
		locs[n++] = marker;
	return n;
}

/*
 * A sample without a user stack to name: a kernel thread (complete: nothing), a thread exiting
 * (marked), or a user sample whose process the table could not hold (no memory): its user
 * frames are not shown, and the marker says the stack is not whole. Returns 0 or 1.
 */
static uint32_t no_user_stack(struct profile *p, const struct sp_sample *s, uint32_t *locs)
{
	uint32_t marker;

	if (s->ustack_end == SP_USTACK_COMPLETE && (s->flags & SP_SAMPLE_KERNEL_THREAD))
		return 0;
	marker = stackend__location(p, s->ustack_end != SP_USTACK_COMPLETE ? s->ustack_end
									   : SP_USTACK_UNREADABLE);
	if (!marker)
		return 0;
	locs[0] = marker;
	return 1;
}

uint32_t resolve__sample(struct resolve *r, struct profile *p, const struct sp_sample *s,
			 uint32_t *locs)
{
	uint32_t ku = s->kstack_len < SP_MAX_KSTACK ? s->kstack_len : SP_MAX_KSTACK;
	uint32_t uu = s->ustack_len < SP_MAX_USTACK ? s->ustack_len : SP_MAX_USTACK;
	struct proc *proc;
	uint32_t n;

	sample_begin(r, s);
	/* First, before anything slow: the process may be about to exit. */
	proc = sample_process(r, s);
	n = resolve__kernel(r, p, (const uint64_t *)s->kstack, ku, locs);
	if (proc)
		n += user_stack(r, p, proc, s, uu, locs + n, RESOLVE_MAX_LOCATIONS - n);
	else
		n += no_user_stack(p, s, locs + n);
	sample_end(r);
	return n;
}

void resolve__profile_reset(struct resolve *r)
{
	r->gen++;
}

const struct resolve_stats *resolve__stats(const struct resolve *r)
{
	return &r->stats;
}

const struct objtally *resolve__objects(const struct resolve *r)
{
	return r->objs;
}
