// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "python.h"
#include "runtime/python/pyproc.h"

/* Bounds of the walks: no real interpreter comes near them; garbage (a cycle) stops there. */
#define MAX_INTERPRETERS 64	 /* subinterpreters of one process */
#define MAX_THREADS 4096	 /* thread states of one interpreter */
#define MAX_STRING 4096		 /* characters of a name or file name */
#define MAX_LINETABLE (1u << 20) /* bytes of one line table */
#define MAX_CODES (1u << 16)	 /* cached code objects per process: then the cache restarts */

struct code_entry {
	uint64_t code; /* 0: free slot */
	/* What the names were read from: checked again once per epoch. */
	uint64_t type, name, qualname, filename, linetable;
	uint64_t name_hash; /* co_name's cached hash */
	uint64_t file_key;  /* pywalk__str_key() of co_filename (0: the version is used) */
	uint32_t version;   /* co_version (0: none); with one of these and firstlineno, the
			     * frame's fingerprint (pywalk__code_key()) */
	uint64_t refcnt;    /* ob_refcnt as read (not part of the identity) */
	int32_t firstlineno, firsttraceable;
	uint64_t epoch;
	struct pycode_info info;
	char *qualname_s, *filename_s;
	uint8_t *table;
	size_t table_len;
};

struct pyproc {
	pid_t pid;
	char *path;
	struct pyelf_info elf;
	struct pylayout layout;
	uint64_t bias, runtime;
	uint64_t code_type, unicode_type, bytes_type; /* runtime addresses; 0: unknown */
	struct code_entry *codes;		      /* open addressing, power-of-two size */
	size_t codes_cap, codes_n;
	uint64_t epoch;
	/* 3.13-3.14: the process has had a second interpreter (sticky): code objects' versions may
	 * repeat, the BPF walk is to key frames by their contents; desc_changed: the descriptor
	 * written before says otherwise (pyproc__desc_changed()). */
	bool many_interpreters, desc_changed;
	struct pyproc_stats stats;
};

static const char *const error_names[] = {
#define PYPROC_NAME(n, d) #n,
    PYPROC_ERRORS(PYPROC_NAME)
#undef PYPROC_NAME
};
static const char *const error_descs[] = {
#define PYPROC_DESC(n, d) d,
    PYPROC_ERRORS(PYPROC_DESC)
#undef PYPROC_DESC
};

const char *pyproc__lower_name(const char *name, char *cache, size_t size)
{
	size_t i;

	if (!cache[0]) {
		for (i = 0; name[i] && i + 1 < size; i++)
			cache[i] =
			    name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] | 0x20) : name[i];
	}
	return cache;
}

const char *pyproc__error_name(enum pyproc_error e)
{
	static char lower[PYPROC_ERR_COUNT][16];

	if ((unsigned int)e >= PYPROC_ERR_COUNT)
		return "?";
	return pyproc__lower_name(error_names[e], lower[e], sizeof(lower[e]));
}

const char *pyproc__error_desc(enum pyproc_error e)
{
	return (unsigned int)e < PYPROC_ERR_COUNT ? error_descs[e] : "?";
}

static int count(struct pyproc *p, enum pyproc_error e, int err)
{
	p->stats.errors[e]++;
	return err;
}

/* Reads process memory; counts and returns -ESRCH (gone) or -EFAULT (anything else). */
static int rd(struct pyproc *p, uint64_t addr, void *buf, size_t len)
{
	int err;

	if (!addr)
		return count(p, PYPROC_ERR_READ, -EFAULT);
	err = procmaps__read_mem(p->pid, addr, buf, len);
	if (!err)
		return 0;
	if (err == -ESRCH)
		return count(p, PYPROC_ERR_GONE, -ESRCH);
	return count(p, PYPROC_ERR_READ, -EFAULT);
}

