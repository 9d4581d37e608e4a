// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "runtime/ruby/rubytab.h"
#include "runtime/runtime.h"
#include "sampler.h"
#include "symbols/loadbias.h"

#define MAX_FILES 16384
#define MAX_LOADS 8

/* Per file (runtime_ops.file_size): the symbols, the version and the PT_LOAD segments. */
struct rubyfile {
	uint64_t vm_ptr;      /* ruby_current_vm_ptr's link-time address */
	uint64_t api_version; /* ruby_api_version's (int[3]: major, minor, teeny) */
	int major, minor, teeny;
	struct ruby_layout l;
	uint32_t n_loads;
	struct {
		uint64_t vaddr, offset, filesz, memsz;
		uint32_t flags;
	} loads[MAX_LOADS];
};

/* A Ruby process's instance (runtime_proc.inst). */
struct rubyinst {
	uint32_t pid;
	struct ruby_desc desc; /* as written to ruby_procs (start_boot_ns: the entry's) */
	struct rubyproc *names;
};

struct rubytab {
	struct runtime_table *procs;
	struct rubytab_stats st;
};

/* --- the file ------------------------------------------------------------------------------- */

/* runtime_ops.candidate: a file named libruby* (libruby-3.1.so.3.1) or ruby* (a static ruby). */
static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];
	const char *base = strrchr(m->path, '/');

	return m->inode && m->path[0] == '/' && base &&
	       (!strncmp(base + 1, "ruby", 4) || !strncmp(base + 1, "libruby", 7));
}

/* The symbols from the dynamic or the static symbol table, and the PT_LOAD segments. */
static int inspect(Elf *elf, struct rubyfile *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	GElf_Phdr ph;
	Elf_Data *data;
	size_t nph, i, n;
	const char *name;

	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    elf_getphdrnum(elf, &nph))
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn)) && (!f->vm_ptr || !f->api_version)) {
		if (!gelf_getshdr(scn, &sh))
			return -EINVAL;
		if ((sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_name || GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "ruby_current_vm_ptr"))
				f->vm_ptr = sym.st_value;
			else if (!strcmp(name, "ruby_api_version") && sym.st_size == 12)
				f->api_version = sym.st_value;
		}
	}
	for (i = 0; i < nph && f->n_loads < MAX_LOADS; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->loads[f->n_loads].vaddr = ph.p_vaddr;
		f->loads[f->n_loads].offset = ph.p_offset;
		f->loads[f->n_loads].filesz = ph.p_filesz;
		f->loads[f->n_loads].memsz = ph.p_memsz;
		f->loads[f->n_loads].flags = ph.p_flags;
		f->n_loads++;
	}
	return f->n_loads ? 0 : -ENOENT;
}

/* ruby_api_version's three ints from the file's bytes @map (@size): 0 or -ENOENT. */
static int read_version(const struct rubyfile *f, const uint8_t *map, size_t size,
			struct rubyfile *out)
{
	int32_t v[3];

	for (uint32_t i = 0; i < f->n_loads; i++) {
		uint64_t va = f->loads[i].vaddr, off;

		if (f->api_version < va || f->api_version + 12 > va + f->loads[i].filesz)
			continue;
		off = f->loads[i].offset + (f->api_version - va);
		if (off + 12 > size)
			return -ENOENT;
		memcpy(v, map + off, sizeof(v));
		if (v[0] < 1 || v[0] > 9 || v[1] < 0 || v[1] > 99 || v[2] < 0 || v[2] > 99)
			return -ENOENT;
		out->major = v[0];
		out->minor = v[1];
		out->teeny = v[2];
		return 0;
	}
	return -ENOENT;
}

static enum runtime_verdict file_read(void *rt, uint32_t pid, const struct procmap *m, void *data)
{
	struct rubytab *t = rt;
	struct rubyfile *f = data;
	enum runtime_verdict v = RUNTIME_FILE_OTHER;
	struct stat st;
	void *map = MAP_FAILED;
	Elf *elf;
	int fd;

	fd = procmaps__open_file((int)pid, m, NULL, 0);
	if (fd < 0)
		return RUNTIME_FILE_UNKNOWN;
	if (fstat(fd, &st) || st.st_size <= 0)
		goto out;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	elf = elf_memory(map, (size_t)st.st_size);
	if (!elf || inspect(elf, f)) {
		if (elf)
			elf_end(elf);
		goto out;
	}
	elf_end(elf);
	/* Not Ruby (a ruby-named script, a launcher that links libruby): no version symbol. */
	if (!f->api_version || read_version(f, map, (size_t)st.st_size, f))
		goto out;
	/* Ruby from here on: usable or not, counted once per file. */
	v = RUNTIME_FILE_UNUSABLE;
	if (!f->vm_ptr)
		t->st.failed[RUBYTAB_FAIL_SYMBOLS]++;
	else if (rubylayout__of(f->major, f->minor, &f->l))
		t->st.failed[RUBYTAB_FAIL_VERSION]++;
	else
		v = RUNTIME_FILE_RUNTIME;
	/* Once per file identity (its verdict is remembered). */
	if (v != RUNTIME_FILE_RUNTIME)
		fprintf(stderr,
			"spanprof: ruby: Ruby %d.%d.%d (%s) %s; its processes keep their native "
			"frames only\n",
			f->major, f->minor, f->teeny, m->path,
			!f->vm_ptr
			    ? "exports no ruby_current_vm_ptr symbol (a stripped static build?)"
			    : "has no known layout (3.1 has one)");
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	close(fd);
	return v;
}

