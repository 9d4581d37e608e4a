// SPDX-License-Identifier: Apache-2.0
/*
 * symtab: symbol tables (.symtab, .dynsym, MiniDebugInfo's) to a sorted array, names read on
 * demand (symtab.h). Format: ELF gABI "Symbol Table", "String Table".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "symbols/minidebuginfo.h"
#include "symbols/objcache.h"
#include "symbols/symcache.h"
#include "symbols/symtab.h"

/* Symbol tables are read in chunks of this many bytes (no full copy in memory). */
#define SYMTAB_CHUNK 65536
/* Longest symbol name read; C++ template names reach a few KiB. */
#define MAX_NAME_LEN (1 << 16)

/* A symbol while loading: the preference orders aliases, then it is dropped. */
struct lsym {
	uint64_t addr;
	uint32_t size;
	uint32_t name;
	int pref; /* lower wins among symbols at one address */
	/*
	 * A symbol of size 0 (hand-written code such as crti's _init): the end of its section, so
	 * that it never names the next section's code (.plt after .init); 0 when unknown.
	 */
	uint64_t section_end;
};

static int lsym_cmp(const void *a, const void *b)
{
	const struct lsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->pref != y->pref)
		return x->pref - y->pref;
	return x->size > y->size ? -1 : x->size < y->size;
}

/* The end of section @shndx of @elf when it holds @value, else 0 (unknown). */
static uint64_t section_end(Elf *elf, uint16_t shndx, uint64_t value)
{
	Elf_Scn *scn = shndx < SHN_LORESERVE ? elf_getscn(elf, shndx) : NULL;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || value < sh.sh_addr ||
	    value - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_addr + sh.sh_size;
}

/*
 * Appends the function symbols of @src to *@tmp (*@out used, *@cap allocated), with @name_bit
 * set in each name offset. With @shared (two tables in one array), names whose offset uses
 * SYM_NAME_MINI itself are left out. Sets *@str_off and *@str_size to the string table's
 * place. 0, -ENOENT (no such table) or -ENOMEM.
 */
static int collect_symbols(const struct symtab_src *src, uint32_t name_bit, bool shared,
			   struct lsym **tmp, size_t *out, size_t *cap, uint64_t *str_off,
			   uint64_t *str_size)
{
	unsigned char *buf = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr, strshdr;
	struct stat st;
	Elf *elf = src->elf;
	size_t i, n, entsize, per_chunk, done;
	int cls = gelf_getclass(elf);
	unsigned int enc = (unsigned char)elf_getident(elf, NULL)[EI_DATA];
	void *p;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == src->type)
			break;
	if (!scn)
		return -ENOENT;
	entsize = cls == ELFCLASS64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	if (shdr.sh_entsize != entsize || !gelf_getshdr(elf_getscn(elf, shdr.sh_link), &strshdr) ||
	    strshdr.sh_type != SHT_STRTAB || strshdr.sh_size > UINT32_MAX)
		return -ENOENT;
	/* A corrupt sh_size must not size the array: count only what the file holds. */
	if (fstat(src->fd, &st) || st.st_size < 0 || shdr.sh_offset > (uint64_t)st.st_size)
		return -ENOENT;
	n = shdr.sh_size / entsize;
	if (n > ((uint64_t)st.st_size - shdr.sh_offset) / entsize)
		n = ((uint64_t)st.st_size - shdr.sh_offset) / entsize;
	if (*out + n > *cap) {
		p = realloc(*tmp, (*out + n ? *out + n : 1) * sizeof(**tmp));
		if (!p)
			return -ENOMEM;
		*tmp = p;
		*cap = *out + n;
	}
	buf = malloc(SYMTAB_CHUNK);
	if (!buf)
		return -ENOMEM;
	per_chunk = SYMTAB_CHUNK / entsize;
	for (done = 0; done < n; done += per_chunk) {
		size_t cnt = n - done < per_chunk ? n - done : per_chunk;
		Elf_Data d = {.d_buf = buf, .d_type = ELF_T_SYM, .d_version = EV_CURRENT};
		ssize_t got =
		    pread(src->fd, buf, cnt * entsize, (off_t)(shdr.sh_offset + done * entsize));

		if (got <= 0)
			break;
		cnt = (size_t)got / entsize;
		d.d_size = cnt * entsize;
		if (!gelf_xlatetom(elf, &d, &d, enc))
			break;
		for (i = 0; i < cnt; i++) {
			uint64_t value, size;
			uint32_t name;
			unsigned char info;
			uint16_t shndx;

			if (cls == ELFCLASS64) {
				const Elf64_Sym *s = (const Elf64_Sym *)buf + i;

				value = s->st_value, size = s->st_size, name = s->st_name;
				info = s->st_info, shndx = s->st_shndx;
			} else {
				const Elf32_Sym *s = (const Elf32_Sym *)buf + i;

				value = s->st_value, size = s->st_size, name = s->st_name;
				info = s->st_info, shndx = s->st_shndx;
			}
			if (GELF_ST_TYPE(info) != STT_FUNC && GELF_ST_TYPE(info) != STT_GNU_IFUNC)
				continue;
			if (shndx == SHN_UNDEF || !value || !name || name >= strshdr.sh_size)
				continue;
			if (shared && (name & SYM_NAME_MINI))
				continue;
			(*tmp)[*out].addr = value;
			(*tmp)[*out].size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
			(*tmp)[*out].section_end = size ? 0 : section_end(elf, shndx, value);
			(*tmp)[*out].name = name | name_bit;
			/* At one address prefer global names over weak over local ones. */
			(*tmp)[*out].pref = GELF_ST_BIND(info) == STB_GLOBAL ? 0
					    : GELF_ST_BIND(info) == STB_WEAK ? 1
									     : 2;
			(*out)++;
		}
	}
	free(buf);
	*str_off = strshdr.sh_offset;
	*str_size = strshdr.sh_size;
	return 0;
}