static uint64_t u64(const uint8_t *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int32_t i32(const uint8_t *b, uint32_t off)
{
	int32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/*
 * Whether the process has only ever had its main interpreter: _PyRuntime.interpreters.next_id
 * is 1 (3.13-3.14: each interpreter made takes the next id, and none gives its id back). Sticky
 * once not: the process's code objects' versions (one counter per interpreter) may repeat from then
 * on, and its descriptor must tell the BPF walk to key frames by their contents instead.
 * Unreadable counts as not. Always true where versions are process-wide or unused.
 */
static bool one_interpreter(struct pyproc *p)
{
	int64_t next_id = 0;
	uint64_t at;

	if (!p->layout.runtime_interpreters_next_id)
		return true;
	if (p->many_interpreters)
		return false;
	at = p->runtime + p->layout.runtime_interpreters_next_id;
	if (!rd(p, at, &next_id, sizeof(next_id)) && next_id == 1)
		return true;
	p->many_interpreters = true;
	p->desc_changed = true;
	return false;
}

/* --- attaching ------------------------------------------------------------------------- */

static bool python_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return strstr(base ? base + 1 : path, "python") != NULL;
}

/*
 * The file of mapping @m, inspected as @p->elf: its load bias from the mapping of the file with
 * the lowest offset among @maps, and its path. 0, -EINVAL (no PT_LOAD holds a mapping), -ENOMEM.
 */
static int place_file(struct pyproc *p, const struct procmaps *maps, const struct procmap *m)
{
	const struct procmap *first = NULL;
	size_t i;

	for (i = 0; i < maps->n; i++) {
		const struct procmap *o = &maps->maps[i];

		if (o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor && (!first || o->offset < first->offset))
			first = o;
	}
	if (!first || pyelf__load_bias(&p->elf, first->start, first->offset, &p->bias))
		return -EINVAL;
	p->path = strdup(m->path);
	return p->path ? 0 : -ENOMEM;
}

int pyproc__inspect_file(pid_t pid, const struct procmap *m, struct pyelf_info *info)
{
	Elf *elf;
	int fd, err;

	fd = procmaps__open_file(pid, m, NULL, 0);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf ? pyelf__inspect(elf, m->path, info) : -EINVAL;
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/* Inspects the file of mapping @m; 0 when it is CPython (fills @p->elf, bias, path). */
static int try_mapping(struct pyproc *p, const struct procmaps *maps, const struct procmap *m)
{
	int err = pyproc__inspect_file(p->pid, m, &p->elf);

	if (err && err != -ENOTSUP)
		return err;
	return place_file(p, maps, m) ?: err;
}

/* Finds the interpreter's file among @maps: "python" names first, then the executable. */
static int find_interpreter(struct pyproc *p, const struct procmaps *maps)
{
	const struct procmap *m;
	uint64_t last_ino = 0;
	int pass, err, res = -ENOENT;
	size_t i;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < maps->n; i++) {
			m = &maps->maps[i];
			if (!m->inode || m->path[0] != '/' || m->inode == last_ino)
				continue;
			/* Pass 0: "python" names; pass 1: the executable (mapped first). */
			if (pass == 0 && !python_name(m->path))
				continue;
			if (pass == 1 && i > 0)
				break;
			last_ino = m->inode;
			err = try_mapping(p, maps, m);
			if (!err || err == -ENOTSUP)
				return err;
			if (err == -ESRCH)
				return err;
			if (err != -ENOENT)
				res = err; /* remembered; another file may still answer */
		}
	}
	return res;
}

static int load_layout(struct pyproc *p, char *why, size_t why_len)
{
	uint8_t buf[PYLAYOUT_DEBUG_OFFSETS_SIZE];
	int err;

	p->runtime = p->bias + p->elf.runtime_vaddr;
	/* 3.13+ (or a version the file does not say) answers from the process itself. */
	if (!p->elf.version_source || p->elf.minor >= 13) {
		err = procmaps__read_mem(p->pid, p->runtime, buf, sizeof(buf));
		if (err)
			return err == -ESRCH ? -ESRCH : -EFAULT;
		err = pylayout__from_debug_offsets(buf, sizeof(buf), &p->layout);
		if (err == -ENOTSUP && why)
			snprintf(why, why_len,
				 "CPython %u.%u (%s): its _Py_DebugOffsets layout is not known to "
				 "this spanprof (3.13 and 3.14 are); native frames only",
				 (unsigned int)(u64(buf, 8) >> 24),
				 (unsigned int)(u64(buf, 8) >> 16) & 0xff, p->path);
		else if (err && why)
			snprintf(
			    why, why_len,
			    "%s: CPython without a valid _Py_DebugOffsets at _PyRuntime; native "
			    "frames only",
			    p->path);
		return err;
	}
	p->layout.version_hex = 0;
	err = pylayout__for_version(p->elf.major, p->elf.minor, &p->layout);
	if (err) {
		if (why)
			snprintf(why, why_len,
				 "CPython %u.%u (%s) is not supported (3.8 and later "
				 "are); native frames only",
				 p->elf.major, p->elf.minor, p->path);
		return err;
	}
	p->layout.version_hex = p->elf.version_hex;
	return 0;
}

/*
 * pyproc__new() and pyproc__new_in_file(): the interpreter in the file of @m (inspected into
 * @info with result @inspected), or, @m NULL, the one find_interpreter() finds in @maps (NULL:
 * read here).
 */
