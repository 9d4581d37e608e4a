/* SPDX-License-Identifier: Apache-2.0 */
/*
 * caps: the Linux capabilities spanprof needs, checked at start and dropped after loading.
 *
 * At start (capabilities(7)):
 * - CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN, which covers both on any kernel): load the
 *   programs, open the perf events, attach uprobes. Required.
 * - CAP_SYS_PTRACE: read other processes' memory (stack unwinding tables, runtime frames, the
 *   thread and process contexts) and files through /proc/PID/root. Without it only processes
 *   the agent may ptrace are named (its own user's, dumpable, with no capability it lacks:
 *   not root's own processes that kept theirs; under Yama's ptrace_scope >= 1 only its
 *   descendants): a warning.
 * - CAP_SYSLOG: the kernel's symbol addresses in /proc/kallsyms (hidden without it when
 *   kernel.kptr_restrict is 1, or 0 with kernel.perf_event_paranoid above 1: most
 *   distributions' defaults). Without it kernel frames are not named: a warning.
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
 * Checks the effective set for what sampling needs, and that the agent runs in the host's
 * (initial) PID namespace: the samples carry the kernel's PIDs, which only there are /proc's.
 * Returns 0 when it can go on (warnings, if any, are printed), or -EPERM with a one-line
 * message in @msg naming each missing capability, or the namespace. -errno when the set
 * cannot be read.
 */
int caps__check(char *msg, size_t msglen);

/*
 * Whether @link, the target of /proc/self/ns/pid ("pid:[INODE]"), is the initial PID
 * namespace: 0, or -EPERM with the message (no prefix) in @msg.
 */
int caps__pidns_msg(const char *link, char *msg, size_t msglen);

/*
 * The warning for kernel symbols (/proc/kallsyms) given the sysctls kernel.kptr_restrict and
 * kernel.perf_event_paranoid (-1: unknown) and whether CAP_SYSLOG is effective (@syslog): 1
 * with the message (no "spanprof: " prefix) in @msg when kernel frames will not be named, 0
 * with @msg empty when they will.
 */
int caps__kallsyms_msg(int kptr_restrict, int paranoid, int syslog, char *msg, size_t msglen);

/*
 * The warning for a missing CAP_SYS_PTRACE into @msg (no prefix): which processes' frames are
 * still named, given Yama's kernel.yama.ptrace_scope (-1: no Yama).
 */
void caps__ptrace_msg(int yama_scope, char *msg, size_t msglen);

/*
 * Drops every capability the running agent does not need (see above). Returns the number of
 * capabilities dropped from the permitted set, or -errno (the process keeps what it had).
 */
int caps__drop_after_load(void);

/* "cap_bpf,cap_sys_ptrace,..." of the permitted set, for logs and tests; "" when empty. */
int caps__describe(char *out, size_t len);

#endif
