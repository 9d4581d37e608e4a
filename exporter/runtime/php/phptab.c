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
#include "runtime/php/phptab.h"
#include "runtime/runtime.h"
#include "sampler.h"
#include "symbols/loadbias.h"

#define MAX_FILES 16384
#define MAX_LOADS 8

/* Per file (runtime_ops.file_size): executor_globals, the version and the PT_LOAD segments. */
struct phpfile {
	uint64_t eg; /* executor_globals' link-time address */
	struct php_version v;
	struct php_layout l;
	uint32_t n_loads;
	struct {
		uint64_t vaddr, offset, filesz;
	} loads[MAX_LOADS];
};

/* A PHP process's instance (runtime_proc.inst). */
struct phpinst {
	uint32_t pid;
	struct php_desc desc; /* as written to php_procs (start_boot_ns: the entry's) */
	struct phpproc *names;
};

struct phptab {
	struct runtime_table *procs;
	struct phptab_stats st;
};

/* --- the file ------------------------------------------------------------------------------- */

int phptab__version_of(const void *buf, size_t n, struct php_version *out)
{
	static const char powered[] = "X-Powered-By: PHP/";
	const char *p = memmem(buf, n, powered, sizeof(powered) - 1), *end = (const char *)buf + n;
	const char *api;
	int major, minor, patch;
	char tail[8];

	if (!p)
		return -ENOENT;
	p += sizeof(powered) - 1;
	/* "8.2.36" then a NUL (or "-dev", "RC1": the release it leads to) */
	{
		char ver[32];
		size_t k = 0;

		while (p + k < end && k < sizeof(ver) - 1 && p[k])
			k++;
		memcpy(ver, p, k);
		ver[k] = '\0';
		if (sscanf(ver, "%d.%d.%d", &major, &minor, &patch) != 3)
			return -ENOENT;
	}
	/* The module build id: "API" ZEND_MODULE_API_NO ",NTS" or ",TS" (then ",debug" maybe). */
	for (api = buf; (api = memmem(api, (size_t)(end - api), "API", 3)); api += 3) {
		size_t k;

		for (k = 3; api + k < end && k < 11 && api[k] >= '0' && api[k] <= '9'; k++)
			;
		if (k != 11 || api + k + 4 > end || api[k] != ',')
			continue;
		memcpy(tail, api + k + 1, 3);
		tail[3] = '\0';
		if (!strncmp(tail, "NTS", 3)) {
			out->zts = 0;
			break;
		}
		if (!strncmp(tail, "TS", 2) && (tail[2] == '\0' || tail[2] == ',')) {
			out->zts = 1;
			break;
		}
	}
	if (!api)
		return -ENOENT;
	out->major = major;
	out->minor = minor;
	out->patch = patch;
	return 0;
}

/* runtime_ops.candidate: a file named php* (php8.2, php-fpm8.2, php-cgi) or libphp*. */
static bool candidate(const struct procmaps *maps, size_t i)
{
	const struct procmap *m = &maps->maps[i];
	const char *base = strrchr(m->path, '/');

	return m->inode && m->path[0] == '/' && base &&
	       (!strncmp(base + 1, "php", 3) || !strncmp(base + 1, "libphp", 6));
}

/* executor_globals from the dynamic or the static symbol table, and the PT_LOAD segments. */
static int inspect(Elf *elf, struct phpfile *f)
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
	while ((scn = elf_nextscn(elf, scn)) && !f->eg) {
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
			if (name && !strcmp(name, "executor_globals")) {
				f->eg = sym.st_value;
				break;
			}
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
	return f->n_loads ? 0 : -ENOENT;
}

static enum runtime_verdict file_read(void *rt, uint32_t pid, const struct procmap *m, void *data)
{
	struct phptab *t = rt;
	struct phpfile *f = data;
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
	/* Not PHP (a php-named script runner, a helper): no version string. */
	if (phptab__version_of(map, (size_t)st.st_size, &f->v))
		goto out;
	elf = elf_memory(map, (size_t)st.st_size);
	if (!elf || inspect(elf, f)) {
		if (elf)
			elf_end(elf);
		goto out;
	}
	elf_end(elf);
	/* PHP from here on: usable or not, counted once per file. */
	v = RUNTIME_FILE_UNUSABLE;
	if (f->v.zts)
		t->st.failed[PHPTAB_FAIL_ZTS]++;
	else if (phplayout__of(f->v.major, f->v.minor, &f->l))
		t->st.failed[PHPTAB_FAIL_VERSION]++;
	else if (!f->eg)
		t->st.failed[PHPTAB_FAIL_OTHER]++;
	else
		v = RUNTIME_FILE_RUNTIME;
	/* Once per file identity (its verdict is remembered). */
	if (v != RUNTIME_FILE_RUNTIME)
		fprintf(stderr,
			"spanprof: php: PHP %d.%d.%d (%s) %s; its processes keep their native "
			"frames only\n",
			f->v.major, f->v.minor, f->v.patch, m->path,
			f->v.zts ? "is a thread-safe (ZTS) build, not walked"
			: !f->eg ? "exports no executor_globals"
				 : "has no known layout (7.4-8.4 have one)");
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	close(fd);
	return v;
}

