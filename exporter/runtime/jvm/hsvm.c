// SPDX-License-Identifier: Apache-2.0
/*
 * hsvm: HotSpot's Serviceability Agent tables (vmStructs.cpp), read from a running JVM. See
 * hsvm.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/procmaps.h"
#include "runtime/jvm/hsvm.h"

enum hsvm_kind { HSVM_FIELD, HSVM_STATIC, HSVM_TYPE, HSVM_CONST };

struct hsvm_entry {
	char *type;  /* type name; the constant's name for HSVM_CONST */
	char *field; /* field name; NULL for types and constants */
	enum hsvm_kind kind;
	uint64_t value; /* offset, address, size, or the constant (two's complement) */
};

struct hsvm {
	struct hsvm_entry *e;
	size_t n, cap;
};

struct hsvm *hsvm__new(void)
{
	return calloc(1, sizeof(struct hsvm));
}

void hsvm__free(struct hsvm *vm)
{
	if (!vm)
		return;
	for (size_t i = 0; i < vm->n; i++) {
		free(vm->e[i].type);
		free(vm->e[i].field);
	}
	free(vm->e);
	free(vm);
}

static int add(struct hsvm *vm, const char *type, const char *field, enum hsvm_kind kind,
	       uint64_t value)
{
	struct hsvm_entry *e;

	if (vm->n >= 4 * (size_t)HSVM_MAX_ENTRIES)
		return -EINVAL;
	if (vm->n == vm->cap) {
		size_t cap = vm->cap ? 2 * vm->cap : 256;
		struct hsvm_entry *ne = realloc(vm->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		vm->e = ne;
		vm->cap = cap;
	}
	e = &vm->e[vm->n];
	e->type = strdup(type);
	e->field = field ? strdup(field) : NULL;
	if (!e->type || (field && !e->field)) {
		free(e->type);
		free(e->field);
		return -ENOMEM;
	}
	e->kind = kind;
	e->value = value;
	vm->n++;
	return 0;
}

int hsvm__add_field(struct hsvm *vm, const char *type, const char *field, bool is_static,
		    uint64_t offset_or_address)
{
	return add(vm, type, field, is_static ? HSVM_STATIC : HSVM_FIELD, offset_or_address);
}

int hsvm__add_type(struct hsvm *vm, const char *type, uint64_t size)
{
	return add(vm, type, NULL, HSVM_TYPE, size);
}

int hsvm__add_const(struct hsvm *vm, const char *name, int64_t value)
{
	return add(vm, name, NULL, HSVM_CONST, (uint64_t)value);
}

static const struct hsvm_entry *find(const struct hsvm *vm, enum hsvm_kind kind, const char *type,
				     const char *field)
{
	for (size_t i = 0; vm && i < vm->n; i++) {
		const struct hsvm_entry *e = &vm->e[i];

		if (e->kind == kind && !strcmp(e->type, type) &&
		    (!field || (e->field && !strcmp(e->field, field))))
			return e;
	}
	return NULL;
}

int hsvm__field(const struct hsvm *vm, const char *type, const char *field, uint64_t *offset)
{
	const struct hsvm_entry *e = find(vm, HSVM_FIELD, type, field);

	if (!e)
		return -ENOENT;
	*offset = e->value;
	return 0;
}

int hsvm__static(const struct hsvm *vm, const char *type, const char *field, uint64_t *addr)
{
	const struct hsvm_entry *e = find(vm, HSVM_STATIC, type, field);

	if (!e)
		return -ENOENT;
	*addr = e->value;
	return 0;
}

int hsvm__type_size(const struct hsvm *vm, const char *type, uint64_t *size)
{
	const struct hsvm_entry *e = find(vm, HSVM_TYPE, type, NULL);

	if (!e)
		return -ENOENT;
	*size = e->value;
	return 0;
}

int hsvm__const(const struct hsvm *vm, const char *name, int64_t *value)
{
	const struct hsvm_entry *e = find(vm, HSVM_CONST, name, NULL);

	if (!e)
		return -ENOENT;
	*value = (int64_t)e->value;
	return 0;
}

/* --- reading a live JVM ---------------------------------------------------------------------- */

struct reader {
	pid_t pid;
	uint64_t bias;
};

static int rd(const struct reader *r, uint64_t addr, void *buf, size_t len)
{
	return procmaps__read_mem((int)r->pid, addr, buf, len) ? -EFAULT : 0;
}

static int rd64(const struct reader *r, uint64_t addr, uint64_t *v)
{
	return rd(r, addr, v, sizeof(*v));
}

/* The uint64_t a libjvm symbol (st_value @vaddr) holds; -ENOENT for an absent symbol. */
static int sym64(const struct reader *r, uint64_t vaddr, uint64_t *v)
{
	if (!vaddr)
		return -ENOENT;
	return rd64(r, vaddr + r->bias, v);
}

/*
 * The C string at @addr into @buf (HSVM_MAX_NAME bytes): 1 read, 0 for a NULL pointer (the
 * table's end), -EFAULT unreadable, -EINVAL no NUL within HSVM_MAX_NAME bytes or empty.
 * Strings near the end of a mapping are read in two steps (up to the page's end first).
 */
static int rdstr(const struct reader *r, uint64_t addr, char *buf)
{
	size_t first = 4096 - (addr & 4095);

	if (!addr)
		return 0;
	if (first > HSVM_MAX_NAME)
		first = HSVM_MAX_NAME;
	if (rd(r, addr, buf, first))
		return -EFAULT;
	if (!memchr(buf, 0, first) && first < HSVM_MAX_NAME &&
	    rd(r, addr + first, buf + first, HSVM_MAX_NAME - first))
		return -EFAULT;
	if (!memchr(buf, 0, HSVM_MAX_NAME) || !buf[0])
		return -EINVAL;
	return 1;
}

/* Offsets within one entry, and its stride, checked to lie inside it. */
static int layout(const struct reader *r, const uint64_t *syms, uint64_t *vals, size_t n,
		  uint64_t stride_sym, uint64_t *stride)
{
	int err = sym64(r, stride_sym, stride);

	if (err)
		return err;
	if (!*stride || *stride > 4096)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		err = sym64(r, syms[i], &vals[i]);
		if (err)
			return err;
		if (vals[i] + 8 > *stride)
			return -EINVAL;
	}
	return 0;
}

