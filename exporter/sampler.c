/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sampler.skel.h"
#include "sampler_user.h"

struct sampler {
	struct sampler_bpf *skel;
	struct ring_buffer *rb;
	int ncpus;		/* possible CPUs */
	int *pfds;		/* perf event fd per CPU, -1 if offline */
	struct bpf_link **links;
	int nattached;
	sampler_cb cb;
	void *ctx;
};

static int handle_event(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;

	if (size < sizeof(struct sp_sample))
		return 0;
	return s->cb(s->ctx, data);
}

static int open_cpu_clock(int cpu, uint32_t freq)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq,
		.freq = 1,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && !getenv("SPANPROF_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

struct sampler *sampler__new(const struct sampler_opts *opts)
{
	struct sampler *s;
	uint32_t rb_bytes = opts->ringbuf_bytes ? opts->ringbuf_bytes : 4u << 20;
	int err, cpu;
	uint8_t one = 1;

	libbpf_set_print(libbpf_quiet);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cb = opts->cb;
	s->ctx = opts->ctx;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		err = s->ncpus ? s->ncpus : -EINVAL;
		fprintf(stderr, "spanprof: cannot count the possible CPUs: %s\n", strerror(-err));
		goto cleanup;
	}

	s->skel = sampler_bpf__open();
	if (!s->skel) {
		err = -errno;
		fprintf(stderr, "spanprof: cannot open the BPF object: %s\n", strerror(-err));
		goto cleanup;
	}
	s->skel->rodata->filter_pids = opts->npids > 0;
	if (opts->npids > 0)
		bpf_map__set_max_entries(s->skel->maps.pid_filter, opts->npids);
	bpf_map__set_max_entries(s->skel->maps.events, rb_bytes);

	err = sampler_bpf__load(s->skel);
	if (err) {
		fprintf(stderr,
			"spanprof: loading the BPF sampler failed: %s (needs a kernel with BTF, "
			"perf events and BPF ring buffers; run with SPANPROF_DEBUG=1 for the "
			"verifier log)\n",
			strerror(-err));
		goto cleanup;
	}
	for (size_t i = 0; i < opts->npids; i++) {
		err = bpf_map_update_elem(bpf_map__fd(s->skel->maps.pid_filter), &opts->pids[i],
					  &one, BPF_ANY);
		if (err) {
			err = -errno;
			fprintf(stderr, "spanprof: cannot fill the PID filter: %s\n",
				strerror(-err));
			goto cleanup;
		}
	}

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->rb) {
		err = -errno;
		fprintf(stderr, "spanprof: cannot map the ring buffer: %s\n", strerror(-err));
		goto cleanup;
	}

	s->pfds = malloc(sizeof(*s->pfds) * s->ncpus);
	s->links = calloc(s->ncpus, sizeof(*s->links));
	if (!s->pfds || !s->links) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (cpu = 0; cpu < s->ncpus; cpu++)
		s->pfds[cpu] = -1;
	for (cpu = 0; cpu < s->ncpus; cpu++) {
		s->pfds[cpu] = open_cpu_clock(cpu, opts->frequency_hz);
		if (s->pfds[cpu] < 0) {
			err = -errno;
			if (err == -ENODEV) /* offline CPU */
				continue;
			fprintf(stderr,
				"spanprof: perf_event_open(cpu-clock) on CPU %d failed: %s "
				"(needs CAP_PERFMON or root, and kernel.perf_event_paranoid <= 2)\n",
				cpu, strerror(-err));
			goto cleanup;
		}
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_cpu_sample,
							       s->pfds[cpu]);
		if (!s->links[cpu]) {
			err = -errno;
			fprintf(stderr, "spanprof: attaching the sampler to CPU %d failed: %s\n",
				cpu, strerror(-err));
			goto cleanup;
		}
		s->nattached++;
	}
	if (!s->nattached) {
		err = -ENODEV;
		fprintf(stderr, "spanprof: no online CPU accepted a perf event\n");
		goto cleanup;
	}
	return s;

cleanup:
	sampler__free(s);
	errno = -err;
	return NULL;
}

void sampler__stop(struct sampler *s)
{
	for (int cpu = 0; s && s->pfds && cpu < s->ncpus; cpu++)
		if (s->pfds[cpu] >= 0)
			ioctl(s->pfds[cpu], PERF_EVENT_IOC_DISABLE, 0);
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	for (int cpu = 0; s->links && cpu < s->ncpus; cpu++)
		bpf_link__destroy(s->links[cpu]);
	for (int cpu = 0; s->pfds && cpu < s->ncpus; cpu++)
		if (s->pfds[cpu] >= 0)
			close(s->pfds[cpu]);
	ring_buffer__free(s->rb);
	sampler_bpf__destroy(s->skel);
	free(s->links);
	free(s->pfds);
	free(s);
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n = ring_buffer__poll(s->rb, timeout_ms);

	return n == -EINTR ? 0 : n;
}

int sampler__drain(struct sampler *s)
{
	return ring_buffer__consume(s->rb);
}

int sampler__stats(struct sampler *s, uint64_t out[SP_STAT_MAX])
{
	uint64_t *vals;
	int fd = bpf_map__fd(s->skel->maps.stats);

	vals = calloc(s->ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < SP_STAT_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int cpu = 0; cpu < s->ncpus; cpu++)
			out[k] += vals[cpu];
	}
	free(vals);
	return 0;
}

int sampler__ncpus(const struct sampler *s)
{
	return s->nattached;
}
