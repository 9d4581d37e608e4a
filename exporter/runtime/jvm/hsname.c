// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/procmaps.h"
#include "runtime/jvm/hsname.h"

/* Entries of each cache (open addressing); a cache 3/4 full starts every cache over. */
#define METHOD_SLOTS 8192
#define NMETHOD_SLOTS 2048
#define FRAME_SLOTS 32768
/* Bytes of copied tables (line tables, PcDescs, scopes, metadata) the caches hold at most. */
#define MAX_CACHE_BYTES (64u << 20)
/* Headers read at most (sizeof of ConstMethod, ConstantPool, nmethod in the tables). */
#define MAX_HEADER 1024
/* A ConstMethod's whole size at most (bytecodes <= 64 KiB, plus its tables). */
#define MAX_CONST_METHOD (1u << 22)
/* Line-number table bytes kept per method at most (a longer one is read up to this). */
#define MAX_LINE_TABLE (1u << 16)
/* Constant pool entries at most (class files index them with a u2). */
#define MAX_POOL 65536
/* An nmethod's PcDescs, scopes data and metadata at most (bytes). */
#define MAX_PCS (1u << 20)
#define MAX_SCOPES (1u << 22)
#define MAX_METADATA (1u << 18)
/* The highest user-space address on x86-64 (47 bits). */
#define USER_TOP 0x800000000000ull
/* JVM_CONSTANT_Utf8 (the class file format's tag, kept in ConstantPool::_tags). */
#define TAG_UTF8 1

#define ERR(e) (-(1 + HSNAME_ERR_##e))

#define NAME_ERR(n, d) [HSNAME_ERR_##n] = #n,
static const char *const error_names[HSNAME_ERR_COUNT] = {HSNAME_ERRORS(NAME_ERR)};
#undef NAME_ERR

const char *hsname__error_name(enum hsname_error e)
{
	return (unsigned)e < HSNAME_ERR_COUNT ? error_names[e] : "?";
}

/* Offsets (bytes) resolved once from the tables; "absent" fields are flagged. */
struct layout {
	uint64_t method_const_method;
	uint64_t cm_size; /* sizeof(ConstMethod): the bytecodes follow */
	uint64_t cm_constants, cm_name_index, cm_code_size, cm_total_size, cm_flags;
	int cm_flags_bytes; /* 2 (JDK < 21) or 4 */
	uint32_t has_line_table;
	bool unsigned5; /* JDK 21+: UNSIGNED5 streams (byte 0 excluded) */
	uint64_t cp_size, cp_holder, cp_source_file, cp_length, cp_tags, array_u1_data;
	uint64_t klass_name, sym_length, sym_body;
	/* nmethods */
	uint64_t nm_size; /* bytes of nmethod header read */
	bool code_begin_ptr;
	uint64_t blob_code; /* CodeBlob::_code_begin (address) or _code_offset (int) */
	uint64_t nm_method, nm_compile_id;
	bool immutable; /* JDK 25: nmethod::_immutable_data, metadata in _mutable_data */
	bool scopes_data_ptr;
	/* CompiledMethod::_scopes_data_begin (address) or nmethod::_scopes_data_offset */
	uint64_t nm_scopes_data;
	uint64_t nm_scopes_pcs, nm_dependencies, nm_metadata;
	uint64_t nm_immutable_data, nm_immutable_size;
	uint64_t blob_mutable_data, blob_relocation_size, blob_mutable_size;
	uint64_t pc_desc_size, pc_offset, pc_scope;
};

/* A Method as read: its names, bytecode size and line-number table. */
struct minfo {
	char *klass, *name, *file;
	uint32_t code_size;
	uint8_t *lines; /* the compressed line-number table; NULL: none */
	uint32_t lines_len;
};

struct pcd {
	int32_t pc_offset, scope;
};

/* An nmethod as read: its method, code begin and debug information. */
struct nminfo {
	uint64_t method, code_begin;
	struct pcd *pcs; /* sorted by pc_offset, as HotSpot writes them */
	uint32_t n_pcs;
	uint8_t *scopes;
	uint32_t scopes_len;
	uint64_t *metadata;
	uint32_t n_metadata;
	/* the methods named so far: the nmethod's own, and per metadata entry (NULL: not yet) */
	struct minfo *own, **named;
};

struct frame {
	int n;
	struct hs_line lines[];
};

struct slot {
	uint64_t k[4];
	void *v; /* NULL: empty */
};

struct table {
	struct slot *slots;
	size_t cap, used;
};

