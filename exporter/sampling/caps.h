/* SPDX-License-Identifier: Apache-2.0 */
/*
 * caps: the Linux capabilities spanprof needs, checked at start and dropped after loading.
 *
 * At start (capabilities(7)):
 * - CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN, which covers both on any kernel): load the
 *   programs, open the perf events, attach uprobes. Required.
 * - CAP_SYS_PTRACE: read other processes' maps, memory (stack unwinding tables, the thread
 *   and process contexts) and files through /proc/PID/root. Without it only the agent's own
 *   user's processes are named: a warning.
 * - CAP_SYS_ADMIN: /proc/PID/map_files (files deleted while mapped, other mount namespaces)
 *   and mounting tracefs for the classic tracepoints when it is not mounted. Optional.
 * - CAP_SYS_RESOURCE: raise RLIMIT_MEMLOCK on kernels that still charge BPF memory to it.
 *   Optional.
 *
 * After loading, every capability but those the running agent uses is dropped from the
 * effective, permitted and inheritable sets and from the bounding set: CAP_BPF (new unwind
 * table chunks are BPF maps), CAP_SYS_PTRACE, CAP_SYS_ADMIN (map_files, tracefs for a
 * lock profile's tracepoints), CAP_CHECKPOINT_RESTORE (map_files on newer kernels),
 * CAP_DAC_READ_SEARCH and CAP_DAC_OVERRIDE (binaries and output directories owned by other users),
 * CAP_SYSLOG (the kernel log names another tool's uprobe that refused one of spanprof's,
 * sampling/uprobe.h). CAP_PERFMON, CAP_SYS_RESOURCE, CAP_NET_*, CAP_SYS_MODULE, CAP_SETUID and the
 * rest go.
 */
#ifndef SPANPROF_CAPS_H
#define SPANPROF_CAPS_H

#include <stddef.h>

/*
 * Checks the effective set for what sampling needs. Returns 0 when it can go on (warnings,
 * if any, are printed), or -EPERM with a one-line message in @msg naming each missing
 * capability. -errno when the set cannot be read.
 */
int caps__check(char *msg, size_t msglen);

/*
 * Drops every capability the running agent does not need (see above). Returns the number of
 * capabilities dropped from the permitted set, or -errno (the process keeps what it had).
 */
int caps__drop_after_load(void);

/* "cap_bpf,cap_sys_ptrace,..." of the permitted set, for logs and tests; "" when empty. */
int caps__describe(char *out, size_t len);

#endif
