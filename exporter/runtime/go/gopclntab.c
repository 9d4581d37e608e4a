// SPDX-License-Identifier: Apache-2.0
/*
 * gopclntab: Go's PC/line table (see gopclntab.h for the sources of the format).
 *
 * Layout, Go 1.18 and later, all offsets from the start of the table (pcHeader):
 *   0 magic u32 | 4 pad u8[2] | 6 minLC (PC quantum) u8 | 7 ptrSize u8 | 8 nfunc | 16 nfiles
 *   | 24 textStart (0 from Go 1.26) | 32 funcnameOffset | 40 cuOffset | 48 filetabOffset
 *   | 56 pctabOffset | 64 pclnOffset
 * then funcnametab (NUL-terminated names), cutab (u32 file offsets per compilation unit),
 * filetab (NUL-terminated paths), pctab (pc-value tables), and at pclnOffset the functab:
 * nfunc+1 pairs {entryOff u32 (from the text base), funcOff u32 (from pclnOffset)}, the last
 * entryOff being the end of the text, followed by the `_func` records.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/go/gopclntab.h"

#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u
#define MAGIC_116 0xfffffffau
#define MAGIC_12 0xfffffffbu

#define HDR_SIZE 72	/* pcHeader with 8-byte words */
#define HDR_SIZE_116 64 /* 1.16-1.17: no textStart */

/* _func: fields at fixed offsets; funcID and nfuncdata move by the 1.20 startLine field. */
#define FUNC_ENTRYOFF 0
#define FUNC_NAMEOFF 4
#define FUNC_PCSP 16
#define FUNC_PCFILE 20
#define FUNC_PCLN 24
#define FUNC_NPCDATA 28
#define FUNC_CUOFFSET 32
#define FUNC_SIZE_118 40
#define FUNC_SIZE_120 44
/* 1.16-1.17: entry is an 8-byte address, every later field 4 bytes further; 44 bytes. */
#define FUNC_SHIFT_116 4
#define FUNC_SIZE_116 44

#define PCDATA_INLTREEINDEX 2
#define FUNCDATA_INLTREE 3

/* inlinedCall: 1.18-1.19 {parent i16, funcID u8, pad, file i32, line i32, nameOff, parentPc}. */
#define INL_SIZE_118 20
#define INL_NAME_118 12
#define INL_PARENTPC_118 16
/* 1.20+: {funcID u8, pad[3], nameOff i32, parentPc i32, startLine i32}. */
#define INL_SIZE_120 16
#define INL_NAME_120 4
#define INL_PARENTPC_120 8

/* moduledata word offsets (8-byte words), runtime/symtab.go. */
#define MD_PCHEADER 0
#define MD_FUNCNAMETAB 8 /* slice: ptr, len, cap */
#define MD_MINPC 160
#define MD_MAXPC 168
#define MD_TEXT 176
#define MD_ETEXT 184
#define MD_GOFUNC_118 304 /* 1.18-1.19: ... types, etypes, rodata, gofunc */
#define MD_GOFUNC_120 320 /* 1.20-1.26: covctrs, ecovctrs added before end */
/* 1.27: types, typedesclen, etypes, itaboffset, itabsize, rodata, gofunc (go1.27.3's
 * src/runtime/symtab.go); the table's magic did not change, the build info's version tells. */
#define MD_GOFUNC_127 344
#define MD_MIN_SIZE 352 /* the largest gofunc offset + 8 */

/* Longest name or path believed (a longer one is a corrupt table). */
#define MAX_STR 4096
/* Deepest inline chain followed: a longer one is a loop in a corrupt table. */
#define MAX_INLINE_DEPTH 64
/* PT_LOAD segments remembered (Go binaries have 3-4; external linking a few more). */
#define MAX_SEGS 16

struct seg {
	uint64_t vaddr, offset, filesz;
	bool writable;
};

struct gopclntab {
	const uint8_t *img;
	size_t img_size;
	struct seg segs[MAX_SEGS];
	int nsegs;
	int layout;   /* 116, 118 or 120 */
	int go_minor; /* from the build info (.go.buildinfo); -1 when unknown */
	/* The table: bytes [tab, tab + tab_size) of the image, at ELF vaddr tab_vaddr. */
	const uint8_t *tab;
	uint64_t tab_vaddr, tab_size;
	uint64_t nfunc;
	uint64_t funcname_off, cu_off, filetab_off, pctab_off, pcln_off;
	uint64_t text;	 /* base of entryOff */
	uint64_t gofunc; /* base of funcdata offsets, 0 if unknown */
	size_t func_size, inl_size, inl_name, inl_parentpc;
	size_t f_shift; /* of _func fields past entry: FUNC_SHIFT_116 or 0 */
	size_t ft_size; /* functab entry: 16 (1.16-1.17: two addresses) or 8 */
};

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Field @off (a FUNC_* offset of the 1.18+ layout) of the _func at @f. */
static uint32_t fld(const struct gopclntab *t, const uint8_t *f, size_t off)
{
	return rd32(f + (off ? off + t->f_shift : 0));
}