/* The load bias of @f mapped by @m (its file offset inside one PT_LOAD), or -ENOENT. */
static int bias_of(const struct phpfile *f, const struct procmap *m, uint64_t *bias)
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
	const struct phpinst *pi = ctx;

	return procmaps__read_mem((int)pi->pid, addr, buf, n) ? -EFAULT : 0;
}

static void *proc_new(void *rt, const struct runtime_proc *e, const struct procmaps *maps,
		      const struct procmap *m, void *data, int *err)
{
	const struct phpfile *f = data;
	struct phpinst *pi;
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
	pi->desc.eg = f->eg + bias;
	phplayout__desc(&f->l, &pi->desc);
	pi->names = phpproc__new(&f->l, read_mem, pi);
	if (!pi->names) {
		free(pi);
		*err = -ENOMEM;
		return NULL;
	}
	return pi;
}

static void add_names(struct phpproc_stats *to, const struct phpproc_stats *from)
{
	to->named += from->named;
	to->cached += from->cached;
	for (int i = 0; i < PHPPROC_UNNAMED_COUNT; i++)
		to->unnamed[i] += from->unnamed[i];
}

static void proc_free(void *rt, void *inst, bool keep_counters)
{
	struct phptab *t = rt;
	struct phpinst *pi = inst;

	if (keep_counters) {
		struct phpproc_stats ps;

		phpproc__stats(pi->names, &ps);
		add_names(&t->st.names, &ps);
	}
	phpproc__free(pi->names);
	free(pi);
}

static int desc(void *rt, const struct runtime_proc *e, void *out)
{
	const struct phpinst *pi = e->inst;
	struct php_desc *d = out;

	(void)rt;
	*d = pi->desc;
	d->start_boot_ns = e->start_boot_ns;
	return 0;
}

static void proc_failed(void *rt, struct runtime_proc *e, int err)
{
	struct phptab *t = rt;

	(void)e;
	(void)err;
	t->st.failed[PHPTAB_FAIL_OTHER]++;
}

static const struct runtime_ops php_ops = {
    .name = "php",
    .max_files = MAX_FILES,
    .file_size = sizeof(struct phpfile),
    .desc_size = sizeof(struct php_desc),
    .candidate = candidate,
    .file_read = file_read,
    .proc_new = proc_new,
    .proc_free = proc_free,
    .desc = desc,
    .proc_failed = proc_failed,
};

struct phptab *phptab__new(int procs_fd, __u64 *proc_known)
{
	struct phptab *t = calloc(1, sizeof(*t));
	struct runtime_bpf bpf = {
	    .procs_fd = procs_fd, .proc_known = proc_known, .map_bit = SP_PROC_KNOWN_PHP};

	if (!t)
		return NULL;
	t->procs = runtime_table__new(&php_ops, t, &bpf);
	if (!t->procs) {
		free(t);
		return NULL;
	}
	return t;
}

void phptab__free(struct phptab *t)
{
	if (!t)
		return;
	runtime_table__free(t->procs);
	free(t);
}

struct runtime_table *phptab__table(struct phptab *t)
{
	return t->procs;
}

void phptab__maps_hook(struct phptab *t, uint32_t pid, uint64_t start_boot_ns,
		       const struct procmaps *maps)
{
	runtime_table__maps_hook(t->procs, pid, start_boot_ns, maps);
}

struct phpproc *phptab__find(struct phptab *t, uint32_t pid, uint64_t start_boot_ns)
{
	struct phpinst *pi = runtime_table__find(t->procs, pid, start_boot_ns);

	return pi ? pi->names : NULL;
}

static void live_names(void *ctx, void *inst)
{
	struct phptab_stats *st = ctx;
	const struct phpinst *pi = inst;
	struct phpproc_stats ps;

	phpproc__stats(pi->names, &ps);
	add_names(&st->names, &ps);
}

void phptab__stats(const struct phptab *t, struct phptab_stats *out)
{
	struct runtime_stats rs;

	*out = t->st;
	runtime_table__stats(t->procs, &rs);
	out->processes = rs.processes;
	out->live = rs.live;
	out->files_inspected = rs.files_other;
	runtime_table__each_inst(t->procs, live_names, out);
}
