// SPDX-License-Identifier: Apache-2.0
/* golabels: where a Go program keeps its goroutine labels (see golabels.h for the sources). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "runtime/go/golabels.h"
#include "runtime/go/gopclntab.h"
#include "sampler.h"
#include "util/regfile.h"
#include "util/util.h"

/* The first release whose labelMap is a sorted slice (src/runtime/pprof/label.go); the ones
 * before keep a map[string]string. */
#define FIRST_SLICE_MINOR 24
/* Go's DWARF attribute for a type's kind (cmd/internal/dwarf: DW_AT_go_kind), and the kinds of
 * internal/abi (reflect.Kind) that a labelMap has been. */
#define DW_AT_GO_KIND 0x2900
#define GO_KIND_MAP 21
#define GO_KIND_STRUCT 25
/* Bytes of runtime.stackcheck decoded: its TLS load is its first instruction or two. */
#define STACKCHECK_BYTES 16

/*
 * Offsets per Go minor version, for binaries without DWARF. Each row says where its figures
 * come from; a version not listed is read only through its DWARF.
 */
static const struct {
	int minor;
	uint32_t g_m, m_curg, g_labels;
} version_table[] = {
    /*
     * Go 1.18-1.23, labels a map[string]string: g.m 48 and m.curg 192 in every one; g.labels
     * 360 (1.18-1.20), 344 (1.21-1.22), 352 (1.23). From the OpenTelemetry eBPF profiler's
     * interpreter/go/offsets.go (figures it took from those releases' DWARF; the fields are
     * struct g and struct m of src/runtime/runtime2.go at go1.18 ... go1.23). test_golabels
     * checks the 1.23 row against the code of the Go 1.23 programs installed on this machine
     * kind: runtime.newproc1's `newg.labels = mp.curg.labels` loads 0xc0(m) and 0x160(g);
     * integration/test_go.py the 1.18-1.19 rows with stripped go1.18.10 and go1.19.13 builds
     * (toolchains from the Go module proxy).
     */
    {18, 48, 192, 360},
    {19, 48, 192, 360},
    {20, 48, 192, 360},
    {21, 48, 192, 344},
    {22, 48, 192, 344},
    {23, 48, 192, 352},
    /* OpenTelemetry eBPF profiler, interpreter/golabels/runtime_data.go (from Go 1.24's
     * DWARF: g.m 48, m.curg 192, g.labels 352); the same in the DWARF of docker 28 (go1.24.3)
     * on this machine kind, which test_golabels compares. */
    {24, 48, 192, 352},
    /* Go 1.25 removed gobuf.ret (go.dev/cl/652276): g.sched and m.morebuf 8 bytes shorter, so
     * m.curg 184 and g.labels 344. The OpenTelemetry eBPF profiler's interpreter/go/offsets.go
     * has the same row (and the CL in its comments). No go1.25 build is checked here. */
    {25, 48, 184, 344},
    /* go1.26.8's own DWARF (readelf --debug-dump=info: runtime.g members m 48, labels 352;
     * runtime.m member curg 184); test_golabels checks the row against a binary built here. */
    {26, 48, 184, 352},
    /* go1.27.3's own DWARF (runtime.g members m 48, labels 352; runtime.m member curg 184),
     * the fields in its src/runtime/runtime2.go unchanged from 1.26 before them; labels still
     * a *labelMap over internal/runtime/pprof/label.Set (a sorted slice). test_golabels and
     * integration/test_go.py check the row against a go1.27.3 build (GOTOOLCHAIN). */
    {27, 48, 184, 352},
};

int golabels__table_row(int go_minor, struct golabels_layout *out)
{
	for (size_t i = 0; i < sizeof(version_table) / sizeof(version_table[0]); i++) {
		if (version_table[i].minor != go_minor)
			continue;
		out->g_m = version_table[i].g_m;
		out->m_curg = version_table[i].m_curg;
		out->g_labels = version_table[i].g_labels;
		out->labels_map = go_minor < FIRST_SLICE_MINOR;
		return 0;
	}
	return -ENOENT;
}

