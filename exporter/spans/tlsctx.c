// SPDX-License-Identifier: Apache-2.0
/*
 * tlsctx: locates a TLS variable (OTEP 4947's otel_thread_ctx_v1) in every thread of a process,
 * x86-64 and glibc. The file tells how the code reaches the variable; the loader's answer for
 * this process sits in a GOT slot of the live process (psABI x86-64 TLS relocations); the result
 * is either a fixed offset from the thread pointer (static TLS) or a DTV slot and an offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <uthash.h>

#include "symbols/elfcheck.h"
#include "symbols/loadbias.h"
#include "process/procmaps.h"
#include "spans/tlsctx.h"

/* A thread-pointer offset (TLSDESC static argument) is negative: at or above this as a u64. */
#define TLSCTX_NEGATIVE_MIN 0xffff800000000000ull
/* Lowest address a live user-space pointer (a TLSDESC dynamic argument) can have. */
#define TLSCTX_MIN_USER_PTR 0x10000ull
/* glibc's TLS_DTV_UNALLOCATED. */
#define TLSCTX_DTV_UNALLOCATED UINT64_MAX
#define TLSCTX_CACHE_MAX 512
#define TLSCTX_MAX_LOADS 16
#define TLSCTX_SYMBOL_MAX 64

/* ---- classification ---------------------------------------------------------------------- */

uint64_t tlsctx__exe_block_offset(uint64_t p_vaddr, uint64_t memsz, uint64_t align)
{
	uint64_t firstbyte;

	if (!align)
		align = 1;
	/* As _dl_determine_tlsoffset for the first module (offset 0), unsigned wrap included. */
	firstbyte = (0 - (p_vaddr & (align - 1))) & (align - 1);
	return ((memsz - firstbyte + align - 1) / align) * align + firstbyte;
}

/*
 * Finds @name in the symbol table @scn: 1 with *@sym and *@idx (a defined entry preferred),
 * 0 when absent, -EINVAL on a broken table.
 */
static int find_symbol(Elf *elf, Elf_Scn *scn, const char *name, GElf_Sym *sym, size_t *idx)
{
	struct elfcheck_symtab t;
	GElf_Sym s;
	const char *sname;
	int found = 0, err;

	err = elfcheck__symtab(scn, &t);
	if (err)
		return err;
	for (size_t i = 1; i < t.n; i++) {
		if (!gelf_getsym(t.data, (int)i, &s))
			return -EINVAL;
		if (!s.st_name)
			continue;
		sname = elf_strptr(elf, t.strndx, s.st_name);
		if (!sname)
			return -EINVAL;
		if (strcmp(sname, name))
			continue;
		if (!found || (sym->st_shndx == SHN_UNDEF && s.st_shndx != SHN_UNDEF)) {
			*sym = s;
			*idx = i;
			found = 1;
		}
		if (s.st_shndx != SHN_UNDEF)
			break;
	}
	return found;
}

/* Rank of a relocation type: lower is better (static first, then TLSDESC), 0 = not TLS. */
static int reloc_rank(uint32_t type)
{
	switch (type) {
	case R_X86_64_TPOFF64:
		return 1;
	case R_X86_64_TLSDESC:
		return 2;
	case R_X86_64_DTPMOD64:
		return 3;
	default:
		return 0;
	}
}

struct reloc_pick {
	int rank;
	uint32_t type;
	uint64_t offset;
	int64_t addend;
};

struct scan_state {
	size_t dynsym_scn; /* index of .dynsym's section, 0 if none */
	size_t dyn_idx;	   /* symbol's index in .dynsym, 0 if absent */
	bool module_level; /* symbol-index-0 relocations reach the variable */
	struct reloc_pick named, local;
	bool have_dtpoff;   /* R_X86_64_DTPOFF64 naming the symbol */
	uint64_t dtpoff_at; /* its r_offset */
	int64_t dtpoff_add;
};