/* Entry vaddr of functab entry @i (entry @nfunc: the end of the text). */
static uint64_t ft_entry(const struct gopclntab *t, uint64_t i)
{
	const uint8_t *e = t->tab + t->pcln_off + i * t->ft_size;

	return t->layout == 116 ? rd64(e) : t->text + rd32(e);
}

/* Offset of function @i's _func from the functab's start. */
static uint64_t ft_funcoff(const struct gopclntab *t, uint64_t i)
{
	const uint8_t *e = t->tab + t->pcln_off + i * t->ft_size;

	return t->layout == 116 ? rd64(e + 8) : rd32(e + 4);
}

/* The image bytes of [vaddr, vaddr + len) when one segment's file part holds them, else NULL. */
static const uint8_t *vaddr_ptr(const struct gopclntab *t, uint64_t vaddr, uint64_t len)
{
	for (int i = 0; i < t->nsegs; i++) {
		const struct seg *s = &t->segs[i];

		if (vaddr < s->vaddr || vaddr - s->vaddr > s->filesz ||
		    len > s->filesz - (vaddr - s->vaddr))
			continue;
		if (s->offset + (vaddr - s->vaddr) + len > t->img_size)
			return NULL;
		return t->img + s->offset + (vaddr - s->vaddr);
	}
	return NULL;
}

/* Bytes [off, off + len) of the table, or NULL. */
static const uint8_t *tab_at(const struct gopclntab *t, uint64_t off, uint64_t len)
{
	if (off > t->tab_size || len > t->tab_size - off)
		return NULL;
	return t->tab + off;
}

/* The NUL-terminated string at @off of the sub-table [lo, hi), or NULL. */
static const char *tab_str(const struct gopclntab *t, uint64_t lo, uint64_t hi, uint64_t off)
{
	const uint8_t *p;
	uint64_t n;

	if (off >= hi - lo)
		return NULL;
	n = hi - lo - off < MAX_STR ? hi - lo - off : MAX_STR;
	p = t->tab + lo + off;
	if (!memchr(p, 0, n) || !p[0])
		return NULL;
	return (const char *)p;
}

static int read_segments(struct gopclntab *t, Elf *elf)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n && t->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_offset > t->img_size || ph.p_filesz > t->img_size - ph.p_offset)
			continue; /* truncated file: that segment is not readable */
		t->segs[t->nsegs++] =
		    (struct seg){ph.p_vaddr, ph.p_offset, ph.p_filesz, !!(ph.p_flags & PF_W)};
	}
	return t->nsegs ? 0 : -EINVAL;
}

Elf_Scn *gopclntab__section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static bool has_sections(Elf *elf)
{
	size_t n;

	return !elf_getshdrnum(elf, &n) && n > 1;
}

bool gopclntab__maybe(Elf *elf)
{
	GElf_Shdr sh;

	return !has_sections(elf) || gopclntab__section(elf, ".gopclntab", &sh) ||
	       gopclntab__section(elf, ".go.buildinfo", &sh);
}

/* The value of .symtab symbol @name, or 0. */
static uint64_t symbol(Elf *elf, const char *name)
{
	GElf_Shdr sh;
	Elf_Scn *scn = gopclntab__section(elf, ".symtab", &sh);
	Elf_Data *d = scn && sh.sh_type == SHT_SYMTAB ? elf_getdata(scn, NULL) : NULL;
	size_t n = d && sh.sh_entsize ? d->d_size / sh.sh_entsize : 0;

	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *sn;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		sn = elf_strptr(elf, sh.sh_link, s.st_name);
		if (sn && !strcmp(sn, name))
			return s.st_value;
	}
	return 0;
}

/*
 * Parses and checks the header and the function table of a candidate table at @vaddr, at most
 * @max bytes long. 0, -ENOTSUP (older layout, other architecture) or -EINVAL.
 */
