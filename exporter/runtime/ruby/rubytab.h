/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rubytab: the CRuby processes (ruby, an embedding libruby) whose frames BPF walks, on the
 * runtime interface (runtime/runtime.h). A candidate file (named libruby* or ruby*) is Ruby
 * when it exports ruby_current_vm_ptr and ruby_api_version (dynamic or static symbols; the
 * version is read from the latter's bytes in the file). Each process gets a descriptor (struct
 * ruby_desc, bpf/ruby.h: the address of ruby_current_vm_ptr and its version's offsets,
 * runtime/ruby/rubyproc.h) and a namer (rubyproc). A Ruby without those symbols, or of a version
 * without a known layout, is said once per file on stderr and counted.
 *
 * Not thread safe: the agent's main thread.
 */
#ifndef SPANPROF_RUNTIME_RUBY_RUBYTAB_H
#define SPANPROF_RUNTIME_RUBY_RUBYTAB_H

#include <linux/types.h>
#include <stdint.h>

#include "ruby.h"
#include "runtime/ruby/rubyproc.h"

struct rubytab;
struct runtime_table;
struct procmaps;

/* Why a Ruby file or process got no descriptor: X(name, description). */
#define RUBYTAB_FAILURES(X)                                                                        \
	X(SYMBOLS, "a Ruby without the ruby_current_vm_ptr symbol")                                \
	X(VERSION, "a Ruby version without a known layout (3.1 has one)")                          \
	X(OTHER, "the process exited, its mapping unexpected, or no memory")

enum rubytab_failure {
#define RUBYTAB_FAILURE_ENUM(n, d) RUBYTAB_FAIL_##n,
	RUBYTAB_FAILURES(RUBYTAB_FAILURE_ENUM)
#undef RUBYTAB_FAILURE_ENUM
	    RUBYTAB_FAIL_COUNT
};

struct rubytab_stats {
	uint64_t processes;	  /* Ruby processes described to BPF */
	uint64_t live;		  /* described now */
	uint64_t files_inspected; /* candidate files found not to be Ruby */
	uint64_t failed[RUBYTAB_FAIL_COUNT];
	struct rubyproc_stats names; /* naming, over every process (live and gone) */
};

/* A table writing descriptors to BPF map @procs_fd (-1: none), marking @proc_known. NULL on
 * ENOMEM. */
struct rubytab *rubytab__new(int procs_fd, __u64 *proc_known);
void rubytab__free(struct rubytab *t);
struct runtime_table *rubytab__table(struct rubytab *t);
void rubytab__maps_hook(struct rubytab *t, uint32_t pid, uint64_t start_boot_ns,
			const struct procmaps *maps);
/* The namer of (@pid, @start_boot_ns; 0: any) if it is a described Ruby process, else NULL;
 * valid until the next call that may drop entries (runtime.h). */
struct rubyproc *rubytab__find(struct rubytab *t, uint32_t pid, uint64_t start_boot_ns);
void rubytab__stats(const struct rubytab *t, struct rubytab_stats *out);

#endif /* SPANPROF_RUNTIME_RUBY_RUBYTAB_H */
