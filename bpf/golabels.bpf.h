/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Goroutine labels (runtime/pprof.Do, SetGoroutineLabels) of a Go program's running goroutine,
 * copied into the sample for the agent to turn into attributes and a span link
 * (exporter/runtime/go/golabels.h has the layout and its sources). The agent puts a
 * struct sp_go_loc per Go process into go_procs. Every sample of such a process without a
 * thread context ends in one SP_STAT_GOL_* reason (READ, NONE, SYSTEM_G, OFF_STACK, BAD,
 * MAP_SKIPPED or STALE).
 *
 * Two forms of labelMap (struct sp_go_loc's kind): since Go 1.24 a sorted slice of labels,
 * before (1.18-1.23) a map[string]string whose buckets are walked here.
 *
 * Proof before use: the thread's g must be its m's curg, and the user SP in that goroutine's
 * stack (golabels_on_goroutine()); the slice must have len <= cap; a map must not be being grown,
 * its cells' tophash must say full or empty and their number match the header's count; every
 * pointer must be readable. Anything else is dropped and counted, never copied.
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
 * Where the labels are packed, before they go into the record in one copy: per CPU, so that
 * the global functions need no pointer to the ring buffer's record. A map walk
 * (golabels_bucket_global()) keeps its state here too.
 */
struct go_label_buf {
	__u8 b[SP_GO_LABEL_BUF];
	__u64 next;	  /* the bucket to visit next (0: the chain ends) */
	__u32 pos, found; /* bytes packed; full cells met (labels looked at) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct go_label_buf);
} go_label_buf SEC(".maps");

/*
 * Packs the label @l (key and value strings of the program) at @buf->b[*pos] as {key_len u8,
 * value_len u8, key, value}, advancing *pos. Returns 0 (packed, or left out: too long,
 * counted), 1 (no room left: counted, stop) or -1 (a string unreadable).
 */
static __always_inline int golabels_pack(struct go_label_buf *buf, __u32 *pos,
					 const struct go_label *l)
{
	__u32 kl, vl, at;

	/* Room for the longest entry, in a form the verifier follows: a label that would fit
	 * the rest exactly is left out too (counted). */
	if (*pos > SP_CTX_MAX - 2 - SP_GO_MAX_KEY - SP_GO_MAX_VALUE) {
		stat_inc(SP_STAT_GOL_TRUNCATED);
		return 1;
	}
	if (!l->key_len || l->key_len > SP_GO_MAX_KEY || l->value_len > SP_GO_MAX_VALUE) {
		stat_inc(SP_STAT_GOL_TRUNCATED);
		return 0;
	}
	/*
	 * Bounded by the check above; the masks, kept by the empty asm, show it to verifiers
	 * that carry no bound from one copy of a value to another (6.1: the compiler checks one
	 * copy and passes a spilled one to the helper).
	 */
	kl = l->key_len;
	vl = l->value_len;
	asm volatile("" : "+r"(kl), "+r"(vl));
	kl &= SP_GO_MAX_KEY;
	vl &= SP_GO_MAX_VALUE;
	/* *pos <= 448 here: the mask changes nothing, it shows the verifier the bound
	 * (511 + 2 + 63 + 127 stays inside the buffer: checked in sampler.h); the empty asm
	 * keeps the compiler from dropping it. */
	at = *pos;
	asm volatile("" : "+r"(at));
	at &= 511;
	if (bpf_probe_read_user(&buf->b[at + 2], kl, (void *)l->key) ||
	    (vl && bpf_probe_read_user(&buf->b[at + 2 + kl], vl, (void *)l->value)))
		return -1;
	buf->b[at] = kl;
	buf->b[at + 1] = vl;
	*pos = at + 2 + kl + vl;
	return 0;
}

/*
 * Packs the first @n (<= SP_GO_MAX_LABELS) labels of the slice at user address @labels into
 * this CPU's go_label_buf (golabels_pack()). Returns the bytes used (at most SP_CTX_MAX), or -1
 * when a label could not be read. A global function: the verifier checks its loop once, on its
 * own, instead of once per state of every program that takes samples (87,000 of
 * on_cpu_sample's instructions when it was inlined).
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
		int r;

		if (i >= n)
			break;
		if (bpf_probe_read_user(&l, sizeof(l), (void *)(labels + i * sizeof(l))))
			return -1;
		r = golabels_pack(buf, &pos, &l);
		if (r < 0)
			return -1;
		if (r)
			break;
	}
	return pos;
}

/*
 * One bucket of a Go 1.18-1.23 labels map (layout: SP_GO_BMAP_* in sampler.h) at user address
 * @bucket, whose header counts @count cells: packs its full cells after this CPU's buf->pos
 * (buf->found full cells met before; at most SP_GO_MAX_LABELS looked at) and sets buf->next
 * to its overflow bucket (0 when the chain ends: no overflow bucket, or an emptyRest cell).
 * Returns 0, 1 (SP_GO_MAX_LABELS looked at, or no room left: stop) or -1 (unreadable, or
 * garbage: an evacuated mark in a map not being grown, more full cells than @count). A global
 * function, verified once for its 8 cells.
 */
__noinline int golabels_bucket_global(__u64 bucket, __u32 count)
{
	__u32 zero = 0, pos, found, i;
	struct go_label_buf *buf = bpf_map_lookup_elem(&go_label_buf, &zero);
	__u64 tophash = 0, next = 0;

	if (!buf)
		return -1;
	pos = buf->pos;
	found = buf->found;
	buf->next = 0;
	if (bpf_probe_read_user(&tophash, sizeof(tophash), (void *)bucket))
		return -1;
	for (i = 0; i < SP_GO_BMAP_CELLS; i++) {
		__u8 th = tophash >> (8 * i);
		struct go_label l;
		int r;

		if (th == SP_GO_TOPHASH_EMPTY_REST)
			goto done; /* nothing after it, overflow buckets included */
		if (th == SP_GO_TOPHASH_EMPTY_ONE)
			continue;
		if (th < SP_GO_TOPHASH_MIN || found >= count)
			return -1;
		if (found >= SP_GO_MAX_LABELS)
			return 1;
		found++;
		if (bpf_probe_read_user(&l.key, 2 * sizeof(__u64),
					(void *)(bucket + SP_GO_BMAP_KEYS + i * 16)) ||
		    bpf_probe_read_user(&l.value, 2 * sizeof(__u64),
					(void *)(bucket + SP_GO_BMAP_ELEMS + i * 16)))
			return -1;
		r = golabels_pack(buf, &pos, &l);
		buf->pos = pos;
		buf->found = found;
		if (r)
			return r;
	}
	if (bpf_probe_read_user(&next, sizeof(next), (void *)(bucket + SP_GO_BMAP_OVERFLOW)))
		return -1;
done:
	buf->pos = pos;
	buf->found = found;
	buf->next = next;
	return 0;
}

/*
 * Packs the labels of a Go 1.18-1.23 map[string]string (@nbuckets <= 2^SP_GO_MAP_MAX_B
 * buckets at user address @buckets, @count cells, not being grown) into this CPU's
 * go_label_buf, bucket by bucket, overflow buckets after their bucket. Returns the bytes used,
 * -1 (unreadable or garbage: a count that the cells do not match) or -2 (more than
 * SP_GO_MAP_MAX_VISITS buckets to visit: skipped).
 */
__noinline int golabels_copy_map_global(__u64 buckets, __u32 nbuckets, __u32 count)
{
	__u32 zero = 0, index = 0, visit;
	struct go_label_buf *buf = bpf_map_lookup_elem(&go_label_buf, &zero);
	__u64 bucket = buckets;
	int r;

	if (!buf || nbuckets > 1u << SP_GO_MAP_MAX_B)
		return -1;
	buf->pos = 0;
	buf->found = 0;
	for (visit = 0; visit < SP_GO_MAP_MAX_VISITS; visit++) {
		r = golabels_bucket_global(bucket, count);
		if (r < 0)
			return -1;
		if (r)
			return buf->pos; /* 16 labels looked at, or the buffer full */
		bucket = buf->next;
		if (!bucket) {
			if (++index >= nbuckets)
				/* every cell seen: the header's count must be what they hold */
				return buf->found == count ? (int)buf->pos : -1;
			bucket = buckets + (__u64)index * SP_GO_BMAP_SIZE;
		}
	}
	return -2;
}

/*
 * The labels of a Go 1.24+ labelMap at user address @lm (its first field the slice of labels),
 * packed into this CPU's go_label_buf. Returns the bytes packed (0: none), or -1 with the
 * sample's reason counted.
 */
static __always_inline int golabels_slice(__u64 lm)
{
	__u64 slice[3];
	__u32 n;
	int pos;

	if (bpf_probe_read_user(slice, sizeof(slice), (void *)lm) || slice[1] > slice[2] ||
	    slice[1] > SP_GO_SANE_LABELS || (slice[1] && !slice[0])) {
		stat_inc(SP_STAT_GOL_BAD);
		return -1;
	}
	if (!slice[1])
		return 0;
	n = slice[1] < SP_GO_MAX_LABELS ? slice[1] : SP_GO_MAX_LABELS;
	if (slice[1] > SP_GO_MAX_LABELS)
		stat_inc(SP_STAT_GOL_TRUNCATED);
	pos = golabels_copy_global(slice[0], n);
	if (pos < 0)
		stat_inc(SP_STAT_GOL_BAD);
	return pos;
}

/*
 * The labels of a Go 1.18-1.23 labelMap at user address @lm (a map[string]string: a pointer
 * to the map's header), packed into this CPU's go_label_buf. A map being grown (oldbuckets
 * set: its cells are in two bucket arrays) or with more buckets than walked is skipped, never
 * guessed at. Returns the bytes packed (0: none), or -1 with the sample's reason counted.
 */
static __always_inline int golabels_map(__u64 lm)
{
	__u64 hmap = 0, hdr[4]; /* count; flags, B, noverflow, hash0; buckets; oldbuckets */
	__u32 b;
	int pos;

	if (bpf_probe_read_user(&hmap, sizeof(hmap), (void *)lm)) {
		stat_inc(SP_STAT_GOL_BAD);
		return -1;
	}
	if (!hmap)
		return 0;
	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)hmap)) {
		stat_inc(SP_STAT_GOL_BAD);
		return -1;
	}
	b = (hdr[SP_GO_HMAP_B / 8] >> (8 * (SP_GO_HMAP_B % 8))) & 0xff;
	if (!hdr[SP_GO_HMAP_COUNT / 8])
		return 0;
	if (hdr[SP_GO_HMAP_OLDBUCKETS / 8] || b > SP_GO_MAP_MAX_B) {
		stat_inc(SP_STAT_GOL_MAP_SKIPPED);
		return -1;
	}
	if (!hdr[SP_GO_HMAP_BUCKETS / 8] || hdr[SP_GO_HMAP_COUNT / 8] > SP_GO_SANE_LABELS) {
		stat_inc(SP_STAT_GOL_BAD);
		return -1;
	}
	if (hdr[SP_GO_HMAP_COUNT / 8] > SP_GO_MAX_LABELS)
		stat_inc(SP_STAT_GOL_TRUNCATED);
	pos = golabels_copy_map_global(hdr[SP_GO_HMAP_BUCKETS / 8], 1u << b,
				       hdr[SP_GO_HMAP_COUNT / 8]);
	if (pos < 0)
		stat_inc(pos == -2 ? SP_STAT_GOL_MAP_SKIPPED : SP_STAT_GOL_BAD);
	return pos;
}

