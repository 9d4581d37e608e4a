// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <uthash.h>

#include "runtime/go/golabels.h"
#include "spans/procctx.h"
#include "process/procmaps.h"
#include "process/procmeta.h"
#include "profile/profile.h"
#include "spans/spanlinks.h"
#include "spans/threadctx.h"
#include "spans/tlsctx.h"
#include "unwind_walk.h"
#include "util/util.h"

/* Lazy TLSDESC slots are resolved on a thread's first access: look again this often. */
#define RETRY_NS (500ull * 1000000)
#define MAX_RETRIES 240 /* two minutes */
/* An exited process's context names its last samples until they are exported. */
#define EXITED_KEEP_NS (60ull * 1000000000)
/* Process contexts published without a prctl naming the mapping are found this late. */
#define RECHECK_NS (30ull * 1000000000)
#define SWEEP_NS (10ull * 1000000000)

struct slproc {
	UT_hash_handle hh;
	uint32_t pid;
	uint64_t start_boot_ns;
	int has_loc;
	int go_checked;	   /* golabels settled for this image (found, or can't be read) */
	int go_exe_not_go; /* its executable is not Go: its mapped libraries are looked at */
	int has_go;	   /* an entry in go_procs */
	uint32_t go_retries;
	uint64_t go_retry_due_ns; /* a Go library's TLS slot not relocated yet: look then; 0 */
	uint32_t retries;
	uint64_t retry_due_ns; /* 0: none */
	int has_ctx;
	struct procctx ctx;
	uint64_t ctx_checked_ns;
	uint64_t exited_ns;	/* when the process exited (its context is kept a while), 0 */
	struct procmeta merged; /* shallow: strings belong to the base meta or to ctx */
	const struct procmeta *merged_base;
};

/* A mapped file known not to hold Go code, by the identity /proc/PID/maps gives. */
struct notgo {
	UT_hash_handle hh;
	struct notgo_key {
		uint64_t ino;
		uint32_t dev_major, dev_minor;
	} key;
};
#define NOTGO_MAX 8192 /* then forgotten all at once (a file is looked at again: a stat) */

struct spanlinks {
	struct spanlinks_opts o;
	struct slproc *procs;
	struct notgo *notgo;
	uint32_t nnotgo;
	uint64_t last_sweep_ns;
	struct spanlinks_stats st;
	/* Scratch for one sample's attributes. */
	struct profile *cur_p;
	struct slproc *cur_proc;
	struct profile_attr attrs[256];
	uint32_t nattrs;
	int nomem;
	const char *go_span, *go_trace; /* the id labels of one sample (into its copy) */
	size_t go_span_len, go_trace_len;
};

struct spanlinks *spanlinks__new(const struct spanlinks_opts *o)
{
	struct spanlinks *sl = calloc(1, sizeof(*sl));

	if (!sl)
		return NULL;
	sl->o = *o;
	sl->last_sweep_ns = util__mono_ns();
	return sl;
}

static void merged_clear(struct slproc *p)
{
	free(p->merged.attrs);
	memset(&p->merged, 0, sizeof(p->merged));
	p->merged_base = NULL;
}

static void ctx_clear(struct spanlinks *sl, struct slproc *p)
{
	if (p->has_ctx) {
		procctx__free(&p->ctx);
		sl->st.contexts--;
	}
	p->has_ctx = 0;
	memset(&p->ctx, 0, sizeof(p->ctx));
	merged_clear(p);
}

static void loc_clear(struct spanlinks *sl, struct slproc *p)
{
	if (p->has_loc) {
		bpf_map_delete_elem(sl->o.procs_fd, &p->pid);
		sl->st.processes--;
	}
	p->has_loc = 0;
	p->retry_due_ns = 0;
	p->retries = 0;
}

static void go_clear(struct spanlinks *sl, struct slproc *p)
{
	if (p->has_go && sl->o.go_procs_fd > 0)
		bpf_map_delete_elem(sl->o.go_procs_fd, &p->pid);
	p->has_go = 0;
	p->go_retry_due_ns = 0;
}