static void pick(struct reloc_pick *p, const GElf_Rela *r)
{
	int rank = reloc_rank((uint32_t)GELF_R_TYPE(r->r_info));

	if (!rank || (p->rank && p->rank <= rank))
		return;
	p->rank = rank;
	p->type = (uint32_t)GELF_R_TYPE(r->r_info);
	p->offset = r->r_offset;
	p->addend = r->r_addend;
}

/* Walks the dynamic relocation sections (SHT_RELA linked to .dynsym). 0 or -EINVAL. */
static int scan_relocs(Elf *elf, struct scan_state *st)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr shdr;
	GElf_Rela r;
	size_t i, n, sym;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			return -EINVAL;
		if (shdr.sh_type != SHT_RELA || shdr.sh_link != st->dynsym_scn)
			continue;
		if (shdr.sh_entsize != sizeof(Elf64_Rela))
			return -EINVAL;
		data = elf_getdata(scn, NULL);
		if (!data) {
			if (shdr.sh_size)
				return -EINVAL;
			continue;
		}
		n = data->d_size / sizeof(Elf64_Rela);
		for (i = 0; i < n; i++) {
			if (!gelf_getrela(data, (int)i, &r))
				return -EINVAL;
			sym = GELF_R_SYM(r.r_info);
			if (st->dyn_idx && sym == st->dyn_idx) {
				pick(&st->named, &r);
				if (GELF_R_TYPE(r.r_info) == R_X86_64_DTPOFF64 &&
				    !st->have_dtpoff) {
					st->have_dtpoff = true;
					st->dtpoff_at = r.r_offset;
					st->dtpoff_add = r.r_addend;
				}
			} else if (!sym && st->module_level) {
				pick(&st->local, &r);
			}
		}
	}
	return 0;
}