static int parse_header(struct gopclntab *t, uint64_t vaddr, uint64_t max)
{
	const uint8_t *h = vaddr_ptr(t, vaddr, HDR_SIZE);
	uint64_t prev = 0, end_off, hdr;
	uint32_t magic;
	int w;

	if (!h)
		return -EINVAL;
	magic = rd32(h);
	if (magic == MAGIC_12)
		return -ENOTSUP;
	if ((magic != MAGIC_116 && magic != MAGIC_118 && magic != MAGIC_120) || h[4] || h[5])
		return -EINVAL;
	if (h[6] != 1 || h[7] != 8)
		return -ENOTSUP; /* amd64: quantum 1, 8-byte pointers */
	t->layout = magic == MAGIC_116 ? 116 : magic == MAGIC_118 ? 118 : 120;
	t->func_size = t->layout == 116	  ? FUNC_SIZE_116
		       : t->layout == 118 ? FUNC_SIZE_118
					  : FUNC_SIZE_120;
	t->f_shift = t->layout == 116 ? FUNC_SHIFT_116 : 0;
	t->ft_size = t->layout == 116 ? 16 : 8;
	t->inl_size = t->layout == 120 ? INL_SIZE_120 : INL_SIZE_118;
	t->inl_name = t->layout == 120 ? INL_NAME_120 : INL_NAME_118;
	t->inl_parentpc = t->layout == 120 ? INL_PARENTPC_120 : INL_PARENTPC_118;
	/* Words after nfunc, nfiles: [textStart (1.18+),] funcname, cu, filetab, pctab, pcln. */
	w = t->layout == 116 ? 24 : 32;
	hdr = t->layout == 116 ? HDR_SIZE_116 : HDR_SIZE;
	t->nfunc = rd64(h + 8);
	t->funcname_off = rd64(h + w);
	t->cu_off = rd64(h + w + 8);
	t->filetab_off = rd64(h + w + 16);
	t->pctab_off = rd64(h + w + 24);
	t->pcln_off = rd64(h + w + 32);
	/* The linker writes the sub-tables in this order (cmd/link pcln.go). */
	if (t->funcname_off < hdr || t->cu_off < t->funcname_off || t->filetab_off < t->cu_off ||
	    t->pctab_off < t->filetab_off || t->pcln_off < t->pctab_off || t->pcln_off >= max ||
	    !t->nfunc || t->nfunc > (max - t->pcln_off) / t->ft_size)
		return -EINVAL;
	t->tab_vaddr = vaddr;
	t->tab_size = max;
	t->tab = vaddr_ptr(t, vaddr, max);
	if (!t->tab)
		return -EINVAL;
	/* functab: nfunc + 1 entries in address order, each _func within the table. */
	end_off = t->pcln_off + (t->nfunc + 1) * t->ft_size;
	if (end_off > max)
		return -EINVAL;
	for (uint64_t i = 0; i <= t->nfunc; i++) {
		const uint8_t *e = t->tab + t->pcln_off + i * t->ft_size;
		uint64_t entry = t->layout == 116 ? rd64(e) : rd32(e);

		if (i && entry < prev)
			return -EINVAL;
		prev = entry;
		if (i < t->nfunc && ft_funcoff(t, i) > max - t->pcln_off - t->func_size)
			return -EINVAL;
	}
	return 0;
}

/* The size the table can have at @vaddr: up to the end of the segment holding it. */
static uint64_t room_at(const struct gopclntab *t, uint64_t vaddr)
{
	for (int i = 0; i < t->nsegs; i++)
		if (vaddr >= t->segs[i].vaddr && vaddr - t->segs[i].vaddr < t->segs[i].filesz)
			return t->segs[i].filesz - (vaddr - t->segs[i].vaddr);
	return 0;
}

/* Whether @vaddr is file-backed data of a read-only segment. */
static bool readonly(const struct gopclntab *t, uint64_t vaddr)
{
	for (int i = 0; i < t->nsegs; i++)
		if (vaddr >= t->segs[i].vaddr && vaddr - t->segs[i].vaddr < t->segs[i].filesz)
			return !t->segs[i].writable;
	return false;
}