struct hsname {
	pid_t pid;
	hsname_read_fn read;
	struct layout l;
	struct table methods, nmethods, frames;
	struct hs_line scratch[HSNAME_MAX_DEPTH]; /* answers not cached */
	bool leaf_near;
	size_t cache_bytes; /* copied tables held by the caches */
	struct hsname_stats stats;
};

/* --- caches ------------------------------------------------------------------------------ */

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

static size_t key_hash(const uint64_t k[4], size_t cap)
{
	return mix(k[0] ^ mix(k[1] ^ mix(k[2] ^ mix(k[3])))) & (cap - 1);
}

static void *table_get(const struct table *t, const uint64_t k[4])
{
	for (size_t i = key_hash(k, t->cap);; i = (i + 1) & (t->cap - 1)) {
		const struct slot *s = &t->slots[i];

		if (!s->v)
			return NULL;
		if (!memcmp(s->k, k, sizeof(s->k)))
			return s->v;
	}
}

static bool table_full(const struct table *t)
{
	return t->used + 1 > t->cap / 4 * 3;
}

/* Inserts @v under @k (absent, and the table not full). */
static void table_put(struct table *t, const uint64_t k[4], void *v)
{
	size_t i = key_hash(k, t->cap);

	while (t->slots[i].v)
		i = (i + 1) & (t->cap - 1);
	memcpy(t->slots[i].k, k, sizeof(t->slots[i].k));
	t->slots[i].v = v;
	t->used++;
}

static void minfo_free(struct minfo *m)
{
	free(m->klass);
	free(m->name);
	free(m->file);
	free(m->lines);
	free(m);
}

static void nminfo_free(struct nminfo *m)
{
	free(m->named);
	free(m->pcs);
	free(m->scopes);
	free(m->metadata);
	free(m);
}

/* Empties every cache: frames point to methods' strings, so all go at once. */
static void caches_clear(struct hsname *n)
{
	for (size_t i = 0; i < n->frames.cap; i++)
		free(n->frames.slots[i].v);
	for (size_t i = 0; i < n->methods.cap; i++)
		if (n->methods.slots[i].v)
			minfo_free(n->methods.slots[i].v);
	for (size_t i = 0; i < n->nmethods.cap; i++)
		if (n->nmethods.slots[i].v)
			nminfo_free(n->nmethods.slots[i].v);
	memset(n->frames.slots, 0, n->frames.cap * sizeof(struct slot));
	memset(n->methods.slots, 0, n->methods.cap * sizeof(struct slot));
	memset(n->nmethods.slots, 0, n->nmethods.cap * sizeof(struct slot));
	n->frames.used = n->methods.used = n->nmethods.used = 0;
	n->cache_bytes = 0;
}

/* Room for one more entry in each cache, starting over when one is full. */
static void caches_make_room(struct hsname *n)
{
	if (table_full(&n->frames) || table_full(&n->methods) || table_full(&n->nmethods) ||
	    n->cache_bytes > MAX_CACHE_BYTES)
		caches_clear(n);
}

/* --- layout ------------------------------------------------------------------------------ */

struct resolver {
	const struct hsvm *vm;
	const char *missing;
};

#define FIELD(r, type, field, out) field_of(r, type, field, type "::" field, out)

static bool field_of(struct resolver *r, const char *type, const char *field, const char *what,
		     uint64_t *out)
{
	if (!hsvm__field(r->vm, type, field, out))
		return true;
	if (!r->missing)
		r->missing = what;
	return false;
}

static bool has_field(const struct hsvm *vm, const char *type, const char *field, uint64_t *out)
{
	return !hsvm__field(vm, type, field, out);
}

static bool size_of(struct resolver *r, const char *type, uint64_t *out)
{
	if (!hsvm__type_size(r->vm, type, out) && *out && *out <= MAX_HEADER)
		return true;
	if (!r->missing)
		r->missing = type;
	return false;
}

