/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the fuzz targets of test/fuzz share. Each fuzz_<name>.c defines LLVMFuzzerTestOneInput()
 * (and may define LLVMFuzzerInitialize()); it is linked either with libFuzzer
 * (-fsanitize=fuzzer: `make fuzz`) or with replay.c, which feeds it the committed corpus under
 * ASan and UBSan (`make unit`, `make fuzz-regress`). Inputs are never trusted: a target only
 * checks invariants the code under test documents, and FUZZ_CHECK() aborts when one breaks, so
 * both drivers report it like a sanitizer finding.
 */
#ifndef SPANPROF_FUZZ_H
#define SPANPROF_FUZZ_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__,  \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A memfd for the inputs of code that wants a file descriptor; aborts when there is none. */
static inline int fuzz_memfd(const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0) {
		perror("memfd_create");
		abort();
	}
	return fd;
}

/* Makes the file behind @fd hold exactly the @size bytes at @data. */
static inline void fuzz_fd_set(int fd, const uint8_t *data, size_t size)
{
	size_t done = 0;
	ssize_t n;

	if (ftruncate(fd, 0)) {
		perror("ftruncate");
		abort();
	}
	while (done < size) {
		n = pwrite(fd, data + done, size - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("pwrite");
			abort();
		}
		done += (size_t)n;
	}
}

/*
 * Where a second ELF file starts in the input: the first "\177ELF" after offset 0, else @size.
 * The ELF targets read the bytes before it as the file and the rest as its separate debug file,
 * so an input can describe both (libFuzzer's cross-over of two corpus files makes such pairs).
 */
static inline size_t fuzz_elf_split(const uint8_t *data, size_t size)
{
	const uint8_t *p = size > 1 ? memmem(data + 1, size - 1, "\177ELF", 4) : NULL;

	return p ? (size_t)(p - data) : size;
}

#endif /* SPANPROF_FUZZ_H */