/* Finds the table: section, symbol, else a header in a read-only segment. */
static int find_table(struct gopclntab *t, Elf *elf)
{
	GElf_Shdr sh;
	uint64_t v;
	int err = -ENOENT;

	if (gopclntab__section(elf, ".gopclntab", &sh) && sh.sh_type == SHT_PROGBITS &&
	    sh.sh_addr) {
		if (sh.sh_size > room_at(t, sh.sh_addr))
			return -EINVAL;
		return parse_header(t, sh.sh_addr, sh.sh_size);
	}
	v = symbol(elf, "runtime.pclntab");
	if (v)
		return parse_header(t, v, room_at(t, v));
	if (has_sections(elf))
		return -ENOENT; /* sections, none of them Go's: not a Go binary */
	for (int i = 0; i < t->nsegs; i++) {
		const struct seg *s = &t->segs[i];
		const uint8_t *p = t->img + s->offset;

		if (s->writable)
			continue;
		for (uint64_t o = 0; o + HDR_SIZE <= s->filesz; o += 4) {
			uint32_t m = rd32(p + o);

			if ((m != MAGIC_118 && m != MAGIC_120 && m != MAGIC_116 && m != MAGIC_12) ||
			    p[o + 4] || p[o + 5] || p[o + 6] != 1 || p[o + 7] != 8)
				continue;
			err = parse_header(t, s->vaddr + o, s->filesz - o);
			if (!err || err == -ENOTSUP)
				return err;
		}
	}
	return err == -ENOENT ? -ENOENT : err;
}

/*
 * R_X86_64_RELATIVE relocations of the file's SHT_RELA sections, sorted by the vaddr they
 * write (ELF x86-64 psABI: the loader stores load bias + addend there). A position-independent
 * Go binary or a Go shared library (-buildmode=pie, c-shared) keeps moduledata's pointers in
 * them: the file holds 0 where the runtime reads the table's address. Addends are link-time
 * vaddrs, the address space the table is looked up in.
 */
struct relative {
	uint64_t vaddr, addend;
};

struct relatives {
	struct relative *r;
	size_t n;
};

static int relative_cmp(const void *a, const void *b)
{
	const struct relative *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* Reads them (none when there are no sections, or on any error: then nothing is relocated). */
static void read_relatives(Elf *elf, struct relatives *out)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	out->r = NULL;
	out->n = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? d->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela r;

			if (!gelf_getrela(d, (int)i, &r) ||
			    GELF_R_TYPE(r.r_info) != R_X86_64_RELATIVE)
				continue;
			if (out->n == cap) {
				size_t nc = cap ? cap * 2 : 1024;
				struct relative *m = realloc(out->r, nc * sizeof(*m));

				if (!m) {
					free(out->r);
					out->r = NULL;
					out->n = 0;
					return;
				}
				out->r = m;
				cap = nc;
			}
			out->r[out->n++] = (struct relative){r.r_offset, (uint64_t)r.r_addend};
		}
	}
	if (out->n)
		qsort(out->r, out->n, sizeof(*out->r), relative_cmp);
}

/*
 * The word at @md + @off of the image, @md being the file bytes of vaddr @md_vaddr: the
 * addend of a RELATIVE relocation of that word where there is one, else the file's bytes.
 */
static uint64_t word_at(const struct relatives *rel, const uint8_t *md, uint64_t md_vaddr,
			size_t off)
{
	struct relative key = {md_vaddr + off, 0};
	const struct relative *r =
	    rel->n ? bsearch(&key, rel->r, rel->n, sizeof(*rel->r), relative_cmp) : NULL;

	return r ? r->addend : rd64(md + off);
}

/*
 * Checks the moduledata candidate at vaddr @vaddr (@md its bytes, @avail of them in the file):
 * its funcnametab slice starts at the table's funcnametab, minpc and maxpc agree with the
 * function table. Takes the text base and gofunc from it. 0 or -ENOENT.
 */
static int check_moduledata(struct gopclntab *t, const struct relatives *rel, const uint8_t *md,
			    uint64_t vaddr)
{
	uint64_t first = rd32(t->tab + t->pcln_off);
	uint64_t last = rd32(t->tab + t->pcln_off + t->nfunc * 8);
	size_t gofunc_at = t->layout == 118    ? MD_GOFUNC_118
			   : t->go_minor >= 27 ? MD_GOFUNC_127
					       : MD_GOFUNC_120;
	uint64_t text, gofunc;

	if (word_at(rel, md, vaddr, MD_PCHEADER) != t->tab_vaddr ||
	    word_at(rel, md, vaddr, MD_FUNCNAMETAB) != t->tab_vaddr + t->funcname_off)
		return -ENOENT;
	text = word_at(rel, md, vaddr, MD_TEXT);
	if (word_at(rel, md, vaddr, MD_MINPC) != text + first ||
	    word_at(rel, md, vaddr, MD_MAXPC) != text + last ||
	    word_at(rel, md, vaddr, MD_ETEXT) < text + last)
		return -ENOENT;
	t->text = text;
	gofunc = word_at(rel, md, vaddr, gofunc_at);
	/*
	 * go:func.* is read-only data past moduledata.rodata (before the table up to Go 1.25,
	 * inside .gopclntab from 1.26). A release newer than 1.27 is read with 1.27's layout, a
	 * file whose build info can't be read with 1.20-1.26's: a field read from the wrong
	 * place is then an offset or a pointer to writable data, which this check refuses (no
	 * inline trees: physical functions only).
	 */
	if (gofunc && gofunc >= word_at(rel, md, vaddr, gofunc_at - 8) && readonly(t, gofunc))
		t->gofunc = gofunc;
	return 0;
}