static struct pyproc *new_pyproc(pid_t pid, const struct procmaps *known, const struct procmap *m,
				 const struct pyelf_info *info, int inspected, char *why,
				 size_t why_len)
{
	struct procmaps maps = {0};
	struct pyproc *p;
	int err;

	if (why && why_len)
		why[0] = '\0';
	elf_version(EV_CURRENT);
	p = calloc(1, sizeof(*p));
	if (!p) {
		err = -ENOMEM;
		goto cleanup;
	}
	p->pid = pid;
	p->epoch = 1;
	if (!known) {
		err = procmaps__read(pid, &maps);
		if (err) {
			err = err == -ENOENT ? -ESRCH : err;
			goto cleanup;
		}
		known = &maps;
	}
	if (m) {
		p->elf = *info;
		err = inspected && inspected != -ENOTSUP ? inspected : place_file(p, known, m);
		if (!err)
			err = inspected;
	} else {
		err = find_interpreter(p, known);
	}
	if (err == -ENOTSUP && why)
		snprintf(why, why_len,
			 "%s: CPython of an unknown version (no Py_Version, no version in the "
			 "file name); native frames only",
			 p->path ? p->path : "?");
	if (err)
		goto cleanup;
	err = load_layout(p, why, why_len);
	if (err)
		goto cleanup;
	p->code_type = p->bias + p->elf.code_type_vaddr;
	p->unicode_type = p->elf.unicode_type_vaddr ? p->bias + p->elf.unicode_type_vaddr : 0;
	p->bytes_type = p->elf.bytes_type_vaddr ? p->bias + p->elf.bytes_type_vaddr : 0;
	one_interpreter(p); /* the first descriptor says whether versions can be used */
	p->desc_changed = false;
cleanup:
	procmaps__clear(&maps);
	if (err) {
		pyproc__free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

struct pyproc *pyproc__new(pid_t pid, char *why, size_t why_len)
{
	return new_pyproc(pid, NULL, NULL, NULL, 0, why, why_len);
}

struct pyproc *pyproc__new_in_file(pid_t pid, const struct procmaps *maps, const struct procmap *m,
				   const struct pyelf_info *info, int inspected, char *why,
				   size_t why_len)
{
	if (!maps || !m || !info) {
		errno = EINVAL;
		return NULL;
	}
	return new_pyproc(pid, maps, m, info, inspected, why, why_len);
}

static void entry_clear(struct code_entry *e)
{
	free(e->qualname_s);
	free(e->filename_s);
	free(e->table);
	memset(e, 0, sizeof(*e));
}

void pyproc__free(struct pyproc *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->codes_cap; i++)
		entry_clear(&p->codes[i]);
	free(p->codes);
	free(p->path);
	free(p);
}

const struct pylayout *pyproc__layout(const struct pyproc *p)
{
	return &p->layout;
}

const struct pyelf_info *pyproc__elf(const struct pyproc *p)
{
	return &p->elf;
}

uint64_t pyproc__runtime(const struct pyproc *p)
{
	return p->runtime;
}

uint64_t pyproc__bias(const struct pyproc *p)
{
	return p->bias;
}

const char *pyproc__path(const struct pyproc *p)
{
	return p->path;
}

const struct pyproc_stats *pyproc__stats(const struct pyproc *p)
{
	return &p->stats;
}

void pyproc__new_epoch(struct pyproc *p)
{
	p->epoch++;
}

bool pyproc__desc_changed(struct pyproc *p)
{
	bool changed = p->desc_changed;

	p->desc_changed = false;
	return changed;
}

bool pycode__fingerprint_matches(const struct pycode_info *ci, uint32_t fingerprint)
{
	return fingerprint == ci->content_fingerprint ||
	       (ci->version_unique && fingerprint == ci->fingerprint);
}

/* --- objects ------------------------------------------------------------------------------ */

/* Appends code point @c as UTF-8 (surrogates, which UTF-8 cannot hold, as U+FFFD). */
static size_t put_utf8(char *o, uint32_t c)
{
	if (c >= 0xd800 && c <= 0xdfff)
		c = 0xfffd;
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | c >> 12);
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	o[0] = (char)(0xf0 | c >> 18);
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * The header of the str at @addr (PyASCIIObject, Include/cpython/unicodeobject.h): its type
 * (ob_type), length in characters and state bits. 0, or a negative errno.
 */
static int read_str_header(struct pyproc *p, uint64_t addr, uint64_t *type, int64_t *length,
			   uint32_t *state)
{
	const struct pylayout *l = &p->layout;
	uint8_t hdr[64];
	int err;

	/* The layout was checked to fit (pylayout.c); checked again before a read into @hdr. */
	if (l->unicode_state + 4 > sizeof(hdr) || l->unicode_length + 8 > sizeof(hdr) ||
	    l->object_type + 8 > sizeof(hdr))
		return -EINVAL;
	err = rd(p, addr, hdr, l->unicode_state + 4);
	if (err)
		return err;
	*type = u64(hdr, l->object_type);
	memcpy(length, hdr + l->unicode_length, sizeof(*length));
	memcpy(state, hdr + l->unicode_state, sizeof(*state));
	return 0;
}

/*
 * A str object (PEP 393 compact form; Include/cpython/unicodeobject.h: state bits interned:2,
 * kind:3, compact:1, ascii:1) as a new UTF-8 string, or NULL with *@err set.
 */
static char *read_str(struct pyproc *p, uint64_t addr, int *err)
{
	const struct pylayout *l = &p->layout;
	uint32_t state, kind, i;
	uint64_t data, type;
	int64_t len;
	uint8_t *raw = NULL;
	char *s = NULL, *o;

	*err = read_str_header(p, addr, &type, &len, &state);
	if (*err)
		return NULL;
	if (p->unicode_type && type != p->unicode_type) {
		*err = count(p, PYPROC_ERR_TYPE, -EINVAL);
		return NULL;
	}
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || len < 0 ||
	    len > MAX_STRING || (((state >> 6) & 1) && kind != 1)) {
		*err = count(p, PYPROC_ERR_STRING, -EINVAL);
		return NULL;
	}
	data = addr + (((state >> 6) & 1) ? l->unicode_ascii_size : l->unicode_compact_size);
	raw = malloc((size_t)len * kind + 1);
	s = malloc((size_t)len * 4 + 1);
	if (!raw || !s) {
		*err = -ENOMEM;
		goto fail;
	}
	*err = len ? rd(p, data, raw, (size_t)len * kind) : 0;
	if (*err)
		goto fail;
	o = s;
	for (i = 0; i < (uint32_t)len; i++) {
		uint32_t c = kind == 1	 ? raw[i]
			     : kind == 2 ? ((const uint16_t *)raw)[i]
					 : ((const uint32_t *)raw)[i];

		o += put_utf8(o, c);
	}
	*o = '\0';
	free(raw);
	return s;
fail:
	free(raw);
	free(s);
	return NULL;
}

