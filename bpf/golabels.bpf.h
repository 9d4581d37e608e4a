/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Goroutine labels (runtime/pprof.Do, SetGoroutineLabels) of a Go program's running goroutine,
 * copied into the sample for the agent to turn into attributes and a span link
 * (exporter/runtime/go/golabels.h has the layout and its sources). The agent puts a
 * struct sp_go_loc per Go process into go_procs. Every sample of such a process without a
 * thread context ends in one SP_STAT_GOL_* reason (READ, NONE, BAD or STALE).
 *
 * Proof before use: the thread's g must name an m whose curg names the same m back; the
 * slice must have len <= cap; every pointer must be readable. Anything else is dropped and
 * counted, never copied.
 *
 * Included by sampler.bpf.c after threadctx.bpf.h.
 */
#ifndef SPANPROF_GOLABELS_BPF_H
#define SPANPROF_GOLABELS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* resized by user space */
	__type(key, __u32);	   /* tgid */
	__type(value, struct sp_go_loc);
} go_procs SEC(".maps");

/* A Go string or slice header as the runtime lays it out (amd64). */
struct go_label {
	__u64 key, key_len, value, value_len;
};

/* A labelMap longer than this is taken for garbage (real ones hold a handful). */
#define SP_GO_SANE_LABELS 4096

/*
 * Where golabels_copy_global() packs the entries, before they go into the record in one copy:
 * per CPU, so that the global function needs no pointer to the ring buffer's record.
 */
struct go_label_buf {
	__u8 b[SP_GO_LABEL_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct go_label_buf);
} go_label_buf SEC(".maps");

/*
 * Packs the first @n (<= SP_GO_MAX_LABELS) labels of the slice at user address @labels into
 * this CPU's go_label_buf as {key_len u8, value_len u8, key, value} entries. Returns the bytes
 * used (at most SP_CTX_MAX), or -1 when a label could not be read. A global function: the
 * verifier checks its loop once, on its own, instead of once per state of every program that
 * takes samples (87,000 of on_cpu_sample's instructions when it was inlined).
 */
__noinline int golabels_copy_global(__u64 labels, __u32 n)
{
	__u32 zero = 0, pos = 0, i;
	struct go_label_buf *buf = bpf_map_lookup_elem(&go_label_buf, &zero);

	if (!buf)
		return 0;
	/* One label per iteration, at most SP_GO_MAX_LABELS: the copy's bound. */
	for (i = 0; i < SP_GO_MAX_LABELS; i++) {
		struct go_label l;
		__u32 kl, vl, at;

		if (i >= n)
			break;
		if (bpf_probe_read_user(&l, sizeof(l), (void *)(labels + i * sizeof(l))))
			return -1;
		/* Room for the longest entry, in a form the verifier follows: a label that
		 * would fit the rest exactly is left out too (counted). */
		if (pos > SP_CTX_MAX - 2 - SP_GO_MAX_KEY - SP_GO_MAX_VALUE) {
			stat_inc(SP_STAT_GOL_TRUNCATED);
			break;
		}
		if (!l.key_len || l.key_len > SP_GO_MAX_KEY || l.value_len > SP_GO_MAX_VALUE) {
			stat_inc(SP_STAT_GOL_TRUNCATED);
			continue;
		}
		/*
		 * Bounded by the check above; the masks, kept by the empty asm, show it to
		 * verifiers that carry no bound from one copy of a value to another (6.1: the
		 * compiler checks one copy and passes a spilled one to the helper).
		 */
		kl = l.key_len;
		vl = l.value_len;
		asm volatile("" : "+r"(kl), "+r"(vl));
		kl &= SP_GO_MAX_KEY;
		vl &= SP_GO_MAX_VALUE;
		/* pos <= 448 here: the mask changes nothing, it shows the verifier the bound
		 * (511 + 2 + 63 + 127 stays inside the buffer: checked in sampler.h); the empty
		 * asm keeps the compiler from dropping it. */
		at = pos;
		asm volatile("" : "+r"(at));
		at &= 511;
		if (bpf_probe_read_user(&buf->b[at + 2], kl, (void *)l.key) ||
		    (vl && bpf_probe_read_user(&buf->b[at + 2 + kl], vl, (void *)l.value)))
			return -1;
		buf->b[at] = kl;
		buf->b[at + 1] = vl;
		pos = at + 2 + kl + vl;
	}
	return pos;
}