/*
 * Finds the runtime's moduledata (its first word is the table's address: in the file's
 * writable data, or the addend of a RELATIVE relocation there) and takes the text base and
 * gofunc from it (check_moduledata()). 0 or -ENOENT.
 */
static int find_moduledata(struct gopclntab *t, Elf *elf)
{
	struct relatives rel;
	int err = -ENOENT;

	read_relatives(elf, &rel);
	for (size_t i = 0; err && i < rel.n; i++) {
		const uint8_t *md;

		if (rel.r[i].addend != t->tab_vaddr)
			continue;
		md = vaddr_ptr(t, rel.r[i].vaddr, MD_MIN_SIZE);
		if (md)
			err = check_moduledata(t, &rel, md, rel.r[i].vaddr);
	}
	for (int i = 0; err && i < t->nsegs; i++) {
		const struct seg *s = &t->segs[i];
		const uint8_t *p = t->img + s->offset;

		if (!s->writable)
			continue;
		for (uint64_t o = 0; err && o + MD_MIN_SIZE <= s->filesz; o += 8)
			if (rd64(p + o) == t->tab_vaddr)
				err = check_moduledata(t, &rel, p + o, s->vaddr + o);
	}
	free(rel.r);
	return err;
}

/*
 * Text base and gofunc without moduledata (a file whose relocations are not in SHT_RELA
 * sections: without section headers, or packed as RELR).
 */
static int find_text(struct gopclntab *t, Elf *elf)
{
	GElf_Shdr sh;
	uint64_t v;

	t->gofunc = symbol(elf, t->layout == 118 ? "go.func.*" : "go:func.*");
	v = symbol(elf, "runtime.text");
	if (!v)
		v = rd64(t->tab + 24); /* pcHeader.textStart, 1.18-1.25 (relocated: 0 in PIE) */
	if (!v && gopclntab__section(elf, ".text", &sh))
		v = sh.sh_addr;
	if (!v)
		return -ENOENT;
	t->text = v;
	return 0;
}

#define BUILDINFO_MAGIC "\xff Go buildinf:"
#define BUILDINFO_MAGIC_LEN 14
#define BUILDINFO_HDR 32
#define BUILDINFO_INLINE 0x2

int gopclntab__go_version(Elf *elf, const void *image, size_t size, char *out, size_t len)
{
	const uint8_t *p, *img = image;
	GElf_Shdr sh;
	uint64_t n = 0, end;
	unsigned shift = 0;

	if (!gopclntab__section(elf, ".go.buildinfo", &sh) || sh.sh_type == SHT_NOBITS)
		return -ENOENT;
	if (sh.sh_offset > size || size - sh.sh_offset < BUILDINFO_HDR + 1 ||
	    sh.sh_size < BUILDINFO_HDR + 1)
		return -EINVAL;
	p = img + sh.sh_offset;
	end = sh.sh_size < size - sh.sh_offset ? sh.sh_size : size - sh.sh_offset;
	if (memcmp(p, BUILDINFO_MAGIC, BUILDINFO_MAGIC_LEN))
		return -EINVAL;
	if (!(p[15] & BUILDINFO_INLINE))
		return -ENOTSUP; /* Go 1.17 and older: pointers to string headers */
	/* uvarint length (encoding/binary), then the bytes */
	for (uint64_t i = BUILDINFO_HDR; i < end && i < BUILDINFO_HDR + 10; i++) {
		n |= (uint64_t)(p[i] & 0x7f) << shift;
		shift += 7;
		if (!(p[i] & 0x80)) {
			if (n == 0 || n > end - i - 1 || !len)
				return -EINVAL;
			/* "go1.25-20250209-RC00 cl/... X:fieldtrack": the start is enough */
			if (n >= len)
				n = len - 1;
			memcpy(out, p + i + 1, n);
			out[n] = '\0';
			return 0;
		}
	}
	return -EINVAL;
}

/* The minor version of "go1.N", "go1.N.P", "go1.NrcK" (and "devel go1.N-..."), or -1. */
int gopclntab__go_minor(const char *v)
{
	const char *s = strstr(v, "go1.");
	char *e;
	long m;

	if (!s)
		return -1;
	m = strtol(s + 4, &e, 10);
	return e == s + 4 || m < 0 || m > 1000 ? -1 : (int)m;
}

