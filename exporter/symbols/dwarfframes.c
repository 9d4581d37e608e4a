// SPDX-License-Identifier: Apache-2.0
/*
 * dwarfframes: DWARF (libdw) to frames -- unit and function indexes, inline chains, names, line
 * tables (dwarfframes.h). Format: DWARF 5 sections 2.17, 3.3.8 and 6.2.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "symbols/dwarfframes.h"
#include "symbols/elfcheck.h"
#include "symbols/symcache.h"

/* Namespaces/classes nest shallowly; the bound guards against DWARF loops. */
#define MAX_DIE_DEPTH 32

/*
 * What libdw keeps per line table row once a CU's line table is read in the Dwarf handle of a
 * loaded object (struct Dwarf_Line_s and its share of the array, in its memory blocks, until
 * dwarf_end(): about 82 bytes a row with elfutils 0.188, measured with mallinfo2() on libpython's
 * ceval.c units), plus the file table. Only when a unit's lines could not be copied out
 * (read_unit_lines()).
 */
#define LINE_BYTES 80
#define LINE_FILE_BYTES 64

static int range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int func_cmp(const void *a, const void *b)
{
	const struct func_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Address ranges of every compile unit, and the extent of its DIEs (up to the next unit's, of
 * any type), read through @dw (a handle on o->dwarf_elf); .debug_aranges is not used because
 * clang omits it.
 */
int symc_index_cus(struct elf_object *o, Dwarf *dw)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	Dwarf_Addr base, lo, hi;
	Dwarf_Off die_off;
	ptrdiff_t off;
	size_t cap_cus = 0, cap_ranges = 0;
	GElf_Shdr info;
	uint64_t info_size =
	    elfcheck__section(o->dwarf_elf, ".debug_info", &info) ? info.sh_size : 0;
	void *p;

	o->nunits = 0;
	while (dwarf_get_units(dw, cu, &next, &version, &unit_type, &cudie, &subdie) == 0) {
		cu = next;
		o->nunits++;
		die_off = dwarf_dieoffset(&cudie);
		/* The unit before ends where this one's DIEs start (less this one's header). */
		if (o->ncus && !o->cus[o->ncus - 1].unit_bytes && die_off > o->cus[o->ncus - 1].off)
			o->cus[o->ncus - 1].unit_bytes = die_off - o->cus[o->ncus - 1].off;
		if (unit_type != DW_UT_compile)
			continue;
		if (o->ncus == cap_cus) {
			cap_cus = cap_cus ? 2 * cap_cus : 64;
			p = realloc(o->cus, cap_cus * sizeof(*o->cus));
			if (!p)
				return -ENOMEM;
			o->cus = p;
		}
		memset(&o->cus[o->ncus], 0, sizeof(o->cus[0]));
		o->cus[o->ncus].die = cudie;
		o->cus[o->ncus].off = die_off;
		o->cus[o->ncus].unit_no = o->nunits - 1;
		/* A DIE of another handle than the object's is found again by offset. */
		o->cus[o->ncus].die_ok = dw == o->dwarf;
		off = 0;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (o->ncu_ranges == cap_ranges) {
				cap_ranges = cap_ranges ? 2 * cap_ranges : 64;
				p = realloc(o->cu_ranges, cap_ranges * sizeof(*o->cu_ranges));
				if (!p)
					return -ENOMEM;
				o->cu_ranges = p;
			}
			o->cu_ranges[o->ncu_ranges++] = (struct cu_range){lo, hi, o->ncus};
		}
		o->ncus++;
	}
	if (o->ncus && !o->cus[o->ncus - 1].unit_bytes && info_size > o->cus[o->ncus - 1].off)
		o->cus[o->ncus - 1].unit_bytes = info_size - o->cus[o->ncus - 1].off;
	if (o->ncu_ranges)
		qsort(o->cu_ranges, o->ncu_ranges, sizeof(*o->cu_ranges), range_cmp);
	symc_charge_index(o, cap_cus * sizeof(*o->cus) + cap_ranges * sizeof(*o->cu_ranges));
	return 0;
}

