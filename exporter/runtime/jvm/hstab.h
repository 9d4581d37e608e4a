/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hstab: the JVMs (HotSpot, any process mapping a libjvm.so) whose Java frames BPF walks, on the
 * runtime interface (runtime/runtime.h). For each JVM process it reads the Serviceability Agent
 * tables once (runtime/jvm/hsvm.h), describes the code cache, the interpreter and the field
 * offsets the walk needs to BPF (struct hs_desc, bpf/hotspot.h), and keeps what names its
 * frames. A JVM seen before its code cache and interpreter exist (its first moments) is looked
 * at again at the next maps read or sweep.
 *
 * Sources: src/hotspot/share/runtime/vmStructs.cpp (the tables), code/codeCache.hpp
 * (CodeCache::_heaps, _low_bound, _high_bound), memory/heap.hpp (CodeHeap::_memory, _segmap,
 * _log2_segment_size; HeapBlock), code/codeBlob.hpp, code/nmethod.hpp, oops/method.hpp,
 * oops/constMethod.hpp, interpreter/abstractInterpreter.hpp (AbstractInterpreter::_code, a
 * StubQueue: _stub_buffer, _buffer_limit).
 *
 * Not thread safe: the agent's main thread.
 */
#ifndef SPANPROF_RUNTIME_JVM_HSTAB_H
#define SPANPROF_RUNTIME_JVM_HSTAB_H

#include <linux/types.h>
#include <stdint.h>
#include <sys/types.h>

#include "hotspot.h"
#include "runtime/jvm/hsname.h"

struct hstab;
struct hsvm;
struct runtime_table;
struct procmaps;

/* Why a JVM got no descriptor: X(name, description). */
#define HSTAB_FAILURES(X)                                                                          \
	X(TABLES, "its VMStructs tables unreadable or not as expected")                            \
	X(FIELDS, "a field, type or constant the walk needs is missing from its tables")           \
	X(NOT_READY, "looked at before its code cache and interpreter existed (looked at again)")  \
	X(OTHER, "the process exited, or no memory")

enum hstab_failure {
#define HSTAB_FAILURE_ENUM(n, d) HSTAB_FAIL_##n,
	HSTAB_FAILURES(HSTAB_FAILURE_ENUM)
#undef HSTAB_FAILURE_ENUM
	    HSTAB_FAIL_COUNT
};

struct hstab_stats {
	uint64_t processes;	  /* JVMs described to BPF */
	uint64_t live;		  /* described now */
	uint64_t files_inspected; /* libjvm.so candidates found not to export the tables */
	uint64_t failed[HSTAB_FAIL_COUNT];
	struct hsname_stats naming; /* of every JVM described, live or gone */
};

/*
 * The descriptor of the JVM of process @pid from its tables @vm (struct hs_desc, start time
 * left 0). 0; -ENOENT a needed entry missing (*@missing: its name, static storage); -EAGAIN the
 * code cache or the interpreter not set up yet; -EFAULT unreadable; -EINVAL implausible values.
 */
int hstab__desc_of(pid_t pid, const struct hsvm *vm, struct hs_desc *d, const char **missing);

/* A table writing descriptors to BPF map @procs_fd (-1: none), marking @proc_known. NULL on
 * ENOMEM. */
struct hstab *hstab__new(int procs_fd, __u64 *proc_known);
void hstab__free(struct hstab *t);
struct runtime_table *hstab__table(struct hstab *t);
void hstab__maps_hook(struct hstab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps);
/* The VMStructs tables of (@pid, @start_boot_ns; 0: any) if it is a described JVM, else NULL;
 * valid until the next call that may drop entries (runtime.h). */
const struct hsvm *hstab__vm(struct hstab *t, uint32_t pid, uint64_t start_boot_ns);
/* The naming state of the process (runtime/jvm/hsname.h), or NULL. */
struct hsname *hstab__namer(struct hstab *t, uint32_t pid, uint64_t start_boot_ns);
void hstab__stats(const struct hstab *t, struct hstab_stats *out);

/* Longest stub name kept (bytes, NUL included). */
#define HSTAB_STUB_NAME 64
/*
 * The name of the stub, adapter or runtime blob at @blob of JVM (@pid, @start_boot_ns) whose
 * _name pointer had low 32 bits @name_lo32 at the sample (bpf/hotspot.h, HS_KIND_STUB): its
 * CodeBlob::_name ("StubRoutines (1)", "I2C/C2I adapters", "_new_array_Java"), printable
 * ASCII; NULL when it cannot be read or the blob's _name changed since. Owned by the table,
 * valid until the process's entry goes.
 */
const char *hstab__stub_name(struct hstab *t, uint32_t pid, uint64_t start_boot_ns, uint64_t blob,
			     uint32_t name_lo32);

#endif /* SPANPROF_RUNTIME_JVM_HSTAB_H */