/* The load bias of @f mapped by @m (its file offset inside one PT_LOAD), or -ENOENT. */
static int bias_of(const struct rubyfile *f, const struct procmap *m, uint64_t *bias)
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

/* --- the runtime ---------------------------------------------------------------------------- */

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct rubyinst *pi = ctx;

	return procmaps__read_mem((int)pi->pid, addr, buf, n) ? -EFAULT : 0;
}

static void *proc_new(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
		      const struct procmap *m, void *data, int *err)
{
	const struct rubyfile *f = data;
	struct rubyinst *pi;
	uint64_t bias;

	(void)rt;
	(void)maps;
	if (!f || bias_of(f, m, &bias)) {
		*err = -EINVAL;
		return NULL;
	}
	pi = calloc(1, sizeof(*pi));
	if (!pi) {
		*err = -ENOMEM;
		return NULL;
	}
	pi->pid = e->pid;
	pi->desc.vm_ptr = f->vm_ptr + bias;
	rubylayout__desc(&f->l, &pi->desc);
	pi->names = rubyproc__new(&f->l, read_mem, pi);
	if (!pi->names) {
		free(pi);
		*err = -ENOMEM;
		return NULL;
	}
	/* The symbol table's slot is in libruby's writable segment (.data, .bss). */
	for (uint32_t i = 0; i < f->n_loads; i++) {
		if (f->loads[i].flags & PF_W) {
			rubyproc__set_symbols_area(pi->names, (f->loads[i].vaddr + bias) & ~7ull,
						   f->loads[i].vaddr + f->loads[i].memsz + bias);
			break;
		}
	}
	return pi;
}

static void add_names(struct rubyproc_stats *to, const struct rubyproc_stats *from)
{
	to->named += from->named;
	to->cached += from->cached;
	to->lines_unknown += from->lines_unknown;
	for (int i = 0; i < RUBYPROC_UNNAMED_COUNT; i++)
		to->unnamed[i] += from->unnamed[i];
}

static void proc_free(void *rt, void *inst, bool keep_counters)
{
	struct rubytab *t = rt;
	struct rubyinst *pi = inst;

	if (keep_counters) {
		struct rubyproc_stats ps;

		rubyproc__stats(pi->names, &ps);
		add_names(&t->st.names, &ps);
	}
	rubyproc__free(pi->names);
	free(pi);
}

static int desc(void *rt, const struct runtime_proc *e, void *out)
{
	const struct rubyinst *pi = e->inst;
	struct ruby_desc *d = out;

	(void)rt;
	*d = pi->desc;
	d->start_boot_ns = e->start_boot_ns;
	return 0;
}

static void proc_failed(void *rt, struct runtime_proc *e, int err)
{
	struct rubytab *t = rt;

	(void)e;
	(void)err;
	t->st.failed[RUBYTAB_FAIL_OTHER]++;
}

static const struct runtime_ops ruby_ops = {
    .name = "ruby",
    .max_files = MAX_FILES,
    .file_size = sizeof(struct rubyfile),
    .desc_size = sizeof(struct ruby_desc),
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .desc = desc,
    .proc_failed = proc_failed,
};

struct rubytab *rubytab__new(int procs_fd, __u64 *proc_known)
{
	struct rubytab *t = calloc(1, sizeof(*t));
	struct runtime_bpf bpf = {
	    .procs_fd = procs_fd, .proc_known = proc_known, .map_bit = SP_PROC_KNOWN_RUBY};

	if (!t)
		return NULL;
	t->procs = runtime_table__new(&ruby_ops, t, &bpf);
	if (!t->procs) {
		free(t);
		return NULL;
	}
	return t;
}

void rubytab__free(struct rubytab *t)
{
	if (!t)
		return;
	runtime_table__free(t->procs);
	free(t);
}

struct runtime_table *rubytab__table(struct rubytab *t)
{
	return t->procs;
}

void rubytab__maps_hook(struct rubytab *t, uint32_t pid, uint64_t start_boot_ns,
			const struct procmaps *maps)
{
	runtime_table__maps_hook(t->procs, pid, start_boot_ns, maps);
}

struct rubyproc *rubytab__find(struct rubytab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct rubyinst *pi = runtime_table__find(t->procs, pid, start_boot_ns);

	return pi ? pi->names : NULL;
}

static void live_names(void *ctx, void *inst)
{
	struct rubytab_stats *st = ctx;
	const struct rubyinst *pi = inst;
	struct rubyproc_stats ps;

	rubyproc__stats(pi->names, &ps);
	add_names(&st->names, &ps);
}

void rubytab__stats(const struct rubytab *t, struct rubytab_stats *out)
{
	struct runtime_stats rs;

	*out = t->st;
	runtime_table__stats(t->procs, &rs);
	out->processes = rs.processes;
	out->live = rs.live;
	out->files_inspected = rs.files_other;
	runtime_table__each_inst(t->procs, live_names, out);
}
