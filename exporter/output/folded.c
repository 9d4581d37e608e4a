// SPDX-License-Identifier: Apache-2.0
/*
 * folded: stack_tree (samples merged by frame name), out_file (write then
 * rename) and the folded-stacks writer on top of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "output/folded.h"

#define NODE_BLOCK 1024 /* nodes per allocation: nodes must not move (uthash links them) */
#define NONE UINT32_MAX

struct name_ent {
	UT_hash_handle hh;
	uint32_t idx;
	uint8_t kind;
	bool unknown;
	char s[];
};

struct node_key {
	uint32_t parent;
	uint32_t name;
};

struct node {
	UT_hash_handle hh;
	struct node_key key;
	uint32_t idx;
	uint32_t first_child;  /* 0: none (the root is never a child) */
	uint32_t next_sibling; /* 0: none */
	uint32_t depth;
	uint64_t self;
	uint64_t total;
	uint64_t offset;
};

struct stack_tree {
	struct name_ent **names;
	uint32_t nnames, cap_names;
	struct name_ent *name_idx;
	struct node **blocks; /* node i is blocks[i / NODE_BLOCK][i % NODE_BLOCK]; 0 is the root */
	uint32_t nblocks;
	uint32_t nnodes;
	struct node *node_idx;
	uint32_t depth;
};

/* Scratch space while building. */
struct builder {
	struct stack_tree *t;
	const struct profile *p;
	uint32_t type; /* samples of this profile type only */
	char *buf;     /* frame name being formatted */
	size_t cap;
	uint32_t *chain; /* frame names of every location, root-most first */
	uint32_t nchain, cap_chain;
	uint32_t *loc_first; /* per location: its first name in chain */
	uint32_t *loc_n;     /* per location: how many names */
	uint32_t *proc_name; /* per profile string: its name id, or NONE */
	uint32_t *leaf_proc; /* per stack: process name id of its last sample, or NONE */
	uint32_t *leaf;	     /* per stack: the tree node that sample ended at */
	uint32_t *kids;	     /* children of one node, for sorting */
	uint32_t cap_kids;
};

static struct node *node(const struct stack_tree *t, uint32_t i)
{
	return &t->blocks[i / NODE_BLOCK][i % NODE_BLOCK];
}

/* Folded lines use ';' and '\n' as separators: keep them out of names. */
static void sanitize(char *s)
{
	for (unsigned char *c = (unsigned char *)s; *c; c++) {
		if (*c == ';')
			*c = ':';
		else if (*c < 0x20 || *c == 0x7f)
			*c = ' ';
	}
}

/* Interns @s (sanitized in place) as a frame name. Returns its id or NONE (ENOMEM). */
static uint32_t tree__name(struct stack_tree *t, char *s, enum frame_kind kind, bool unknown)
{
	struct name_ent *e = NULL;
	size_t len;

	sanitize(s);
	len = strlen(s);
	HASH_FIND(hh, t->name_idx, s, len, e);
	if (e)
		return e->idx;
	if (t->nnames == t->cap_names) {
		uint32_t cap = t->cap_names ? 2 * t->cap_names : 256;
		struct name_ent **names = realloc(t->names, cap * sizeof(*names));

		if (!names)
			return NONE;
		t->names = names;
		t->cap_names = cap;
	}
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NONE;
	memcpy(e->s, s, len + 1);
	e->idx = t->nnames;
	e->kind = kind;
	e->unknown = unknown;
	HASH_ADD_KEYPTR(hh, t->name_idx, e->s, len, e);
	if (!e->hh.tbl) {
		free(e);
		return NONE;
	}
	t->names[t->nnames++] = e;
	return e->idx;
}

/* A new node (zeroed apart from its index), or NULL on ENOMEM. */
static struct node *tree__alloc_node(struct stack_tree *t)
{
	uint32_t b = t->nnodes / NODE_BLOCK;
	struct node *n;