int golabels__decode_tls(const uint8_t *c, size_t len, int64_t *off)
{
	int32_t v;

	/* 64 48 8b ModRM(mod 00, rm 100: SIB) SIB(0x25: no base, no index) disp32 */
	if (len >= 9 && c[0] == 0x64 && c[1] == 0x48 && c[2] == 0x8b && (c[3] & 0xc7) == 0x04 &&
	    c[4] == 0x25) {
		memcpy(&v, c + 5, 4);
		*off = v;
		return 0;
	}
	/* 48 c7 ModRM(mod 11, /0, reg r) imm32, then 64 48 8b ModRM(mod 00, rm r) */
	if (len >= 11 && c[0] == 0x48 && c[1] == 0xc7 && (c[2] & 0xf8) == 0xc0 && c[7] == 0x64 &&
	    c[8] == 0x48 && c[9] == 0x8b && (c[10] & 0xc7) == (c[2] & 0x07) && (c[2] & 0x07) != 4 &&
	    (c[2] & 0x07) != 5) {
		memcpy(&v, c + 3, 4);
		*off = v;
		return 0;
	}
	return -ENOTSUP;
}

int golabels__decode_tls_got(const uint8_t *c, size_t len, uint64_t vaddr, uint64_t *slot_vaddr)
{
	int32_t disp;
	uint8_t r;

	if (len < 11 || c[0] != 0x48 || c[1] != 0x8b || (c[2] & 0xc7) != 0x05)
		return -ENOTSUP;
	r = (c[2] >> 3) & 7;
	/* rm 100 is a SIB byte and 101 RIP-relative: neither is "(%r)" */
	if (r == 4 || r == 5 || c[7] != 0x64 || c[8] != 0x48 || c[9] != 0x8b || c[10] != r)
		return -ENOTSUP;
	memcpy(&disp, c + 3, 4);
	*slot_vaddr = vaddr + 7 + (uint64_t)(int64_t)disp;
	return 0;
}

/* A TLS offset of g: below the thread pointer, 8-byte aligned, in the static TLS blocks. */
static bool sane_tls_offset(int64_t off, int64_t lowest)
{
	return off < 0 && off >= lowest && off % 8 == 0;
}

int golabels__tls_from_slot(struct golabels_layout *l, uint64_t v)
{
	/* dlopen()ed libraries take their initial-exec TLS from the surplus after the
	 * executable's block, which may itself be large: a wider bound than for the code's. */
	if (!v)
		return -EAGAIN;
	if (!sane_tls_offset((int64_t)v, -(1ll << 24)))
		return -ENOTSUP;
	l->tls_g = (int64_t)v;
	return 0;
}

/* The file bytes at ELF virtual address @vaddr (@len of them inside one PT_LOAD), or NULL. */
static const uint8_t *vaddr_bytes(Elf *elf, const void *image, size_t size, uint64_t vaddr,
				  size_t len)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz ||
		    ph.p_filesz - (vaddr - ph.p_vaddr) < len)
			continue;
		if (ph.p_offset > size || vaddr - ph.p_vaddr > size - ph.p_offset ||
		    size - ph.p_offset - (vaddr - ph.p_vaddr) < len)
			return NULL;
		return (const uint8_t *)image + ph.p_offset + (vaddr - ph.p_vaddr);
	}
	return NULL;
}

/* The PT_LOAD holding @vaddr: its p_vaddr - p_offset into *@delta. 0 or -ENOENT. */
static int segment_delta(Elf *elf, uint64_t vaddr, int64_t *delta)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr - ph.p_vaddr < ph.p_filesz) {
			*delta = (int64_t)(ph.p_vaddr - ph.p_offset);
			return 0;
		}
	}
	return -ENOENT;
}

