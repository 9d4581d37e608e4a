/*
 * Integration workload: JIT code whose only unwinding information is a jitdump
 * JIT_CODE_UNWINDING_INFO record (test_jit.py, docs/jit.md "Unwinding").
 *
 * A 7-byte stub of machine code is copied into anonymous executable memory:
 *
 *   55        push %rbp
 *   31 ed     xor  %ebp,%ebp      RBP = 0: a frame-pointer step through it proves nothing
 *   ff d7     call *%rdi          jit_cfi_burn(), the CPU-burning C function
 *   5d        pop  %rbp
 *   c3        ret
 *
 * main() calls it in a loop. The program writes jit-PID.dump in its working directory (the
 * jitdump format of tools/perf/Documentation/jitdump-specification.txt) and maps it executable
 * (as perf asks of JITs; the agent finds the file in the process's maps): one unwinding record,
 * then the code load ("jit_stub") it applies to. The record's .eh_frame is encoded by hand below
 * (one CIE, one FDE; the layout perf's genelf.c gives it: the .eh_frame taken to lie right after
 * the code, 8-aligned, its pc_begin DW_EH_PE_pcrel | DW_EH_PE_sdata4), then an .eh_frame_hdr of
 * 8 bytes (no search table), which perf keeps after the .eh_frame.
 *
 * Usage: jit_cfi SECONDS [--no-unwind]   (--no-unwind: the unwinding record is left out).
 * Waits for a line on stdin, burns SECONDS of CPU, prints {"cpu_s": S, "pid": P}.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const unsigned char stub[] = {0x55, 0x31, 0xed, 0xff, 0xd7, 0x5d, 0xc3};

static volatile unsigned long sink;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void jit_cfi_burn(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 20000000; i++)
		x += i * 7 + (x >> 3);
	sink = x;
}

struct buf {
	unsigned char b[512];
	size_t n;
};

static void put(struct buf *w, const void *p, size_t len)
{
	memcpy(w->b + w->n, p, len);
	w->n += len;
}

static void put32(struct buf *w, uint32_t v)
{
	put(w, &v, 4);
}

static void put64(struct buf *w, uint64_t v)
{
	put(w, &v, 8);
}

/* The stub's .eh_frame (CIE, FDE, terminator) and .eh_frame_hdr for code at @code. */
static size_t eh_frame(unsigned char *out, uint64_t code, size_t *hdr_size)
{
	/* Where the .eh_frame is taken to lie: after the code, 8-aligned. */
	uint64_t eh = code + ((sizeof(stub) + 7) & ~7ul);
	struct buf w = {.n = 0};
	static const unsigned char cie[] = {
	    'z',  'R',	0, /* augmentation: a pointer encoding follows */
	    1,		   /* code alignment factor */
	    0x78,	   /* data alignment factor -8 */
	    16,		   /* return address: DWARF register 16 */
	    1,	  0x1b,	   /* augmentation data: FDE pointers pcrel sdata4 */
	    0x0c, 7,	8, /* DW_CFA_def_cfa rsp+8 */
	    0x90, 1,	   /* DW_CFA_offset r16 at cfa-8 */
	    0,	  0,	   /* DW_CFA_nop padding */
	};
	static const unsigned char fde_insns[] = {
	    0,	      /* augmentation data length */
	    0x41,     /* DW_CFA_advance_loc 1: after push %rbp */
	    0x0e, 16, /* DW_CFA_def_cfa_offset 16 */
	    0x86, 2,  /* DW_CFA_offset r6 (rbp) at cfa-16 */
	    0x45,     /* DW_CFA_advance_loc 5: after pop %rbp */
	    0x0e, 8,  /* DW_CFA_def_cfa_offset 8 */
	    0xc6,     /* DW_CFA_restore r6 */
	    0,	  0,  /* padding */
	};
	uint32_t fde_at, ptr_at;

	put32(&w, 4 + 1 + sizeof(cie)); /* CIE length: id, version, the rest */
	put32(&w, 0);			/* CIE id */
	put(&w, "\1", 1);		/* version */
	put(&w, cie, sizeof(cie));
	fde_at = (uint32_t)w.n;
	put32(&w, 4 + 4 + 4 + sizeof(fde_insns)); /* FDE length */
	put32(&w, fde_at + 4);			  /* CIE pointer: back to offset 0 */
	ptr_at = (uint32_t)w.n;
	put32(&w, (uint32_t)(int32_t)(code - (eh + ptr_at))); /* pc_begin, pcrel */
	put32(&w, sizeof(stub));			      /* pc_range */
	put(&w, fde_insns, sizeof(fde_insns));
	put32(&w, 0); /* terminator */
	/* .eh_frame_hdr: version, eh_frame_ptr pcrel sdata4, no FDE count, no table. */
	put(&w, (const unsigned char[]){1, 0x1b, 0xff, 0xff}, 4);
	put32(&w, (uint32_t)(int32_t)(eh - (eh + w.n)));
	*hdr_size = 8;
	memcpy(out, w.b, w.n);
	return w.n;
}