static int add_func(struct cu_info *cu, size_t *cap, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	void *p;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (cu->nfuncs == *cap) {
			*cap = *cap ? 2 * *cap : 32;
			p = realloc(cu->funcs, *cap * sizeof(*cu->funcs));
			if (!p)
				return -ENOMEM;
			cu->funcs = p;
		}
		cu->funcs[cu->nfuncs++] = (struct func_range){lo, hi, dwarf_dieoffset(die)};
	}
	return 0;
}

/* Collects concrete subprograms at CU level and inside namespaces and classes. */
static int index_funcs_in(struct cu_info *cu, size_t *cap, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;
	int tag, err;

	if (depth > MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram) {
			err = add_func(cu, cap, &child);
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
			   tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
			   tag == DW_TAG_module) {
			err = index_funcs_in(cu, cap, &child, depth + 1);
		} else {
			err = 0;
		}
		if (err)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static struct func_range *find_func(struct elf_object *o, struct cu_info *cu, uint64_t pc)
{
	size_t lo = 0, hi, mid, cap = 0;
	struct func_range *f;

	if (!cu->indexed) {
		cu->indexed = true;
		if (index_funcs_in(cu, &cap, &cu->die, 0)) {
			free(cu->funcs);
			cu->funcs = NULL;
			cu->nfuncs = 0;
		} else if (cu->nfuncs) {
			qsort(cu->funcs, cu->nfuncs, sizeof(*cu->funcs), func_cmp);
			symc_charge_index(o, cap * sizeof(*cu->funcs));
		}
	}
	/* No functions (funcs may be NULL: even NULL + 0 is undefined). */
	if (!cu->nfuncs)
		return NULL;
	hi = cu->nfuncs;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cu->funcs[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges of distinct functions do not nest; look back a little for overlaps. */
	for (f = cu->funcs + lo; f > cu->funcs && lo - (size_t)(f - cu->funcs) < 8; f--)
		if (pc < f[-1].hi)
			return &f[-1];
	return NULL;
}

static struct cu_info *find_cu(struct elf_object *o, uint64_t pc)
{
	size_t lo = 0, hi = o->ncu_ranges, mid, i;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (o->cu_ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* CU ranges overlap only with odd producers (LTO); a few steps back are enough. */
	for (i = lo; i > 0 && lo - i < 8; i--) {
		struct cu_info *cu = &o->cus[o->cu_ranges[i - 1].cu];

		if (pc >= o->cu_ranges[i - 1].hi)
			continue;
		/* Indexed before a re-load: its DIE again, in this Dwarf handle. */
		if (!cu->die_ok && (!o->dwarf || !dwarf_offdie(o->dwarf, cu->off, &cu->die)))
			return NULL;
		cu->die_ok = true;
		/* libdw found it reading every unit before it in turn: their records stay. */
		if (cu->unit_no >= o->units_found) {
			symc_charge_dwarf(o,
					  (cu->unit_no + 1 - o->units_found) * UNIT_RECORD_BYTES);
			o->units_found = cu->unit_no + 1;
		}
		return cu;
	}
	return NULL;
}

static bool has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/*
 * Finds the child of @parent holding @pc that is an inlined subroutine or a
 * lexical block; blocks without addresses are looked through.
 */
static bool find_scope_child(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *out, int depth)
{
	Dwarf_Die child;
	int tag;

	if (depth > MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return false;
	do {
		tag = dwarf_tag(&child);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block &&
		    tag != DW_TAG_try_block && tag != DW_TAG_catch_block)
			continue;
		if (dwarf_haspc(&child, pc) > 0) {
			*out = child;
			return true;
		}
		if (tag == DW_TAG_lexical_block && !has_pc_attrs(&child) &&
		    find_scope_child(&child, pc, out, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* chain[0] = the subprogram, then each inlined subroutine down to the innermost. */
static int inline_chain(Dwarf_Die *func, uint64_t pc, Dwarf_Die *chain, int max)
{
	Dwarf_Die cur = *func, next;
	int n = 0, depth;

	chain[n++] = cur;
	for (depth = 0; depth < 4 * MAX_FRAMES && find_scope_child(&cur, pc, &next, 0); depth++) {
		if (dwarf_tag(&next) == DW_TAG_inlined_subroutine) {
			if (n == max)
				break;
			chain[n++] = next;
		}
		cur = next;
	}
	return n;
}

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		return dwarf_formstring(&attr);
	return NULL;
}

static bool is_cxx(Dwarf_Die *cudie)
{
	int lang = dwarf_srclang(cudie);

	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* Appends @s (at most @n bytes) to @buf of @cap bytes holding *@len; false when it is full. */
static bool append(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > cap)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = 0;
	return true;
}

/* True when scopes[@i] of @n is inside a function (lexical blocks between them are looked through).
 */
static bool in_function(Dwarf_Die *scopes, int i, int n)
{
	int tag;

	for (i++; i < n; i++) {
		tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			return true;
		if (tag != DW_TAG_lexical_block)
			return false;
	}
	return false;
}

/*
 * The C++ name of @die qualified by its enclosing scopes, as c++filt writes scopes, when DWARF
 * gives the function no linkage name (gcc omits it for lambdas' operator() and functions only
 * ever inlined): namespaces ("(anonymous namespace)"), classes with their template arguments,
 * and enclosing functions (their demangled linkage name, for lambdas and local classes). A
 * lambda's unnamed closure class is written "{lambda}": c++filt's "{lambda(ARGS)#N}" needs the
 * mangled closure type, which DWARF does not give. Scopes are those of the declaration
 * (DW_AT_specification) of the abstract instance (DW_AT_abstract_origin): DWARF 5 sections 3.3.8
 * and 2.13.2. @name itself when no scope is known, or on ENOMEM. Cached by declaration.
 */
static const char *scoped_name(struct elf_object *o, Dwarf_Die *die, const char *name)
{
	Dwarf_Die decl = *die, ref, *scopes = NULL;
	Dwarf_Attribute attr;
	struct scope_name *sn;
	char buf[4096];
	size_t len = 0;
	const char *res = name;
	Dwarf_Off off;
	int i, n;

	for (i = 0; i < MAX_DIE_DEPTH; i++) {
		if (!dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr), &ref) &&
		    !dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr), &ref))
			break;
		decl = ref;
	}
	off = dwarf_dieoffset(&decl);
	HASH_FIND(hh, o->scope_names, &off, sizeof(off), sn);
	if (sn)
		return sn->name;
	n = dwarf_getscopes_die(&decl, &scopes);
	buf[0] = 0;
	/* scopes[0] is the DIE itself, scopes[n - 1] its compile unit. */
	for (i = n - 2; i >= 1; i--) {
		const char *sname = dwarf_diename(&scopes[i]), *linkage;
		int tag = dwarf_tag(&scopes[i]);
		bool ok = true;

		if (tag == DW_TAG_namespace) {
			sname = sname ? sname : "(anonymous namespace)";
			ok = append(buf, sizeof(buf), &len, sname, strlen(sname));
		} else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
			   tag == DW_TAG_union_type) {
			/*
			 * gcc and clang leave a lambda's closure type unnamed: the unnamed class
			 * holding the operator() named here, inside a function.
			 */
			if (!sname)
				sname = i == 1 && !strcmp(name, "operator()") &&
						in_function(scopes, i, n)
					    ? "{lambda}"
					    : "{unnamed type}";
			ok = append(buf, sizeof(buf), &len, sname, strlen(sname));
		} else if (tag == DW_TAG_subprogram) {
			linkage = die_linkage_name(&scopes[i]);
			sname = linkage ? symc_demangle(o, linkage) : sname;
			if (!sname)
				break;
			ok = append(buf, sizeof(buf), &len, sname, strlen(sname));
		} else {
			continue; /* lexical blocks and the like name nothing */
		}
		if (!ok || !append(buf, sizeof(buf), &len, "::", 2)) {
			len = 0; /* too long: the plain name rather than a cut one */
			break;
		}
	}
	free(scopes);
	/* Interned even unscoped: the cache outlives libdw's strings (symc_drop_dwarf()). */
	if (len && append(buf, sizeof(buf), &len, name, strlen(name)))
		res = symc_intern(o, buf);
	else
		res = symc_intern(o, name);
	if (!res)
		return name;
	sn = malloc(sizeof(*sn));
	if (sn) {
		sn->off = off;
		sn->name = res;
		hash_oom = false;
		HASH_ADD(hh, o->scope_names, off, sizeof(sn->off), sn);
		if (hash_oom)
			free(sn);
		else
			symc_charge(o, sizeof(*sn) + ENTRY_OVERHEAD);
	}
	return res;
}

/* Names of @die; true when they come from a linkage name (else DW_AT_name). */
static bool die_names(struct elf_object *o, Dwarf_Die *die, Dwarf_Die *cudie, struct sym_frame *f)
{
	const char *linkage = die_linkage_name(die);
	const char *name = dwarf_diename(die);

	f->system_name = linkage ? linkage : name;
	f->function = linkage ? symc_demangle(o, linkage) : name;
	if (linkage && f->function == linkage && name)
		f->function = name; /* not mangled after all (extern "C", asm labels) */
	if (!linkage && name && is_cxx(cudie))
		f->function = scoped_name(o, die, name);
	return linkage != NULL;
}

/* The name of file @idx of a row or a call site (NULL: none), as dwarf_filesrc() gives it. */
static const char *unit_lines__file(const struct unit_lines *ul, size_t idx)
{
	return idx < ul->nfiles ? ul->files[idx] : NULL;
}

/* @cu: the unit of the function @inl is in, whose copied file names (if any) name the file. */
static void call_site(struct cu_info *cu, Dwarf_Die *inl, struct sym_frame *caller)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	Dwarf_Files *files;
	size_t nfiles;
	Dwarf_Die cudie;

	/* Values past INT_MAX only come from corrupt DWARF: unknown (0). */
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &v) == 0 && v <= INT_MAX)
		caller->line = (int)v;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_column, &attr), &v) == 0 && v <= INT_MAX)
		caller->column = (int)v;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &v) != 0 ||
	    !dwarf_diecu(inl, &cudie, NULL, NULL))
		return;
	if (cu->lines && dwarf_dieoffset(&cudie) == cu->off)
		caller->file = unit_lines__file(cu->lines, v);
	else if (dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0 && v < nfiles)
		caller->file = dwarf_filesrc(files, v, NULL, NULL);
}