/* DF_1_PIE in the dynamic section: 1 yes, 0 no, -EINVAL broken. */
static int has_df1_pie(Elf_Scn *dynamic)
{
	Elf_Data *data;
	GElf_Shdr shdr;
	GElf_Dyn dyn;
	size_t i, n;

	if (!dynamic)
		return 0;
	if (!gelf_getshdr(dynamic, &shdr) || !(data = elf_getdata(dynamic, NULL)))
		return -EINVAL;
	n = data->d_size / sizeof(Elf64_Dyn);
	for (i = 0; i < n; i++) {
		if (!gelf_getdyn(data, (int)i, &dyn))
			return -EINVAL;
		if (dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
			return 1;
	}
	return 0;
}

int tlsctx__classify(Elf *elf, const char *symbol, bool allow_symtab, struct tlsctx_elf_info *out)
{
	Elf_Scn *dynsym, *symtab, *dynamic;
	struct scan_state st = {0};
	GElf_Phdr phdr, tls = {0};
	GElf_Ehdr ehdr;
	GElf_Sym sym = {0};
	size_t nph, i, idx = 0;
	bool interp = false, have_tls = false, have_load = false, defined = false;
	int r, pie;

	memset(out, 0, sizeof(*out));
	if (!symbol)
		return -EINVAL;
	r = elfcheck__x86_64(elf, &ehdr, &nph);
	if (r)
		return r;
	out->vaddr_lo = UINT64_MAX;
	for (i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &phdr))
			return -EINVAL;
		if (phdr.p_type == PT_INTERP) {
			interp = true;
		} else if (phdr.p_type == PT_TLS) {
			tls = phdr;
			have_tls = true;
		} else if (phdr.p_type == PT_LOAD) {
			have_load = true;
			if (phdr.p_vaddr < out->vaddr_lo)
				out->vaddr_lo = phdr.p_vaddr;
			if (phdr.p_vaddr + phdr.p_memsz > out->vaddr_hi)
				out->vaddr_hi = phdr.p_vaddr + phdr.p_memsz;
		}
	}
	if (!have_load)
		out->vaddr_lo = 0;
	r = elfcheck__sections(elf, &dynsym, &symtab, &dynamic);
	if (r)
		return r;

	if (dynsym) {
		r = find_symbol(elf, dynsym, symbol, &sym, &idx);
		if (r < 0)
			return r;
		if (r) {
			st.dynsym_scn = elf_ndxscn(dynsym);
			st.dyn_idx = idx;
			defined = sym.st_shndx != SHN_UNDEF;
		}
	}
	if (!defined && allow_symtab && symtab) {
		GElf_Sym s;

		r = find_symbol(elf, symtab, symbol, &s, &idx);
		if (r < 0)
			return r;
		if (r && s.st_shndx != SHN_UNDEF) {
			sym = s;
			defined = true;
		}
	}
	if (!defined && !st.dyn_idx)
		return -ENOENT;
	if (GELF_ST_TYPE(sym.st_info) != STT_TLS)
		return -ENOTSUP;
	if (defined && (!have_tls || sym.st_value > tls.p_memsz))
		return -EINVAL;

	out->defined = defined;
	out->sym_value = defined ? sym.st_value : 0;
	if (dynsym) {
		st.dynsym_scn = elf_ndxscn(dynsym);
		st.module_level = defined;
		r = scan_relocs(elf, &st);
		if (r)
			return r;
	}
	if (st.named.rank) {
		out->reloc_type = st.named.type;
		out->got_vaddr = st.named.offset;
		out->adjust = -st.named.addend;
		if (st.named.type == R_X86_64_TPOFF64) {
			out->access = TLSCTX_INITIAL_EXEC;
		} else if (st.named.type == R_X86_64_TLSDESC) {
			out->access = TLSCTX_TLSDESC;
		} else {
			out->access = TLSCTX_GENERAL_DYNAMIC;
			/* The offset comes from the DTPOFF64 in the pair's second slot. */
			out->adjust = st.have_dtpoff && st.dtpoff_at == st.named.offset + 8
					  ? -st.dtpoff_add
					  : 0;
		}
		return 0;
	}
	if (!defined)
		return -ENOENT;
	if (st.local.rank) {
		out->reloc_type = st.local.type;
		out->got_vaddr = st.local.offset;
		out->adjust = (int64_t)sym.st_value - st.local.addend;
		out->access =
		    st.local.type == R_X86_64_TPOFF64 ? TLSCTX_INITIAL_EXEC : TLSCTX_LOCAL_DYNAMIC;
		return 0;
	}
	pie = has_df1_pie(dynamic);
	if (pie < 0)
		return pie;
	if (ehdr.e_type == ET_EXEC || interp || pie) {
		out->access = TLSCTX_LOCAL_EXEC;
		out->static_tpoff =
		    (int64_t)(sym.st_value -
			      tlsctx__exe_block_offset(tls.p_vaddr, tls.p_memsz, tls.p_align));
		return 0;
	}
	/* A library that defines the variable and never accesses it itself. */
	return -ENOTSUP;
}

/* ---- reading the live process ----------------------------------------------------------- */

static int read_u64s(pid_t pid, uint64_t addr, uint64_t *v, size_t n)
{
	return procmaps__read_mem(pid, addr, v, n * sizeof(*v));
}

int tlsctx__resolve(pid_t pid, uint64_t load_bias, const struct tlsctx_elf_info *info,
		    struct tlsctx_loc *out)
{
	uint64_t slot[2], arg[2], got;
	int err;