static void resolve_methods(struct resolver *r, struct layout *l)
{
	const struct hsvm *vm = r->vm;
	int64_t bit;

	FIELD(r, "Method", "_constMethod", &l->method_const_method);
	size_of(r, "ConstMethod", &l->cm_size);
	FIELD(r, "ConstMethod", "_constants", &l->cm_constants);
	FIELD(r, "ConstMethod", "_name_index", &l->cm_name_index);
	FIELD(r, "ConstMethod", "_code_size", &l->cm_code_size);
	FIELD(r, "ConstMethod", "_constMethod_size", &l->cm_total_size);
	if (has_field(vm, "ConstMethod", "_flags._flags", &l->cm_flags)) {
		/* JDK 21+: ConstMethodFlags, and UNSIGNED5 streams (JDK 20 is not told apart) */
		l->cm_flags_bytes = 4;
		l->unsigned5 = true;
		if (hsvm__const(vm, "ConstMethodFlags::_misc_has_linenumber_table", &bit))
			bit = 1; /* bit 0 of ConstMethodFlags (constMethodFlags.hpp) */
	} else {
		FIELD(r, "ConstMethod", "_flags", &l->cm_flags);
		l->cm_flags_bytes = 2;
		if (hsvm__const(vm, "ConstMethod::_has_linenumber_table", &bit))
			bit = 1;
	}
	l->has_line_table = (uint32_t)bit;
	size_of(r, "ConstantPool", &l->cp_size);
	FIELD(r, "ConstantPool", "_pool_holder", &l->cp_holder);
	FIELD(r, "ConstantPool", "_source_file_name_index", &l->cp_source_file);
	FIELD(r, "ConstantPool", "_length", &l->cp_length);
	FIELD(r, "ConstantPool", "_tags", &l->cp_tags);
	if (!has_field(vm, "Array<u1>", "_data", &l->array_u1_data))
		l->array_u1_data = 4; /* int _length, then the bytes (utilities/array.hpp) */
	FIELD(r, "Klass", "_name", &l->klass_name);
	FIELD(r, "Symbol", "_length", &l->sym_length);
	if (!has_field(vm, "Symbol", "_body", &l->sym_body))
		FIELD(r, "Symbol", "_body[0]", &l->sym_body);
}

static void resolve_nmethods(struct resolver *r, struct layout *l)
{
	const struct hsvm *vm = r->vm;

	size_of(r, "nmethod", &l->nm_size);
	if (has_field(vm, "CodeBlob", "_code_begin", &l->blob_code))
		l->code_begin_ptr = true;
	else
		FIELD(r, "CodeBlob", "_code_offset", &l->blob_code);
	if (!has_field(vm, "CompiledMethod", "_method", &l->nm_method))
		FIELD(r, "nmethod", "_method", &l->nm_method);
	FIELD(r, "nmethod", "_compile_id", &l->nm_compile_id);
	FIELD(r, "nmethod", "_scopes_pcs_offset", &l->nm_scopes_pcs);
	if (has_field(vm, "nmethod", "_immutable_data", &l->nm_immutable_data)) {
		/* JDK 25 (code/nmethod.hpp): debug information in the immutable data */
		l->immutable = true;
		FIELD(r, "nmethod", "_immutable_data_size", &l->nm_immutable_size);
		FIELD(r, "nmethod", "_scopes_data_offset", &l->nm_scopes_data);
		FIELD(r, "CodeBlob", "_mutable_data", &l->blob_mutable_data);
		FIELD(r, "CodeBlob", "_relocation_size", &l->blob_relocation_size);
		FIELD(r, "CodeBlob", "_mutable_data_size", &l->blob_mutable_size);
	} else {
		if (has_field(vm, "CompiledMethod", "_scopes_data_begin", &l->nm_scopes_data))
			l->scopes_data_ptr = true;
		else
			FIELD(r, "nmethod", "_scopes_data_offset", &l->nm_scopes_data);
		FIELD(r, "nmethod", "_dependencies_offset", &l->nm_dependencies);
		FIELD(r, "nmethod", "_metadata_offset", &l->nm_metadata);
	}
	size_of(r, "PcDesc", &l->pc_desc_size);
	FIELD(r, "PcDesc", "_pc_offset", &l->pc_offset);
	FIELD(r, "PcDesc", "_scope_decode_offset", &l->pc_scope);
	/* the nmethod header read must hold every field used */
	if (l->code_begin_ptr && l->nm_size < 8)
		l->nm_size = 8;
}

static bool table_init(struct table *t, size_t cap)
{
	t->slots = calloc(cap, sizeof(*t->slots));
	t->cap = cap;
	t->used = 0;
	return t->slots != NULL;
}

struct hsname *hsname__new(pid_t pid, const struct hsvm *vm, const char **missing, int *err)
{
	struct resolver r = {.vm = vm};
	struct hsname *n = NULL;

	if (missing)
		*missing = NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		goto nomem;
	resolve_methods(&r, &n->l);
	resolve_nmethods(&r, &n->l);
	if (r.missing) {
		if (missing)
			*missing = r.missing;
		free(n);
		*err = -ENOENT;
		errno = ENOENT;
		return NULL;
	}
	if (!table_init(&n->methods, METHOD_SLOTS) || !table_init(&n->nmethods, NMETHOD_SLOTS) ||
	    !table_init(&n->frames, FRAME_SLOTS))
		goto nomem;
	n->pid = pid;
	n->read = procmaps__read_mem;
	return n;
nomem:
	hsname__free(n);
	*err = -ENOMEM;
	errno = ENOMEM;
	return NULL;
}

