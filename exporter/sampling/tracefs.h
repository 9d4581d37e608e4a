/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracefs: the tracing file system libbpf needs to attach classic tracepoints (it reads each
 * event's id under /sys/kernel/tracing/events), without changing the host's mounts under other
 * agents.
 */
#ifndef SPANPROF_TRACEFS_H
#define SPANPROF_TRACEFS_H

#define TRACEFS_DIR "/sys/kernel/tracing"

enum tracefs_how {
	TRACEFS_PRESENT = 0, /* mounted already: nothing done */
	TRACEFS_OWN_NS,	     /* mounted in the agent's own mount namespace (gone with it) */
	TRACEFS_HOST,	     /* mounted where the agent runs and left mounted at exit */
};

/*
 * Makes tracefs available at TRACEFS_DIR for this process. When it is not mounted, the
 * process moves to a mount namespace of its own (unshare(2) CLONE_NEWNS; mounts of the original
 * namespace still propagate into it, MS_SLAVE, none go back) and mounts it there, so no other
 * process ever sees the mount nor loses it when the agent exits. unshare() needs a process
 * that has no other thread yet (and CAP_SYS_ADMIN): call it before any thread is started. If
 * it cannot be done, tracefs is mounted where the agent runs and never unmounted (another
 * agent may have begun using it meanwhile). Idempotent.
 * Returns an enum tracefs_how, or -errno when tracefs is absent and could not be mounted.
 */
int tracefs__ensure(void);

#endif /* SPANPROF_TRACEFS_H */