/* Whether @code[@i] starts a 64-bit MOV (@opcode) whose memory operand is base + @disp. */
static bool mov_at(const uint8_t *code, size_t len, size_t i, uint8_t opcode, uint32_t disp)
{
	size_t at = i + 3; /* REX, opcode, ModRM */
	uint8_t modrm, mod;
	uint32_t d = 0;

	if (len - i < 4 || (code[i] & 0xf8) != 0x48 || code[i + 1] != opcode)
		return false;
	modrm = code[i + 2];
	mod = modrm >> 6;
	if ((modrm & 7) == 4) /* a SIB byte */
		at++;
	if (mod == 1) {
		if (at >= len || disp > 127)
			return false;
		return code[at] == disp;
	}
	if (mod != 2 || len - at < 4)
		return false;
	memcpy(&d, code + at, 4); /* little-endian, as the host (amd64) */
	return d == disp;
}

bool golabels__code_confirms(const uint8_t *code, size_t len, uint32_t m_curg, uint32_t g_labels)
{
	bool curg = false, load = false, store = false;

	for (size_t i = 0; i + 4 <= len && !(curg && load && store); i++) {
		curg |= mov_at(code, len, i, 0x8b, m_curg);
		load |= mov_at(code, len, i, 0x8b, g_labels);
		store |= mov_at(code, len, i, 0x89, g_labels);
	}
	return curg && load && store;
}

/*
 * The entry and bytes of the first function of the Go table named one of @names (@n), into
 * *@entry and *@code / *@len. 0, -ENOENT (no .gopclntab), -ENOTSUP (a table not read),
 * -ESRCH (no such function), -EINVAL (its code is not in the file).
 */
static int func_code(Elf *elf, const void *image, size_t size, const char *const *names, size_t n,
		     uint64_t *entry, const uint8_t **code, size_t *len)
{
	struct gopclntab *t = gopclntab__open(elf, image, size);
	uint64_t end = 0;
	const char *name;
	size_t i, nf, k;
	int err = -ESRCH;

	if (!t)
		return errno == ENOENT ? -ENOENT : -ENOTSUP;
	nf = gopclntab__nfuncs(t);
	for (i = 0; i < nf && err == -ESRCH; i++) {
		if (gopclntab__func(t, i, entry, &end, &name))
			continue;
		for (k = 0; k < n && strcmp(name, names[k]); k++)
			;
		if (k == n || end <= *entry)
			continue;
		*len = end - *entry;
		*code = vaddr_bytes(elf, image, size, *entry, *len);
		err = *code ? 0 : -EINVAL;
	}
	gopclntab__free(t);
	return err;
}

/*
 * g's TLS offset into out->tls_g, or (a shared object) the GOT slot it is loaded from into
 * out->tls_got_vaddr and out->text_delta. 0, -ENOENT (no .gopclntab), -ENOTSUP, -EINVAL.
 */
static int tls_offset(Elf *elf, const void *image, size_t size, struct golabels_layout *out)
{
	static const char *const names[] = {"runtime.stackcheck.abi0", "runtime.stackcheck"};
	int64_t *off = &out->tls_g;
	uint64_t entry = 0;
	const uint8_t *code = NULL;
	size_t len = 0;
	int err = func_code(elf, image, size, names, 2, &entry, &code, &len);

	if (err == -ESRCH)
		err = -ENOTSUP; /* a Go table without runtime.stackcheck */
	if (err)
		return err;
	len = len < STACKCHECK_BYTES ? len : STACKCHECK_BYTES;
	err = golabels__decode_tls(code, len, off);
	if (err == -ENOTSUP && !golabels__decode_tls_got(code, len, entry, &out->tls_got_vaddr)) {
		*off = 0;
		return segment_delta(elf, entry, &out->text_delta) ? -EINVAL : 0;
	}
	if (!err && !sane_tls_offset(*off, -65536))
		err = -ENOTSUP;
	return err;
}

