// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "runtime/v8/v8meta.h"
#include "symbols/elfcheck.h"

#define PREFIX "v8dbg_"

/* Where each wanted value goes: an int16 frame offset, a uint16 field, or a check only. */
enum kind { K_S16, K_U16, K_CHECK };

/*
 * A wanted value's name, without PREFIX: the symbol's whole name, or for a class field
 * ("class_<Class>__<field>__") its beginning, as the type that follows changed spelling
 * ("__String", "__Tagged_String_"); alternatives separated by '|', first found wins.
 */
struct want {
	const char *name;
	enum kind kind;
	size_t off;  /* in struct v8meta (K_S16, K_U16) */
	long expect; /* K_CHECK: the value the agent's layout requires */
	bool found;
	long value;
};

#define S16(n, f)                                                                                  \
	{                                                                                          \
		n, K_S16, offsetof(struct v8meta, f), 0, false, 0                                  \
	}
#define U16(n, f)                                                                                  \
	{                                                                                          \
		n, K_U16, offsetof(struct v8meta, f), 0, false, 0                                  \
	}
#define CHECK(n, v)                                                                                \
	{                                                                                          \
		n, K_CHECK, 0, v, false, 0                                                         \
	}

static const struct want wanted[] = {
    S16("off_fp_context", fp_context),
    S16("off_fp_function", fp_function),
    S16("off_fp_bytecode_array", fp_bytecode_array),
    S16("off_fp_bytecode_offset", fp_bytecode_offset),
    U16("class_HeapObject__map__", heap_object_map),
    U16("class_Map__instance_type__", map_instance_type),
    U16("class_JSFunction__shared__", jsfunction_shared),
    U16("class_SharedFunctionInfo__name_or_scope_info__", sfi_name_or_scope_info),
    /* "script" since V8 12 */
    U16("class_SharedFunctionInfo__script_or_debug_info__|class_SharedFunctionInfo__script__",
	sfi_script_or_debug_info),
    U16("class_Script__name__", script_name),
    U16("class_Script__line_ends__", script_line_ends),
    U16("class_String__length__", string_length),
    U16("class_SeqOneByteString__chars__", seq_one_byte_chars),
    U16("class_SeqTwoByteString__chars__", seq_two_byte_chars),
    U16("class_ConsString__first__", cons_first),
    U16("class_ConsString__second__", cons_second),
    U16("class_ThinString__actual__", thin_actual),
    U16("class_SlicedString__parent__", sliced_parent),
    U16("class_SlicedString__offset__", sliced_offset),
    U16("class_FixedArrayBase__length__", fixed_array_length),
    U16("class_FixedArray__data__", fixed_array_data),
    U16("scopeinfo_idx_first_vars", scope_info_first_vars),
    U16("scopeinfo_idx_ncontextlocals", scope_info_ncontext_locals),
    U16("type_JSFunction__JS_FUNCTION_TYPE", type_jsfunction_first),
    U16("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", type_sfi),
    U16("type_Script__SCRIPT_TYPE", type_script),
    U16("type_ScopeInfo__SCOPE_INFO_TYPE", type_scope_info),
    U16("type_BytecodeArray__BYTECODE_ARRAY_TYPE", type_bytecode_array),
    U16("type_FixedArray__FIXED_ARRAY_TYPE", type_fixed_array),
    U16("FirstNonstringType", first_nonstring_type),
    U16("StringRepresentationMask", string_representation_mask),
    U16("StringEncodingMask", string_encoding_mask),
    U16("SeqStringTag", seq_string_tag),
    U16("ConsStringTag", cons_string_tag),
    U16("ThinStringTag", thin_string_tag),
    U16("SlicedStringTag", sliced_string_tag),
    U16("OneByteStringTag", one_byte_string_tag),
    /* The layout bpf/v8.h reads: 8-byte tagged words, Smis in the upper half, tag 01. */
    CHECK("TaggedSize", 8),
    CHECK("SmiShiftSize", 31),
    CHECK("SmiValueShift", 1),
    CHECK("HeapObjectTag", 1),
    CHECK("HeapObjectTagMask", 3),
    CHECK("SmiTagMask", 1),
    CHECK("SmiTag", 0),
};

#define N_WANTED (sizeof(wanted) / sizeof(wanted[0]))
/* JSFunction subclasses looked for after JS_FUNCTION_TYPE at most. */
#define MAX_FUNCTION_SUBTYPES 32

struct scan {
	struct want w[N_WANTED];
	long next_type; /* smallest instance type above JS_FUNCTION_TYPE's seen (0: none yet) */
	long function_type;
	unsigned int n;
};