/* A bytes object's contents (Include/cpython/bytesobject.h), or NULL with *@err set. */
static uint8_t *read_bytes(struct pyproc *p, uint64_t addr, size_t *len, int *err)
{
	const struct pylayout *l = &p->layout;
	uint8_t hdr[64], *b;
	int64_t n;

	if (l->bytes_size + 8 > sizeof(hdr) || l->object_type + 8 > sizeof(hdr)) {
		*err = -EINVAL;
		return NULL;
	}
	*err = rd(p, addr, hdr, l->bytes_size + 8);
	if (*err)
		return NULL;
	if (p->bytes_type && u64(hdr, l->object_type) != p->bytes_type) {
		*err = count(p, PYPROC_ERR_TYPE, -EINVAL);
		return NULL;
	}
	memcpy(&n, hdr + l->bytes_size, sizeof(n));
	if (n < 0 || n > MAX_LINETABLE) {
		*err = count(p, PYPROC_ERR_LINETABLE, -EINVAL);
		return NULL;
	}
	b = malloc(n ? (size_t)n : 1);
	if (!b) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = n ? rd(p, addr + l->bytes_sval, b, (size_t)n) : 0;
	if (*err) {
		free(b);
		return NULL;
	}
	*len = (size_t)n;
	return b;
}

/*
 * Where a str caches its hash: PyASCIIObject {PyObject_HEAD; Py_ssize_t length; Py_hash_t hash;
 * ...} (Include/cpython/unicodeobject.h, 3.3 through 3.14, GIL builds).
 */
static uint32_t unicode_hash(const struct pylayout *l)
{
	return l->unicode_length + 8;
}