/* DW_AT_data_member_location of member @name of the structure @die, or -1. */
static int64_t member_offset(Dwarf_Die *die, const char *name)
{
	Dwarf_Die child;
	Dwarf_Attribute at;
	Dwarf_Word w;

	if (dwarf_child(die, &child))
		return -1;
	do {
		const char *n;

		if (dwarf_tag(&child) != DW_TAG_member)
			continue;
		n = dwarf_diename(&child);
		if (!n || strcmp(n, name))
			continue;
		if (!dwarf_attr(&child, DW_AT_data_member_location, &at) ||
		    dwarf_formudata(&at, &w))
			return -1;
		return w < 1u << 20 ? (int64_t)w : -1;
	} while (dwarf_siblingof(&child, &child) == 0);
	return -1;
}

/* DW_AT_go_kind of @die, or -1. */
static int go_kind(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Word w;

	if (!dwarf_attr(die, DW_AT_GO_KIND, &at) || dwarf_formudata(&at, &w))
		return -1;
	return (int)w;
}

/*
 * Whether the structure @die has its members @names at the byte offsets @want (@n of them):
 * 1 yes, 0 no (a member elsewhere or missing).
 */
static int members_at(Dwarf_Die *die, const char *const *names, const int64_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (member_offset(die, names[i]) != want[i])
			return 0;
	return 1;
}

/* What dwarf_offsets() looks for in the runtime's compilation unit. */
struct dwarf_found {
	int64_t gm, gl, mc;
	int g, m;
	int labels_kind;	/* DW_AT_go_kind of runtime/pprof.labelMap, -1: not there */
	int hash_ok, bucket_ok; /* -1: type not there; 0: other offsets; 1: SP_GO_* offsets */
};

/*
 * One top-level DIE of the runtime's unit: struct runtime.g (members m, labels), runtime.m
 * (curg), the labelMap of runtime/pprof (a typedef of kind map before Go 1.24, a structure of
 * kind struct since), and the types Go's linker synthesizes for a map[string]string
 * (hash<string,string>: runtime.hmap's members; bucket<string,string>: tophash, keys, values,
 * overflow: cmd/link/internal/ld/dwarf.go, synthesizemaptypes, at go1.18 ... go1.23).
 */
static void dwarf_type(Dwarf_Die *die, struct dwarf_found *f)
{
	static const char *const hash_m[] = {"count", "B", "buckets", "oldbuckets"};
	static const int64_t hash_at[] = {SP_GO_HMAP_COUNT, SP_GO_HMAP_B, SP_GO_HMAP_BUCKETS,
					  SP_GO_HMAP_OLDBUCKETS};
	static const char *const bucket_m[] = {"tophash", "keys", "values", "overflow"};
	static const int64_t bucket_at[] = {0, SP_GO_BMAP_KEYS, SP_GO_BMAP_ELEMS,
					    SP_GO_BMAP_OVERFLOW};
	int tag = dwarf_tag(die), kind;
	const char *n = dwarf_diename(die);

	if (!n)
		return;
	if (!strcmp(n, "runtime/pprof.labelMap")) {
		/* the typedef that names a structure has no kind of its own: the structure does */
		if ((kind = go_kind(die)) >= 0)
			f->labels_kind = kind;
		return;
	}
	if (tag != DW_TAG_structure_type)
		return;
	if (!f->g && !strcmp(n, "runtime.g")) {
		f->gm = member_offset(die, "m");
		f->gl = member_offset(die, "labels");
		f->g = 1;
	} else if (!f->m && !strcmp(n, "runtime.m")) {
		f->mc = member_offset(die, "curg");
		f->m = 1;
	} else if (!strcmp(n, "hash<string,string>")) {
		f->hash_ok = members_at(die, hash_m, hash_at, 4);
	} else if (!strcmp(n, "bucket<string,string>")) {
		f->bucket_ok = members_at(die, bucket_m, bucket_at, 4);
	}
}

