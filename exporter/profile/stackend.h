/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stackend: the marker frame at the root end of a user stack that does not end at a known
 * outermost frame (docs/unwinding.md, "Truncation markers"). BPF says why each sample's user
 * stack ends where it does (sp_sample.ustack_end, enum sp_ustack_end of bpf/sampler.h); every
 * reason but SP_USTACK_COMPLETE becomes one synthetic location, so that folded stacks, pprof,
 * OTLP and the view page tell a cut stack from a shallow one.
 *
 * A marker location has no mapping, its address is the reason (a small integer, never a code
 * address) and kind FRAME_ABORT (OTLP profile.frame.type "abort", the OpenTelemetry profiler's
 * mark for its error frames), and one line whose function is named after the reason, e.g.
 * "[truncated: depth limit]". The names come from SP_USTACK_END_LIST in bpf/sampler.h.
 */
#ifndef SPANPROF_STACKEND_H
#define SPANPROF_STACKEND_H

#include <stdint.h>

struct profile;

/*
 * The marker name of @reason (enum sp_ustack_end): a static string such as
 * "[truncated: depth limit]", or NULL for SP_USTACK_COMPLETE and for values outside the enum
 * (a newer BPF object's reason is not guessed: such a stack stays unmarked).
 */
const char *stackend__name(uint32_t reason);

/*
 * The location index of @reason's marker in @p (interned once per profile), or 0 when
 * @reason needs no marker (stackend__name() NULL) or on ENOMEM (errno set).
 */
uint32_t stackend__location(struct profile *p, uint32_t reason);

#endif /* SPANPROF_STACKEND_H */