/* The Go minor version in the file's build info, or -1. */
static int file_go_minor(Elf *elf, const void *image, size_t size)
{
	char v[32];

	return gopclntab__go_version(elf, image, size, v, sizeof(v)) ? -1 : gopclntab__go_minor(v);
}

struct gopclntab *gopclntab__open(Elf *elf, const void *image, size_t size)
{
	struct gopclntab *t = NULL;
	GElf_Ehdr eh;
	int err;

	if (!elf || !image) {
		err = -EINVAL;
		goto cleanup;
	}
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64) {
		err = -ENOTSUP;
		goto cleanup;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		err = -ENOMEM;
		goto cleanup;
	}
	t->img = image;
	t->img_size = size;
	err = read_segments(t, elf);
	if (err)
		goto cleanup;
	err = find_table(t, elf);
	if (err)
		goto cleanup;
	t->go_minor = file_go_minor(elf, image, size);
	/* 1.16-1.17 keep absolute addresses: no text base, no gofunc needed. */
	if (t->layout != 116 && find_moduledata(t, elf) && find_text(t, elf)) {
		err = -EINVAL;
		goto cleanup;
	}
	return t;
cleanup:
	free(t);
	errno = -err;
	return NULL;
}

void gopclntab__free(struct gopclntab *t)
{
	free(t);
}

/* The _func of function @i, checked: its entry matches the functab's. */
static const uint8_t *func_rec(const struct gopclntab *t, uint64_t i, uint32_t *npcdata,
			       uint32_t *nfuncdata)
{
	const uint8_t *f = tab_at(t, t->pcln_off + ft_funcoff(t, i), t->func_size);
	uint64_t entry, tail;

	if (!f)
		return NULL;
	entry = t->layout == 116 ? rd64(f) : t->text + rd32(f);
	if (entry != ft_entry(t, i))
		return NULL;
	*npcdata = fld(t, f, FUNC_NPCDATA);
	*nfuncdata = f[t->func_size - 1];
	if (*npcdata > 1024)
		return NULL;
	/* pcdata u32[npcdata], then funcdata: u32 offsets, or (1.16-1.17) 8-aligned addresses. */
	tail = ((uint64_t)*npcdata + *nfuncdata) * 4;
	if (t->layout == 116) {
		uint64_t at =
		    t->tab_vaddr + (uint64_t)(f - t->tab) + t->func_size + *npcdata * 4ull;

		tail = (uint64_t)*npcdata * 4 + (at & 4) + (uint64_t)*nfuncdata * 8;
	}
	if (!tab_at(t, (uint64_t)(f - t->tab) + t->func_size, tail))
		return NULL;
	return f;
}

/* The address of function @f's inline tree, 0 if it has none or it can't be found. */
static uint64_t inl_tree(const struct gopclntab *t, const uint8_t *f, uint32_t npcdata,
			 uint32_t nfuncdata)
{
	uint64_t off = (uint64_t)(f - t->tab) + t->func_size + (uint64_t)npcdata * 4;
	uint32_t fd;

	if (nfuncdata <= FUNCDATA_INLTREE)
		return 0;
	if (t->layout == 116) {
		if ((t->tab_vaddr + off) & 4)
			off += 4; /* the runtime aligns the pointers to 8 */
		return rd64(t->tab + off + FUNCDATA_INLTREE * 8);
	}
	fd = rd32(t->tab + off + FUNCDATA_INLTREE * 4);
	return t->gofunc && fd != UINT32_MAX ? t->gofunc + fd : 0;
}

