/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve_stats: the resolver's counters, a type of its own so that resolve/resolve_impl.h (what
 * the files of resolve/ share) needs them without the face, resolve/resolve.h, which declares
 * the functions those files define. Read through resolve__stats().
 */
#ifndef SPANPROF_RESOLVE_STATS_H
#define SPANPROF_RESOLVE_STATS_H

#include <stdint.h>

/* What could not be named, and how PCs were named: the summary and self-telemetry read these. */
struct resolve_stats {
	uint64_t frames_unmapped;	/* user PCs outside every known mapping */
	uint64_t frames_unsymbolized;	/* PCs in a known file with no symbol for them */
	uint64_t kernel_unsymbolized;	/* kernel PCs with no kallsyms entry */
	uint64_t frames_fileid;		/* user PCs named through the sample's file identities */
	uint64_t frames_fileid_unknown; /* PCs in a recorded file no process had shown the agent */
	uint64_t go_callers_missing;	/* samples in Go code without its frame yet: marker added */
	/* stacks cut above a libgcc unwinder entry that may be installing an exception handler: a
	 * caller whose return address follows no call of the frame below it (resolve/callers.c) */
	uint64_t eh_install_cut;
	/* frame-pointer steps through code without CFI (resolve/fpproof.c): stacks cut after a
	 * function not proven to keep its frame pointer there, and stacks proven complete */
	uint64_t fp_unproven_cut;
	uint64_t fp_root_proven;
	/* CPython (runtime/python/): samples the BPF walk gave Python frames, and what became of
	 * them. */
	struct {
		uint64_t merged;       /* Python frames placed in the native stack */
		uint64_t cut;	       /* ... the Python stack ended early: marked */
		uint64_t unplaced;     /* no place proven: native frames only, marked */
		uint64_t dropped;      /* no loop frame in a cut native stack: native frames only */
		uint64_t no_process;   /* the agent no longer (or not yet) names the process */
		uint64_t frames_named; /* Python frames named */
		uint64_t frames_unnamed; /* ... not named (pytab_stats.name_errors says why) */
		uint64_t frames_stale;	 /* ... of those, the code object was another by then */
	} py;
	/* V8 (runtime/v8/): JavaScript frames of node processes, read by bpf/v8.bpf.h. */
	struct {
		uint64_t merged;	 /* samples whose JavaScript frames were placed */
		uint64_t not_placed;	 /* ... not: native frames not one per PC */
		uint64_t no_process;	 /* the agent no longer (or not yet) names the process */
		uint64_t frames_named;	 /* JavaScript frames named */
		uint64_t frames_unnamed; /* ... not (v8tab_stats.naming says why): native kept */
		/* JIT frames also named by V8's perf map (--perf-basic-prof): the two names agree,
		 * or not (a wrong name from one of them) */
		uint64_t perfmap_agree, perfmap_disagree;
	} v8;
	/* HotSpot (runtime/jvm/): Java frames of JVMs, walked by bpf/hotspot.bpf.h. */
	struct {
		uint64_t merged;	 /* samples whose Java frames were placed */
		uint64_t not_placed;	 /* samples with Java frames not placed (a PC gave two) */
		uint64_t no_process;	 /* ... of a JVM no longer (or not yet) described */
		uint64_t frames_named;	 /* Java frames named */
		uint64_t frames_unnamed; /* ... not (hsname's counters say why): native kept */
	} jvm;
	/* PHP (runtime/php/): PHP frames walked by bpf/php.bpf.h. */
	struct {
		uint64_t merged;   /* samples whose PHP frames were placed */
		uint64_t cut;	   /* ... the PHP stack ended early: marked */
		uint64_t unplaced; /* no place proven: native frames only, marked */
		uint64_t jit_cut;  /* native stack cut in JIT code: the rest placed there */
		uint64_t jit_lines_unknown; /* ... the frame the JIT code runs: its line unknown */
		uint64_t not_placed;	 /* PHP frames not placed (native frames not one per PC) */
		uint64_t no_process;	 /* the agent no longer (or not yet) names the process */
		uint64_t frames_named;	 /* PHP frames named */
		uint64_t frames_unnamed; /* ... not (phptab_stats.names says why): a placeholder */
	} php;
};

#endif /* SPANPROF_RESOLVE_STATS_H */