void hsname__free(struct hsname *n)
{
	if (!n)
		return;
	if (n->methods.slots && n->nmethods.slots && n->frames.slots)
		caches_clear(n);
	free(n->methods.slots);
	free(n->nmethods.slots);
	free(n->frames.slots);
	free(n);
}

void hsname__set_reader(struct hsname *n, hsname_read_fn read)
{
	n->read = read;
}

void hsname__set_leaf_near(struct hsname *n, bool on)
{
	if (n->leaf_near != on)
		caches_clear(n);
	n->leaf_near = on;
}

void hsname__stats(const struct hsname *n, struct hsname_stats *out)
{
	*out = n->stats;
}

/* --- memory ------------------------------------------------------------------------------ */

static bool user_addr(uint64_t a, uint64_t len)
{
	return a >= 4096 && a < USER_TOP && len <= USER_TOP - a;
}

static int rd(struct hsname *n, uint64_t addr, void *buf, size_t len)
{
	if (!user_addr(addr, len))
		return ERR(BAD);
	return n->read(n->pid, addr, buf, len) ? ERR(READ) : 0;
}

/* Little-endian unsigned value of @bytes bytes at @off of @buf (@size long); false past it. */
static bool get(const uint8_t *buf, size_t size, uint64_t off, int bytes, uint64_t *out)
{
	uint64_t v = 0;

	if (off > size || size - off < (size_t)bytes)
		return false;
	memcpy(&v, buf + off, bytes);
	*out = v;
	return true;
}

/* A Symbol's bytes as a C string (malloc'd) into *@out. */
static int read_symbol(struct hsname *n, uint64_t sym, char **out)
{
	uint8_t hdr[16];
	uint64_t len;
	char *s;
	int err;

	if (n->l.sym_length + 2 > sizeof(hdr))
		return ERR(BAD);
	err = rd(n, sym + n->l.sym_length, hdr, 2);
	if (err)
		return err;
	len = hdr[0] | (uint64_t)hdr[1] << 8;
	if (!len || len > HSNAME_MAX_NAME)
		return ERR(BAD);
	s = malloc(len + 1);
	if (!s)
		return ERR(BAD);
	err = rd(n, sym + n->l.sym_body, s, len);
	if (err) {
		free(s);
		return err;
	}
	s[len] = '\0';
	/* modified UTF-8 never holds a byte 0 (JVMS 4.4.7); nor do names hold controls */
	for (uint64_t i = 0; i < len; i++) {
		if ((uint8_t)s[i] < 0x20) {
			free(s);
			return ERR(BAD);
		}
	}
	*out = s;
	return 0;
}

/* A class's internal name printed as Class.getName() does: '/' as '.', and a hidden class's
 * "+0x..." suffix (InstanceKlass::external_name(), convert_hidden_name_to_java()) as "/0x...". */
static void external_class_name(char *s)
{
	char *plus = strrchr(s, '+');

	for (char *p = s; *p; p++)
		if (*p == '/')
			*p = '.';
	if (plus && plus[1] == '0' && plus[2] == 'x')
		*plus = '/';
}

/* The Symbol* at entry @index of pool @cp (header @hdr), a Utf8 entry. */
static int pool_symbol(struct hsname *n, uint64_t cp, const uint8_t *hdr, uint64_t index,
		       uint64_t *sym)
{
	uint64_t length, tags, tags_len;
	uint8_t tag;
	int err;

	if (!get(hdr, n->l.cp_size, n->l.cp_length, 4, &length) ||
	    !get(hdr, n->l.cp_size, n->l.cp_tags, 8, &tags))
		return ERR(BAD);
	if (!index || index >= length || length > MAX_POOL)
		return ERR(BAD);
	tags_len = 0;
	err = rd(n, tags, &tags_len, 4);
	if (!err && tags_len != length)
		return ERR(BAD);
	if (!err)
		err = rd(n, tags + n->l.array_u1_data + index, &tag, 1);
	if (!err && tag != TAG_UTF8)
		return ERR(BAD);
	if (!err)
		err = rd(n, cp + n->l.cp_size + index * 8, sym, 8);
	return err;
}

