/* SPDX-License-Identifier: Apache-2.0 */
/*
 * signals: how `spanprof record` is stopped. The first SIGINT, SIGTERM or SIGHUP (a closed
 * terminal; not when started ignoring it, as nohup does) asks the run to stop; a second one
 * stops waiting for the Collector. SIGPIPE is ignored: a reader of stderr gone (| head) fails
 * log writes with EPIPE and the run goes on. Private to exporter/record/.
 */
#ifndef SPANPROF_RECORD_SIGNALS_H
#define SPANPROF_RECORD_SIGNALS_H

#include <signal.h>

/* Installs the handlers, from the start: a signal during start-up must end the run cleanly too. */
void record__signals_install(void);

/* The signal that asked the run to stop, 0 while none has. */
int record__stop_requested(void);

/* Set by a second signal: the exporters' shutdown gives up waiting (otlp_exporter__shutdown()). */
const volatile sig_atomic_t *record__abort_flush(void);

#endif /* SPANPROF_RECORD_SIGNALS_H */