static void proc_remove(struct spanlinks *sl, struct slproc *p)
{
	go_clear(sl, p);
	loc_clear(sl, p);
	ctx_clear(sl, p);
	HASH_DEL(sl->procs, p);
	free(p);
}

static void notgo_clear(struct spanlinks *sl)
{
	struct notgo *n, *tmp;

	HASH_ITER (hh, sl->notgo, n, tmp) {
		HASH_DEL(sl->notgo, n);
		free(n);
	}
	sl->nnotgo = 0;
}

void spanlinks__free(struct spanlinks *sl)
{
	struct slproc *p, *tmp;

	if (!sl)
		return;
	HASH_ITER (hh, sl->procs, p, tmp)
		proc_remove(sl, p);
	notgo_clear(sl);
	free(sl);
}

static struct slproc *proc_get(struct spanlinks *sl, uint32_t pid, uint64_t start_boot_ns)
{
	struct slproc *p;

	HASH_FIND(hh, sl->procs, &pid, sizeof(pid), p);
	if (p && ((start_boot_ns && p->start_boot_ns && p->start_boot_ns != start_boot_ns) ||
		  (p->exited_ns && start_boot_ns != p->start_boot_ns))) {
		proc_remove(sl, p); /* the PID was reused */
		p = NULL;
	}
	if (p) {
		if (start_boot_ns)
			p->start_boot_ns = start_boot_ns;
		return p;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->start_boot_ns = start_boot_ns;
	HASH_ADD(hh, sl->procs, pid, sizeof(p->pid), p);
	return p;
}

static void resolve_loc(struct spanlinks *sl, struct slproc *p)
{
	struct tlsctx_loc loc;
	struct sp_tls_loc bl = {0};
	int err;

	err = tlsctx__resolve_pid((pid_t)p->pid, TLSCTX_SYMBOL, sl->o.allow_symtab, &loc, NULL, 0);
	if (err == -EAGAIN) {
		if (p->retries++ < MAX_RETRIES) {
			sl->st.retries++;
			p->retry_due_ns = util__mono_ns() + RETRY_NS;
		} else {
			p->retry_due_ns = 0;
		}
		return;
	}
	p->retry_due_ns = 0;
	if (err) {
		if (err != -ENOENT && err != -ESRCH)
			sl->st.resolve_errors++;
		loc_clear(sl, p);
		return;
	}
	bl.kind = loc.kind == TLSCTX_KIND_STATIC ? SP_TLS_STATIC : SP_TLS_DTV;
	bl.module_id = loc.module_id;
	bl.tpoff = loc.tpoff;
	bl.offset = loc.offset;
	bl.start_boot_ns = p->start_boot_ns;
	if (bpf_map_update_elem(sl->o.procs_fd, &p->pid, &bl, BPF_ANY)) {
		sl->st.resolve_errors++; /* map full: counted, the process goes without links */
		return;
	}
	if (!p->has_loc) {
		sl->st.processes++;
		sl->st.processes_seen++;
	}
	p->has_loc = 1;
}

static struct notgo_key notgo_key(const struct procmap *m)
{
	struct notgo_key k;

	memset(&k, 0, sizeof(k)); /* a hash key: no stray padding bytes */
	k.ino = m->inode;
	k.dev_major = m->dev_major;
	k.dev_minor = m->dev_minor;
	return k;
}

static void notgo_add(struct spanlinks *sl, const struct procmap *m)
{
	struct notgo *n;

	if (sl->nnotgo >= NOTGO_MAX)
		notgo_clear(sl);
	n = calloc(1, sizeof(*n));
	if (!n)
		return;
	n->key = notgo_key(m);
	HASH_ADD(hh, sl->notgo, key, sizeof(n->key), n);
	sl->nnotgo++;
}

/*
 * Go code in a shared library the process maps (-buildmode=c-shared, loaded by a program in
 * another language): the first executable file mapping holding Go code, checked once per
 * file (files without Go remembered by their maps identity). 0 with *@gl and *@where, or the
 * errors of golabels__resolve_fd() (-ENOENT: no Go library mapped).
 */
static int go_library(struct spanlinks *sl, uint32_t pid, const struct procmaps *maps,
		      struct golabels_layout *gl, const struct procmap **where)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct procmap *m = &maps->maps[i];
		struct notgo_key k;
		struct notgo *n;
		int fd, err;