/* The method of ConstMethod @cm: names, bytecode size, line table. */
static int read_method(struct hsname *n, uint64_t cm, struct minfo **out)
{
	const struct layout *l = &n->l;
	uint8_t cmh[MAX_HEADER], cph[MAX_HEADER];
	uint64_t cp, name_index, code_size, total, flags, holder, src, kname, sym, end;
	struct minfo *m;
	int err;

	err = rd(n, cm, cmh, l->cm_size);
	if (err)
		return err;
	if (!get(cmh, l->cm_size, l->cm_constants, 8, &cp) ||
	    !get(cmh, l->cm_size, l->cm_name_index, 2, &name_index) ||
	    !get(cmh, l->cm_size, l->cm_code_size, 2, &code_size) ||
	    !get(cmh, l->cm_size, l->cm_total_size, 4, &total) ||
	    !get(cmh, l->cm_size, l->cm_flags, l->cm_flags_bytes, &flags))
		return ERR(BAD);
	/* _constMethod_size is in words and covers the header, the bytecodes and the tables */
	total = (uint32_t)total * 8ull;
	if (total > MAX_CONST_METHOD || total < l->cm_size + code_size)
		return ERR(BAD);
	err = rd(n, cp, cph, l->cp_size);
	if (err)
		return err;
	if (!get(cph, l->cp_size, l->cp_holder, 8, &holder) ||
	    !get(cph, l->cp_size, l->cp_source_file, 2, &src))
		return ERR(BAD);
	m = calloc(1, sizeof(*m));
	if (!m)
		return ERR(BAD);
	m->code_size = (uint32_t)code_size;
	err = pool_symbol(n, cp, cph, name_index, &sym);
	if (!err)
		err = read_symbol(n, sym, &m->name);
	if (!err)
		err = rd(n, holder + l->klass_name, &kname, 8);
	if (!err)
		err = read_symbol(n, kname, &m->klass);
	if (err)
		goto fail;
	external_class_name(m->klass);
	/* no source file (index 0) or one that does not read: "" */
	if (!src || pool_symbol(n, cp, cph, src, &sym) || read_symbol(n, sym, &m->file))
		m->file = strdup("");
	if (!m->file) {
		err = ERR(BAD);
		goto fail;
	}
	if (flags & l->has_line_table) {
		/* the table follows the bytecodes, inside the ConstMethod (constMethod.hpp) */
		end = total - l->cm_size - code_size;
		m->lines_len = end > MAX_LINE_TABLE ? MAX_LINE_TABLE : (uint32_t)end;
		m->lines = m->lines_len ? malloc(m->lines_len) : NULL;
		if (m->lines && rd(n, cm + l->cm_size + code_size, m->lines, m->lines_len)) {
			free(m->lines);
			m->lines = NULL;
		}
		if (!m->lines)
			m->lines_len = 0;
	}
	*out = m;
	return 0;
fail:
	minfo_free(m);
	return err;
}

/* The Method @method with _constMethod @cm, cached per (@method, low 32 bits of @cm). */
static int method_info(struct hsname *n, uint64_t method, uint64_t cm, struct minfo **out)
{
	uint64_t k[4] = {method, (uint32_t)cm, 0, 0};
	struct minfo *m = table_get(&n->methods, k);
	int err;

	if (m) {
		*out = m;
		return 0;
	}
	err = read_method(n, cm, &m);
	if (err)
		return err;
	table_put(&n->methods, k, m);
	n->cache_bytes += m->lines_len;
	*out = m;
	return 0;
}

/* --- streams (code/compressedStream.hpp, utilities/unsigned5.hpp) ------------------------- */

struct stream {
	const uint8_t *b;
	size_t len, pos;
	unsigned x; /* excluded low bytes: 1 for UNSIGNED5 (JDK 21+), 0 before */
};

static bool read_uint(struct stream *s, uint32_t *out)
{
	const uint32_t low = 256 - 64 - s->x; /* bytes below this end a number */
	uint32_t sum = 0;

	for (int i = 0, shift = 0; i < 5; i++, shift += 6) {
		uint32_t b;

		if (s->pos >= s->len)
			return false;
		b = s->b[s->pos++];
		if (b < s->x)
			return false;
		b -= s->x;
		sum += b << shift;
		if (b < low || i == 4) {
			*out = sum;
			return true;
		}
	}
	return false;
}

static bool read_sint(struct stream *s, int32_t *out)
{
	uint32_t v;

	if (!read_uint(s, &v))
		return false;
	*out = (int32_t)((v >> 1) ^ -(v & 1));
	return true;
}