/* Copies the labels of the thread's goroutine into s->ctx (s->ctx_len 0 on entry). */
static __always_inline void golabels_sample(struct task_struct *task, struct sp_sample *s)
{
	struct sp_go_loc *loc;
	struct go_label_buf *buf;
	__u64 fs, g = 0, m = 0, curg = 0, back = 0, lm = 0, slice[3];
	__u32 pid = s->pid, n, zero = 0, len;
	int pos;

	loc = bpf_map_lookup_elem(&go_procs, &pid);
	if (!loc)
		return;
	if (loc->start_boot_ns && loc->start_boot_ns != s->pstart_boot_ns) {
		stat_inc(SP_STAT_GOL_STALE);
		return;
	}
	fs = BPF_CORE_READ(task, thread.fsbase);
	if (!fs || bpf_probe_read_user(&g, sizeof(g), (void *)(fs + loc->tls_g))) {
		stat_inc(SP_STAT_GOL_BAD);
		return;
	}
	if (!g) { /* a thread the Go runtime did not start (cgo's C threads) */
		stat_inc(SP_STAT_GOL_NONE);
		return;
	}
	if (bpf_probe_read_user(&m, sizeof(m), (void *)(g + loc->g_m)) || !m ||
	    bpf_probe_read_user(&curg, sizeof(curg), (void *)(m + loc->m_curg))) {
		stat_inc(SP_STAT_GOL_BAD);
		return;
	}
	if (!curg) { /* the scheduler between goroutines */
		stat_inc(SP_STAT_GOL_NONE);
		return;
	}
	if (bpf_probe_read_user(&back, sizeof(back), (void *)(curg + loc->g_m)) || back != m ||
	    bpf_probe_read_user(&lm, sizeof(lm), (void *)(curg + loc->g_labels))) {
		stat_inc(SP_STAT_GOL_BAD);
		return;
	}
	if (!lm) {
		stat_inc(SP_STAT_GOL_NONE);
		return;
	}
	if (bpf_probe_read_user(slice, sizeof(slice), (void *)lm) || slice[1] > slice[2] ||
	    slice[1] > SP_GO_SANE_LABELS || (slice[1] && !slice[0])) {
		stat_inc(SP_STAT_GOL_BAD);
		return;
	}
	if (!slice[1]) {
		stat_inc(SP_STAT_GOL_NONE);
		return;
	}
	n = slice[1] < SP_GO_MAX_LABELS ? slice[1] : SP_GO_MAX_LABELS;
	if (slice[1] > SP_GO_MAX_LABELS)
		stat_inc(SP_STAT_GOL_TRUNCATED);
	pos = golabels_copy_global(slice[0], n);
	if (pos < 0) {
		stat_inc(SP_STAT_GOL_BAD);
		return;
	}
	buf = bpf_map_lookup_elem(&go_label_buf, &zero);
	if (!pos || !buf) {
		stat_inc(SP_STAT_GOL_NONE);
		return;
	}
	/* pos <= SP_CTX_MAX: the mask only shows the verifier a bound (the record holds struct
	 * sp_vmas after ctx: checked in sampler.h). */
	len = pos;
	asm volatile("" : "+r"(len));
	len &= SP_GO_LABEL_BUF - 1;
	if (bpf_probe_read_kernel(s->ctx, len, buf->b)) {
		stat_inc(SP_STAT_GOL_BAD);
		return;
	}
	s->ctx_len = pos;
	s->flags |= SP_SAMPLE_GO_LABELS;
	stat_inc(SP_STAT_GOL_READ);
}

#endif /* SPANPROF_GOLABELS_BPF_H */