/*
 * Loads the function symbols of @srcs[0] and, when @nsrc is 2, of @srcs[1] too, whose names
 * then live in the MiniDebugInfo file o->mini_fd (SYM_NAME_MINI). Tables are read in chunks
 * (never held whole); names stay in the files: only the string tables' places are kept.
 * 0, -ENOENT (no table in any source) or -ENOMEM.
 */
int symc_load_symbol_tables(struct elf_object *o, const struct symtab_src *srcs, int nsrc)
{
	struct lsym *tmp = NULL;
	size_t i, n, out = 0, cap = 0;
	uint64_t off, size;
	bool found = false;
	int k, err;
	void *p;

	for (k = 0; k < nsrc; k++) {
		err = collect_symbols(&srcs[k], k ? SYM_NAME_MINI : 0, nsrc > 1, &tmp, &out, &cap,
				      &off, &size);
		if (err == -ENOMEM) {
			free(tmp);
			return err;
		}
		if (err)
			continue;
		found = true;
		if (k) {
			o->mini_names = true;
			o->mini_strtab_off = off;
			o->mini_strtab_size = size;
		} else {
			o->names_fd = srcs[0].fd;
			o->strtab_off = off;
			o->strtab_size = size;
		}
	}
	if (!found) {
		free(tmp);
		return -ENOENT;
	}
	if (!tmp)
		tmp = malloc(sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	qsort(tmp, out, sizeof(*tmp), lsym_cmp);
	/* One symbol per address (aliases), compacted in place to 16 bytes each. */
	for (i = 0, n = 0; i < out; i++) {
		struct csym s = {tmp[i].addr, tmp[i].size, tmp[i].name};
		uint64_t bound = tmp[i].section_end - tmp[i].addr;

		if (n && ((struct csym *)tmp)[n - 1].addr == s.addr)
			continue;
		/* Sizeless: up to the next symbol (symc_find_symbol()), and never past its section.
		 */
		if (!s.size && tmp[i].section_end)
			s.size = bound > UINT32_MAX ? UINT32_MAX : (uint32_t)bound;
		memcpy((struct csym *)tmp + n++, &s, sizeof(s));
	}
	p = realloc(tmp, (n ? n : 1) * sizeof(struct csym));
	o->syms = p ? p : (struct csym *)tmp;
	o->nsyms = n;
	symc_charge_index(o, n * sizeof(struct csym));
	return 0;
}

/* symc_load_symbol_tables() of one table. */
int symc_load_symbols(struct elf_object *o, Elf *elf, int fd, GElf_Word type)
{
	struct symtab_src src = {elf, fd, type};

	return symc_load_symbol_tables(o, &src, 1);
}

/*
 * The MiniDebugInfo of @o (@elf: its headers), decoded once into o->mini_fd and kept for
 * re-loads, opened as ELF; NULL when it has none or it is unreadable (counted once).
 */
Elf *symc_open_minidebuginfo(struct elf_object *o, Elf *elf)
{
	struct symcache *c = o->cache;
	struct stat st;
	Elf *mini;
	int fd, err;

	if (o->mini_failed || (o->mini_fd < 0 && !minidebuginfo__present(elf)))
		return NULL;
	if (o->mini_fd < 0) {
		fd = minidebuginfo__extract(elf, o->fd, (uint64_t)o->size);
		if (fd < 0) {
			o->mini_failed = true;
			c->stats.minidebuginfo_errors++;
			return NULL;
		}
		o->mini_fd = fd;
		c->stats.fds++;
		c->stats.minidebuginfo++;
	}
	if (fstat(o->mini_fd, &st))
		return NULL;
	mini = symc_elf_from_fd(o->mini_fd, ELF_C_READ, (uint64_t)st.st_size, &err);
	if (!mini) {
		o->mini_failed = true;
		c->stats.minidebuginfo_errors++;
		c->stats.minidebuginfo--;
		symc_close_fd(c, &o->mini_fd);
	}
	return mini;
}

/* End of the PT_LOAD segment holding @vaddr, bounding symbols of size 0. */
uint64_t symc_segment_end(const struct elf_object *o, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < o->nloads; i++)
		if (vaddr >= o->loads[i].p_vaddr &&
		    vaddr - o->loads[i].p_vaddr < o->loads[i].p_memsz)
			return o->loads[i].p_vaddr + o->loads[i].p_memsz;
	return vaddr;
}