/* Method::line_number_from_bci() over @m's table: 0 when unknown. */
static int line_of(const struct hsname *n, const struct minfo *m, int32_t bci)
{
	struct stream s = {.b = m->lines, .len = m->lines_len, .x = n->l.unsigned5};
	int32_t cur_bci = 0, cur_line = 0, best_bci = 0, best_line = 0;

	/* SynchronizationEntryBCI (-1, a method's entry) is bci 0's line, as HotSpot prints it */
	if (bci == -1)
		bci = 0;
	if (bci < 0 || (uint32_t)bci >= m->code_size)
		return 0;
	while (s.pos < s.len) {
		uint8_t b = s.b[s.pos++];
		int32_t db, dl;

		if (!b)
			break;
		if (b == 0xff) {
			if (!read_sint(&s, &db) || !read_sint(&s, &dl))
				break;
			cur_bci += db;
			cur_line += dl;
		} else {
			cur_bci += b >> 3;
			cur_line += b & 7;
		}
		if (cur_bci == bci)
			return cur_line > 0 ? cur_line : 0;
		if (cur_bci < bci && cur_bci >= best_bci) {
			best_bci = cur_bci;
			best_line = cur_line;
		}
	}
	return best_line > 0 ? best_line : 0;
}

/* --- answers ----------------------------------------------------------------------------- */

static void set_line(struct hs_line *out, const struct minfo *m, int line)
{
	out->klass = m->klass;
	out->method = m->name;
	out->file = m->file;
	out->line = line;
}

/* Keeps @cnt lines under @k and points *@out at them (the scratch lines when out of memory). */
static void answer(struct hsname *n, const uint64_t k[4], const struct hs_line *lines, int cnt,
		   struct hs_frame_name *out)
{
	struct frame *f = malloc(sizeof(*f) + cnt * sizeof(f->lines[0]));

	if (!f) {
		memmove(n->scratch, lines, cnt * sizeof(lines[0]));
		out->n = cnt;
		out->lines = n->scratch;
		return;
	}
	f->n = cnt;
	memcpy(f->lines, lines, cnt * sizeof(lines[0]));
	table_put(&n->frames, k, f);
	out->n = cnt;
	out->lines = f->lines;
}

static bool cached(struct hsname *n, const uint64_t k[4], struct hs_frame_name *out)
{
	const struct frame *f = table_get(&n->frames, k);

	if (!f)
		return false;
	n->stats.hits++;
	out->n = f->n;
	out->lines = f->lines;
	return true;
}

static int fail(struct hsname *n, int err)
{
	n->stats.errors[-err - 1]++;
	return err;
}

int hsname__interpreted(struct hsname *n, uint64_t method, uint32_t const_method_lo32,
			uint32_t bcp_offset, struct hs_frame_name *out)
{
	uint64_t k[4] = {1, method, const_method_lo32, bcp_offset},
		 mk[4] = {method, const_method_lo32};
	struct hs_line line;
	struct minfo *m;
	uint64_t cm;
	int err;

	if (cached(n, k, out))
		return 0;
	n->stats.misses++;
	caches_make_room(n);
	/* a method read with this fingerprint was proven then */
	m = table_get(&n->methods, mk);
	if (!m) {
		err = rd(n, method + n->l.method_const_method, &cm, sizeof(cm));
		if (err)
			return fail(n, err);
		if ((uint32_t)cm != const_method_lo32)
			return fail(n, ERR(STALE));
		err = method_info(n, method, cm, &m);
		if (err)
			return fail(n, err);
	}
	/* the bytecode pointer must lie in the bytecodes: ConstMethod + sizeof(ConstMethod);
	 * a native method has none, and its frame's bytecode pointer is 0 */
	if (m->code_size &&
	    (bcp_offset < n->l.cm_size || bcp_offset - n->l.cm_size >= m->code_size))
		return fail(n, ERR(STALE));
	set_line(&line, m, line_of(n, m, (int32_t)(bcp_offset - n->l.cm_size)));
	answer(n, k, &line, 1, out);
	return 0;
}

/* Reads the nmethod at @nm proven by @compile_id and @method_lo32 with its debug information. */
static int read_nmethod(struct hsname *n, uint64_t nm, uint32_t compile_id, uint32_t method_lo32,
			struct nminfo **out)
{
	const struct layout *l = &n->l;
	uint8_t h[MAX_HEADER];
	uint64_t id, method, code, pcs_off, pcs_end, data, data_end, meta, meta_end, base;
	uint64_t v, w, x;
	uint8_t *raw = NULL;
	struct nminfo *m;
	int err;