	if (t->nnodes == NONE)
		return NULL;
	if (b == t->nblocks) {
		struct node **blocks = realloc(t->blocks, (b + 1) * sizeof(*blocks));

		if (!blocks)
			return NULL;
		t->blocks = blocks;
		blocks[b] = malloc(NODE_BLOCK * sizeof(**blocks));
		if (!blocks[b])
			return NULL;
		t->nblocks++;
	}
	n = node(t, t->nnodes);
	memset(n, 0, sizeof(*n));
	n->idx = t->nnodes++;
	return n;
}

/* The child of @parent named @name, created if needed. 0 on ENOMEM. */
static uint32_t tree__child(struct stack_tree *t, uint32_t parent, uint32_t name)
{
	struct node_key k = {.parent = parent, .name = name};
	struct node *n = NULL, *up;

	HASH_FIND(hh, t->node_idx, &k, sizeof(k), n);
	if (n)
		return n->idx;
	n = tree__alloc_node(t);
	if (!n)
		return 0;
	n->key = k;
	HASH_ADD(hh, t->node_idx, key, sizeof(k), n);
	if (!n->hh.tbl) {
		t->nnodes--;
		return 0;
	}
	up = node(t, parent);
	n->depth = parent ? up->depth + 1 : 0;
	n->next_sibling = up->first_child;
	up->first_child = n->idx;
	if (n->depth + 1 > t->depth)
		t->depth = n->depth + 1;
	return n->idx;
}

/* printf into the builder's buffer. 0 or -ENOMEM. */
__attribute__((format(printf, 2, 3))) static int builder__fmt(struct builder *b, const char *fmt,
							      ...)
{
	va_list ap;
	char *buf;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->buf, b->cap, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if ((size_t)n < b->cap)
			return 0;
		buf = realloc(b->buf, n + 1);
		if (!buf)
			return -ENOMEM;
		b->buf = buf;
		b->cap = n + 1;
	}
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * Suffix of a frame's name by kind, as flamegraph.pl's palettes read them: "_[k]" kernel, "_[j]"
 * JIT-compiled code.
 */
static const char *kind_suffix(enum frame_kind kind)
{
	return kind == FRAME_KERNEL ? "_[k]" : frame_kind__is_jit(kind) ? "_[j]" : "";
}

/* Name of a frame without a symbol: "[file+0xoffset]" or "[unknown]", with its kind's suffix. */
static int builder__unknown_name(struct builder *b, const struct profile_location *loc)
{
	const char *k = kind_suffix(loc->kind);
	const struct profile_mapping *m = profile__mapping(b->p, loc->mapping);
	const char *file = m ? basename_of(profile__string(b->p, m->filename)) : "";

	if (loc->mapping && *file) {
		uint64_t off = loc->address;

		/* File offset, as perf prints it: stable across runs despite ASLR. */
		if (loc->address >= m->memory_start)
			off = loc->address - m->memory_start + m->file_offset;
		return builder__fmt(b, "[%s+0x%" PRIx64 "]%s", file, off, k);
	}
	return builder__fmt(b, "[unknown]%s", k);
}

static int builder__push(struct builder *b, uint32_t name)
{
	if (name == NONE)
		return -ENOMEM;
	if (b->nchain == b->cap_chain) {
		uint32_t cap = b->cap_chain ? 2 * b->cap_chain : 1024;
		uint32_t *chain = realloc(b->chain, cap * sizeof(*chain));

		if (!chain)
			return -ENOMEM;
		b->chain = chain;
		b->cap_chain = cap;
	}
	b->chain[b->nchain++] = name;
	return 0;
}

