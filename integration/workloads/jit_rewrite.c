/*
 * Integration workload: a perf map rewritten in place (same file, opened with O_TRUNC) with
 * another name at the same address, as a JIT does that recompiles code where old code was, or
 * as HotSpot does at each `jcmd PID Compiler.perfmap` (test_jit.py, docs/jit.md "Never a stale
 * name").
 *
 * An 8-byte stub is copied into anonymous executable memory:
 *
 *   55        push %rbp
 *   48 89 e5  mov  %rsp,%rbp
 *   ff d7     call *%rdi
 *   5d        pop  %rbp
 *   c3        ret
 *
 * Phase 1: /tmp/perf-PID.map names it "alpha_stub"; main calls it with alpha_burn for SECONDS
 * of CPU. Phase 2: the stub is copied again to the same address, the map is rewritten from its
 * start (fopen "w": same inode, and longer than before: filler lines for code elsewhere) naming
 * it "beta_stub", and main calls it with beta_burn for SECONDS of CPU. So the truth is: under
 * alpha_burn the stub is alpha_stub, under beta_burn it is beta_stub.
 *
 * Usage: jit_rewrite SECONDS. Waits for a line on stdin, prints {"cpu_s": S, "pid": P}.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const unsigned char stub[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};

static volatile unsigned long sink;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void alpha_burn(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 2000000; i++)
		x += i * 7 + (x >> 3);
	sink = x;
}

__attribute__((noinline)) void beta_burn(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 2000000; i++)
		x += i * 5 + (x >> 2);
	sink = x;
}

/* Writes the map from its start: @name for the stub, then @fillers lines for code elsewhere. */
static void write_map(unsigned char *code, const char *name, int fillers)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)code, sizeof(stub), name);
	for (int i = 0; i < fillers; i++)
		fprintf(f, "%lx 10 filler_%d\n", (unsigned long)(uintptr_t)code + 0x100 + i * 0x10,
			i);
	fclose(f);
}

static void burn(unsigned char *code, void (*fn)(void), double seconds)
{
	void (*call)(void (*)(void)) = (void (*)(void (*)(void)))(uintptr_t)code;
	double end = cpu_s() + seconds;

	while (cpu_s() < end)
		call(fn);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char line[16];
	char path[64];

	if (code == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(code, stub, sizeof(stub));
	write_map(code, "alpha_stub", 4);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	burn(code, alpha_burn, seconds);
	memcpy(code, stub, sizeof(stub)); /* "recompiled" at the same address */
	write_map(code, "beta_stub", 200);
	burn(code, beta_burn, seconds);
	printf("{\"cpu_s\": %.3f, \"pid\": %d}\n", cpu_s(), getpid());
	fflush(stdout);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	unlink(path);
	return 0;
}
