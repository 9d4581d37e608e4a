/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile: the in-memory, deduplicated model of one recording window.
 *
 * Its tables follow the OTLP profiles dictionary (opentelemetry-proto
 * profiles/v1development, ProfilesDictionary): every table is an array whose
 * element 0 is the zero value, so index 0 always means "unset", and no element
 * appears twice. The pprof, folded, flame-graph and OTLP writers all read this
 * model; only the agent's sample path writes it.
 *
 * Ownership: the profile owns every table and every string in it. Pointers
 * returned by the accessors stay valid until the next profile__add_* /
 * profile__intern_* call (tables may grow) or profile__free().
 * Not thread-safe.
 */
#ifndef SPANPROF_PROFILE_H
#define SPANPROF_PROFILE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct profile;

enum frame_kind {
	FRAME_UNSET = 0,
	FRAME_NATIVE = 1, /* user-space machine code */
	FRAME_KERNEL = 2, /* kernel text or module */
	/*
	 * Not code: the marker at the root end of a stack that was cut (profile/stackend.c): no
	 * mapping, address = the reason (enum sp_ustack_end), one line naming it. OTLP
	 * profile.frame.type "abort", as the OpenTelemetry profiler marks its error frames.
	 */
	FRAME_ABORT = 3,
	FRAME_GO = 4, /* Go code: machine code of a Go function (its .gopclntab covers it) */
	/* JIT-compiled code named from a perf map or jitdump (runtime/jit/jitproc.h): */
	FRAME_JIT = 5,	  /* of a runtime not recognised */
	FRAME_V8JS = 6,	  /* V8 (Node.js) */
	FRAME_JVM = 7,	  /* a Java virtual machine */
	FRAME_DOTNET = 8, /* .NET */
	/*
	 * A CPython frame (runtime/python/): no mapping, address = the line executing, one line
	 * naming the function (module.qualname), its file and that line. Keyed by function too
	 * (profile__intern_location_version(), version = the function's index).
	 */
	FRAME_CPYTHON = 9,
	/*
	 * A PHP frame (runtime/php/): no mapping, address = a key of its lines, one line naming
	 * the function (Class::function), its file and the line executing (0 for internal
	 * functions). OTLP profile.frame.type "php".
	 */
	FRAME_PHP = 10,
	FRAME__NKINDS, /* one past the last kind */
};

/*
 * The OpenTelemetry profile.frame.type value of @k (semantic conventions, attributes registry
 * "profile": "native", "kernel", "go", "v8js", "jvm", "dotnet", "cpython", "php", and "abort" for a
 * cut stack's marker; FRAME_JIT gives the custom value "jit", as the registry allows where no
 * listed value applies); NULL for FRAME_UNSET. The table is in profile.c.
 */
const char *profile__frame_type(enum frame_kind k);
/* 1 for the JIT kinds (FRAME_JIT to FRAME_DOTNET): code named from a perf map or jitdump. */
static inline int frame_kind__is_jit(enum frame_kind k)
{
	return k >= FRAME_JIT && k <= FRAME_DOTNET;
}

/* A mapping of one process (pprof Mapping, OTLP Mapping). */
struct profile_mapping {
	uint64_t memory_start; /* first byte mapped, process virtual address */
	uint64_t memory_limit; /* one past the last byte */
	uint64_t file_offset;  /* file offset of memory_start */
	uint32_t filename;     /* string index: path as the process sees it */
	uint32_t build_id;     /* string index: lower-case hex GNU build ID, 0 if none */
};

/* A function (pprof Function, OTLP Function). */
struct profile_function {
	uint32_t name;	      /* string index: demangled name */
	uint32_t system_name; /* string index: symbol as in the ELF file (mangled) */
	uint32_t filename;    /* string index: source file, 0 if unknown */
};

/* One line of a location: a function and a source line in it. */
struct profile_line {
	uint32_t function; /* function index */
	int64_t line;	   /* 1-based source line, 0 if unknown */
};

/*
 * A location: one PC in one mapping. Its lines are the inline chain,
 * innermost (the inlined callee) first, the physical function last, as in
 * pprof and OTLP.
 */
struct profile_location {
	uint32_t mapping; /* mapping index, 0 for none (kernel, anonymous) */
	uint64_t address; /* absolute PC in the process (or kernel address) */
	enum frame_kind kind;
	uint32_t nlines;
	uint32_t first_line; /* index of its first line in the line pool */
	uint32_t roles;	     /* machine code: how it was met, PROFILE_ROLE(enum profile_pc) bits */
};

/* A stack: location indices, leaf first. */
struct profile_stack {
	uint32_t nlocations;
	uint32_t first; /* index of its first entry in the stack pool */
};

/*
 * A link to the span the thread was serving (OTLP Link; the ids come from the
 * thread's OTEP 4947 context record). The all-zero link is element 0: no span.
 */