		if (!(m->prot & PROT_EXEC) || !m->inode || m->path[0] != '/')
			continue;
		k = notgo_key(m);
		HASH_FIND(hh, sl->notgo, &k, sizeof(k), n);
		if (n)
			continue;
		fd = procmaps__open_file((int)pid, m, NULL, 0);
		if (fd < 0)
			continue; /* gone, or not ours to open: its labels stay unread */
		err = golabels__resolve_fd(fd, (int)pid, gl);
		close(fd);
		if (err == -ENOENT) {
			notgo_add(sl, m);
			continue;
		}
		*where = m;
		return err;
	}
	return -ENOENT;
}

/*
 * Where the process's Go runtime keeps g and its labels: its executable, else a Go library it
 * maps; g's TLS offset read from the process when the code loads it from a GOT slot.
 * 0, -EAGAIN (the slot is not relocated yet), or the errors of golabels__resolve_pid().
 */
static int go_layout(struct spanlinks *sl, struct slproc *p, const struct procmaps *maps,
		     struct golabels_layout *gl)
{
	const struct procmap *m = NULL;
	uint64_t slot;
	int err = -ENOENT;

	if (!p->go_exe_not_go) {
		err = golabels__resolve_pid((int)p->pid, gl);
		if (err == -ENOENT)
			p->go_exe_not_go = 1;
	}
	if (err == -ENOENT && maps)
		err = go_library(sl, p->pid, maps, gl, &m);
	if (err || !gl->tls_got_vaddr)
		return err;
	/* The mapping of that file's code: found above, or the executable's. */
	for (size_t i = 0; !m && maps && i < maps->n; i++)
		if ((maps->maps[i].prot & PROT_EXEC) && maps->maps[i].inode == gl->ino)
			m = &maps->maps[i];
	if (!m)
		return -EAGAIN;
	err = procmaps__read_mem(
	    (int)p->pid, m->start - m->offset - (uint64_t)gl->text_delta + gl->tls_got_vaddr, &slot,
	    sizeof(slot));
	if (err == -ESRCH)
		return err;
	return err ? -EAGAIN : golabels__tls_from_slot(gl, slot);
}

/* Goroutine labels: where the process's Go runtime keeps them, once per image. */
static void resolve_go(struct spanlinks *sl, struct slproc *p, const struct procmaps *maps)
{
	struct golabels_layout gl;
	struct sp_go_loc bl = {0};
	int err;

	if (sl->o.go_procs_fd <= 0 || p->go_checked)
		return;
	err = go_layout(sl, p, maps, &gl);
	if (err == -ESRCH || err == -ENOENT)
		return; /* gone; or no Go yet: a library may be loaded later (the next maps read) */
	if (err == -EAGAIN) {
		p->go_retry_due_ns = p->go_retries++ < MAX_RETRIES ? util__mono_ns() + RETRY_NS : 0;
		return;
	}
	p->go_checked = 1;
	p->go_retry_due_ns = 0;
	if (err) {
		if (err == -ENOTSUP)
			sl->st.go_unsupported++;
		return;
	}
	bl.tls_g = gl.tls_g;
	bl.g_m = gl.g_m;
	bl.m_curg = gl.m_curg;
	bl.g_labels = gl.g_labels;
	bl.kind = gl.labels_map ? SP_GO_LABELS_MAP : SP_GO_LABELS_SLICE;
	bl.start_boot_ns = p->start_boot_ns;
	if (bpf_map_update_elem(sl->o.go_procs_fd, &p->pid, &bl, BPF_ANY)) {
		sl->st.resolve_errors++; /* map full: counted, the process goes without labels */
		return;
	}
	p->has_go = 1;
	sl->st.go_processes++;
}