	memset(out, 0, sizeof(*out));
	if (!info)
		return -EINVAL;
	got = info->got_vaddr + load_bias;
	switch (info->access) {
	case TLSCTX_LOCAL_EXEC:
		out->kind = TLSCTX_KIND_STATIC;
		out->tpoff = info->static_tpoff;
		return 0;
	case TLSCTX_INITIAL_EXEC:
		if (info->reloc_type != R_X86_64_TPOFF64)
			return -EINVAL;
		err = read_u64s(pid, got, slot, 1);
		if (err)
			return err;
		/* Variant II: a static block is below the thread pointer; 0 = not relocated yet. */
		if (slot[0] < TLSCTX_NEGATIVE_MIN)
			return -EAGAIN;
		out->kind = TLSCTX_KIND_STATIC;
		out->tpoff = (int64_t)slot[0] + info->adjust;
		return 0;
	case TLSCTX_GENERAL_DYNAMIC:
	case TLSCTX_LOCAL_DYNAMIC:
		if (info->reloc_type == R_X86_64_TLSDESC)
			break;
		if (info->reloc_type != R_X86_64_DTPMOD64)
			return -EINVAL;
		err = read_u64s(pid, got, slot, 2);
		if (err)
			return err;
		if (!slot[0] || slot[0] > UINT32_MAX)
			return -EAGAIN;
		out->kind = TLSCTX_KIND_DTV;
		out->module_id = (uint32_t)slot[0];
		out->offset = info->access == TLSCTX_LOCAL_DYNAMIC
				  ? info->sym_value
				  : slot[1] + (uint64_t)info->adjust;
		return 0;
	case TLSCTX_TLSDESC:
		if (info->reloc_type != R_X86_64_TLSDESC)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}

	/* TLSDESC {entry, arg} (named or module-level). */
	err = read_u64s(pid, got, slot, 2);
	if (err)
		return err;
	if (!slot[0])
		return -EAGAIN; /* not relocated yet */
	if (slot[1] >= TLSCTX_NEGATIVE_MIN) {
		/* _dl_tlsdesc_return: the argument is the static TP offset. */
		out->kind = TLSCTX_KIND_STATIC;
		out->tpoff = (int64_t)slot[1] + info->adjust;
		return 0;
	}
	/* A lazy descriptor's argument points at its relocation, inside the module. */
	if (slot[1] >= info->vaddr_lo + load_bias && slot[1] < info->vaddr_hi + load_bias)
		return -EAGAIN;
	/* _dl_tlsdesc_undefweak: the argument is the bare addend. */
	if (slot[1] < TLSCTX_MIN_USER_PTR)
		return -ENOENT;
	/* _dl_tlsdesc_dynamic: struct tlsdesc_dynamic_arg {tls_index {module, offset}; gen}. */
	err = read_u64s(pid, slot[1], arg, 2);
	if (err)
		return err;
	if (!arg[0] || arg[0] > UINT32_MAX)
		return -EFAULT;
	out->kind = TLSCTX_KIND_DTV;
	out->module_id = (uint32_t)arg[0];
	out->offset = arg[1] + (uint64_t)info->adjust;
	return 0;
}

int tlsctx__address(pid_t pid, const struct tlsctx_loc *loc, uint64_t fsbase, uint64_t *addr)
{
	uint64_t dtv, count, val;
	int err;

	if (!loc)
		return -EINVAL;
	if (loc->kind == TLSCTX_KIND_STATIC) {
		*addr = fsbase + (uint64_t)loc->tpoff;
		return 0;
	}
	if (loc->kind != TLSCTX_KIND_DTV || !loc->module_id)
		return -EINVAL;
	err = read_u64s(pid, fsbase + 8, &dtv, 1); /* tcbhead_t.dtv */
	if (err)
		return err;
	if (!dtv)
		return -ENOENT;
	err = read_u64s(pid, dtv - 16, &count, 1); /* dtv[-1].counter: slots */
	if (err)
		return err;
	if (loc->module_id > count)
		return -ENOENT; /* this thread's DTV predates the module */
	err = read_u64s(pid, dtv + 16 * (uint64_t)loc->module_id, &val, 1);
	if (err)
		return err;
	if (!val || val == TLSCTX_DTV_UNALLOCATED)
		return -ENOENT;
	*addr = val + loc->offset;
	return 0;
}

/* ---- whole process ---------------------------------------------------------------------- */

struct cache_key {
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
	uint32_t allow_symtab;
	char symbol[TLSCTX_SYMBOL_MAX];
};

struct load {
	uint64_t vaddr, offset, filesz;
};