/*
 * g.m, g.labels and m.curg, and the form of the labels, from the DWARF of the runtime's
 * compilation unit (Go's linker writes one unit per package, and puts every type in the
 * "runtime" one). The form: the DW_AT_go_kind of runtime/pprof.labelMap (21, map: Go
 * 1.18-1.23; 25, struct: 1.24 and later); where the program has no such type (runtime/pprof
 * not linked), from the version. 0, -ENOENT (no DWARF or no such types), -EINVAL (members
 * missing), -ENOTSUP (a labelMap of another kind, or a map[string]string laid out otherwise
 * than what BPF walks: out->unsupported says so).
 */
static int dwarf_offsets(Elf *elf, struct golabels_layout *out)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	Dwarf_Off off = 0, next;
	size_t hsize;
	struct dwarf_found f = {
	    .gm = -1, .gl = -1, .mc = -1, .labels_kind = -1, .hash_ok = -1, .bucket_ok = -1};

	if (!dw)
		return -ENOENT;
	/* several units are named "runtime" (one per part of the package the linker wrote) */
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;
		const char *cuname;

		if (dwarf_offdie(dw, off + hsize, &cu) && (cuname = dwarf_diename(&cu)) &&
		    !strcmp(cuname, "runtime") && dwarf_child(&cu, &die) == 0) {
			do
				dwarf_type(&die, &f);
			while (dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	dwarf_end(dw);
	if (!(f.g && f.m))
		return -ENOENT;
	if (f.gm < 0 || f.gl < 0 || f.mc < 0)
		return -EINVAL;
	out->g_m = (uint32_t)f.gm;
	out->g_labels = (uint32_t)f.gl;
	out->m_curg = (uint32_t)f.mc;
	out->from_dwarf = 1;
	out->labels_map =
	    f.labels_kind < 0 ? out->go_minor < FIRST_SLICE_MINOR : f.labels_kind == GO_KIND_MAP;
	if (f.labels_kind >= 0 && f.labels_kind != GO_KIND_MAP && f.labels_kind != GO_KIND_STRUCT) {
		out->unsupported = "runtime/pprof.labelMap is neither a map nor a struct";
		return -ENOTSUP;
	}
	if (out->labels_map && (!f.hash_ok || !f.bucket_ok)) {
		out->unsupported = "the DWARF's map[string]string layout is not Go 1.18-1.23's";
		return -ENOTSUP;
	}
	return 0;
}

/* Whether the binary's runtime.newproc1 copies labels at @l's table offsets. */
static bool newproc1_confirms(Elf *elf, const void *image, size_t size,
			      const struct golabels_layout *l)
{
	static const char *const names[] = {"runtime.newproc1"};
	const uint8_t *code;
	uint64_t entry;
	size_t len;

	return !func_code(elf, image, size, names, 1, &entry, &code, &len) &&
	       golabels__code_confirms(code, len, l->m_curg, l->g_labels);
}

int golabels__inspect(Elf *elf, const void *image, size_t size, struct golabels_layout *out)
{
	GElf_Ehdr eh;
	int err;

	memset(out, 0, sizeof(*out));
	if (!gelf_getehdr(elf, &eh))
		return -EINVAL;
	err = gopclntab__go_version(elf, image, size, out->version, sizeof(out->version));
	if (err)
		return err;
	if (eh.e_machine != EM_X86_64) {
		out->unsupported = "not amd64";
		return -ENOTSUP;
	}
	out->go_minor = gopclntab__go_minor(out->version);
	err = tls_offset(elf, image, size, out);
	if (err == -ENOTSUP)
		out->unsupported = "runtime.stackcheck's TLS access is not one of the known forms";
	if (err)
		return err;
	err = dwarf_offsets(elf, out);
	if (err != -ENOENT)
		return err;
	if (golabels__table_row(out->go_minor, out)) {
		out->unsupported =
		    "no DWARF in the binary and no offsets known for this Go version "
		    "(build without -ldflags=-w)";
		return -ENOTSUP;
	}
	if (!newproc1_confirms(elf, image, size, out)) {
		out->unsupported =
		    "no DWARF in the binary, and its runtime.newproc1 does not use the "
		    "offsets known for its Go version (a pre-release build?): build "
		    "without -ldflags=-w";
		return -ENOTSUP;
	}
	return 0;
}

int golabels__parse(const uint8_t *buf, size_t len,
		    void (*fn)(void *ctx, const char *key, size_t klen, const char *value,
			       size_t vlen),
		    void *ctx)
{
	size_t pos = 0;
	int n = 0;

	while (pos < len) {
		size_t kl, vl;

		if (len - pos < 2)
			return -EINVAL;
		kl = buf[pos];
		vl = buf[pos + 1];
		if (kl == 0 || len - pos - 2 < kl + vl)
			return -EINVAL;
		if (fn)
			fn(ctx, (const char *)buf + pos + 2, kl, (const char *)buf + pos + 2 + kl,
			   vl);
		pos += 2 + kl + vl;
		n++;
	}
	return n;
}

int golabels__hex_id(const char *s, size_t slen, uint8_t *out, size_t n)
{
	bool nonzero = false;

	if (slen != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = util__hexval(s[2 * i]), lo = util__hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
		nonzero |= out[i] != 0;
	}
	return nonzero ? 0 : -EINVAL;
}

/* --- per-process, cached by file identity -------------------------------------------------- */
#define CACHE_FILES 64

static struct cached {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int err;
	struct golabels_layout layout;
	int used;
} cache[CACHE_FILES];
static unsigned cache_next;

void golabels__cache_clear(void)
{
	memset(cache, 0, sizeof(cache));
	cache_next = 0;
}

static int inspect_fd(int fd, const struct stat *st, struct golabels_layout *out)
{
	Elf *elf;
	void *img;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	if (elf_kind(elf) != ELF_K_ELF || !gopclntab__maybe(elf) || st->st_size <= 0) {
		elf_end(elf);
		return -ENOENT;
	}
	img = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (img == MAP_FAILED) {
		err = -errno;
		elf_end(elf);
		return err;
	}
	err = golabels__inspect(elf, img, (size_t)st->st_size, out);
	munmap(img, (size_t)st->st_size);
	elf_end(elf);
	return err;
}

int golabels__resolve_fd(int fd, int pid, struct golabels_layout *out)
{
	struct stat st;
	struct cached *c;
	int err;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st))
		return -errno;
	for (unsigned i = 0; i < CACHE_FILES; i++) {
		c = &cache[i];
		if (c->used && c->dev == st.st_dev && c->ino == st.st_ino &&
		    c->size == st.st_size && c->mtime.tv_sec == st.st_mtim.tv_sec &&
		    c->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			*out = c->layout;
			return c->err;
		}
	}
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	err = inspect_fd(fd, &st, out);
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	if (err == -ENOMEM)
		return err; /* not cached: may work next time */
	c = &cache[cache_next++ % CACHE_FILES];
	*c = (struct cached){.dev = st.st_dev,
			     .ino = st.st_ino,
			     .size = st.st_size,
			     .mtime = st.st_mtim,
			     .err = err,
			     .layout = *out,
			     .used = 1};
	if (err == -ENOTSUP && out->unsupported)
		fprintf(stderr, "spanprof: Go: goroutine labels of pid %d (%s) are not read: %s\n",
			pid, out->version, out->unsupported);
	return err;
}

int golabels__resolve_pid(int pid, struct golabels_layout *out)
{
	struct stat st;
	char path[64];
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	/* The executable may sit on a file system that can stall (regfile.h). */
	fd = regfile__open(path, &st);
	if (fd < 0)
		return fd == -ENOENT ? -ESRCH : fd;
	err = golabels__resolve_fd(fd, pid, out);
	close(fd);
	return err;
}