/* resolve_go() again for a process whose Go library was not relocated when first seen. */
static void retry_go(struct spanlinks *sl, struct slproc *p)
{
	struct procmaps maps = {0};

	p->go_retry_due_ns = 0;
	if (procmaps__read_filtered((int)p->pid, PROCMAPS_EXEC_ONLY, &maps))
		return;
	resolve_go(sl, p, &maps);
	procmaps__clear(&maps);
}

static void read_ctx(struct spanlinks *sl, struct slproc *p)
{
	struct procctx c = {0};
	int err = procctx__read((pid_t)p->pid, &c), had = p->has_ctx;

	p->ctx_checked_ns = util__mono_ns();
	if (err == -EAGAIN)
		return; /* kept changing: keep what we had, look again later */
	ctx_clear(sl, p);
	if (err)
		return;
	p->ctx = c;
	p->has_ctx = 1;
	sl->st.contexts++;
	if (!had)
		sl->st.contexts_seen++;
}

void spanlinks__maps_hook(void *ctx, uint32_t pid, uint64_t start_boot_ns,
			  const struct procmaps *maps)
{
	struct spanlinks *sl = ctx;
	struct slproc *p = proc_get(sl, pid, start_boot_ns);

	if (!p)
		return;
	resolve_loc(sl, p);
	read_ctx(sl, p);
	resolve_go(sl, p, maps);
}

void spanlinks__note_event(struct spanlinks *sl, const struct unwind_event *e)
{
	struct slproc *p;
	uint32_t pid = e->pid;

	HASH_FIND(hh, sl->procs, &pid, sizeof(pid), p);
	switch (e->kind) {
	case UNWIND_EVENT_EXIT:
		/* Its descriptor goes now; its context still names samples not yet exported. */
		if (p) {
			loc_clear(sl, p);
			go_clear(sl, p);
			p->exited_ns = util__mono_ns();
		}
		break;
	case UNWIND_EVENT_EXEC: /* a new image: the next maps read starts over */
		if (p)
			proc_remove(sl, p);
		break;
	case UNWIND_EVENT_NAME:
		if (!p)
			p = proc_get(sl, pid, 0);
		if (p)
			read_ctx(sl, p);
		break;
	default:
		break;
	}
}

void spanlinks__tick(struct spanlinks *sl)
{
	uint64_t now = util__mono_ns();
	int sweep = now - sl->last_sweep_ns >= SWEEP_NS;
	struct slproc *p, *tmp;
	char path[32];

	if (sweep)
		sl->last_sweep_ns = now;
	HASH_ITER (hh, sl->procs, p, tmp) {
		if (p->exited_ns) {
			if (now - p->exited_ns >= EXITED_KEEP_NS)
				proc_remove(sl, p);
			continue;
		}
		if (sweep) {
			snprintf(path, sizeof(path), "/proc/%u", p->pid);
			if (access(path, F_OK) && errno == ENOENT) {
				loc_clear(sl, p);
				go_clear(sl, p);
				p->exited_ns = now;
				continue;
			}
		}
		if (p->retry_due_ns && p->retry_due_ns <= now)
			resolve_loc(sl, p);
		if (p->go_retry_due_ns && p->go_retry_due_ns <= now)
			retry_go(sl, p);
		/* A writer may publish its process context after we first looked: a thread-context
		 * writer, or a Go program (writer/go publishes at its first sampled span when its
		 * provider is wrapped, and a sample of the runtime's start-up comes before main).
		 */
		if ((p->has_loc || p->has_go) && !p->has_ctx &&
		    now - p->ctx_checked_ns >= RECHECK_NS)
			read_ctx(sl, p);
	}
}