const struct csym *symc_find_symbol(const struct elf_object *o, uint64_t vaddr)
{
	size_t lo = 0, hi = o->nsyms, mid;
	const struct csym *s;
	uint64_t end;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (o->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &o->syms[lo - 1];
	if (s->size)
		end = s->addr + s->size;
	else if (lo < o->nsyms)
		end = o->syms[lo].addr;
	else
		end = symc_segment_end(o, s->addr);
	return vaddr < end ? s : NULL;
}

/*
 * The name of @s, read from the string table on first use and kept while @o
 * is loaded. NULL when unreadable, empty or not terminated within the table.
 */
const struct sname *symc_sym_name(struct elf_object *o, const struct csym *s)
{
	uint32_t idx = (uint32_t)(s - o->syms), name_off = s->name;
	uint64_t str_off = o->strtab_off, str_size = o->strtab_size;
	int fd = o->names_fd;
	char small[256], *buf = small, *nul;
	size_t cap = sizeof(small), max, len;
	struct sname *e;
	ssize_t got;

	HASH_FIND(hh, o->names, &idx, sizeof(idx), e);
	if (e)
		return e;
	if (o->mini_names && (s->name & SYM_NAME_MINI)) {
		fd = o->mini_fd;
		name_off = s->name & ~SYM_NAME_MINI;
		str_off = o->mini_strtab_off;
		str_size = o->mini_strtab_size;
	}
	if (fd < 0 || name_off >= str_size)
		return NULL;
	max = str_size - name_off;
	if (max > MAX_NAME_LEN)
		max = MAX_NAME_LEN;
	for (;;) {
		size_t want = cap < max ? cap : max;

		got = pread(fd, buf, want, (off_t)(str_off + name_off));
		if (got <= 0)
			goto fail;
		nul = memchr(buf, 0, (size_t)got);
		if (nul)
			break;
		if ((size_t)got < want || want == max)
			goto fail;
		cap *= 2;
		if (buf != small)
			free(buf);
		buf = malloc(cap);
		if (!buf)
			return NULL;
	}
	len = (size_t)(nul - buf);
	if (!len)
		goto fail;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		goto fail;
	e->idx = idx;
	memcpy(e->name, buf, len + 1);
	hash_oom = false;
	HASH_ADD(hh, o->names, idx, sizeof(e->idx), e);
	if (hash_oom) {
		free(e);
		goto fail;
	}
	symc_charge(o, sizeof(*e) + len + 1 + ENTRY_OVERHEAD);
	e->dname = symc_demangle(o, e->name);
	if (buf != small)
		free(buf);
	return e;
fail:
	if (buf != small)
		free(buf);
	return NULL;
}