/* Line tables may name files relative to the CU's directory (gcc's DWARF 5 does). */
static const char *source_path(struct elf_object *o, Dwarf_Die *cudie, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir, *s;
	char buf[PATH_MAX];
	int len;

	if (!file || file[0] == '/')
		return file;
	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	if (!dir)
		return file;
	len = snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return file;
	s = symc_intern(o, buf);
	return s ? s : file;
}

/*
 * Bytes of the line program of unit @cudie in mapped .debug_line (its unit_length field, DWARF
 * 2-5, and the field itself), bounded by the section; 0 when it has none or it is unreadable.
 */
static uint64_t line_program_bytes(struct elf_object *o, Dwarf_Die *cudie)
{
	Dwarf_Attribute attr;
	Dwarf_Word at;
	Elf_Scn *scn;
	GElf_Shdr shdr;
	Elf_Data *d;
	uint64_t len, field = 4;
	uint32_t len32;
	bool swap = (elf_getident(o->dwarf_elf, NULL)[EI_DATA] == ELFDATA2MSB) !=
		    (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);

	if (dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &at) ||
	    !(scn = elfcheck__section(o->dwarf_elf, ".debug_line", &shdr)))
		return 0;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size < 4 || at > d->d_size - 4)
		return 0;
	memcpy(&len32, (const char *)d->d_buf + at, 4);
	len = swap ? __builtin_bswap32(len32) : len32;
	if (len32 == 0xffffffffu) { /* 64-bit DWARF */
		field = 12;
		if (at > d->d_size - 12)
			return 0;
		memcpy(&len, (const char *)d->d_buf + at + 4, 8);
		if (swap)
			len = __builtin_bswap64(len);
	}
	return len > d->d_size - at - field ? d->d_size - at : len + field;
}