	err = rd(n, nm, h, l->nm_size);
	if (err)
		return err;
	if (!get(h, l->nm_size, l->nm_compile_id, 4, &id) ||
	    !get(h, l->nm_size, l->nm_method, 8, &method) ||
	    !get(h, l->nm_size, l->blob_code, l->code_begin_ptr ? 8 : 4, &code) ||
	    !get(h, l->nm_size, l->nm_scopes_pcs, 4, &pcs_off))
		return ERR(BAD);
	if ((uint32_t)id != compile_id || (uint32_t)method != method_lo32)
		return ERR(STALE);
	if (!l->code_begin_ptr)
		code = nm + (uint32_t)code;
	if (l->immutable) {
		/* nmethod.hpp: PcDescs [_scopes_pcs_offset, _scopes_data_offset) and scopes
		 * [_scopes_data_offset, _immutable_data_size) of _immutable_data; metadata after
		 * the relocations in _mutable_data */
		if (!get(h, l->nm_size, l->nm_immutable_data, 8, &base) ||
		    !get(h, l->nm_size, l->nm_immutable_size, 4, &v) ||
		    !get(h, l->nm_size, l->nm_scopes_data, 4, &data) ||
		    !get(h, l->nm_size, l->blob_mutable_data, 8, &meta) ||
		    !get(h, l->nm_size, l->blob_relocation_size, 4, &w) ||
		    !get(h, l->nm_size, l->blob_mutable_size, 4, &x))
			return ERR(BAD);
		pcs_end = base + (uint32_t)data;
		data_end = base + (uint32_t)v;
		data = base + (uint32_t)data;
		pcs_off = base + (uint32_t)pcs_off;
		meta_end = meta + (uint32_t)x;
		meta += (uint32_t)w;
	} else {
		/* nmethod.hpp (JDK 8-22): offsets from the nmethod's start; the scopes data runs
		 * from _scopes_data_begin to the PcDescs, the metadata up to the scopes data */
		if (!get(h, l->nm_size, l->nm_dependencies, 4, &v) ||
		    !get(h, l->nm_size, l->nm_metadata, 4, &w) ||
		    !get(h, l->nm_size, l->nm_scopes_data, l->scopes_data_ptr ? 8 : 4, &data))
			return ERR(BAD);
		if (!l->scopes_data_ptr)
			data = nm + (uint32_t)data;
		pcs_end = nm + (uint32_t)v;
		pcs_off = nm + (uint32_t)pcs_off;
		data_end = pcs_off;
		meta = nm + (uint32_t)w;
		meta_end = data;
	}
	if (pcs_end < pcs_off || pcs_end - pcs_off > MAX_PCS ||
	    (pcs_end - pcs_off) % l->pc_desc_size || data_end < data ||
	    data_end - data > MAX_SCOPES || meta_end < meta || meta_end - meta > MAX_METADATA ||
	    (meta_end - meta) % 8)
		return ERR(BAD);
	m = calloc(1, sizeof(*m));
	if (!m)
		return ERR(BAD);
	m->method = method;
	m->code_begin = code;
	m->n_pcs = (uint32_t)((pcs_end - pcs_off) / l->pc_desc_size);
	m->scopes_len = (uint32_t)(data_end - data);
	m->n_metadata = (uint32_t)((meta_end - meta) / 8);
	raw = malloc(pcs_end - pcs_off + 1);
	m->pcs = calloc(m->n_pcs + 1, sizeof(*m->pcs));
	m->scopes = malloc(m->scopes_len + 1);
	m->metadata = malloc(m->n_metadata * 8 + 1);
	m->named = calloc(m->n_metadata + 1, sizeof(*m->named));
	err = ERR(BAD);
	if (!raw || !m->pcs || !m->scopes || !m->metadata || !m->named)
		goto fail;
	err = rd(n, pcs_off, raw, pcs_end - pcs_off);
	if (!err && m->scopes_len)
		err = rd(n, data, m->scopes, m->scopes_len);
	if (!err && m->n_metadata)
		err = rd(n, meta, m->metadata, m->n_metadata * 8ull);
	if (err)
		goto fail;
	for (uint32_t i = 0; i < m->n_pcs; i++) {
		const uint8_t *p = raw + (size_t)i * l->pc_desc_size;

		if (!get(p, l->pc_desc_size, l->pc_offset, 4, &v) ||
		    !get(p, l->pc_desc_size, l->pc_scope, 4, &w)) {
			err = ERR(BAD);
			goto fail;
		}
		m->pcs[i].pc_offset = (int32_t)v;
		m->pcs[i].scope = (int32_t)w;
		/* sorted by pc (the first is a sentinel at -1): a binary search relies on it */
		if (i && m->pcs[i].pc_offset < m->pcs[i - 1].pc_offset) {
			err = ERR(BAD);
			goto fail;
		}
	}
	free(raw);
	*out = m;
	return 0;
fail:
	free(raw);
	nminfo_free(m);
	return err;
}

/* The PcDesc at @pc_offset exactly, or with @near the first after it (nmethod::pc_desc_near()
 * of @pc_offset + 1, as forte.cpp asks for a leaf), or NULL. */
