/* SPDX-License-Identifier: Apache-2.0 */
/*
 * phptab: the PHP processes (CLI, php-fpm, php-cgi, an embedding libphp) whose frames BPF walks,
 * on the runtime interface (runtime/runtime.h). A candidate file (named php*, libphp*) is PHP
 * when it exports executor_globals (dynamic or static symbol) and says its version (the
 * "X-Powered-By: PHP/x.y.z" string of main/SAPI.c) and build ("APIyyyymmdd,NTS", the module
 * build id); a thread-safe (ZTS) build keeps its globals per thread and is not walked (counted).
 * Each process gets a descriptor (struct php_desc, bpf/php.h: the address of executor_globals
 * and its version's offsets, runtime/php/phpproc.h) and a namer (phpproc).
 *
 * Not thread safe: the agent's main thread.
 */
#ifndef SPANPROF_RUNTIME_PHP_PHPTAB_H
#define SPANPROF_RUNTIME_PHP_PHPTAB_H

#include <linux/types.h>
#include <stdint.h>

#include "php.h"
#include "runtime/php/phpproc.h"

struct phptab;
struct runtime_table;
struct procmaps;

/* Why a PHP file or process got no descriptor: X(name, description). */
#define PHPTAB_FAILURES(X)                                                                         \
	X(ZTS, "a thread-safe (ZTS) build: its globals are per thread")                            \
	X(VERSION, "a PHP version without a known layout (7.4-8.4 have one)")                      \
	X(OTHER, "the process exited, its mapping unexpected, or no memory")

enum phptab_failure {
#define PHPTAB_FAILURE_ENUM(n, d) PHPTAB_FAIL_##n,
	PHPTAB_FAILURES(PHPTAB_FAILURE_ENUM)
#undef PHPTAB_FAILURE_ENUM
	    PHPTAB_FAIL_COUNT
};

struct phptab_stats {
	uint64_t processes;	  /* PHP processes described to BPF */
	uint64_t live;		  /* described now */
	uint64_t files_inspected; /* candidate files found not to be PHP */
	uint64_t failed[PHPTAB_FAIL_COUNT];
	struct phpproc_stats names; /* naming, over every process (live and gone) */
};

/* What a PHP file says of itself (runtime/php/phptab.c reads it). */
struct php_version {
	int major, minor, patch;
	int zts; /* 1: thread-safe build */
};

/*
 * Finds PHP's version and build in the bytes @buf (@n) of a file: 0, or -ENOENT when it does
 * not say them.
 */
int phptab__version_of(const void *buf, size_t n, struct php_version *out);

/* A table writing descriptors to BPF map @procs_fd (-1: none), marking @proc_known. NULL on
 * ENOMEM. */
struct phptab *phptab__new(int procs_fd, __u64 *proc_known);
void phptab__free(struct phptab *t);
struct runtime_table *phptab__table(struct phptab *t);
void phptab__maps_hook(struct phptab *t, uint32_t pid, uint64_t start_boot_ns,
		       const struct procmaps *maps);
/* The namer of (@pid, @start_boot_ns; 0: any) if it is a described PHP process, else NULL;
 * valid until the next call that may drop entries (runtime.h). */
struct phpproc *phptab__find(struct phptab *t, uint32_t pid, uint64_t start_boot_ns);
void phptab__stats(const struct phptab *t, struct phptab_stats *out);

#endif /* SPANPROF_RUNTIME_PHP_PHPTAB_H */
