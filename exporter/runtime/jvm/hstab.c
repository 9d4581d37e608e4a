// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "runtime/jvm/hsname.h"
#include "runtime/jvm/hstab.h"
#include "runtime/jvm/hsvm.h"
#include "runtime/runtime.h"
#include "sampler.h"
#include "symbols/loadbias.h"

#include <uthash.h>

#define MAX_FILES 16384
#define MAX_LOADS 8

/* Per file (runtime_ops.file_size): the table symbols and the PT_LOAD segments (load bias). */
struct hsfile {
	struct hsvm_symbols sym;
	uint32_t n_loads;
	struct {
		uint64_t vaddr, offset, filesz;
	} loads[MAX_LOADS];
};

/* A stub's name, cached per blob (struct hsinst.stubs). */
struct hsstub {
	uint64_t blob;
	uint64_t name_ptr; /* its _name pointer, as read */
	char name[HSTAB_STUB_NAME];
	UT_hash_handle hh;
};

/* Stubs named per process at most (they are created once, at the JVM's start, mostly). */
#define MAX_STUBS 4096

/* A JVM process's instance (runtime_proc.inst). */
struct hsinst {
	uint32_t pid;
	struct hsvm *vm;
	struct hsname *namer;
	struct hs_desc desc; /* as written to hs_procs (start_boot_ns: the entry's) */
	struct hsstub *stubs;
	uint32_t nstubs;
};

struct hstab {
	struct runtime_table *procs;
	struct hstab_stats st; /* naming: of the instances freed */
};

static void add_naming(struct hsname_stats *to, const struct hsname *n)
{
	struct hsname_stats s;

	hsname__stats(n, &s);
	for (int i = 0; i < HSNAME_ERR_COUNT; i++)
		to->errors[i] += s.errors[i];
	to->hits += s.hits;
	to->misses += s.misses;
	to->no_pc_desc += s.no_pc_desc;
	to->near += s.near;
	to->bad_return += s.bad_return;
	to->scope_failed += s.scope_failed;
}

/* --- the descriptor ------------------------------------------------------------------------- */

struct need {
	const struct hsvm *vm;
	const char *missing;
};

static uint64_t field(struct need *n, const char *type, const char *name)
{
	uint64_t v = 0;

	if (hsvm__field(n->vm, type, name, &v) && !n->missing)
		n->missing = name;
	return v;
}

static int rd64(pid_t pid, uint64_t addr, void *v)
{
	return procmaps__read_mem((int)pid, addr, v, 8) ? -EFAULT : 0;
}

static int rd32(pid_t pid, uint64_t addr, int32_t *v)
{
	return procmaps__read_mem((int)pid, addr, v, 8) ? -EFAULT : 0;
}

/* An offset the descriptor keeps in 16 bits. */
static int off16(uint64_t v, __u16 *out)
{
	if (v >= 0xffff)
		return -EINVAL;
	*out = (__u16)v;
	return 0;
}