/* The int value of symbol @sym (4 bytes, or 0 when in .bss). 0 or -errno. */
static int symbol_value(Elf *elf, const GElf_Sym *sym, long *out)
{
	int32_t v = 0;
	int err;

	if (sym->st_size != sizeof(v))
		return -EINVAL;
	err = elfcheck__read_vaddr(elf, sym->st_value, &v, sizeof(v));
	if (err == -ENOENT) /* zero-initialised: in .bss */
		v = 0;
	else if (err)
		return err;
	*out = v;
	return 0;
}

/* Whether symbol name @name (without PREFIX) is one @want names (see struct want). */
static bool name_matches(const char *want, const char *name)
{
	while (*want) {
		const char *end = strchr(want, '|');
		size_t n = end ? (size_t)(end - want) : strlen(want);
		bool prefix = n > 2 && !strncmp(want, "class_", 6) && want[n - 1] == '_' &&
			      want[n - 2] == '_';

		if (!strncmp(name, want, n) && (prefix || !name[n]))
			return true;
		want += n + (end ? 1 : 0);
	}
	return false;
}

static int scan_table(Elf *elf, Elf_Scn *scn, struct scan *sc, bool types_only)
{
	struct elfcheck_symtab t;
	const char *name;
	GElf_Sym sym;
	long v;
	size_t i, k;

	if (!scn)
		return 0;
	if (elfcheck__symtab(scn, &t))
		return -EINVAL;
	for (i = 1; i < t.n; i++) {
		if (!gelf_getsym(t.data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
			continue;
		name = elf_strptr(elf, t.strndx, sym.st_name);
		if (!name || strncmp(name, PREFIX, sizeof(PREFIX) - 1))
			continue;
		name += sizeof(PREFIX) - 1;
		if (types_only) {
			if (!strncmp(name, "type_", 5) && !symbol_value(elf, &sym, &v) &&
			    v > sc->function_type && (!sc->next_type || v < sc->next_type))
				sc->next_type = v;
			continue;
		}
		sc->n++;
		for (k = 0; k < N_WANTED; k++) {
			if (sc->w[k].found || !name_matches(sc->w[k].name, name))
				continue;
			if (symbol_value(elf, &sym, &sc->w[k].value))
				return -EINVAL;
			sc->w[k].found = true;
		}
	}
	return 0;
}

int v8meta__read(Elf *elf, struct v8meta *out)
{
	Elf_Scn *dynsym, *symtab;
	struct scan sc = {0};
	size_t k;
	int err;

	memset(out, 0, sizeof(*out));
	if (!elf || elf_kind(elf) != ELF_K_ELF || elfcheck__sections(elf, &dynsym, &symtab, NULL))
		return -EINVAL;
	memcpy(sc.w, wanted, sizeof(wanted));
	err = scan_table(elf, dynsym, &sc, false);
	if (!err)
		err = scan_table(elf, symtab, &sc, false);
	if (err)
		return err;
	out->n_symbols = sc.n;
	if (!sc.n)
		return -ENOENT;
	for (k = 0; k < N_WANTED; k++) {
		const struct want *w = &sc.w[k];

		if (!w->found || (w->kind == K_CHECK && w->value != w->expect))
			return -ENOTSUP;
		if (w->kind == K_S16) {
			if (w->value < -4096 || w->value > 4096)
				return -ENOTSUP;
			*(int16_t *)((char *)out + w->off) = (int16_t)w->value;
		} else if (w->kind == K_U16) {
			if (w->value < 0 || w->value > 0xffff)
				return -ENOTSUP;
			*(uint16_t *)((char *)out + w->off) = (uint16_t)w->value;
		}
	}
	sc.function_type = out->type_jsfunction_first;
	err = scan_table(elf, dynsym, &sc, true);
	if (!err)
		err = scan_table(elf, symtab, &sc, true);
	if (err)
		return err;
	out->type_jsfunction_last = out->type_jsfunction_first;
	if (sc.next_type > sc.function_type)
		out->type_jsfunction_last =
		    (uint16_t)(sc.next_type - 1 < sc.function_type + MAX_FUNCTION_SUBTYPES
				   ? sc.next_type - 1
				   : sc.function_type + MAX_FUNCTION_SUBTYPES);
	/* Frame slots below the frame pointer, in whole words. */
	if (out->fp_context >= 0 || out->fp_function >= 0 || (out->fp_context & 7) ||
	    (out->fp_function & 7))
		return -ENOTSUP;
	return 0;
}