static int varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t r = 0;

	for (int shift = 0; shift < 35; shift += 7) {
		if (*p >= end)
			return -EINVAL;
		r |= (uint32_t)(**p & 0x7f) << shift;
		if (!(*(*p)++ & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * The value of the pc-value table at pctab offset @off for @pc in the function at @entry..@end
 * (runtime pcvalue(): pairs of zig-zag value delta and PC delta, value -1 before the first,
 * a zero value delta after the first pair ends the table). 0 and *@val; -ENOENT when the
 * table ends before @pc (alignment padding after the function's code); -EINVAL when it is
 * corrupt.
 */
static int pcvalue(const struct gopclntab *t, uint32_t off, uint64_t entry, uint64_t end,
		   uint64_t pc, int32_t *val)
{
	const uint8_t *p, *lim = t->tab + t->pcln_off;
	uint64_t cur = entry;
	uint32_t v = (uint32_t)-1;
	bool first = true;

	if (!off || off >= t->pcln_off - t->pctab_off)
		return -EINVAL;
	p = t->tab + t->pctab_off + off;
	while (cur < end) {
		uint32_t uv, dpc;

		if (p >= lim)
			return -EINVAL;
		if (!*p && !first)
			return -ENOENT;
		if (varint(&p, lim, &uv) || varint(&p, lim, &dpc))
			return -EINVAL;
		v += uv & 1 ? ~(uv >> 1) : uv >> 1;
		cur += dpc; /* quantum 1 */
		first = false;
		if (pc < cur) {
			*val = (int32_t)v;
			return 0;
		}
	}
	return -EINVAL;
}

/* pcdata table @k of @f for @pc: -1 when the function has none. */
static int pcdata(const struct gopclntab *t, const uint8_t *f, uint32_t npcdata, uint32_t k,
		  uint64_t entry, uint64_t end, uint64_t pc, int32_t *val)
{
	uint32_t off;

	*val = -1;
	if (k >= npcdata)
		return 0;
	off = rd32(f + t->func_size + k * 4);
	return off ? pcvalue(t, off, entry, end, pc, val) : 0;
}

/* File and line of @pc in @f; both left unknown (NULL, 0) when a table is missing. */
static int file_line(const struct gopclntab *t, const uint8_t *f, uint64_t entry, uint64_t end,
		     uint64_t pc, struct gopclntab_frame *fr)
{
	uint32_t pcfile = fld(t, f, FUNC_PCFILE), pcln = fld(t, f, FUNC_PCLN);
	int32_t fileno, line;
	uint64_t idx;
	const uint8_t *cu;

	fr->file = NULL;
	fr->line = 0;
	if (!pcfile || !pcln)
		return 0;
	if (pcvalue(t, pcfile, entry, end, pc, &fileno) ||
	    pcvalue(t, pcln, entry, end, pc, &line) || fileno < 0 || line < 0)
		return -EINVAL;
	idx = (uint64_t)fld(t, f, FUNC_CUOFFSET) + (uint32_t)fileno;
	if (idx >= (t->filetab_off - t->cu_off) / 4)
		return -EINVAL;
	cu = t->tab + t->cu_off + idx * 4;
	if (rd32(cu) == UINT32_MAX)
		return 0; /* the runtime's "?" */
	fr->file = tab_str(t, t->filetab_off, t->pctab_off, rd32(cu));
	if (!fr->file)
		return -EINVAL;
	fr->line = line;
	return 0;
}

static const char *func_name(const struct gopclntab *t, int32_t nameoff)
{
	if (nameoff < 0)
		return NULL;
	return tab_str(t, t->funcname_off, t->cu_off, (uint64_t)nameoff);
}

/* Whether @pc lies within the code the function's line table describes. */
static bool pcfile_covers(const struct gopclntab *t, const uint8_t *f, uint64_t entry, uint64_t end,
			  uint64_t pc)
{
	uint32_t pcln = fld(t, f, FUNC_PCLN);
	int32_t v;

	return !pcln || pcvalue(t, pcln, entry, end, pc, &v) != -ENOENT;
}

/* Index of the function holding @vaddr, or -1 (binary search of the functab). */
static int64_t find_func(const struct gopclntab *t, uint64_t vaddr)
{
	uint64_t lo = 0, hi = t->nfunc;

	if (vaddr < ft_entry(t, 0) || vaddr >= ft_entry(t, t->nfunc))
		return -1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ft_entry(t, mid) <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

int gopclntab__lookup(const struct gopclntab *t, uint64_t vaddr, struct gopclntab_frame *out,
		      int max)
{
	const uint8_t *f;
	uint32_t npcdata, nfuncdata;
	uint64_t entry, end, pc = vaddr, inl = 0;
	int64_t i;
	int32_t ix;
	int n = 0, err;

	if (!t || !out || max <= 0)
		return -EINVAL;
	i = find_func(t, vaddr);
	if (i < 0)
		return 0;
	f = func_rec(t, (uint64_t)i, &npcdata, &nfuncdata);
	if (!f)
		return -EINVAL;
	entry = ft_entry(t, (uint64_t)i);
	end = ft_entry(t, (uint64_t)i + 1);
	err = pcdata(t, f, npcdata, PCDATA_INLTREEINDEX, entry, end, pc, &ix);
	if (err == -ENOENT || (!err && !pcfile_covers(t, f, entry, end, pc))) {
		/* Padding after the function's code: inside its range, no source position. */
		out[0] = (struct gopclntab_frame){func_name(t, (int32_t)fld(t, f, FUNC_NAMEOFF)),
						  NULL, 0};
		return out[0].function ? 1 : -EINVAL;
	}
	if (err)
		return -EINVAL;
	if (ix >= 0)
		inl = inl_tree(t, f, npcdata, nfuncdata);
	if (ix >= 0 && !inl) {
		/* Inlined code without its tree: the physical function, no callee's file:line. */
		out[0] = (struct gopclntab_frame){func_name(t, (int32_t)fld(t, f, FUNC_NAMEOFF)),
						  NULL, 0};
		return out[0].function ? 1 : -EINVAL;
	}
	while (ix >= 0) {
		const uint8_t *c = vaddr_ptr(t, inl + (uint64_t)ix * t->inl_size, t->inl_size);
		int32_t parent_pc;

		if (n >= MAX_INLINE_DEPTH)
			return -EINVAL; /* a loop in the tree */
		if (n >= max)
			return -E2BIG;
		if (!c)
			return -EINVAL;
		out[n].function = func_name(t, (int32_t)rd32(c + t->inl_name));
		if (!out[n].function || file_line(t, f, entry, end, pc, &out[n]))
			return -EINVAL;
		n++;
		parent_pc = (int32_t)rd32(c + t->inl_parentpc);
		if (parent_pc < 0 || (uint64_t)parent_pc >= end - entry)
			return -EINVAL;
		pc = entry + (uint64_t)parent_pc;
		if (pcdata(t, f, npcdata, PCDATA_INLTREEINDEX, entry, end, pc, &ix))
			return -EINVAL;
	}
	if (n >= max)
		return -E2BIG;
	out[n].function = func_name(t, (int32_t)fld(t, f, FUNC_NAMEOFF));
	if (!out[n].function || file_line(t, f, entry, end, pc, &out[n]))
		return -EINVAL;
	return n + 1;
}

bool gopclntab__covers(const struct gopclntab *t, uint64_t vaddr)
{
	return t && find_func(t, vaddr) >= 0;
}

int gopclntab__frame_pending(const struct gopclntab *t, uint64_t vaddr)
{
	static const uint8_t mov_sp_bp[3] = {0x48, 0x89, 0xe5}; /* MOVQ SP, BP */
	const uint8_t *f, *code;
	uint32_t npcdata, nfuncdata, pcsp;
	uint64_t entry, end;
	int64_t i;
	int32_t sp;
	int err;

	if (!t)
		return -ENOENT;
	i = find_func(t, vaddr);
	if (i < 0)
		return -ENOENT;
	f = func_rec(t, (uint64_t)i, &npcdata, &nfuncdata);
	if (!f)
		return -EINVAL;
	entry = ft_entry(t, (uint64_t)i);
	end = ft_entry(t, (uint64_t)i + 1);
	pcsp = fld(t, f, FUNC_PCSP);
	if (!pcsp)
		return -ENOENT;
	err = pcvalue(t, pcsp, entry, end, vaddr, &sp);
	if (err)
		return err;
	if (sp == 0)
		return 1; /* nothing pushed: frameless, or before PUSHQ BP / after POPQ BP */
	/* BP pushed but not moved yet: the next instruction is MOVQ SP, BP. */
	code = vaddr_ptr(t, vaddr, sizeof(mov_sp_bp));
	return sp == 8 && code && !memcmp(code, mov_sp_bp, sizeof(mov_sp_bp));
}

size_t gopclntab__nfuncs(const struct gopclntab *t)
{
	return t ? (size_t)t->nfunc : 0;
}

int gopclntab__func(const struct gopclntab *t, size_t i, uint64_t *entry, uint64_t *end,
		    const char **name)
{
	const uint8_t *f;
	uint32_t np, nf;

	if (!t || i >= t->nfunc)
		return -EINVAL;
	f = func_rec(t, i, &np, &nf);
	if (!f)
		return -EINVAL;
	*entry = ft_entry(t, i);
	*end = ft_entry(t, i + 1);
	*name = func_name(t, (int32_t)fld(t, f, FUNC_NAMEOFF));
	return *name ? 0 : -EINVAL;
}

int gopclntab__layout(const struct gopclntab *t)
{
	return t->layout;
}

int gopclntab__has_inline(const struct gopclntab *t)
{
	return t->layout == 116 || t->gofunc != 0;
}

void gopclntab__extent(const struct gopclntab *t, size_t *offset, size_t *len)
{
	*offset = (size_t)(t->tab - t->img);
	*len = (size_t)t->tab_size;
}