int hstab__desc_of(pid_t pid, const struct hsvm *vm, struct hs_desc *d, const char **missing)
{
	struct need n = {.vm = vm};
	uint64_t heaps_addr, heaps, data, low, high, code, stub_buffer, size, v, mem, segmap,
	    log2_off, blob_kind = 0xffff, code_begin = 0, code_offset = 0;
	uint64_t vs_low, vs_high, nm_method, nm_compile_id;
	int32_t len, limit, log2;
	int64_t kind_nmethod = 0;
	bool has_kind;
	int err;

	memset(d, 0, sizeof(*d));
	*missing = NULL;
	/* The code cache: its bounds and heaps. */
	if (hsvm__static(vm, "CodeCache", "_low_bound", &low) ||
	    hsvm__static(vm, "CodeCache", "_high_bound", &high) ||
	    hsvm__static(vm, "CodeCache", "_heaps", &heaps_addr)) {
		*missing = "CodeCache::_heaps";
		return -ENOENT;
	}
	if (hsvm__static(vm, "AbstractInterpreter", "_code", &code)) {
		*missing = "AbstractInterpreter::_code";
		return -ENOENT;
	}
	mem = field(&n, "CodeHeap", "_memory");
	segmap = field(&n, "CodeHeap", "_segmap");
	log2_off = field(&n, "CodeHeap", "_log2_segment_size");
	vs_low = field(&n, "VirtualSpace", "_low_boundary");
	vs_high = field(&n, "VirtualSpace", "_high_boundary");
	data = field(&n, "GrowableArray<int>", "_data");
	len = (int32_t)field(&n, "GrowableArrayBase", "_len");
	stub_buffer = field(&n, "StubQueue", "_stub_buffer");
	limit = (int32_t)field(&n, "StubQueue", "_buffer_limit");
	if (hsvm__type_size(vm, "HeapBlock", &size) && !n.missing)
		n.missing = "sizeof(HeapBlock)";
	if (!n.missing && off16(size, &d->heap_block_size))
		return -EINVAL;
	/* CodeBlob: JDK 23+ has _kind and a code offset, earlier ones _code_begin and _name. */
	has_kind = !hsvm__field(vm, "CodeBlob", "_kind", &blob_kind);
	if (has_kind) {
		code_offset = field(&n, "CodeBlob", "_code_offset");
		if (hsvm__const(vm, "CodeBlobKind::Nmethod", &kind_nmethod) && !n.missing)
			n.missing = "CodeBlobKind::Nmethod";
		nm_method = field(&n, "nmethod", "_method");
	} else {
		code_begin = field(&n, "CodeBlob", "_code_begin");
		nm_method = hsvm__field(vm, "nmethod", "_method", &v)
				? field(&n, "CompiledMethod", "_method")
				: v;
	}
	nm_compile_id = field(&n, "nmethod", "_compile_id");
	if (n.missing) {
		*missing = n.missing;
		return -ENOENT;
	}
	err = off16(field(&n, "CodeBlob", "_name"), &d->blob_name) ||
	      off16(field(&n, "CodeBlob", "_frame_size"), &d->blob_frame_size) ||
	      off16(field(&n, "CodeBlob", "_frame_complete_offset"), &d->blob_frame_complete) ||
	      off16(code_begin, &d->blob_code_begin) || off16(code_offset, &d->blob_code_offset) ||
	      off16(nm_method, &d->nmethod_method) ||
	      off16(nm_compile_id, &d->nmethod_compile_id) ||
	      off16(field(&n, "Method", "_constMethod"), &d->method_const_method) ||
	      off16(field(&n, "ConstMethod", "_code_size"), &d->const_method_code_size);
	if (n.missing) {
		*missing = n.missing;
		return -ENOENT;
	}
	if (hsvm__type_size(vm, "ConstMethod", &size)) {
		*missing = "sizeof(ConstMethod)";
		return -ENOENT;
	}
	if (err || off16(size, &d->const_method_size))
		return -EINVAL;
	d->blob_kind = has_kind ? (__u16)blob_kind : 0xffff;
	/* One read of the blob covers every field the walk reads in it but _compile_id. */
	{
		uint64_t end = 0;
		const uint64_t ends[] = {
		    d->blob_name + 8ull,	   d->blob_frame_size + 4ull,
		    d->blob_frame_complete + 4ull, has_kind ? code_offset + 4 : code_begin + 8,
		    has_kind ? blob_kind + 1 : 0,  nm_method + 8};

		for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
			end = ends[i] > end ? ends[i] : end;
		if (end > HS_BLOB_HEADER)
			return -EINVAL;
		d->blob_header_len = (__u16)((end + 7) & ~7ull);
	}
	d->kind_nmethod = (__u8)kind_nmethod;
	d->frame_complete_16 = has_kind; /* int16_t since JDK 23, with _kind */
	d->code_begin_ptr = !has_kind;

	/* The values: set once the JVM has created its code cache and interpreter. */
	if (rd64(pid, low, &d->cc_low) || rd64(pid, high, &d->cc_high) ||
	    rd64(pid, heaps_addr, &heaps) || rd64(pid, code, &v))
		return -EFAULT;
	if (!heaps || !v || !d->cc_low || d->cc_high <= d->cc_low)
		return -EAGAIN;
	if (rd64(pid, v + stub_buffer, &d->interp_low) || rd32(pid, v + limit, &limit))
		return -EFAULT;
	if (!d->interp_low || limit <= 0)
		return -EAGAIN;
	d->interp_high = d->interp_low + (uint64_t)limit;
	if (rd32(pid, heaps + (uint64_t)len, &len) || rd64(pid, heaps + data, &data))
		return -EFAULT;
	if (len <= 0 || len > HS_MAX_HEAPS)
		return len <= 0 ? -EAGAIN : -EINVAL;
	for (int32_t i = 0; i < len; i++) {
		struct hs_heap *h = &d->heaps[i];
		uint64_t heap;

		if (rd64(pid, data + 8 * (uint64_t)i, &heap) || !heap ||
		    rd64(pid, heap + mem + vs_low, &h->low) ||
		    rd64(pid, heap + mem + vs_high, &h->high) ||
		    rd64(pid, heap + segmap + vs_low, &h->segmap) ||
		    rd32(pid, heap + log2_off, &log2))
			return -EFAULT;
		if (h->high <= h->low || log2 < 4 || log2 > 16 || !h->segmap ||
		    h->low < d->cc_low || h->high > d->cc_high)
			return -EINVAL;
		h->log2_segment = (__u32)log2;
	}
	d->n_heaps = (__u32)len;
	if (d->interp_low < d->cc_low || d->interp_high > d->cc_high)
		return -EINVAL;
	return 0;
}