/* Appends the frame names of location @i to the chain, outermost first. */
static int builder__location(struct builder *b, uint32_t i)
{
	const struct profile_location *loc = profile__location(b->p, i);
	const struct profile_line *lines = profile__location_lines(b->p, i);
	enum frame_kind kind = loc->kind == FRAME_KERNEL || loc->kind == FRAME_ABORT ||
				       loc->kind == FRAME_GO || loc->kind == FRAME_CPYTHON ||
				       loc->kind == FRAME_PHP || frame_kind__is_jit(loc->kind)
				   ? loc->kind
				   : FRAME_NATIVE;
	int err;

	b->loc_first[i] = b->nchain;
	if (!loc->nlines) {
		err = builder__unknown_name(b, loc);
		if (!err)
			err = builder__push(b, tree__name(b->t, b->buf, kind, true));
		goto out;
	}
	/* Lines are innermost first: walk them backwards for caller-first order. */
	for (uint32_t j = loc->nlines; j-- > 0;) {
		const struct profile_function *f = profile__function(b->p, lines[j].function);
		const char *name = profile__string(b->p, f->name);
		bool unknown = false;

		if (!*name)
			name = profile__string(b->p, f->system_name);
		if (*name) {
			err = builder__fmt(b, "%s%s", name, kind_suffix(kind));
		} else {
			unknown = true;
			err = builder__unknown_name(b, loc);
		}
		if (!err)
			err = builder__push(b, tree__name(b->t, b->buf, kind, unknown));
		if (err)
			break;
	}
out:
	b->loc_n[i] = b->nchain - b->loc_first[i];
	return err;
}

/* Name id of the process frame of @s. */
static uint32_t builder__process(struct builder *b, const struct profile_sample *s)
{
	uint32_t str = s->key.process_name ? s->key.process_name : s->key.comm;

	if (b->proc_name[str] == NONE) {
		const char *name = str ? profile__string(b->p, str) : "[unknown]";

		if (builder__fmt(b, "%s", name))
			return NONE;
		b->proc_name[str] = tree__name(b->t, b->buf, FRAME_UNSET, !str);
	}
	return b->proc_name[str];
}

static int builder__sample(struct builder *b, const struct profile_sample *s)
{
	struct stack_tree *t = b->t;
	const struct profile_stack *st = profile__stack(b->p, s->key.stack);
	const uint32_t *locs = profile__stack_locations(b->p, s->key.stack);
	uint32_t name, cur;
	/* CPU: samples; the other types: their value (bytes, nanoseconds). */
	uint64_t w = profile__sample_value(b->p, s, s->key.type == PROFILE_CPU ? 0 : 1);

	if (s->key.type != b->type)
		return 0;
	name = builder__process(b, s);
	if (name == NONE)
		return -ENOMEM;
	node(t, 0)->total += w;
	/* Same stack and process as before (another thread or CPU): same path. */
	if (b->leaf_proc[s->key.stack] == name) {
		cur = b->leaf[s->key.stack];
		node(t, cur)->self += w;
		for (; cur; cur = node(t, cur)->key.parent)
			node(t, cur)->total += w;
		return 0;
	}
	cur = tree__child(t, 0, name);
	if (!cur)
		return -ENOMEM;
	node(t, cur)->total += w;
	/* The stack is leaf first; the tree grows from the root. */
	for (uint32_t i = st->nlocations; i-- > 0;) {
		uint32_t loc = locs[i];

		for (uint32_t j = 0; j < b->loc_n[loc]; j++) {
			cur = tree__child(t, cur, b->chain[b->loc_first[loc] + j]);
			if (!cur)
				return -ENOMEM;
			node(t, cur)->total += w;
		}
	}
	node(t, cur)->self += w;
	b->leaf_proc[s->key.stack] = name;
	b->leaf[s->key.stack] = cur;
	return 0;
}

static int by_name(const void *a, const void *b, void *ctx)
{
	const struct stack_tree *t = ctx;
	const struct node *x = node(t, *(const uint32_t *)a), *y = node(t, *(const uint32_t *)b);

	return strcmp(t->names[x->key.name]->s, t->names[y->key.name]->s);
}