struct cache_entry {
	struct cache_key key;
	int err; /* tlsctx__classify() result */
	struct tlsctx_elf_info info;
	struct load loads[TLSCTX_MAX_LOADS];
	unsigned int nloads;
	UT_hash_handle hh;
};

static struct cache_entry *cache;
static unsigned int cache_n;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

void tlsctx__cache_clear(void)
{
	struct cache_entry *e, *tmp;

	pthread_mutex_lock(&cache_lock);
	HASH_ITER (hh, cache, e, tmp) {
		HASH_DEL(cache, e);
		free(e);
	}
	cache_n = 0;
	pthread_mutex_unlock(&cache_lock);
}

/* Classifies the open file @fd (identity @st) for @symbol into @e (err, info, loads). */
static void classify_fd(int fd, const struct stat *st, const char *symbol, bool allow_symtab,
			struct cache_entry *e)
{
	GElf_Phdr phdr;
	size_t n, i;
	Elf *elf;

	e->nloads = 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		e->err = -EINVAL;
		return;
	}
	e->err = elfcheck__within(elf, (uint64_t)st->st_size);
	if (!e->err)
		e->err = tlsctx__classify(elf, symbol, allow_symtab, &e->info);
	if (!e->err && !elf_getphdrnum(elf, &n)) {
		for (i = 0; i < n && e->nloads < TLSCTX_MAX_LOADS; i++) {
			if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD)
				continue;
			e->loads[e->nloads].vaddr = phdr.p_vaddr;
			e->loads[e->nloads].offset = phdr.p_offset;
			e->loads[e->nloads].filesz = phdr.p_filesz;
			e->nloads++;
		}
	}
	elf_end(elf);
}

/* Adds a copy of @res to the cache (dropping the least recently used entry when full). */
static void cache_add(const struct cache_entry *res)
{
	struct cache_entry *e = malloc(sizeof(*e)), *old;

	if (!e)
		return; /* uncached, still answered */
	*e = *res;
	pthread_mutex_lock(&cache_lock);
	HASH_FIND(hh, cache, &e->key, sizeof(e->key), old);
	if (old) {
		free(e);
	} else {
		if (cache_n >= TLSCTX_CACHE_MAX) {
			old = cache;
			HASH_DEL(cache, old);
			free(old);
			cache_n--;
		}
		HASH_ADD(hh, cache, key, sizeof(e->key), e);
		cache_n++;
	}
	pthread_mutex_unlock(&cache_lock);
}

/*
 * Opens mapping @m of @pid and classifies it, through the cache, into @res. 0, or -errno when
 * the file can't be opened or is not a regular file (-ENOEXEC).
 */
static int classify_mapping(pid_t pid, const struct procmap *m, const char *symbol,
			    bool allow_symtab, struct cache_entry *res)
{
	struct cache_entry *e = NULL;
	struct stat st;
	bool cacheable = strlen(symbol) < TLSCTX_SYMBOL_MAX;
	int fd, err = 0;

	fd = procmaps__open_file((int)pid, m, NULL, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	memset(res, 0, sizeof(*res));
	res->key.dev = st.st_dev;
	res->key.ino = st.st_ino;
	res->key.size = (uint64_t)st.st_size;
	res->key.mtime_sec = st.st_mtim.tv_sec;
	res->key.mtime_nsec = st.st_mtim.tv_nsec;
	res->key.allow_symtab = allow_symtab;
	if (cacheable) {
		strcpy(res->key.symbol, symbol);
		pthread_mutex_lock(&cache_lock);
		HASH_FIND(hh, cache, &res->key, sizeof(res->key), e);
		if (e) {
			/* Most recently used last: eviction takes the head. */
			HASH_DEL(cache, e);
			HASH_ADD(hh, cache, key, sizeof(e->key), e);
			*res = *e;
		}
		pthread_mutex_unlock(&cache_lock);
		if (e)
			goto cleanup;
	}
	classify_fd(fd, &st, symbol, allow_symtab, res);
	if (cacheable)
		cache_add(res);
cleanup:
	close(fd);
	return err;
}

/* Load bias of the file mapped by @m, from the PT_LOAD its file offset falls in. */
static int load_bias(const struct cache_entry *e, const struct procmap *m, uint64_t *bias)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), off;
	unsigned int i;

	for (i = 0; i < e->nloads; i++) {
		off = e->loads[i].offset & ~(page - 1);
		if (off != m->offset)
			continue;
		*bias =
		    loadbias__of(m->start, m->offset, e->loads[i].vaddr, e->loads[i].offset, page);
		return 0;
	}
	return -ENOENT;
}