static int read_structs(struct hsvm *vm, const struct reader *r, const struct hsvm_symbols *s)
{
	uint64_t syms[] = {s->structs_type_name, s->structs_field_name, s->structs_is_static,
			   s->structs_offset, s->structs_address};
	uint64_t off[5], stride, base, a, p;
	char type[HSVM_MAX_NAME], field[HSVM_MAX_NAME];
	uint32_t is_static;
	int err = layout(r, syms, off, 5, s->structs_stride, &stride);

	if (!err)
		err = sym64(r, s->structs, &base);
	if (err)
		return err;
	for (size_t i = 0; i < HSVM_MAX_ENTRIES; i++) {
		a = base + i * stride;
		if ((err = rd64(r, a + off[0], &p)) || (err = rdstr(r, p, type)) < 0)
			return err;
		if (!err)
			return 0; /* the NULL type name ends the table */
		if ((err = rd64(r, a + off[1], &p)) || (err = rdstr(r, p, field)) <= 0)
			return err ? err : -EINVAL;
		if (rd(r, a + off[2], &is_static, sizeof(is_static)) ||
		    rd64(r, a + off[is_static ? 4 : 3], &p))
			return -EFAULT;
		err = hsvm__add_field(vm, type, field, is_static != 0, p);
		if (err)
			return err;
	}
	return -EINVAL;
}

static int read_types(struct hsvm *vm, const struct reader *r, const struct hsvm_symbols *s)
{
	uint64_t syms[] = {s->types_type_name, s->types_size};
	uint64_t off[2], stride, base, a, p, size;
	char type[HSVM_MAX_NAME];
	int err = layout(r, syms, off, 2, s->types_stride, &stride);

	if (!err)
		err = sym64(r, s->types, &base);
	if (err)
		return err;
	for (size_t i = 0; i < HSVM_MAX_ENTRIES; i++) {
		a = base + i * stride;
		if ((err = rd64(r, a + off[0], &p)) || (err = rdstr(r, p, type)) < 0)
			return err;
		if (!err)
			return 0;
		if (rd64(r, a + off[1], &size))
			return -EFAULT;
		err = hsvm__add_type(vm, type, size);
		if (err)
			return err;
	}
	return -EINVAL;
}

/* @wide: the long constants (uint64_t values), else the int ones. */
static int read_consts(struct hsvm *vm, const struct reader *r, uint64_t table, uint64_t stride_sym,
		       uint64_t name_sym, uint64_t value_sym, bool wide)
{
	uint64_t syms[] = {name_sym, value_sym};
	uint64_t off[2], stride, base, a, p, v = 0;
	char name[HSVM_MAX_NAME];
	int32_t v32;
	int err = layout(r, syms, off, 2, stride_sym, &stride);

	if (!err)
		err = sym64(r, table, &base);
	if (err)
		return err;
	for (size_t i = 0; i < HSVM_MAX_ENTRIES; i++) {
		a = base + i * stride;
		if ((err = rd64(r, a + off[0], &p)) || (err = rdstr(r, p, name)) < 0)
			return err;
		if (!err)
			return 0;
		if (wide ? rd64(r, a + off[1], &v) : rd(r, a + off[1], &v32, sizeof(v32)))
			return -EFAULT;
		err = hsvm__add_const(vm, name, wide ? (int64_t)v : v32);
		if (err)
			return err;
	}
	return -EINVAL;
}

struct hsvm *hsvm__read(pid_t pid, uint64_t load_bias, const struct hsvm_symbols *sym, int *err)
{
	struct reader r = {.pid = pid, .bias = load_bias};
	struct hsvm *vm = hsvm__new();
	int e;

	if (!vm) {
		*err = -ENOMEM;
		return NULL;
	}
	e = read_structs(vm, &r, sym);
	if (!e)
		e = read_types(vm, &r, sym);
	if (!e)
		e = read_consts(vm, &r, sym->int_consts, sym->int_stride, sym->int_name,
				sym->int_value, false);
	if (!e)
		e = read_consts(vm, &r, sym->long_consts, sym->long_stride, sym->long_name,
				sym->long_value, true);
	if (e) {
		hsvm__free(vm);
		*err = e;
		return NULL;
	}
	return vm;
}