/* --- the runtime ---------------------------------------------------------------------------- */

/* runtime_ops.candidate: a file named libjvm.so. */
static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];
	const char *base = strrchr(m->path, '/');

	return m->inode && m->path[0] == '/' && base && !strcmp(base + 1, "libjvm.so");
}

/* The dynamic symbols named in struct hsvm_symbols, and the PT_LOAD segments. */
static int inspect(Elf *elf, struct hsfile *f)
{
	static const struct {
		const char *name;
		size_t off;
	} want[] = {
#define W(n, m) {n, offsetof(struct hsvm_symbols, m)}
	    W("gHotSpotVMStructs", structs),
	    W("gHotSpotVMStructEntryArrayStride", structs_stride),
	    W("gHotSpotVMStructEntryTypeNameOffset", structs_type_name),
	    W("gHotSpotVMStructEntryFieldNameOffset", structs_field_name),
	    W("gHotSpotVMStructEntryTypeStringOffset", structs_type_string),
	    W("gHotSpotVMStructEntryIsStaticOffset", structs_is_static),
	    W("gHotSpotVMStructEntryOffsetOffset", structs_offset),
	    W("gHotSpotVMStructEntryAddressOffset", structs_address),
	    W("gHotSpotVMTypes", types),
	    W("gHotSpotVMTypeEntryArrayStride", types_stride),
	    W("gHotSpotVMTypeEntryTypeNameOffset", types_type_name),
	    W("gHotSpotVMTypeEntrySuperclassNameOffset", types_superclass),
	    W("gHotSpotVMTypeEntrySizeOffset", types_size),
	    W("gHotSpotVMIntConstants", int_consts),
	    W("gHotSpotVMIntConstantEntryArrayStride", int_stride),
	    W("gHotSpotVMIntConstantEntryNameOffset", int_name),
	    W("gHotSpotVMIntConstantEntryValueOffset", int_value),
	    W("gHotSpotVMLongConstants", long_consts),
	    W("gHotSpotVMLongConstantEntryArrayStride", long_stride),
	    W("gHotSpotVMLongConstantEntryNameOffset", long_name),
	    W("gHotSpotVMLongConstantEntryValueOffset", long_value),
#undef W
	};
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	GElf_Phdr ph;
	Elf_Data *data;
	size_t nph, i, k, n;
	const char *name;

	memset(f, 0, sizeof(*f));
	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    elf_getphdrnum(elf, &nph))
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -EINVAL;
		if (sh.sh_type != SHT_DYNSYM || !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_name)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || strncmp(name, "gHotSpotVM", 10))
				continue;
			for (k = 0; k < sizeof(want) / sizeof(want[0]); k++)
				if (!strcmp(name, want[k].name))
					*(uint64_t *)((char *)&f->sym + want[k].off) = sym.st_value;
		}
	}
	for (i = 0; i < nph && f->n_loads < MAX_LOADS; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->loads[f->n_loads].vaddr = ph.p_vaddr;
		f->loads[f->n_loads].offset = ph.p_offset;
		f->loads[f->n_loads].filesz = ph.p_filesz;
		f->n_loads++;
	}
	return f->sym.structs && f->sym.types && f->n_loads ? 0 : -ENOENT;
}

