/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The alloc profile (--profile alloc, docs/profile-types.md): what bpf/alloc.bpf.h and the agent
 * (exporter/events/ev_alloc.c, exporter/events/allocsyms.c) share. Fixed-width types only, no
 * pointers, no bool; sizes are pinned with _Static_assert on both sides.
 *
 * One uprobe per allocator entry point per ELF file that defines it. Its BPF cookie says where
 * the size is and which file and function the probe is in:
 *   bits 0..3   enum alloc_kind (the argument layout)
 *   bits 4..15  index of the file in the alloc_files map (its probed functions, for nesting)
 *   bits 16..63 the function's ELF virtual address in that file
 */
#ifndef SPANPROF_ALLOC_H
#define SPANPROF_ALLOC_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Where an entry point takes its size (System V x86-64 argument registers). */
enum alloc_kind {
	ALLOC_KIND_ARG1 = 0,   /* malloc(size), valloc, pvalloc, operator new(size, ...) */
	ALLOC_KIND_ARG2 = 1,   /* realloc(ptr, size), aligned_alloc/memalign(align, size) */
	ALLOC_KIND_ARG3 = 2,   /* posix_memalign(memptr, align, size) */
	ALLOC_KIND_CALLOC = 3, /* calloc(n, size): n * size */
	ALLOC_KIND_MAX,
};

#define ALLOC_COOKIE_KIND(c) ((__u32)((c)&0xf))
#define ALLOC_COOKIE_FILE(c) ((__u32)(((c) >> 4) & 0xfff))
#define ALLOC_COOKIE_VADDR(c) ((c) >> 16)
#define ALLOC_COOKIE(kind, file, vaddr)                                                            \
	((__u64)(kind) | ((__u64)(file) << 4) | ((__u64)(vaddr) << 16))
#define ALLOC_MAX_FILES 4096		   /* 12 bits of cookie */
#define ALLOC_MAX_VADDR ((1ull << 48) - 1) /* 48 bits of cookie */

/*
 * The probed functions of one file, [lo, hi) ELF virtual addresses (map alloc_files, key: the
 * cookie's file index). A probe hit whose return address lies in one of them is a call from an
 * allocator entry point to another (glibc realloc -> malloc, a static operator new -> malloc):
 * the outer entry already counted the allocation.
 */
#define ALLOC_MAX_FUNCS 16
struct alloc_file {
	__u32 n; /* functions used in r */
	__u32 pad;
	struct {
		__u64 lo, hi;
	} r[ALLOC_MAX_FUNCS];
};
_Static_assert(sizeof(struct alloc_file) == 8 + 16 * ALLOC_MAX_FUNCS,
	       "alloc_file is shared with BPF: keep it packed");

/*
 * Exponential intervals between samples (Poisson sampling of the allocated bytes, as pprof's
 * heap profiler): interval = mean * E, E ~ Exp(1), drawn from 64 random bits without floating
 * point. A uniform U in (0, 1] is 2^-G * V with G = the leading zero bits of U's binary
 * expansion (geometric) and V in [1/2, 1) (uniform, independent of G), so
 * E = -ln U = G ln 2 - ln V: G is counted exactly, and -ln V, smooth on [1/2, 1), comes from a
 * table of ALLOC_EXP_STEPS + 1 values with linear interpolation (error below 2e-7, far under
 * the 2^-16 resolution of the result).
 * table[i] = round(-ln(1/2 + i / (2 * ALLOC_EXP_STEPS)) * 2^ALLOC_EXP_SHIFT), i = 0..STEPS,
 * filled by the agent (alloc__exp_table()).
 */
#define ALLOC_EXP_STEPS_LOG2 10
#define ALLOC_EXP_STEPS (1u << ALLOC_EXP_STEPS_LOG2)
#define ALLOC_EXP_SHIFT 24
#define ALLOC_LN2_Q24 11629080ull /* round(ln 2 * 2^24) */

/*
 * The next interval in bytes for a mean of @mean bytes (< 2^40), from the random bits @r.
 * At least 1. Compiles as BPF and as ordinary C (unit-tested as the latter).
 */
static __always_inline __u64 alloc__next_interval(__u64 mean, __u64 r, const volatile __u32 *table)
{
	__u64 g = 0, x, e, v0, v1, frac, iv;
	__u32 i;

	/* Leading zeros of r, by halving: a constant number of steps for the verifier. */
	if (!(r >> 32)) {
		g += 32;
		r <<= 32;
	}
	if (!(r >> 48)) {
		g += 16;
		r <<= 16;
	}
	if (!(r >> 56)) {
		g += 8;
		r <<= 8;
	}
	if (!(r >> 60)) {
		g += 4;
		r <<= 4;
	}
	if (!(r >> 62)) {
		g += 2;
		r <<= 2;
	}
	if (!(r >> 63)) {
		g += 1;
		r <<= 1;
	}
	/* r == 0 (p = 2^-64): g is 63 here and V = 1/2, which is fine. */
	x = r << 1; /* the bits after the leading one: V = (1 + x / 2^64) / 2 */
	i = (__u32)(x >> (64 - ALLOC_EXP_STEPS_LOG2)) & (ALLOC_EXP_STEPS - 1);
	frac = (x >> (64 - ALLOC_EXP_STEPS_LOG2 - 14)) & 0x3fff; /* 14 bits between i and i+1 */
	v0 = table[i];
	v1 = table[i + 1];
	e = g * ALLOC_LN2_Q24 + v0 - (((v0 - v1) * frac) >> 14); /* E in Q24, < 2^30 */
	iv = (mean * (e >> 8)) >> 16;				 /* mean < 2^40, E in Q16 < 2^22 */
	return iv ? iv : 1;
}

#endif /* SPANPROF_ALLOC_H */