/* Sorts every sibling list by name, then lays siblings out left to right. */
static int builder__finish(struct builder *b)
{
	struct stack_tree *t = b->t;

	/* A parent is always created before its children: index order is top-down. */
	for (uint32_t i = 0; i < t->nnodes; i++) {
		struct node *n = node(t, i);
		uint32_t nkids = 0;
		uint64_t off = n->offset;

		for (uint32_t c = n->first_child; c; c = node(t, c)->next_sibling) {
			if (nkids == b->cap_kids) {
				uint32_t cap = b->cap_kids ? 2 * b->cap_kids : 64;
				uint32_t *kids = realloc(b->kids, cap * sizeof(*kids));

				if (!kids)
					return -ENOMEM;
				b->kids = kids;
				b->cap_kids = cap;
			}
			b->kids[nkids++] = c;
		}
		if (nkids > 1) /* b->kids may still be NULL for a leaf */
			qsort_r(b->kids, nkids, sizeof(*b->kids), by_name, t);
		n->first_child = nkids ? b->kids[0] : 0;
		for (uint32_t k = 0; k < nkids; k++) {
			struct node *c = node(t, b->kids[k]);

			c->next_sibling = k + 1 < nkids ? b->kids[k + 1] : 0;
			c->offset = off;
			off += c->total;
		}
	}
	/* Lookups are over: drop the indexes' bucket arrays. */
	HASH_CLEAR(hh, t->node_idx);
	HASH_CLEAR(hh, t->name_idx);
	return 0;
}

struct stack_tree *stack_tree__new(const struct profile *p)
{
	return stack_tree__new_type(p, PROFILE_CPU);
}

struct stack_tree *stack_tree__new_type(const struct profile *p, uint32_t type)
{
	uint32_t nloc = profile__nlocations(p), nstr = profile__nstrings(p);
	uint32_t nstacks = profile__nstacks(p);
	struct builder b = {.p = p, .type = type};
	int err = 0;

