// SPDX-License-Identifier: Apache-2.0
/*
 * BPF time per CPU sample with the Python walk (bpf/python.bpf.h) on and off, on one CPython
 * process spinning DEPTH Python frames deep (bench/workloads/pyspin.py). The sampler is loaded
 * once with the walk and a PID filter for that process; rounds alternate "off" (no descriptor
 * in py_procs: one map lookup) and "on" (the descriptor: thread-state search and frame walk).
 * The program's run_time_ns / run_cnt come from BPF_ENABLE_STATS (held only while measuring).
 * Runs of other processes' ticks (filtered out, or idle) are counted too: a first phase with
 * the workload stopped (SIGSTOP) measures their cost, and the time per recorded sample is
 * (run time - other runs x that cost) / samples.
 * Needs root. Prints the figures; never fails on them.
 *
 *   python_bpf PYTHON [DEPTH [SECONDS [ROUNDS]]]     (defaults 10, 3, 3)
 */
#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "python.h"
#include "runtime/python/pyproc.h"
#include "sampler.h"
#include "sampling/sampler_user.h"

#ifndef BENCH_DIR
#error "BENCH_DIR must name bench/"
#endif

struct counts {
	uint64_t samples, frames, ended;
	uint32_t pid;
};

static int on_sample(void *ctx, const struct sp_sample *s)
{
	struct counts *c = ctx;

	if (s->pid != c->pid)
		return 0;
	c->samples++;
	c->frames += s->py_len;
	c->ended += s->py_stop == PY_STOP_END;
	return 0;
}

/* The fd of this process's program named @name (its own BPF objects), or -1. */
static int own_prog(const char *name)
{
	struct bpf_prog_info info;
	struct dirent *de;
	uint32_t len;
	DIR *d = opendir("/proc/self/fd");
	int fd, found = -1;

	while (d && (de = readdir(d))) {
		char link[64], target[64] = "";

		fd = atoi(de->d_name);
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		if (fd <= 2 || readlink(link, target, sizeof(target) - 1) < 0 ||
		    strcmp(target, "anon_inode:bpf-prog"))
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, name)) {
			found = fd;
			break;
		}
	}
	if (d)
		closedir(d);
	return found;
}

static void prog_stats(int fd, uint64_t *ns, uint64_t *cnt)
{
	struct bpf_prog_info info = {0};
	uint32_t len = sizeof(info);

	*ns = *cnt = 0;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
		*ns = info.run_time_ns;
		*cnt = info.run_cnt;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *python = argc > 1 ? argv[1] : NULL;
	const char *depth = argc > 2 ? argv[2] : "10";
	double secs = argc > 3 ? atof(argv[3]) : 3, t0;
	int rounds = argc > 4 ? atoi(argv[4]) : 3, r, on, out[2], stats_fd = -1, prog = -1;
	struct counts c = {0};
	struct sampler_python_maps pm;
	struct sampler *smp = NULL;
	struct pyproc *p = NULL;
	struct py_desc d;
	uint64_t ns0, cnt0, ns1, cnt1, sum_ns[2] = {0}, sum_cnt[2] = {0}, sum_s[2] = {0},
				       sum_f[2] = {0};
	double other, per[2];
	char line[64], why[256];
	FILE *fo;
	pid_t pid;

	if (!python) {
		fprintf(stderr, "usage: %s PYTHON [DEPTH [SECONDS [ROUNDS]]]\n", argv[0]);
		return 2;
	}
	if (pipe(out))
		return 1;
	pid = fork();
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], 1);
		execl(python, python, BENCH_DIR "/workloads/pyspin.py", depth, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	fo = fdopen(out[0], "r");
	if (!fo || !fgets(line, sizeof(line), fo)) {
		fprintf(stderr, "python_bpf: %s did not start\n", python);
		goto cleanup;
	}
	usleep(200 * 1000); /* down to its spinning depth */
	p = pyproc__new(pid, why, sizeof(why));
	if (!p || pyproc__desc(p, &d)) {
		fprintf(stderr, "python_bpf: %s: %s\n", python, p ? "no descriptor" : why);
		goto cleanup;
	}
	c.pid = (uint32_t)pid;
	{
		struct sampler_opts o = {.frequency_hz = 99,
					 .pids = &c.pid,
					 .npids = 1,
					 .cb = on_sample,
					 .ctx = &c,
					 .python_max_procs = 16};

		smp = sampler__new(&o);
	}
	if (!smp || sampler__python_maps(smp, &pm) || (prog = own_prog("on_cpu_sample")) < 0) {
		fprintf(stderr, "python_bpf: the sampler could not be loaded (root needed)\n");
		goto cleanup;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		fprintf(stderr, "python_bpf: BPF_ENABLE_STATS: %s\n", strerror(errno));
		goto cleanup;
	}
	/* The cost of the runs that record nothing: the workload stopped. */
	kill(pid, SIGSTOP);
	prog_stats(prog, &ns0, &cnt0);
	for (t0 = now(); now() - t0 < secs;)
		sampler__poll(smp, 100);
	prog_stats(prog, &ns1, &cnt1);
	other = cnt1 > cnt0 ? (double)(ns1 - ns0) / (cnt1 - cnt0) : 0;
	kill(pid, SIGCONT);
	for (r = 0; r < 2 * rounds; r++) {
		on = r % 2;
		if (on)
			bpf_map_update_elem(pm.procs_fd, &c.pid, &d, BPF_ANY);
		else
			bpf_map_delete_elem(pm.procs_fd, &c.pid);
		sampler__drain(smp);
		memset(&c.samples, 0, 3 * sizeof(uint64_t));
		prog_stats(prog, &ns0, &cnt0);
		for (t0 = now(); now() - t0 < secs;)
			sampler__poll(smp, 100);
		prog_stats(prog, &ns1, &cnt1);
		sampler__drain(smp);
		sum_ns[on] += ns1 - ns0;
		sum_cnt[on] += cnt1 - cnt0;
		sum_s[on] += c.samples;
		sum_f[on] += c.frames;
	}
	printf("%s, %s Python frames deep, %d rounds of %.0f s each way, 99 Hz:\n", python, depth,
	       rounds, secs);
	printf("  runs that record nothing: %.0f ns/run\n", other);
	for (on = 0; on < 2; on++) {
		per[on] = sum_s[on]
			      ? (sum_ns[on] - (double)(sum_cnt[on] - sum_s[on]) * other) / sum_s[on]
			      : 0;
		printf("  walk %-3s: %6.0f ns/sample (%" PRIu64 " runs, %" PRIu64
		       " samples, %.1f Python frames/sample)\n",
		       on ? "on" : "off", per[on], sum_cnt[on], sum_s[on],
		       sum_s[on] ? (double)sum_f[on] / sum_s[on] : 0);
	}
	printf("  the walk adds %.0f ns per sample\n", per[1] - per[0]);
cleanup:
	if (stats_fd >= 0)
		close(stats_fd);
	sampler__free(smp);
	pyproc__free(p);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}
