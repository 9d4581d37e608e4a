/* SPDX-License-Identifier: Apache-2.0 */
#include <signal.h>
#include <stddef.h>

#include "record/signals.h"

static volatile sig_atomic_t stop_requested; /* the first SIGINT/SIGTERM/SIGHUP */
static volatile sig_atomic_t abort_flush;    /* a second one: stop waiting for the Collector */

static void on_signal(int sig)
{
	if (stop_requested)
		abort_flush = 1;
	stop_requested = sig;
}

void record__signals_install(void)
{
	struct sigaction sa = {.sa_handler = on_signal}, old_hup;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed terminal: a clean stop too, unless started ignoring it (nohup). */
	if (sigaction(SIGHUP, NULL, &old_hup) || old_hup.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	/* A reader of stderr gone (| head) fails log writes with EPIPE; the run goes on. */
	signal(SIGPIPE, SIG_IGN);
}

int record__stop_requested(void)
{
	return stop_requested;
}

const volatile sig_atomic_t *record__abort_flush(void)
{
	return &abort_flush;
}