static void rec_header(struct buf *w, uint32_t id, uint32_t total)
{
	put32(w, id);
	put32(w, total);
	put64(w, (uint64_t)time(NULL));
}

static void write_jitdump(uint64_t code, int with_unwind)
{
	static const char name[] = "jit_stub";
	unsigned char eh[256];
	size_t hdr, n = eh_frame(eh, code, &hdr), pad = (8 - n % 8) % 8;
	struct buf w = {.n = 0};
	char path[64];
	FILE *f;

	put32(&w, 0x4A695444); /* magic "JiTD" */
	put32(&w, 1);	       /* version */
	put32(&w, 40);	       /* header size */
	put32(&w, 62);	       /* EM_X86_64 */
	put32(&w, 0);
	put32(&w, (uint32_t)getpid());
	put64(&w, (uint64_t)time(NULL));
	put64(&w, 0); /* flags */
	if (with_unwind) {
		rec_header(&w, 4, (uint32_t)(16 + 24 + n + pad)); /* JIT_CODE_UNWINDING_INFO */
		put64(&w, n);					  /* unwinding_size */
		put64(&w, hdr);					  /* eh_frame_hdr_size */
		put64(&w, n);					  /* mapped_size */
		put(&w, eh, n);
		put(&w, "\0\0\0\0\0\0\0", pad);
	}
	rec_header(&w, 0, (uint32_t)(16 + 40 + sizeof(name) + sizeof(stub))); /* JIT_CODE_LOAD */
	put32(&w, (uint32_t)getpid());
	put32(&w, (uint32_t)getpid());
	put64(&w, code); /* vma */
	put64(&w, code); /* code_addr */
	put64(&w, sizeof(stub));
	put64(&w, 1); /* code_index */
	put(&w, name, sizeof(name));
	put(&w, stub, sizeof(stub));
	snprintf(path, sizeof(path), "jit-%d.dump", getpid());
	f = fopen(path, "w+");
	if (!f || fwrite(w.b, 1, w.n, f) != w.n || fflush(f)) {
		perror(path);
		exit(1);
	}
	/* The marker perf looks for: the file mapped executable. */
	if (mmap(NULL, w.n, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(f), 0) == MAP_FAILED) {
		perror("mmap jitdump");
		exit(1);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3, start;
	int with_unwind = !(argc > 2 && !strcmp(argv[2], "--no-unwind"));
	unsigned char *mem =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void (*code)(void (*)(void));
	char line[16];

	if (mem == MAP_FAILED)
		return 1;
	/* Not at the page's start: nothing about the code's place is assumed. */
	memcpy(mem + 0x40, stub, sizeof(stub));
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		return 1;
	code = (void (*)(void (*)(void)))(mem + 0x40);
	write_jitdump((uint64_t)(uintptr_t)(mem + 0x40), with_unwind);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	start = cpu_s();
	while (cpu_s() - start < secs)
		code(jit_cfi_burn);
	printf("{\"cpu_s\": %.3f, \"pid\": %d}\n", cpu_s(), getpid());
	return 0;
}