static enum runtime_verdict file_read(void *rt, uint32_t pid, const struct procmap *m, void *data)
{
	Elf *elf;
	int fd, err;

	(void)rt;
	fd = procmaps__open_file((int)pid, m, NULL, 0);
	if (fd < 0)
		return RUNTIME_FILE_UNKNOWN;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf ? inspect(elf, data) : -EINVAL;
	if (elf)
		elf_end(elf);
	close(fd);
	return err ? RUNTIME_FILE_OTHER : RUNTIME_FILE_RUNTIME;
}

/* The load bias of @f mapped by @m (its file offset inside one PT_LOAD), or -ENOENT. */
static int bias_of(const struct hsfile *f, const struct procmap *m, uint64_t *bias)
{
	for (uint32_t i = 0; i < f->n_loads; i++) {
		uint64_t off = f->loads[i].offset & ~0xfffull;
		uint64_t end = f->loads[i].offset + f->loads[i].filesz;

		if (m->offset < off || m->offset >= (end > off ? end : off + 1))
			continue;
		*bias = loadbias__of(m->start, m->offset, f->loads[i].vaddr, f->loads[i].offset,
				     0x1000);
		return 0;
	}
	return -ENOENT;
}

static void fail(struct hstab *t, int err)
{
	enum hstab_failure why = err == -EAGAIN			    ? HSTAB_FAIL_NOT_READY
				 : err == -ENOENT		    ? HSTAB_FAIL_FIELDS
				 : err == -EFAULT || err == -EINVAL ? HSTAB_FAIL_TABLES
								    : HSTAB_FAIL_OTHER;

	t->st.failed[why]++;
}

static void *proc_new(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
		      const struct procmap *m, void *data, int *err)
{
	static bool said_missing;
	const struct hsfile *f = data;
	const char *missing = NULL;
	struct hsinst *hi;
	uint64_t bias;

	(void)rt;
	(void)maps;
	if (!f || bias_of(f, m, &bias)) {
		*err = -EINVAL;
		return NULL;
	}
	hi = calloc(1, sizeof(*hi));
	if (!hi) {
		*err = -ENOMEM;
		return NULL;
	}
	hi->pid = e->pid;
	hi->vm = hsvm__read((pid_t)e->pid, bias, &f->sym, err);
	if (!hi->vm)
		goto fail;
	*err = hstab__desc_of((pid_t)e->pid, hi->vm, &hi->desc, &missing);
	if (*err == -ENOENT && missing && !said_missing) {
		said_missing = true;
		fprintf(
		    stderr,
		    "spanprof: JVM %u: its VMStructs lack %s: its Java frames are left native\n",
		    e->pid, missing);
	}
	if (*err)
		goto fail;
	hi->namer = hsname__new((pid_t)e->pid, hi->vm, &missing, err);
	if (!hi->namer) {
		if (*err == -ENOENT && missing && !said_missing) {
			said_missing = true;
			fprintf(stderr,
				"spanprof: JVM %u: its VMStructs lack %s: its Java frames are left "
				"native\n",
				e->pid, missing);
		}
		goto fail;
	}
	return hi;
fail:
	hsvm__free(hi->vm);
	free(hi);
	if (!*err)
		*err = -EINVAL;
	return NULL;
}

static void proc_free(void *rt, void *inst, bool keep_counters)
{
	struct hsinst *hi = inst;
	struct hsstub *st, *tmp;

	if (keep_counters && hi->namer)
		add_naming(&((struct hstab *)rt)->st.naming, hi->namer);
	HASH_ITER (hh, hi->stubs, st, tmp) {
		HASH_DEL(hi->stubs, st);
		free(st);
	}
	hsname__free(hi->namer);
	hsvm__free(hi->vm);
	free(hi);
}