/*
 * Copies the line table and file names of @cu out of libdw, read through a Dwarf handle of its
 * own on the same ELF that is ended right after: libdw keeps a unit's line table (some 80 bytes
 * a row; libpython's ceval.c has 14-24 thousand rows) until its handle ends, while the copy
 * (16 bytes a row) is kept with the CU ranges and answers every later lookup of the unit, over
 * unloads too. Charges the copy (index); the pages it read are dropped.
 * NULL (nothing charged) when libdw cannot read the table or a value does not fit a row: the
 * unit's lookups then use libdw's table in the object's own handle.
 */
static struct unit_lines *read_unit_lines(struct elf_object *o, struct cu_info *cu)
{
	Dwarf *tmp = dwarf_begin_elf(o->dwarf_elf, DWARF_C_READ, NULL);
	struct unit_lines *ul = NULL;
	Dwarf_Lines *lines;
	Dwarf_Files *files, *lf;
	Dwarf_Die cudie;
	size_t nlines, nfiles, i, idx, strbytes = 0, size;
	char *str;

	if (!tmp)
		return NULL;
	if (!dwarf_offdie(tmp, cu->off, &cudie) || dwarf_getsrclines(&cudie, &lines, &nlines) ||
	    dwarf_getsrcfiles(&cudie, &files, &nfiles) || nfiles >= LINE_NO_FILE)
		goto out;
	for (i = 0; i < nfiles; i++) {
		const char *name = dwarf_filesrc(files, i, NULL, NULL);

		strbytes += name ? strlen(name) + 1 : 0;
	}
	size = sizeof(*ul) + nlines * sizeof(struct line_row) + nfiles * sizeof(char *) + strbytes;
	ul = malloc(size);
	if (!ul)
		goto out;
	ul->nrows = nlines;
	ul->nfiles = nfiles;
	ul->rows = (struct line_row *)(ul + 1);
	ul->files = (const char **)(ul->rows + nlines);
	str = (char *)(ul->files + nfiles);
	for (i = 0; i < nfiles; i++) {
		const char *name = dwarf_filesrc(files, i, NULL, NULL);

		ul->files[i] = name ? memcpy(str, name, strlen(name) + 1) : NULL;
		str += name ? strlen(name) + 1 : 0;
	}
	for (i = 0; i < nlines; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		struct line_row *r = &ul->rows[i];
		Dwarf_Addr addr;
		bool end;
		int ln, col;

		if (!l || dwarf_lineaddr(l, &addr) || dwarf_lineno(l, &ln) ||
		    dwarf_linecol(l, &col) || dwarf_lineendsequence(l, &end) || col < 0 ||
		    col > UINT16_MAX) {
			free(ul);
			ul = NULL;
			goto out;
		}
		r->addr = addr;
		r->line = ln;
		r->column = (uint16_t)col;
		/* dwarf_linesrc() names the row's file from the unit's table, as here. */
		r->file = dwarf_line_file(l, &lf, &idx) == 0 && lf == files && idx < nfiles
			      ? (uint16_t)idx
			      : LINE_NO_FILE;
		if (end)
			r->file |= LINE_END_SEQUENCE;
	}
	symc_charge_index(o, size);
	/* libdw's table goes with the handle: give its pages back at the next symc_make_room(). */
	o->cache->untrimmed += nlines * LINE_BYTES;
out:
	dwarf_end(tmp);
	/*
	 * A new handle finds the unit by reading the headers (and DIEs) of the units before it:
	 * pages no lookup needs (megabytes of libpython's). Once per unit over the object's life.
	 */
	if (o->dwarf_mapped)
		symc_drop_mapped_pages(o);
	return ul;
}