	b.t = calloc(1, sizeof(*b.t));
	b.loc_first = calloc(nloc, sizeof(*b.loc_first));
	b.loc_n = calloc(nloc, sizeof(*b.loc_n));
	b.proc_name = malloc(nstr * sizeof(*b.proc_name));
	b.leaf_proc = malloc(nstacks * sizeof(*b.leaf_proc));
	b.leaf = malloc(nstacks * sizeof(*b.leaf));
	b.cap = 256;
	b.buf = malloc(b.cap);
	if (!b.t || !b.loc_first || !b.loc_n || !b.proc_name || !b.leaf_proc || !b.leaf || !b.buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	memset(b.proc_name, 0xff, nstr * sizeof(*b.proc_name));
	memset(b.leaf_proc, 0xff, nstacks * sizeof(*b.leaf_proc));
	if (!tree__alloc_node(b.t)) { /* the root */
		err = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t i = 1; i < nloc; i++) {
		err = builder__location(&b, i);
		if (err)
			goto cleanup;
	}
	for (uint32_t i = 0; i < profile__nsamples(p); i++) {
		err = builder__sample(&b, profile__sample(p, i));
		if (err)
			goto cleanup;
	}
	err = builder__finish(&b);

cleanup:
	free(b.buf);
	free(b.chain);
	free(b.loc_first);
	free(b.loc_n);
	free(b.proc_name);
	free(b.leaf_proc);
	free(b.leaf);
	free(b.kids);
	if (err) {
		stack_tree__free(b.t);
		errno = -err;
		return NULL;
	}
	return b.t;
}

void stack_tree__free(struct stack_tree *t)
{
	if (!t)
		return;
	HASH_CLEAR(hh, t->node_idx);
	HASH_CLEAR(hh, t->name_idx);
	for (uint32_t i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	for (uint32_t i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t);
}

uint64_t stack_tree__total(const struct stack_tree *t)
{
	return node(t, 0)->total;
}

uint32_t stack_tree__depth(const struct stack_tree *t)
{
	return t->depth;
}

int stack_tree__walk(const struct stack_tree *t, stack_tree_fn fn, void *ctx)
{
	uint32_t cur = node(t, 0)->first_child;

	/* Iterative: stacks can be hundreds of frames deep. */
	while (cur) {
		const struct node *n = node(t, cur);
		const struct name_ent *name = t->names[n->key.name];
		struct stack_tree_frame f = {
		    .name = name->s,
		    .kind = name->kind,
		    .unknown = name->unknown,
		    .depth = n->depth,
		    .offset = n->offset,
		    .self = n->self,
		    .total = n->total,
		};
		int ret = fn(&f, ctx);

		if (ret < 0)
			return ret;
		if (ret == STACK_TREE_DESCEND && n->first_child) {
			cur = n->first_child;
			continue;
		}
		while (cur && !node(t, cur)->next_sibling)
			cur = node(t, cur)->key.parent;
		if (cur)
			cur = node(t, cur)->next_sibling;
	}
	return 0;
}

int out_file__open(struct out_file *of, const char *path)
{
	int fd = -1, err = 0;

	memset(of, 0, sizeof(*of));
	of->path = strdup(path);
	if (!of->path || asprintf(&of->tmp, "%s.tmp.%d", path, (int)getpid()) < 0) {
		of->tmp = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open(of->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	of->f = fdopen(fd, "w");
	if (!of->f) {
		err = -errno;
		goto cleanup;
	}
	return 0;

cleanup:
	if (fd >= 0) {
		close(fd);
		unlink(of->tmp);
	}
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
	return err;
}

int out_file__commit(struct out_file *of)
{
	int err = 0;

	if (fflush(of->f))
		err = -errno;
	else if (ferror(of->f))
		err = -EIO; /* an earlier write failed; errno is long gone */
	if (fclose(of->f) && !err)
		err = -errno;
	of->f = NULL;
	if (!err && rename(of->tmp, of->path))
		err = -errno;
	if (err)
		unlink(of->tmp);
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
	return err;
}

void out_file__abort(struct out_file *of)
{
	if (!of->f)
		return;
	fclose(of->f);
	unlink(of->tmp);
	free(of->tmp);
	free(of->path);
	memset(of, 0, sizeof(*of));
}

struct folded_ctx {
	FILE *f;
	const char **path; /* names from the process frame down to the current one */
};

static int folded__frame(const struct stack_tree_frame *fr, void *arg)
{
	struct folded_ctx *c = arg;

	c->path[fr->depth] = fr->name;
	if (!fr->self)
		return STACK_TREE_DESCEND;
	for (uint32_t d = 0; d <= fr->depth; d++) {
		fputs(c->path[d], c->f);
		fputc(d < fr->depth ? ';' : ' ', c->f);
	}
	fprintf(c->f, "%" PRIu64 "\n", fr->self);
	return ferror(c->f) ? -EIO : STACK_TREE_DESCEND;
}

int folded__write(const struct profile *p, const char *path)
{
	return folded__write_type(p, path, PROFILE_CPU);
}

int folded__write_type(const struct profile *p, const char *path, uint32_t type)
{
	struct out_file of = {0};
	struct folded_ctx c = {0};
	struct stack_tree *t = NULL;
	int err = 0;

	t = stack_tree__new_type(p, type);
	if (!t) {
		err = -errno;
		goto cleanup;
	}
	c.path = calloc(stack_tree__depth(t) + 1, sizeof(*c.path));
	if (!c.path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = out_file__open(&of, path);
	if (err)
		goto cleanup;
	c.f = of.f;
	err = stack_tree__walk(t, folded__frame, &c);
	if (err)
		goto cleanup;
	err = out_file__commit(&of);

cleanup:
	out_file__abort(&of);
	free(c.path);
	stack_tree__free(t);
	return err;
}
