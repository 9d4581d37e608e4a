/*
 * Soak workload: dlopen/dlclose loop. Opens DIR/libsoak-<i>.so for i in [0, NSLOTS) in turn
 * (the soak driver replaces them with freshly built ones now and then), calls its
 * soak_lib_entry(BURN_US), closes it, sleeps a little. A slot that can't be opened (being
 * replaced) is skipped. Runs until SIGTERM or SIGINT; prints the counts.
 *
 *   dlloop DIR NSLOTS [BURN_US]
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = sig;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct timespec pause = {0, 10 * 1000 * 1000};
	unsigned long opened = 0, failed = 0;
	uint64_t us = argc > 3 ? strtoull(argv[3], NULL, 10) : 2000;
	int nslots = argc > 2 ? atoi(argv[2]) : 0;
	char path[4096];

	if (argc < 3 || nslots < 1) {
		fprintf(stderr, "usage: dlloop DIR NSLOTS [BURN_US]\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (unsigned long i = 0; !stop; i++) {
		void (*entry)(uint64_t);
		void *h;

		snprintf(path, sizeof(path), "%s/libsoak-%lu.so", argv[1], i % nslots);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			failed++;
			nanosleep(&pause, NULL);
			continue;
		}
		opened++;
		entry = (void (*)(uint64_t))dlsym(h, "soak_lib_entry");
		if (entry)
			entry(us);
		dlclose(h);
		nanosleep(&pause, NULL);
	}
	printf("%lu opened, %lu failed\n", opened, failed);
	return 0;
}