/* Reads the fields of code object @code into @e (identity only, no strings). */
static int read_code_identity(struct pyproc *p, uint64_t code, struct code_entry *e)
{
	const struct pylayout *l = &p->layout;
	uint8_t buf[512];
	int err;

	if (l->code_read > sizeof(buf))
		return -EINVAL;
	err = rd(p, code, buf, l->code_read);
	if (err)
		return err;
	e->refcnt = u64(buf, 0); /* PyObject_HEAD starts with ob_refcnt (GIL builds) */
	e->type = u64(buf, l->object_type);
	if (e->type != p->code_type)
		return count(p, PYPROC_ERR_TYPE, -EINVAL);
	e->name = u64(buf, l->code_name);
	e->qualname = l->code_qualname ? u64(buf, l->code_qualname) : e->name;
	e->filename = u64(buf, l->code_filename);
	e->linetable = u64(buf, l->code_linetable);
	e->firstlineno = i32(buf, l->code_firstlineno);
	e->firsttraceable = l->code_firsttraceable ? i32(buf, l->code_firsttraceable) : 0;
	e->version = l->code_version ? (uint32_t)i32(buf, l->code_version) : 0;
	err = rd(p, e->name + unicode_hash(l), &e->name_hash, sizeof(e->name_hash));
	/* Where versions are per interpreter, the contents' key too: the walk may have used it. */
	if (err || (e->version && !l->runtime_interpreters_next_id))
		return err;
	/* Without a version, the file's contents too, keyed as the BPF walk keys them. */
	{
		uint8_t str[PYWALK_STR_BUF + 8] = {0};
		uint32_t state, data_off, nbytes;
		uint64_t type;
		int64_t length;

		err = read_str_header(p, e->filename, &type, &length, &state);
		if (err)
			return err;
		/* One the walk cannot key: its frames are refused (they could be another's). */
		if (pywalk__str_layout((uint64_t)length, state, l->unicode_ascii_size,
				       l->unicode_compact_size, &data_off, &nbytes))
			return count(p, PYPROC_ERR_STRING, -EINVAL);
		err = nbytes ? rd(p, e->filename + data_off, str, nbytes) : 0;
		if (err)
			return err;
		e->file_key = pywalk__str_key(str, 0, nbytes, (uint64_t)length, state);
	}
	return 0;
}

/*
 * Whether @e was read from a live object. Freeing an object leaves its fields in place but
 * for the first word, which the allocator takes for its free list (pymalloc: the next free
 * block or NULL; glibc: the next chunk, and the type with its key): a count of 0 or one past
 * 2^32 is no live object's (immortal ones, 3.12+, count 2^30 to 3 * 2^30).
 */
static bool alive(const struct code_entry *e)
{
	return e->refcnt && e->refcnt < (1ull << 32);
}

static bool same_identity(const struct code_entry *a, const struct code_entry *b)
{
	return a->type == b->type && a->name == b->name && a->name_hash == b->name_hash &&
	       a->file_key == b->file_key && a->version == b->version &&
	       a->qualname == b->qualname && a->filename == b->filename &&
	       a->linetable == b->linetable && a->firstlineno == b->firstlineno &&
	       a->firsttraceable == b->firsttraceable;
}

/* Names @e (identity already read) from the process. */
static int name_code(struct pyproc *p, struct code_entry *e)
{
	int err;

	e->qualname_s = read_str(p, e->qualname, &err);
	if (!e->qualname_s)
		return err;
	e->filename_s = read_str(p, e->filename, &err);
	if (!e->filename_s)
		return err;
	e->table = read_bytes(p, e->linetable, &e->table_len, &err);
	if (!e->table)
		return err;
	e->info.qualname = e->qualname_s;
	e->info.filename = e->filename_s;
	e->info.firstlineno = e->firstlineno;
	e->info.version = e->version;
	e->info.fingerprint = pywalk__fingerprint(
	    pywalk__code_key(e->version, e->name_hash, e->file_key), (uint32_t)e->firstlineno);
	e->info.content_fingerprint =
	    e->version && !p->layout.runtime_interpreters_next_id
		? e->info.fingerprint /* 3.12: the walk never keys contents when there is one */
		: pywalk__fingerprint(pywalk__code_key(0, e->name_hash, e->file_key),
				      (uint32_t)e->firstlineno);
	return 0;
}

