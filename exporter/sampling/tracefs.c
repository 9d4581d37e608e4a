/* SPDX-License-Identifier: Apache-2.0 */
/* tracefs mounted without touching other processes' mounts: see tracefs.h. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "sampling/tracefs.h"

static int present(void)
{
	struct stat st;

	return stat(TRACEFS_DIR "/events", &st) == 0;
}

int tracefs__ensure(void)
{
	int err;

	if (present())
		return TRACEFS_PRESENT;
	/*
	 * A namespace of our own, a slave of the current one: the host's later mounts (a new
	 * container's root) still reach the agent, and its tracefs mount reaches nobody.
	 */
	if (unshare(CLONE_NEWNS) == 0) {
		if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL)) {
			err = -errno;
			fprintf(stderr,
				"spanprof: warning: making the agent's mount namespace a slave "
				"failed: %s; tracefs is not mounted\n",
				strerror(-err));
			return err;
		}
		if (mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL)) {
			err = -errno;
			return err;
		}
		return TRACEFS_OWN_NS;
	}
	err = -errno;
	if (mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL))
		return -errno;
	fprintf(stderr,
		"spanprof: note: tracefs mounted at " TRACEFS_DIR " (a mount namespace of the "
		"agent's own could not be made: %s); it stays mounted when the agent exits\n",
		strerror(-err));
	return TRACEFS_HOST;
}