/*
 * Whether the CPU runs the user goroutine @g's own code: labels are read only then. The
 * thread's g, the word in TLS, is the g the CPU runs: Go's amd64 assembly (src/runtime/
 * asm_amd64.s, go1.26) stores it on every switch, before or with the stack switch: gogo<>
 * (to a goroutine), mcall (to g0, for the scheduler: park_m, gosched_m, exitsyscall0),
 * systemstack (to g0, and back to m.curg), asmcgocall (to g0 for a cgo call's C code),
 * cgocallback (to m.curg when C calls Go, also in -buildmode=c-shared/c-archive, then back
 * to g0), morestack (to g0), setg (signal_unix.go's sigtrampgo: to m.gsignal for a signal
 * handler, and back). R14, ABIInternal's g register, is not: asmcgocall, cgocallback and
 * setg leave it stale, C code may use it, and Go reloads it from TLS (the ABI wrappers,
 * sys_linux_amd64.s's sigtramp), so the TLS word is the source here. While the thread runs
 * g0 or gsignal, m.curg still names the goroutine it serves (mcall's callee clears it only in
 * dropg(); systemstack's never), whose labels are not the CPU's (issue 30: a runtime.mcall
 * sample linked to a request's span): g must be curg. And the stack: each switch to a
 * goroutine writes g to TLS one or two instructions before it loads SP (gogo<>,
 * cgocallback), a signal handler starts on the signal stack before sigtrampgo's setg, and
 * nanotime1/walltime call the vDSO on g0's stack with g unchanged (sys_linux_amd64.s): the
 * user SP must lie in curg's stack, [g.stack.lo, g.stack.hi) (runtime2.go: g's first field,
 * "offset known to runtime/cgo", the same in every release). The price: g0 work done for the
 * goroutine (large allocations and GC assists on systemstack, a cgo call's C code, the vDSO)
 * is not linked. Returns 0 (yes), or 1 with the sample's reason counted.
 */
