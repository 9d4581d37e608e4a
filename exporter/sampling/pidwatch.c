/* SPDX-License-Identifier: Apache-2.0 */
/* pidwatch: the --pid processes' exits, through pidfds (pidwatch.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sampling/pidwatch.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

struct pidwatch {
	size_t n;
	int fds[]; /* -1 once its process is known to have exited */
};

struct pidwatch *pidwatch__new(const uint32_t *pids, size_t n)
{
	struct pidwatch *w = calloc(1, sizeof(*w) + n * sizeof(w->fds[0]));
	int err;

	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		w->fds[i] = -1;
	w->n = n;
	for (size_t i = 0; i < n; i++) {
		w->fds[i] = syscall(SYS_pidfd_open, (int)pids[i], 0);
		if (w->fds[i] < 0) {
			err = errno;
			pidwatch__free(w);
			errno = err;
			return NULL;
		}
	}
	return w;
}

void pidwatch__free(struct pidwatch *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		if (w->fds[i] >= 0)
			close(w->fds[i]);
	free(w);
}

size_t pidwatch__running(struct pidwatch *w)
{
	size_t running = 0;

	for (size_t i = 0; w && i < w->n; i++) {
		struct pollfd p = {.fd = w->fds[i], .events = POLLIN};

		if (w->fds[i] < 0)
			continue;
		/* A pidfd polls readable once its process has exited (a zombie included). */
		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
			close(w->fds[i]);
			w->fds[i] = -1;
			continue;
		}
		running++;
	}
	return running;
}