static void collect_attr(void *ctx, uint8_t key_index, const uint8_t *value, size_t len)
{
	struct spanlinks *sl = ctx;
	char buf[256];
	uint32_t k, v;

	if (sl->nattrs >= sizeof(sl->attrs) / sizeof(sl->attrs[0]) ||
	    key_index >= sl->cur_proc->ctx.nkeys || !sl->cur_proc->ctx.key_map[key_index])
		return;
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, value, len);
	buf[len] = '\0';
	k = profile__intern_string(sl->cur_p, sl->cur_proc->ctx.key_map[key_index]);
	v = profile__intern_string(sl->cur_p, buf);
	if (!k || (!v && buf[0])) {
		sl->nomem = 1;
		return;
	}
	sl->attrs[sl->nattrs++] = (struct profile_attr){.key = k, .value = v};
}

/* One goroutine label (golabels__parse() callback). */
static void collect_go_label(void *ctx, const char *key, size_t klen, const char *value,
			     size_t vlen)
{
	struct spanlinks *sl = ctx;
	char k[SP_GO_MAX_KEY + 1], v[SP_GO_MAX_VALUE + 1];
	uint32_t ks, vs;

	if (klen > SP_GO_MAX_KEY || vlen > SP_GO_MAX_VALUE ||
	    sl->nattrs >= sizeof(sl->attrs) / sizeof(sl->attrs[0]))
		return;
	if (klen == 7 && !memcmp(key, "span_id", 7)) {
		sl->go_span = value;
		sl->go_span_len = vlen;
	} else if (klen == 8 && !memcmp(key, "trace_id", 8)) {
		sl->go_trace = value;
		sl->go_trace_len = vlen;
	}
	memcpy(k, key, klen);
	k[klen] = '\0';
	memcpy(v, value, vlen);
	v[vlen] = '\0';
	ks = profile__intern_string(sl->cur_p, k);
	vs = profile__intern_string(sl->cur_p, v);
	if (!ks || (!vs && v[0])) {
		sl->nomem = 1;
		return;
	}
	sl->attrs[sl->nattrs++] = (struct profile_attr){.key = ks, .value = vs};
}

/* A sample with goroutine labels: the labels as attributes, span_id + trace_id as the link. */
static int go_sample(struct spanlinks *sl, struct profile *p, const struct sp_sample *s,
		     uint32_t *link, uint32_t *attrs)
{
	struct profile_link l;
	uint32_t span_k = 0, trace_k = 0, n = 0;
	int linked = 0;

	sl->cur_p = p;
	sl->nattrs = 0;
	sl->nomem = 0;
	sl->go_span = sl->go_trace = NULL;
	sl->go_span_len = sl->go_trace_len = 0;
	if (s->ctx_len > SP_CTX_MAX ||
	    golabels__parse(s->ctx, s->ctx_len, collect_go_label, sl) < 0) {
		sl->st.bad_records++;
		return 0;
	}
	if (sl->nomem)
		return -ENOMEM;
	sl->st.go_labeled++;
	if (sl->go_span && sl->go_trace) {
		if (!golabels__hex_id(sl->go_span, sl->go_span_len, l.span_id, 8) &&
		    !golabels__hex_id(sl->go_trace, sl->go_trace_len, l.trace_id, 16)) {
			*link = profile__intern_link(p, &l);
			if (!*link)
				return -ENOMEM;
			linked = 1;
			sl->st.links++;
			sl->st.go_links++;
			span_k = profile__intern_string(p, "span_id");
			trace_k = profile__intern_string(p, "trace_id");
		} else {
			sl->st.go_bad_ids++;
		}
	}
	/* Linked: the ids are the link, not attributes too. */
	for (uint32_t i = 0; i < sl->nattrs; i++)
		if (!linked || (sl->attrs[i].key != span_k && sl->attrs[i].key != trace_k))
			sl->attrs[n++] = sl->attrs[i];
	if (n) {
		*attrs = profile__intern_attrset(p, sl->attrs, n);
		if (!*attrs)
			return -ENOMEM;
	}
	return 0;
}

