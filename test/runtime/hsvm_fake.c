// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for exporter/runtime/jvm/hsvm.c's table (hsvm.h) in tests that build one by hand
 * (hsvm__new(), hsvm__add_*()): a list searched linearly. hsvm__read() is not provided.
 * Replaced by the real module once it is in the tree (drop this file and its line in hsname.mk).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/jvm/hsvm.h"

struct entry {
	char *type, *name; /* name NULL: a type size; type NULL: a constant */
	bool is_static;
	int64_t value;
};

struct hsvm {
	struct entry *e;
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
		free(vm->e[i].name);
	}
	free(vm->e);
	free(vm);
}

static int add(struct hsvm *vm, const char *type, const char *name, bool is_static, int64_t v)
{
	struct entry *e;

	if (vm->n == vm->cap) {
		size_t cap = vm->cap ? vm->cap * 2 : 64;
		struct entry *ne = realloc(vm->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		vm->e = ne;
		vm->cap = cap;
	}
	e = &vm->e[vm->n];
	e->type = type ? strdup(type) : NULL;
	e->name = name ? strdup(name) : NULL;
	if ((type && !e->type) || (name && !e->name)) {
		free(e->type);
		free(e->name);
		return -ENOMEM;
	}
	e->is_static = is_static;
	e->value = v;
	vm->n++;
	return 0;
}

int hsvm__add_field(struct hsvm *vm, const char *type, const char *field, bool is_static,
		    uint64_t offset_or_address)
{
	return add(vm, type, field, is_static, (int64_t)offset_or_address);
}

int hsvm__add_type(struct hsvm *vm, const char *type, uint64_t size)
{
	return add(vm, type, NULL, false, (int64_t)size);
}

int hsvm__add_const(struct hsvm *vm, const char *name, int64_t value)
{
	return add(vm, NULL, name, false, value);
}

static const struct entry *find(const struct hsvm *vm, const char *type, const char *name)
{
	for (size_t i = 0; i < vm->n; i++) {
		const struct entry *e = &vm->e[i];

		if (!e->type != !type || !e->name != !name)
			continue;
		if ((!type || !strcmp(e->type, type)) && (!name || !strcmp(e->name, name)))
			return e;
	}
	return NULL;
}

int hsvm__field(const struct hsvm *vm, const char *type, const char *field, uint64_t *offset)
{
	const struct entry *e = find(vm, type, field);

	if (!e || e->is_static)
		return -ENOENT;
	*offset = (uint64_t)e->value;
	return 0;
}

int hsvm__static(const struct hsvm *vm, const char *type, const char *field, uint64_t *addr)
{
	const struct entry *e = find(vm, type, field);

	if (!e || !e->is_static)
		return -ENOENT;
	*addr = (uint64_t)e->value;
	return 0;
}

int hsvm__type_size(const struct hsvm *vm, const char *type, uint64_t *size)
{
	const struct entry *e = find(vm, type, NULL);

	if (!e)
		return -ENOENT;
	*size = (uint64_t)e->value;
	return 0;
}

int hsvm__const(const struct hsvm *vm, const char *name, int64_t *value)
{
	const struct entry *e = find(vm, NULL, name);

	if (!e)
		return -ENOENT;
	*value = e->value;
	return 0;
}
