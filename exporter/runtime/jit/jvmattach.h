/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jvmattach: asks a HotSpot JVM to write its perf map (/tmp/perf-NSPID.map) through the JVM's
 * attach mechanism, as `jcmd PID Compiler.perfmap` does (JDK 17+).
 *
 * Protocol (HotSpot src/hotspot/os/posix/attachListener_posix.cpp, the JDK's
 * sun.tools.attach.VirtualMachineImpl for Linux): the JVM listens on the UNIX socket
 * /tmp/.java_pidNSPID once its attach listener runs; it is started by a file
 * /tmp/.attach_pidNSPID plus SIGQUIT. A request is "1\0" (protocol version), the command
 * "jcmd\0" and three arguments, each NUL-terminated ("Compiler.perfmap\0\0\0"); the reply is
 * the result code as a decimal line ("0" success) and the command's output. The JVM accepts
 * peers with its own effective uid and gid, or root.
 *
 * Safety: everything is reached through the JVM's own root (/proc/PID/root, its mount
 * namespace) with no symbolic link followed (openat2 as runtime/jit/jitfile.h); the socket is
 * used only when it is a socket owned by the JVM's effective uid; every wait is bounded by the
 * timeout. SIGQUIT is sent only when the socket is not there yet: a JVM started with
 * -XX:+DisableAttachMechanism prints a thread dump on it instead, which is why the caller asks
 * only where the user allowed it (--java-perfmap).
 */
#ifndef SPANPROF_RUNTIME_JIT_JVMATTACH_H
#define SPANPROF_RUNTIME_JIT_JVMATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Asks the JVM of host PID @pid (PID @nspid in its own namespace, effective uid @euid) to write
 * its perf map; waits at most @timeout_ms in all. 0 once the JVM answered success; -ENOENT (no
 * attach socket appeared: not a HotSpot JVM, attach disabled), -EPERM (the socket is not a
 * socket of @euid, or a symlink), -ETIMEDOUT, -EPROTO (an answer other than success; @msg,
 * @msglen bytes, receives its first line), or another -errno.
 */
int jvmattach__perfmap(uint32_t pid, uint32_t nspid, uid_t euid, int timeout_ms, char *msg,
		       size_t msglen);

#endif /* SPANPROF_RUNTIME_JIT_JVMATTACH_H */