/*
 * The row that names @pc: the last one (in libdw's order, sorted by address) at or below @pc,
 * unless it ends a sequence -- what dwarf_getsrc_die() answers from libdw's table. NULL: none.
 */
static const struct line_row *unit_lines__find(const struct unit_lines *ul, uint64_t pc)
{
	size_t lo = 0, hi = ul->nrows, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ul->rows[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || (ul->rows[lo - 1].file & LINE_END_SEQUENCE))
		return NULL;
	return &ul->rows[lo - 1];
}

/*
 * Charges @cu's part of the DWARF at its first lookup since the DWARF was opened: libdw's
 * records of its abbreviations, and when the unit's lines were not copied out
 * (read_unit_lines()), the line table libdw builds and keeps until dwarf_end() (read here).
 * When the DWARF is mapped, also, at the first lookup since it was opened or symcache__trim()
 * dropped its pages: the pages the lookups of the unit read (its DIEs, and the line program
 * when libdw reads it here) and the shared sections' share.
 */
static void charge_unit(struct elf_object *o, struct cu_info *cu)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t nlines = 0, nfiles = 0, n = 0;

	if (!cu->charged) {
		cu->charged = true;
		n = UNIT_ABBREV_BYTES;
		if (!cu->lines && dwarf_getsrclines(&cu->die, &lines, &nlines) == 0 &&
		    dwarf_getsrcfiles(&cu->die, &files, &nfiles) == 0)
			n += nlines * LINE_BYTES + nfiles * LINE_FILE_BYTES;
		symc_charge_dwarf(o, n);
	}
	if (!o->dwarf_mapped)
		return;
	if (!o->shared_pages_charged) {
		o->shared_pages_charged = true;
		symc_charge_pages(o, o->shared_page_bytes);
	}
	if (!cu->pages_charged) {
		cu->pages_charged = true;
		symc_charge_pages(o, cu->unit_bytes +
					 (cu->lines ? 0 : line_program_bytes(o, &cu->die)));
	}
}

