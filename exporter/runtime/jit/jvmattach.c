/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "runtime/jit/jvmattach.h"
#include "util/util.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* The socket is looked for this often while the JVM starts its attach listener. */
#define POLL_MS 20

static int open_in_root(int rootfd, const char *rel, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
	    .mode = flags & O_CREAT ? 0600 : 0,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
}

static int ms_left(uint64_t deadline)
{
	uint64_t now = util__mono_ns();

	return now >= deadline ? 0 : (int)((deadline - now) / 1000000) + 1;
}

/* An O_PATH descriptor of the JVM's attach socket when it is one of @euid; -errno. */
static int find_socket(int rootfd, uint32_t nspid, uid_t euid)
{
	char rel[64];
	struct stat st;
	int fd;

	snprintf(rel, sizeof(rel), "tmp/.java_pid%u", nspid);
	fd = open_in_root(rootfd, rel, O_PATH);
	if (fd < 0)
		return errno == ELOOP || errno == EXDEV ? -EPERM : -errno;
	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) || st.st_uid != euid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Starts the JVM's attach listener: the trigger file and SIGQUIT, then waits for the socket. */
static int start_listener(int rootfd, uint32_t pid, uint32_t nspid, uid_t euid, uint64_t deadline)
{
	char rel[64];
	int tfd, sfd = -ENOENT;

	snprintf(rel, sizeof(rel), "tmp/.attach_pid%u", nspid);
	tfd = open_in_root(rootfd, rel, O_CREAT | O_EXCL | O_WRONLY);
	if (tfd < 0 && errno != EEXIST)
		return -errno;
	if (tfd >= 0)
		close(tfd);
	if (kill((pid_t)pid, SIGQUIT)) {
		sfd = -errno;
		goto cleanup;
	}
	while (ms_left(deadline)) {
		sfd = find_socket(rootfd, nspid, euid);
		if (sfd != -ENOENT)
			break;
		poll(NULL, 0, POLL_MS);
	}
cleanup:
	/* Only the file made here is removed (one found there may be jcmd's). */
	if (tfd >= 0)
		unlinkat(rootfd, rel, 0);
	return sfd == -ENOENT && !ms_left(deadline) ? -ENOENT : sfd;
}

static int send_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
	while (len) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		ssize_t n;

		if (poll(&p, 1, ms_left(deadline)) <= 0)
			return -ETIMEDOUT;
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

int jvmattach__perfmap(uint32_t pid, uint32_t nspid, uid_t euid, int timeout_ms, char *msg,
		       size_t msglen)
{
	static const char req[] = "1\0jcmd\0Compiler.perfmap\0\0"; /* + the final NUL */
	uint64_t deadline = util__mono_ns() + (uint64_t)timeout_ms * 1000000;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char root[64], reply[512];
	size_t got = 0;
	int rootfd, pfd = -1, fd = -1, err;

	if (msglen)
		msg[0] = '\0';
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	pfd = find_socket(rootfd, nspid, euid);
	if (pfd == -ENOENT)
		pfd = start_listener(rootfd, pid, nspid, euid, deadline);
	if (pfd < 0) {
		err = pfd;
		goto cleanup;
	}
	/* Connect to the very socket checked: through its O_PATH descriptor. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pfd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS &&
	    errno != EAGAIN) {
		err = -errno;
		goto cleanup;
	}
	err = send_all(fd, req, sizeof(req), deadline);
	if (err)
		goto cleanup;
	/* The reply ends when the JVM closes the connection. */
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, ms_left(deadline)) <= 0) {
			err = -ETIMEDOUT;
			goto cleanup;
		}
		n = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (!n || got + (size_t)n == sizeof(reply) - 1) {
			got += (size_t)n;
			break;
		}
		got += (size_t)n;
	}
	reply[got] = '\0';
	err = !strncmp(reply, "0\n", 2) || !strcmp(reply, "0") ? 0 : -EPROTO;
	if (err && msglen) {
		const char *line = strchr(reply, '\n');

		snprintf(msg, msglen, "%s", line ? line + 1 : reply);
		msg[strcspn(msg, "\n")] = '\0';
	}
cleanup:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	close(rootfd);
	return err;
}