int spanlinks__sample(struct spanlinks *sl, struct profile *p, const struct sp_sample *s,
		      uint32_t *link, uint32_t *attrs)
{
	struct profile_link l;
	struct slproc *proc;
	size_t len = s->ctx_len;

	*link = *attrs = 0;
	if (!len)
		return 0;
	if (s->flags & SP_SAMPLE_GO_LABELS)
		return go_sample(sl, p, s, link, attrs);
	/* BPF checked the record; check again what user space relies on. */
	if (len > SP_CTX_MAX || threadctx__check_header(s->ctx, len) != THREADCTX_OK) {
		sl->st.bad_records++;
		return 0;
	}
	memcpy(l.trace_id, s->ctx, 16);
	memcpy(l.span_id, s->ctx + 16, 8);
	if (!memcmp(l.span_id, (uint8_t[8]){0}, 8)) {
		sl->st.bad_records++; /* BPF drops these: OTLP links need a span id */
		return 0;
	}
	*link = profile__intern_link(p, &l);
	if (!*link)
		return -ENOMEM;
	sl->st.links++;

	HASH_FIND(hh, sl->procs, &s->pid, sizeof(s->pid), proc);
	if (!proc || !proc->has_ctx || !proc->ctx.nkeys || len <= SP_CTX_HEADER)
		return 0;
	sl->cur_p = p;
	sl->cur_proc = proc;
	sl->nattrs = 0;
	sl->nomem = 0;
	threadctx__parse_attrs(s->ctx + SP_CTX_HEADER, len - SP_CTX_HEADER, proc->ctx.nkeys,
			       collect_attr, sl);
	if (sl->nomem)
		return -ENOMEM;
	if (sl->nattrs) {
		*attrs = profile__intern_attrset(p, sl->attrs, sl->nattrs);
		if (!*attrs)
			return -ENOMEM;
	}
	return 0;
}

const struct procmeta *spanlinks__meta(struct spanlinks *sl, uint32_t pid,
				       const struct procmeta *base)
{
	struct slproc *p;
	struct procmeta *m;
	size_t cap;

	HASH_FIND(hh, sl->procs, &pid, sizeof(pid), p);
	if (!p || !p->has_ctx)
		return base;
	merged_clear(p);
	m = &p->merged;
	*m = *base;
	m->attrs = NULL;
	m->nattrs = 0;
	if (p->ctx.service_name && p->ctx.service_name[0])
		m->service_name = p->ctx.service_name;
	cap = (size_t)base->nattrs + p->ctx.nresource;
	m->attrs = cap ? calloc(cap, sizeof(*m->attrs)) : NULL;
	if (cap && !m->attrs)
		return base;
	/* The process context is the SDK's own resource: it wins over the environment. */
	for (uint32_t i = 0; i < base->nattrs; i++) {
		int shadowed = 0;

		for (size_t j = 0; j < p->ctx.nresource && !shadowed; j++)
			shadowed = !strcmp(base->attrs[i].key, p->ctx.resource[j].key);
		if (!shadowed)
			m->attrs[m->nattrs++] = base->attrs[i];
	}
	for (size_t j = 0; j < p->ctx.nresource; j++) {
		if (!strcmp(p->ctx.resource[j].key, "service.name"))
			continue; /* carried by service_name */
		m->attrs[m->nattrs].key = p->ctx.resource[j].key;
		m->attrs[m->nattrs].value = p->ctx.resource[j].value;
		m->nattrs++;
	}
	p->merged_base = base;
	return m;
}

void spanlinks__stats(const struct spanlinks *sl, struct spanlinks_stats *out)
{
	*out = sl->st;
}