static int desc(void *rt, const struct runtime_proc *e, void *out)
{
	const struct hsinst *hi = e->inst;
	struct hs_desc *d = out;

	(void)rt;
	*d = hi->desc;
	d->start_boot_ns = e->start_boot_ns;
	return 0;
}

static void proc_failed(void *rt, struct runtime_proc *e, int err)
{
	(void)e;
	fail(rt, err);
}

static const struct runtime_ops hs_ops = {
    .name = "jvm",
    .max_files = MAX_FILES,
    .file_size = sizeof(struct hsfile),
    .desc_size = sizeof(struct hs_desc),
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .desc = desc,
    .proc_failed = proc_failed,
};

struct hstab *hstab__new(int procs_fd, __u64 *proc_known)
{
	struct hstab *t = calloc(1, sizeof(*t));
	struct runtime_bpf bpf = {
	    .procs_fd = procs_fd, .proc_known = proc_known, .map_bit = SP_PROC_KNOWN_HOTSPOT};

	if (!t)
		return NULL;
	t->procs = runtime_table__new(&hs_ops, t, &bpf);
	if (!t->procs) {
		free(t);
		return NULL;
	}
	return t;
}

void hstab__free(struct hstab *t)
{
	if (!t)
		return;
	runtime_table__free(t->procs);
	free(t);
}

struct runtime_table *hstab__table(struct hstab *t)
{
	return t->procs;
}

void hstab__maps_hook(struct hstab *t, uint32_t pid, uint64_t start_boot_ns,
		      const struct procmaps *maps)
{
	runtime_table__maps_hook(t->procs, pid, start_boot_ns, maps);
}

const struct hsvm *hstab__vm(struct hstab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct hsinst *hi = runtime_table__find(t->procs, pid, start_boot_ns);

	return hi ? hi->vm : NULL;
}

struct hsname *hstab__namer(struct hstab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct hsinst *hi = runtime_table__find(t->procs, pid, start_boot_ns);

	return hi ? hi->namer : NULL;
}

static void add_inst_naming(void *ctx, void *inst)
{
	const struct hsinst *hi = inst;

	if (hi->namer)
		add_naming(ctx, hi->namer);
}

void hstab__stats(const struct hstab *t, struct hstab_stats *out)
{
	struct runtime_stats rs;

	*out = t->st;
	runtime_table__stats(t->procs, &rs);
	out->processes = rs.processes;
	out->live = rs.live;
	out->files_inspected = rs.files_other;
	runtime_table__each_inst(t->procs, add_inst_naming, &out->naming);
}

const char *hstab__stub_name(struct hstab *t, uint32_t pid, uint64_t start_boot_ns, uint64_t blob,
			     uint32_t name_lo32)
{
	struct hsinst *hi = runtime_table__find(t->procs, pid, start_boot_ns);
	struct hsstub *st;
	uint64_t ptr;
	char buf[HSTAB_STUB_NAME];
	size_t i;

	if (!hi)
		return NULL;
	HASH_FIND(hh, hi->stubs, &blob, sizeof(blob), st);
	if (st && (uint32_t)st->name_ptr == name_lo32)
		return st->name;
	/* The blob's _name must still be the pointer the walk read: a blob freed since is not
	 * named after what took its place. */
	if (rd64((pid_t)pid, blob + hi->desc.blob_name, &ptr) || (uint32_t)ptr != name_lo32 ||
	    procmaps__read_mem((int)pid, ptr, buf, sizeof(buf)))
		return NULL;
	for (i = 0; i < sizeof(buf) && buf[i]; i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			return NULL;
	if (!i || i == sizeof(buf))
		return NULL;
	if (!st) {
		if (hi->nstubs >= MAX_STUBS || !(st = calloc(1, sizeof(*st))))
			return NULL;
		st->blob = blob;
		HASH_ADD(hh, hi->stubs, blob, sizeof(st->blob), st);
		hi->nstubs++;
	}
	st->name_ptr = ptr;
	memcpy(st->name, buf, i + 1);
	return st->name;
}