static __always_inline int golabels_on_goroutine(__u64 g, __u64 curg)
{
	struct pt_regs *regs;
	__u64 stack[2] = {}, sp; /* lo, hi */

	if (g != curg) {
		stat_inc(SP_STAT_GOL_SYSTEM_G);
		return 1;
	}
	/* Every caller's task is the current one; ctx is not pt_regs for every caller. */
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs || bpf_probe_read_user(stack, sizeof(stack), (void *)g)) {
		stat_inc(SP_STAT_GOL_BAD);
		return 1;
	}
	sp = regs->sp;
	if (sp < stack[0] || sp >= stack[1]) {
		stat_inc(SP_STAT_GOL_OFF_STACK);
		return 1;
	}
	return 0;
}

/* Copies the labels of the thread's goroutine into s->ctx (s->ctx_len 0 on entry). */
static __always_inline void golabels_sample(struct task_struct *task, struct sp_sample *s)
{
	struct sp_go_loc *loc;
	struct go_label_buf *buf;
	__u64 fs, g = 0, m = 0, curg = 0, lm = 0;
	__u32 pid = s->pid, zero = 0, len;
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
	/* g == curg: curg.m is g.m, the m read above */
	if (golabels_on_goroutine(g, curg))
		return;
	if (bpf_probe_read_user(&lm, sizeof(lm), (void *)(curg + loc->g_labels))) {
		stat_inc(SP_STAT_GOL_BAD);
		return;
	}
	if (!lm) {
		stat_inc(SP_STAT_GOL_NONE);
		return;
	}
	pos = loc->kind == SP_GO_LABELS_MAP ? golabels_map(lm) : golabels_slice(lm);
	if (pos < 0)
		return;
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