static const struct pcd *find_pc(const struct nminfo *m, int64_t pc_offset, bool near)
{
	uint32_t lo = 0, hi = m->n_pcs;

	if (near)
		pc_offset++;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->pcs[mid].pc_offset < pc_offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->n_pcs && (near || m->pcs[lo].pc_offset == pc_offset))
		return &m->pcs[lo];
	return NULL;
}

/* The Method* @method with its current _constMethod, named. */
static int method_now(struct hsname *n, uint64_t method, struct minfo **out)
{
	uint64_t cm;
	int err = rd(n, method + n->l.method_const_method, &cm, sizeof(cm));

	return err ? err : method_info(n, method, cm, out);
}

/* The method of @m's metadata entry @index (1-based), 0: its own method; named once per
 * nmethod (a method redefined later keeps the names this nmethod was compiled from). */
static int nm_method(struct hsname *n, struct nminfo *m, uint32_t index, struct minfo **out)
{
	struct minfo **slot = index ? &m->named[index - 1] : &m->own;
	int err;

	if (!*slot) {
		err = method_now(n, index ? m->metadata[index - 1] : m->method, slot);
		if (err)
			return err;
	}
	*out = *slot;
	return 0;
}

/*
 * The scopes at decode offset @scope of @m (ScopeDesc::decode_body()), innermost first, into
 * @lines: their count, or a negative error (the chain did not decode, or did not end in the
 * nmethod's own method).
 */
static int decode_scopes(struct hsname *n, struct nminfo *m, int32_t scope, struct hs_line *lines)
{
	struct stream s = {.b = m->scopes, .len = m->scopes_len, .x = n->l.unsigned5};
	uint64_t method = 0;
	int cnt = 0;

	while (cnt < HSNAME_MAX_DEPTH) {
		uint32_t sender, index, bci;
		struct minfo *mi;
		int err;

		if (scope <= 0 || (uint32_t)scope >= s.len)
			return ERR(BAD);
		s.pos = (size_t)scope;
		if (!read_uint(&s, &sender) || !read_uint(&s, &index) || !read_uint(&s, &bci))
			return ERR(BAD);
		/* metadata indexes are 1-based (nmethod::metadata_at()); bci is stored + 1 */
		if (!index || index > m->n_metadata)
			return ERR(BAD);
		method = m->metadata[index - 1];
		err = nm_method(n, m, index, &mi);
		if (err)
			return err;
		set_line(&lines[cnt++], mi, line_of(n, mi, (int32_t)(bci - 1)));
		if (!sender)
			return method == m->method ? cnt : ERR(BAD);
		scope = (int32_t)sender;
	}
	return ERR(BAD);
}

int hsname__compiled(struct hsname *n, uint64_t nmethod, uint32_t compile_id, uint32_t method_lo32,
		     uint64_t pc, bool exact, struct hs_frame_name *out)
{
	uint64_t k[4] = {2 | (uint64_t)exact << 2, nmethod,
			 (uint64_t)compile_id << 32 | method_lo32, pc};
	uint64_t nk[4] = {nmethod, compile_id, method_lo32, 0};
	struct hs_line lines[HSNAME_MAX_DEPTH];
	const struct pcd *pd;
	struct nminfo *m;
	struct minfo *own;
	int err, cnt;

	if (cached(n, k, out))
		return 0;
	n->stats.misses++;
	caches_make_room(n);
	m = table_get(&n->nmethods, nk);
	if (!m) {
		err = read_nmethod(n, nmethod, compile_id, method_lo32, &m);
		if (err)
			return fail(n, err);
		table_put(&n->nmethods, nk, m);
		n->cache_bytes += m->n_pcs * sizeof(*m->pcs) + m->scopes_len + m->n_metadata * 8ull;
	}
	err = nm_method(n, m, 0, &own);
	if (err)
		return fail(n, err);
	/* a call's PcDesc sits at its return address; between PcDescs nothing is guessed,
	 * unless asked (hsname__set_leaf_near()) */
	pd = NULL;
	if (pc >= m->code_begin && pc - m->code_begin < (1ull << 31)) {
		int64_t off = (int64_t)(pc - m->code_begin);

		pd = find_pc(m, off, false);
		if (!pd && exact && n->leaf_near) {
			pd = find_pc(m, off, true);
			n->stats.near += pd != NULL;
		}
	}
	if (!pd && exact)
		n->stats.no_pc_desc++;
	else if (!pd)
		n->stats.bad_return++;
	cnt = pd && pd->scope ? decode_scopes(n, m, pd->scope, lines) : 0;
	if (cnt < 0)
		n->stats.scope_failed++;
	if (cnt <= 0) {
		set_line(&lines[0], own, 0);
		cnt = 1;
	}
	answer(n, k, lines, cnt, out);
	return 0;
}
