/*
 * Integration workload: a tiny JIT leaf sampled mostly at its entry and its return, where its
 * frame does not exist (test_jit_cfi.py, docs/jit.md "Unwinding through JIT code").
 *
 * A 10-byte stub is copied into anonymous executable memory and named leaf_stub in
 * /tmp/perf-PID.map:
 *
 *   55        push %rbp
 *   48 89 e5  mov  %rsp,%rbp
 *   90 x4     nop
 *   5d        pop  %rbp
 *   c3        ret
 *
 * caller_fn (C, with CFI) calls it in a loop. The truth is main -> caller_fn -> leaf_stub. At
 * the push, the mov and the ret, RBP is still caller_fn's: a frame-pointer step from the leaf
 * there lands in main, and caller_fn is lost.
 *
 * Usage: jit_leaf SECONDS. Waits for a line on stdin, prints {"cpu_s": S, "pid": P}.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const unsigned char stub[] = {0x55, 0x48, 0x89, 0xe5, 0x90, 0x90, 0x90, 0x90, 0x5d, 0xc3};

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void caller_fn(unsigned char *code, double seconds)
{
	void (*call)(void) = (void (*)(void))(uintptr_t)code;
	double end = cpu_s() + seconds;

	while (cpu_s() < end)
		for (int i = 0; i < 100000; i++)
			call();
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64], line[16];
	FILE *f;

	if (code == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(code, stub, sizeof(stub));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "%lx %zx leaf_stub\n", (unsigned long)(uintptr_t)code, sizeof(stub));
	fclose(f);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	caller_fn(code, seconds);
	printf("{\"cpu_s\": %.3f, \"pid\": %d}\n", cpu_s(), getpid());
	fflush(stdout);
	unlink(path);
	return 0;
}