struct profile_link {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

/* One attribute of an attribute set: both are string indices. */
struct profile_attr {
	uint32_t key;
	uint32_t value;
};

/* An attribute set: attributes from the thread context, in the pool. */
struct profile_attrset {
	uint32_t nattrs;
	uint32_t first; /* index of its first attribute in the attribute pool */
};

/*
 * What makes two samples the same sample (besides their stack): samples of one
 * stack under different spans or attribute sets stay apart, as OTLP requires
 * (a sample's identity is {stack, attributes, link}).
 */
struct profile_sample_key {
	uint32_t type;	/* enum profile_type */
	uint32_t stack; /* stack index */
	uint32_t pid;
	uint32_t tid;
	uint32_t cpu;
	uint32_t comm;	       /* string index: thread name */
	uint32_t process_name; /* string index: process (group leader) name */
	uint32_t link;	       /* link index, 0: not in a span */
	uint32_t attrs;	       /* attribute set index, 0: none */
	uint32_t pad;	       /* 0 */
	uint64_t addr;	       /* LOCK: the lock's address; else 0 */
};

struct profile_sample {
	struct profile_sample_key key;
	uint64_t count; /* number of samples (ALLOC: estimated number of allocations) */
	uint64_t value; /* sum of the per-type values (bytes, nanoseconds); 0 for CPU */
	uint32_t ntimestamps;
	uint64_t *timestamps_unix_nano; /* wall clock of each sample, in arrival order */
	/*
	 * Types other than CPU: per event, in the order of timestamps_unix_nano, its count and
	 * its value (2 entries per event); NULL for CPU samples (each timestamp counts one).
	 */
	uint64_t *event_values;
};

/*
 * Profile types: what a sample measures (--profile; docs/profile-types.md). The values are
 * the sample types of the pprof output (value 0: from count, value 1: from value or, for
 * CPU, count x period) and, one OTLP Profile each, of the OTLP export (for CPU only value 0,
 * samples/count with timestamps, the convention Pyroscope reads).
 */
enum profile_type {
	PROFILE_CPU = 0, /* = SP_PROF_* of bpf/sampler.h */
	PROFILE_ALLOC = 1,
	PROFILE_LOCK = 2,
	PROFILE_OFFCPU = 3,
	PROFILE_NTYPES,
};

struct profile_value_type {
	const char *type, *unit;
};

struct profile_type_info {
	const char *name;      /* as in --profile: "cpu", "alloc", "lock", "offcpu" */
	const char *file_stem; /* local output files: "profile", "alloc", "lock", "offcpu" */
	const char *title;     /* flame graph title */
	uint32_t nvalues;      /* pprof sample types */
	struct profile_value_type values[2];
	uint32_t otlp_values;		  /* bit i: value i is an OTLP Profile of its own */
	struct profile_value_type period; /* period_type */
};

/* The table of profile types; NULL for an unknown type. */
const struct profile_type_info *profile__type_info(uint32_t type);
/* The type named @name ("cpu", ...), or -1. */
int profile__type_by_name(const char *name);
/* Value @which (0 or 1, as in profile_type_info.values) of sample @s, aggregated. */
uint64_t profile__sample_value(const struct profile *p, const struct profile_sample *s,
			       uint32_t which);
/* Value @which of event @i of sample @s (timestamps order); CPU: 1 or the period. */
uint64_t profile__event_value(const struct profile *p, const struct profile_sample *s, uint32_t i,
			      uint32_t which);

/* Creates an empty profile with every table's zero element in place. NULL + errno on ENOMEM. */
struct profile *profile__new(void);
/* Frees everything; NULL is a no-op. */
void profile__free(struct profile *p);
/* Drops every sample and table entry (back to the state of profile__new). */
void profile__reset(struct profile *p);

/* Interning: each returns the index of the (existing or new) equal element, or 0 on ENOMEM. */
uint32_t profile__intern_string(struct profile *p, const char *s); /* NULL and "" give 0 */
uint32_t profile__intern_mapping(struct profile *p, const struct profile_mapping *m);
uint32_t profile__intern_function(struct profile *p, const struct profile_function *f);
/* Locations are keyed by (mapping, address, kind); lines are only stored on first intern. */
uint32_t profile__find_location(const struct profile *p, uint32_t mapping, uint64_t address,
				enum frame_kind kind);
uint32_t profile__intern_location(struct profile *p, uint32_t mapping, uint64_t address,
				  enum frame_kind kind, const struct profile_line *lines,
				  uint32_t nlines);
/*
 * What the address of a location of machine code (native, Go, kernel) is: a return address,
 * named at the call before it, or the instruction executing (a stack's leaf), named at the
 * address itself. At one address these are two locations: the call and the instruction after
 * it may be on other lines, and the return address of a call that does not return
 * (_Unwind_Resume, abort), the last instruction of one function, is the first instruction of the
 * next. When the two are named alike they are one location (both bits in its roles): a profile
 * never holds two equal locations.
 */
enum profile_pc {
	PC_RETURN = 0, /* what profile__find_location() and profile__intern_location() key */
	PC_EXACT = 1,
};
#define PROFILE_ROLE(at) (1u << (at))
/* Whether lines @a (@na) and @b (@nb) name alike: the same functions and lines, in order. */
static inline bool profile_lines_equal(const struct profile_line *a, uint32_t na,
				       const struct profile_line *b, uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (a[i].function != b[i].function || a[i].line != b[i].line)
			return false;
	return true;
}
uint32_t profile__find_code_location(const struct profile *p, uint32_t mapping, uint64_t address,
				     enum frame_kind kind, enum profile_pc at);
uint32_t profile__intern_code_location(struct profile *p, uint32_t mapping, uint64_t address,
				       enum frame_kind kind, enum profile_pc at,
				       const struct profile_line *lines, uint32_t nlines);
/*
 * profile__intern_location() keyed by @version as well: JIT code, where one address holds other
 * code over time, passes a number that differs between any two code ranges (jittab.h ids), so
 * a location never keeps the lines of code that was there before. Version 0 is the plain one.
 */
uint32_t profile__intern_location_version(struct profile *p, uint32_t mapping, uint64_t address,
					  enum frame_kind kind, uint32_t version,
					  const struct profile_line *lines, uint32_t nlines);
uint32_t profile__intern_stack(struct profile *p, const uint32_t *locations, uint32_t n);
/*
 * Replaces the lines of location @loc (a debug file that arrived late names it now): @lines
 * (functions of @p, leaf-most first, as for profile__intern_location()) are copied; the
 * location keeps its index, so stacks and samples holding it are named too. 0, -EINVAL (no
 * such location, unknown function, @lines inside the profile's own pool) or -ENOMEM.
 */
int profile__set_location_lines(struct profile *p, uint32_t loc, const struct profile_line *lines,
				uint32_t nlines);
/* The all-zero link gives 0 (no span). */
uint32_t profile__intern_link(struct profile *p, const struct profile_link *l);
/* Attributes are kept in the given order; n == 0 gives 0. Keys and values must be strings
 * of the profile (EINVAL otherwise); a key of 0 is rejected. */
uint32_t profile__intern_attrset(struct profile *p, const struct profile_attr *attrs, uint32_t n);

/*
 * Adds @count samples with the given key; @time_unix_nano (0: none) is appended
 * to the sample's timestamps. Returns 0 or -ENOMEM.
 * (Also -EINVAL when key->stack, key->comm or key->process_name is out of range;
 * the interning functions likewise return 0 with errno EINVAL for out-of-range
 * indices, and intern_stack rejects location index 0.)
 */
int profile__add_sample(struct profile *p, const struct profile_sample_key *key,
			uint64_t time_unix_nano, uint64_t count);
/*
 * Adds one event of a type other than CPU (key->type): @count (estimated events) and @value
 * (bytes, nanoseconds) are added to the sample and kept per event with @time_unix_nano
 * (required, non-zero). Returns 0, -EINVAL (bad key or time 0) or -ENOMEM.
 */
int profile__add_event(struct profile *p, const struct profile_sample_key *key,
		       uint64_t time_unix_nano, uint64_t count, uint64_t value);

/* Table access. Sizes include the zero element at index 0. */
uint32_t profile__nstrings(const struct profile *p);
const char *profile__string(const struct profile *p, uint32_t i);
uint32_t profile__nmappings(const struct profile *p);
const struct profile_mapping *profile__mapping(const struct profile *p, uint32_t i);
uint32_t profile__nfunctions(const struct profile *p);
const struct profile_function *profile__function(const struct profile *p, uint32_t i);
uint32_t profile__nlocations(const struct profile *p);
const struct profile_location *profile__location(const struct profile *p, uint32_t i);
const struct profile_line *profile__location_lines(const struct profile *p, uint32_t i);
uint32_t profile__nstacks(const struct profile *p);
const struct profile_stack *profile__stack(const struct profile *p, uint32_t i);
const uint32_t *profile__stack_locations(const struct profile *p, uint32_t i);
uint32_t profile__nlinks(const struct profile *p);
const struct profile_link *profile__link(const struct profile *p, uint32_t i);
uint32_t profile__nattrsets(const struct profile *p);
const struct profile_attrset *profile__attrset(const struct profile *p, uint32_t i);
const struct profile_attr *profile__attrset_attrs(const struct profile *p, uint32_t i);
/* Samples, in first-seen order (no zero element: index 0 is the first sample). */
uint32_t profile__nsamples(const struct profile *p);
const struct profile_sample *profile__sample(const struct profile *p, uint32_t i);
uint64_t profile__total_count(const struct profile *p);

/* Recording metadata, used by the writers. */
struct profile_meta {
	uint64_t start_unix_nano; /* wall clock when sampling started */
	uint64_t duration_nano;
	uint64_t period_nano; /* 1e9 / frequency */
	uint32_t frequency_hz;
};
void profile__set_meta(struct profile *p, const struct profile_meta *m);
const struct profile_meta *profile__meta(const struct profile *p);

/* Index of string @s if the profile holds it, else 0. Never adds. */
uint32_t profile__find_string(const struct profile *p, const char *s);
/*
 * Bytes held by the profile (tables, indexes, timestamps, at capacity). Reset
 * keeps capacities, so this is also the floor for the next window.
 */
size_t profile__memory_usage(const struct profile *p);

#endif /* SPANPROF_PROFILE_H */