static size_t slot_of(uint64_t code, size_t cap)
{
	/* Objects are 16-byte aligned: mix the higher bits in (Fibonacci hashing). */
	return (size_t)((code >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static int grow(struct pyproc *p)
{
	size_t cap = p->codes_cap ? p->codes_cap * 2 : 256, i, j;
	struct code_entry *n;

	if (p->codes_n >= MAX_CODES) { /* bounded memory: start over */
		for (i = 0; i < p->codes_cap; i++)
			entry_clear(&p->codes[i]);
		p->codes_n = 0;
		return 0;
	}
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (i = 0; i < p->codes_cap; i++) {
		if (!p->codes[i].code)
			continue;
		for (j = slot_of(p->codes[i].code, cap); n[j].code; j = (j + 1) & (cap - 1))
			;
		n[j] = p->codes[i];
	}
	free(p->codes);
	p->codes = n;
	p->codes_cap = cap;
	return 0;
}

/* @code's entry, or the free slot where it would go (the table has a free slot). */
static struct code_entry *find_slot(struct pyproc *p, uint64_t code)
{
	size_t i;

	for (i = slot_of(code, p->codes_cap); p->codes[i].code; i = (i + 1) & (p->codes_cap - 1))
		if (p->codes[i].code == code)
			break;
	return &p->codes[i];
}

static int lookup(struct pyproc *p, uint64_t code, struct code_entry **out)
{
	struct code_entry fresh = {0}, *e;
	int err;

	if (!code)
		return count(p, PYPROC_ERR_TYPE, -EINVAL);
	e = p->codes_cap ? find_slot(p, code) : NULL;
	/* Room made only for a new entry: a hit never moves the entries (pointers into them,
	 * pycode_info, stay valid while the same code objects are asked for). */
	if (!e || (!e->code && (p->codes_n + 1) * 10 > p->codes_cap * 7)) {
		err = grow(p);
		if (err)
			return err;
		e = find_slot(p, code);
	}
	if (e->code && e->epoch == p->epoch) {
		p->stats.code_hits++;
		*out = e;
		return 0;
	}
	err = read_code_identity(p, code, &fresh);
	/* After the object's read: then no other interpreter had made it or its predecessor
	 * (once per read; the check of an unchanged identity after naming needs none). */
	if (!err)
		fresh.info.version_unique = fresh.version && one_interpreter(p);
	/*
	 * The process exited: its last samples are named from the cache as it was (no code object
	 * can be freed any more; one freed between such a sample and the exit is the limit).
	 */
	if (err == -ESRCH && e->code) {
		p->stats.code_hits++;
		*out = e;
		return 0;
	}
	if (err)
		return err;
	if (e->code && same_identity(e, &fresh)) {
		e->epoch = p->epoch;
		e->info.version_unique = fresh.info.version_unique;
		p->stats.code_hits++;
		*out = e;
		return 0;
	}
	if (e->code) {
		count(p, PYPROC_ERR_STALE, 0);
		entry_clear(e);
		p->codes_n--;
	}
	/*
	 * A freed code object keeps its fields, but the memory of its names and line table may hold
	 * other objects by now (another function's line table read as this one's: wrong lines).
	 * Named only while alive: before the reads and after them, unchanged.
	 */
	if (!alive(&fresh))
		return count(p, PYPROC_ERR_TYPE, -EINVAL);
	p->stats.code_misses++;
	fresh.code = code;
	fresh.epoch = p->epoch;
	err = name_code(p, &fresh);
	if (!err) {
		struct code_entry again = {0};

		err = read_code_identity(p, code, &again);
		if (!err && (!alive(&again) || !same_identity(&fresh, &again)))
			err = count(p, PYPROC_ERR_STALE, -ESTALE);
	}
	if (err) {
		entry_clear(&fresh);
		return err;
	}
	*e = fresh;
	p->codes_n++;
	*out = e;
	return 0;
}

int pyproc__code(struct pyproc *p, uint64_t code, const struct pycode_info **out)
{
	struct code_entry *e;
	int err = lookup(p, code, &e);

	if (err)
		return err;
	*out = &e->info;
	return 0;
}

int pyproc__line(struct pyproc *p, uint64_t code, int64_t offset)
{
	struct code_entry *e;
	int err = lookup(p, code, &e), line;

	if (err)
		return err;
	line = pylines__addr2line(p->layout.lines, e->table, e->table_len, e->firstlineno, offset);
	if (line == -EINVAL)
		count(p, PYPROC_ERR_LINETABLE, 0);
	return line;
}

/* --- threads and frames ------------------------------------------------------------------ */

/*
 * One frame at @addr: @code and @offset of a Python frame, @prev the next frame out. *@skip
 * true for frames CPython itself does not list (3.12+ C-stack entry frames, 3.11+ frames not
 * started yet). 0, or an error (the walk ends).
 */
static int read_frame(struct pyproc *p, uint64_t addr, uint64_t *code, int64_t *offset,
		      uint64_t *prev, bool *skip)
{
	const struct pylayout *l = &p->layout;
	struct code_entry *e;
	uint8_t buf[256];
	uint64_t instr;
	uint8_t owner;
	int32_t lasti;
	int err;

	*skip = false;
	if (l->frame_read > sizeof(buf))
		return -EINVAL;
	err = rd(p, addr, buf, l->frame_read);
	if (err)
		return err;
	*prev = u64(buf, l->frame_previous);
	*code = u64(buf, l->frame_code);
	if (l->frame_code_tag) {
		/* 3.14's _PyStackRef: a tagged int is no code object; else the tag bits off. */
		if ((*code & l->frame_code_tag) == l->frame_code_tag)
			return -EINVAL;
		*code &= ~(uint64_t)l->frame_code_tag;
	}
	if (!l->interpreter_frames) {
		lasti = i32(buf, l->frame_instr);
		*offset = lasti < 0				  ? -1
			  : l->instr_kind == PYLAYOUT_LASTI_UNITS ? (int64_t)lasti * 2
								  : lasti;
		return lookup(p, *code, &e);
	}
	owner = buf[l->frame_owner];
	if (l->owner_cstack != PYLAYOUT_NO_OWNER && owner == l->owner_cstack) {
		*skip = true;
		return 0;
	}
	err = lookup(p, *code, &e);
	if (err)
		return err;
	instr = u64(buf, l->frame_instr);
	*offset = (int64_t)(instr - (*code + l->code_adaptive));
	/* prev_instr starts one code unit before the first instruction. */
	if (*offset < 0)
		*offset = -1;
	/* _PyFrame_IsIncomplete (Include/internal/pycore_frame.h, 3.11-3.12). */
	if (l->code_firsttraceable && owner != l->owner_generator &&
	    *offset < (int64_t)e->firsttraceable * 2)
		*skip = true;
	return 0;
}

static int walk_frames(struct pyproc *p, uint64_t frame, struct pythread *t)
{
	uint64_t code, prev;
	int64_t offset;
	bool skip;
	size_t i;
	int err;

	t->frames = calloc(PYPROC_MAX_FRAMES, sizeof(*t->frames));
	if (!t->frames)
		return -ENOMEM;
	for (i = 0; frame && i < PYPROC_MAX_FRAMES * 2; i++) {
		err = read_frame(p, frame, &code, &offset, &prev, &skip);
		if (err) {
			t->truncated = 1;
			return err == -ESRCH || err == -ENOMEM ? err : 0;
		}
		if (!skip) {
			if (t->n_frames == PYPROC_MAX_FRAMES) {
				t->truncated = 1;
				return 0;
			}
			t->frames[t->n_frames].code = code;
			t->frames[t->n_frames].offset = offset;
			t->n_frames++;
		}
		frame = prev;
	}
	if (frame) {
		t->truncated = 1;
		count(p, PYPROC_ERR_LOOP, 0);
	}
	return 0;
}

static int read_thread(struct pyproc *p, uint64_t tstate, struct pythread *t, uint64_t *next)
{
	const struct pylayout *l = &p->layout;
	uint8_t buf[512];
	uint64_t frame;
	int err;

	if (l->tstate_read > sizeof(buf))
		return -EINVAL;
	err = rd(p, tstate, buf, l->tstate_read);
	if (err)
		return err;
	*next = u64(buf, l->tstate_next);
	t->tstate = tstate;
	t->thread_id = u64(buf, l->tstate_thread_id);
	t->native_thread_id = l->tstate_native_thread_id ? u64(buf, l->tstate_native_thread_id) : 0;
	frame = u64(buf, l->tstate_frame);
	if (l->tstate_frame_kind == PYLAYOUT_TSTATE_CFRAME && frame) {
		err = rd(p, frame + l->cframe_current_frame, &frame, sizeof(frame));
		if (err)
			return err;
	}
	return walk_frames(p, frame, t);
}

void pyproc__threads_free(struct pythread *t, size_t n)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < n; i++)
		free(t[i].frames);
	free(t);
}

int pyproc__threads(struct pyproc *p, struct pythread **out, size_t *n)
{
	const struct pylayout *l = &p->layout;
	struct pythread *t = NULL, *nt;
	uint64_t interp, tstate, next;
	size_t cap = 0, used = 0;
	int i, j, err;

	*out = NULL;
	*n = 0;
	err = rd(p, p->runtime + l->runtime_interpreters_head, &interp, sizeof(interp));
	if (err)
		return err;
	for (i = 0; interp && i < MAX_INTERPRETERS; i++) {
		err = rd(p, interp + l->interp_threads_head, &tstate, sizeof(tstate));
		if (err)
			goto fail;
		for (j = 0; tstate && j < MAX_THREADS; j++) {
			if (used == cap) {
				cap = cap ? cap * 2 : 16;
				nt = realloc(t, cap * sizeof(*t));
				if (!nt) {
					err = -ENOMEM;
					goto fail;
				}
				t = nt;
			}
			memset(&t[used], 0, sizeof(t[used]));
			err = read_thread(p, tstate, &t[used], &next);
			used++;
			if (err == -ESRCH || err == -ENOMEM)
				goto fail;
			if (err) /* this thread state unreadable: the list cannot go on */
				break;
			tstate = next;
		}
		if (tstate && j == MAX_THREADS)
			count(p, PYPROC_ERR_LOOP, 0);
		err = rd(p, interp + l->interp_next, &interp, sizeof(interp));
		if (err)
			goto fail;
	}
	if (interp)
		count(p, PYPROC_ERR_LOOP, 0);
	*out = t;
	*n = used;
	return 0;
fail:
	pyproc__threads_free(t, used);
	return err;
}

/* --- the BPF walk's descriptor ---------------------------------------------------------------- */

_Static_assert(PYLAYOUT_NO_OWNER == PY_NO_OWNER, "one 'no owner' value on both sides");

static bool set16(__u16 *dst, uint32_t v)
{
	*dst = (__u16)v;
	return v <= 0xffff;
}

int pyproc__code_dealloc(struct pyproc *p, uint64_t *addr)
{
	/* PyVarObject: the object header up to ob_type, ob_type, ob_size. */
	uint32_t hdr = p->layout.object_type + 16;
	uint8_t type[64], name[5];
	int err;

	if (hdr + 32 > sizeof(type))
		return -EINVAL;
	err = rd(p, p->code_type, type, hdr + 32);
	if (!err)
		err = rd(p, u64(type, hdr), name, sizeof(name));
	if (err)
		return err;
	if (memcmp(name, "code", sizeof(name)))
		return -EINVAL;
	*addr = u64(type, hdr + 24);
	return *addr ? 0 : -EINVAL;
}

int pyproc__desc(const struct pyproc *p, struct py_desc *out)
{
	const struct pylayout *l = &p->layout;
	bool ok = true;

	memset(out, 0, sizeof(*out));
	out->interp_head_addr = p->runtime + l->runtime_interpreters_head;
	out->code_type = p->code_type;
	ok &= set16(&out->interp_next, l->interp_next);
	ok &= set16(&out->interp_threads_head, l->interp_threads_head);
	ok &= set16(&out->tstate_prev, l->tstate_prev);
	ok &= set16(&out->tstate_next, l->tstate_next);
	ok &= set16(&out->tstate_interp, l->tstate_interp);
	ok &= set16(&out->tstate_thread_id, l->tstate_thread_id);
	ok &= set16(&out->tstate_native_thread_id, l->tstate_native_thread_id);
	ok &= set16(&out->tstate_frame, l->tstate_frame);
	ok &= set16(&out->cframe_current_frame, l->cframe_current_frame);
	ok &= set16(&out->frame_previous, l->frame_previous);
	ok &= set16(&out->frame_code, l->frame_code);
	ok &= set16(&out->frame_instr, l->frame_instr);
	ok &= set16(&out->frame_owner, l->frame_owner);
	ok &= set16(&out->frame_is_entry, l->frame_is_entry);
	ok &= set16(&out->object_type, l->object_type);
	ok &= set16(&out->code_firsttraceable, l->code_firsttraceable);
	ok &= set16(&out->code_adaptive, l->code_adaptive);
	ok &= set16(&out->code_name, l->code_name);
	ok &= set16(&out->unicode_hash, unicode_hash(l));
	ok &= set16(&out->code_firstlineno, l->code_firstlineno);
	/* Versions per interpreter, and more than one interpreter: contents only. */
	ok &= set16(&out->code_version, p->many_interpreters ? 0 : l->code_version);
	ok &= set16(&out->code_filename, l->code_filename);
	ok &= set16(&out->unicode_length, l->unicode_length);
	ok &= set16(&out->unicode_state, l->unicode_state);
	out->unicode_ascii_size = (__u8)l->unicode_ascii_size;
	out->unicode_compact_size = (__u8)l->unicode_compact_size;
	ok &= l->unicode_ascii_size <= 0xff && l->unicode_compact_size <= 0xff;
	out->tstate_frame_kind =
	    l->tstate_frame_kind == PYLAYOUT_TSTATE_CFRAME ? PY_TSTATE_CFRAME : PY_TSTATE_FRAME;
	out->instr_kind = l->instr_kind == PYLAYOUT_LASTI_BYTES	  ? PY_INSTR_LASTI_BYTES
			  : l->instr_kind == PYLAYOUT_LASTI_UNITS ? PY_INSTR_LASTI_UNITS
								  : PY_INSTR_PTR;
	out->interpreter_frames = l->interpreter_frames ? 1 : 0;
	out->has_native_thread_id = l->tstate_native_thread_id ? 1 : 0;
	out->owner_generator = l->owner_generator;
	out->owner_cstack = l->owner_cstack;
	out->frame_code_tag = (__u8)l->frame_code_tag;
	ok &= l->frame_code_tag <= 7;
	return ok ? 0 : -EINVAL;
}