/*
 * *@phys_linkage: the physical function's name came from a linkage name; *@phys_lo: the start
 * of its address range holding @pc (0 when no function is known).
 */
int symc_dwarf_frames(struct elf_object *o, uint64_t pc, struct sym_frame *out, int max,
		      bool *phys_linkage, uint64_t *phys_lo)
{
	Dwarf_Die chain[MAX_FRAMES], fdie;
	struct cu_info *cu = find_cu(o, pc);
	struct func_range *f;
	Dwarf_Line *line;
	int n, i, ln, col;

	if (!cu)
		return 0;
	memset(out, 0, sizeof(*out) * max);
	if (!cu->lines_read) {
		cu->lines_read = true;
		cu->lines = read_unit_lines(o, cu);
	}
	/* What libdw reads of the unit and keeps: charge it, or big CUs grow memory unseen. */
	if (!cu->charged || (o->dwarf_mapped && (!cu->pages_charged || !o->shared_pages_charged)))
		charge_unit(o, cu);
	f = find_func(o, cu, pc);
	if (f && dwarf_offdie(o->dwarf, f->off, &fdie)) {
		*phys_lo = f->lo;
		n = inline_chain(&fdie, pc, chain, max);
		for (i = 0; i < n; i++) {
			bool l = die_names(o, &chain[n - 1 - i], &cu->die, &out[i]);

			if (i == n - 1)
				*phys_linkage = l;
			if (i > 0)
				call_site(cu, &chain[n - i], &out[i]);
		}
	} else {
		n = 1;
	}
	if (cu->lines) {
		const struct line_row *r = unit_lines__find(cu->lines, pc);

		if (r) {
			out[0].file = unit_lines__file(cu->lines, r->file & ~LINE_END_SEQUENCE);
			if (r->line > 0)
				out[0].line = r->line;
			if (r->column > 0)
				out[0].column = r->column;
		}
	} else if ((line = dwarf_getsrc_die(&cu->die, pc))) {
		out[0].file = dwarf_linesrc(line, NULL, NULL);
		/* A corrupt line program can step the line below 1: libdw then answers < 0. */
		if (dwarf_lineno(line, &ln) == 0 && ln > 0)
			out[0].line = ln;
		if (dwarf_linecol(line, &col) == 0 && col > 0)
			out[0].column = col;
	}
	for (i = 0; i < n; i++)
		out[i].file = source_path(o, &cu->die, out[i].file);
	return n;
}