static bool is_file_mapping(const struct procmap *m)
{
	return m->inode && m->path[0] == '/';
}

static bool same_file(const struct procmap *a, const struct procmap *b)
{
	return is_file_mapping(a) && a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && !strcmp(a->path, b->path);
}

static void set_path(char *path_out, size_t path_len, const char *path)
{
	if (path_out && path_len)
		snprintf(path_out, path_len, "%s", path);
}

int tlsctx__resolve_pid(pid_t pid, const char *symbol, bool allow_symtab, struct tlsctx_loc *out,
			char *path_out, size_t path_len)
{
	struct procmaps maps = {0};
	struct cache_entry *ents = NULL, *use = NULL;
	const struct procmap *m = NULL, *ref_map = NULL;
	char link[64], exe[PATH_MAX];
	size_t *order = NULL, norder = 0, i, j;
	uint64_t bias;
	ssize_t n;
	bool unusable = false;
	int err, r, denied = 0;

	memset(out, 0, sizeof(*out));
	set_path(path_out, path_len, "");
	if (!symbol)
		return -EINVAL;
	if (!elfcheck__libelf_ready())
		return -ENOSYS;
	err = procmaps__read(pid, &maps);
	if (err) {
		err = err == -ENOENT ? -ESRCH : err;
		goto cleanup;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = 0;

	/* ents[0]: the module being looked at; ents[1]: the first module that only refers. */
	order = calloc(maps.n ? maps.n : 1, sizeof(*order));
	ents = calloc(2, sizeof(*ents));
	if (!order || !ents) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* One mapping per file (its first), the executable first, then in address order. */
	for (i = 0; i < maps.n; i++) {
		m = &maps.maps[i];
		if (!is_file_mapping(m))
			continue;
		for (j = 0; j < i; j++)
			if (same_file(&maps.maps[j], m))
				break;
		if (j < i)
			continue;
		if (exe[0] && !strcmp(m->path, exe)) {
			memmove(order + 1, order, norder * sizeof(*order));
			order[0] = i;
		} else {
			order[norder] = i;
		}
		norder++;
	}

	for (i = 0; i < norder && !use; i++) {
		m = &maps.maps[order[i]];
		r = classify_mapping(pid, m, symbol, allow_symtab, &ents[0]);
		if (r == -EACCES || r == -EPERM)
			denied = r;
		if (r)
			continue;
		if (ents[0].err == -ENOTSUP)
			unusable = true;
		if (ents[0].err)
			continue;
		if (ents[0].info.defined) {
			use = &ents[0];
		} else if (!ref_map) {
			ents[1] = ents[0];
			ref_map = m;
		}
	}
	if (!use && ref_map) {
		use = &ents[1];
		m = ref_map;
	}
	if (!use) {
		err = unusable ? -ENOTSUP : denied ? denied : -ENOENT;
		goto cleanup;
	}
	/* The first mapping of the file may not be where a segment starts: try them all. */
	err = -ENOEXEC;
	for (j = 0; err && j < maps.n; j++)
		if (same_file(&maps.maps[j], m))
			err = load_bias(use, &maps.maps[j], &bias) ? -ENOEXEC : 0;
	if (err)
		goto cleanup;
	err = tlsctx__resolve(pid, bias, &use->info, out);
	if (!err)
		set_path(path_out, path_len, m->path);
cleanup:
	free(ents);
	free(order);
	procmaps__clear(&maps);
	return err;
}
