/*
 * uprobe_holder: another tool's uprobe, for integration/test_neighbors.py. Places a uprobe (a
 * perf event of the kernel's "uprobe" PMU, no BPF program) on SYMBOL of FILE for every process,
 * with the file offset of COUNTER as its reference counter (a USDT semaphore) when given, prints
 * "attached OFFSET COUNTER_OFFSET" and holds it until its stdin ends.
 *
 * Usage: uprobe_holder FILE SYMBOL [COUNTER]
 */
#include <fcntl.h>
#include <gelf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The file offset of symbol @name's address (through the PT_LOAD segment holding it), or 0. */
static unsigned long long file_offset(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nph;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && gelf_getsym(d, (int)i, &sym); i++) {
			const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);

			if (!n || strcmp(n, name) || !sym.st_value)
				continue;
			elf_getphdrnum(elf, &nph);
			for (size_t p = 0; p < nph; p++) {
				GElf_Phdr ph;

				if (gelf_getphdr(elf, (int)p, &ph) && ph.p_type == PT_LOAD &&
				    sym.st_value >= ph.p_vaddr &&
				    sym.st_value < ph.p_vaddr + ph.p_filesz)
					return sym.st_value - ph.p_vaddr + ph.p_offset;
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_event_attr a = {0};
	unsigned long long off, rc = 0;
	FILE *f;
	Elf *elf;
	int fd, type;

	if (argc < 3)
		return 2;
	elf_version(EV_CURRENT);
	fd = open(argv[1], O_RDONLY);
	elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	if (!elf || !f || fscanf(f, "%d", &type) != 1)
		return 2;
	off = file_offset(elf, argv[2]);
	if (argc > 3)
		rc = file_offset(elf, argv[3]);
	if (!off || (argc > 3 && !rc)) {
		fprintf(stderr, "uprobe_holder: %s or %s not found in %s\n", argv[2],
			argc > 3 ? argv[3] : "-", argv[1]);
		return 2;
	}
	a.size = sizeof(a);
	a.type = (unsigned)type;
	a.config1 = (unsigned long long)(unsigned long)argv[1]; /* the path */
	a.config2 = off;
	a.config = rc << 32; /* the PMU's format/ref_ctr_offset: config:32-63 */
	/* pid -1, CPU 0: every process (the uprobe is global; the CPU is where it would count). */
	fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
	if (fd < 0) {
		perror("uprobe_holder: perf_event_open");
		return 1;
	}
	printf("attached %#llx %#llx\n", off, rc);
	fflush(stdout);
	while (getchar() != EOF)
		;
	close(fd);
	return 0;
}
