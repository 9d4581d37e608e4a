// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of tlsctx: every TLS model of test/spans/tls-progs, run as children of the test. Each
 * program prints, per thread, the thread pointer and the address its code used for
 * otel_thread_ctx_v1; tlsctx must find the same address from the process alone, and the value
 * read there must be the one the thread stored. Also: classification of each file, the
 * executable block formula, and broken files (truncated, garbled, random) that must fail cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/procmaps.h"
#include "spans/tlsctx.h"

#include "../testproc.h"

#define MAX_LINES 8

struct thread_line {
	int touched; /* 'T' line: addr and val are the thread's own */
	uint64_t tp, addr, val;
};

struct child {
	pid_t pid;
	int in_fd; /* the child's stdin: closing it ends the child */
	struct thread_line t[MAX_LINES];
	int n;
};

/* Starts TLS_PROGS_DIR/@prog [@arg] (with @env added) and reads its lines up to READY. */
static void child_start(struct child *c, const char *prog, const char *arg, const char *env)
{
	char path[512], argpath[512], line[256];
	int in[2], out[2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", TLS_PROGS_DIR, prog);
	if (arg)
		snprintf(argpath, sizeof(argpath), "%s/%s", TLS_PROGS_DIR, arg);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	memset(c, 0, sizeof(*c));
	c->pid = fork_tied(); /* dies with the test, even when an assertion skips child_stop() */
	if (!c->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		if (env)
			putenv((char *)env);
		execl(path, path, arg ? argpath : NULL, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	f = fdopen(out[0], "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct thread_line *t = &c->t[c->n];
		unsigned long tp, addr, val;
		int idx;

		if (!strcmp(line, "READY\n"))
			break;
		if (c->n == MAX_LINES)
			continue;
		if (sscanf(line, "T %d %lx %lx %lx", &idx, &tp, &addr, &val) == 4) {
			t->touched = 1;
			t->tp = tp;
			t->addr = addr;
			t->val = val;
			c->n++;
		} else if (sscanf(line, "U %d %lx", &idx, &tp) == 2) {
			t->tp = tp;
			c->n++;
		}
	}
	fclose(f);
	if (c->n < 3) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		fail_msg("%s printed %d thread lines", prog, c->n);
	}
}

static void child_stop(struct child *c)
{
	close(c->in_fd);
	kill(c->pid, SIGKILL);
	assert_int_equal(waitpid(c->pid, NULL, 0), c->pid);
}

struct model_case {
	const char *prog, *arg, *env;
	bool allow_symtab;
	const char *module;	    /* basename of the module that answers */
	uint32_t kind;		    /* expected tlsctx_kind */
	bool untouched_unallocated; /* a thread that never touched it has no block yet */
};

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static void check_model(const struct model_case *mc)
{
	struct tlsctx_loc loc;
	struct child c;
	char path[512];
	uint64_t addr, val;
	int i, err, touched = 0;

	child_start(&c, mc->prog, mc->arg, mc->env);
	err = tlsctx__resolve_pid(c.pid, TLSCTX_SYMBOL, mc->allow_symtab, &loc, path, sizeof(path));
	if (err) {
		child_stop(&c);
		fail_msg("%s %s: tlsctx__resolve_pid: %s", mc->prog, mc->arg ? mc->arg : "",
			 strerror(-err));
	}
	print_message("%-14s %-15s %-4s kind %u module %u tpoff %lld offset %llu from %s\n",
		      mc->prog, mc->arg ? mc->arg : "", mc->env ? "env" : "", loc.kind,
		      loc.module_id, (long long)loc.tpoff, (unsigned long long)loc.offset,
		      base(path));
	for (i = 0; i < c.n; i++) {
		err = tlsctx__address(c.pid, &loc, c.t[i].tp, &addr);
		if (!c.t[i].touched) {
			/* Static TLS exists for every thread: it reads as NULL. */
			if (mc->untouched_unallocated) {
				assert_int_equal(err, -ENOENT);
			} else {
				assert_int_equal(err, 0);
				assert_int_equal(procmaps__read_mem(c.pid, addr, &val, 8), 0);
				assert_int_equal(val, 0);
			}
			continue;
		}
		touched++;
		if (err || addr != c.t[i].addr) {
			child_stop(&c);
			fail_msg("%s thread %d: err %d address %#llx, the code used %#llx",
				 mc->prog, i, err, (unsigned long long)addr,
				 (unsigned long long)c.t[i].addr);
		}
		assert_int_equal(procmaps__read_mem(c.pid, addr, &val, sizeof(val)), 0);
		assert_int_equal(val, c.t[i].val);
	}
	child_stop(&c);
	assert_true(touched >= 3);
	assert_string_equal(base(path), mc->module);
	assert_int_equal(loc.kind, mc->kind);
}

#define NO_SURPLUS "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0"

static const struct model_case models[] = {
    /* (a), (b), (h): local-exec in the executable. */
    {"exe-pie", NULL, NULL, false, "exe-pie", TLSCTX_KIND_STATIC, false},
    {"exe-nopie", NULL, NULL, false, "exe-nopie", TLSCTX_KIND_STATIC, false},
    {"exe-big", NULL, NULL, false, "exe-big", TLSCTX_KIND_STATIC, false},
    {"exe-nopie-big", NULL, NULL, false, "exe-nopie-big", TLSCTX_KIND_STATIC, false},
    {"exe-symtab", NULL, NULL, true, "exe-symtab", TLSCTX_KIND_STATIC, false},
    {"exe-static-pie", NULL, NULL, true, "exe-static-pie", TLSCTX_KIND_STATIC, false},
    /* (c) initial-exec users of a library's variable: their GOT slot answers. */
    {"exe-ie", NULL, NULL, false, "exe-ie", TLSCTX_KIND_STATIC, false},
    {"exe-libie", NULL, NULL, false, "libie.so", TLSCTX_KIND_STATIC, false},
    /* (d), (e), (f): libraries loaded at start-up (static TLS, but GD goes through the DTV). */
    {"exe-gnu2", NULL, NULL, false, "libgnu2.so", TLSCTX_KIND_STATIC, false},
    {"exe-gnu", NULL, NULL, false, "libgnu.so", TLSCTX_KIND_DTV, false},
    {"exe-prot", NULL, NULL, false, "libprot.so", TLSCTX_KIND_STATIC, false},
    {"exe-hid-gnu", NULL, NULL, true, "libhid-gnu.so", TLSCTX_KIND_DTV, false},
    {"exe-hid-gnu2", NULL, NULL, true, "libhid-gnu2.so", TLSCTX_KIND_STATIC, false},
    /* (g) dlopen()ed after the threads started: glibc gives TLSDESC users static TLS from the
     * surplus; GD gets dynamic blocks, allocated by each thread's first access. */
    {"exe-dlopen", "libgnu2.so", NULL, false, "libgnu2.so", TLSCTX_KIND_STATIC, false},
    {"exe-dlopen", "libgnu.so", NULL, false, "libgnu.so", TLSCTX_KIND_DTV, true},
    {"exe-dlopen", "libhid-gnu.so", NULL, true, "libhid-gnu.so", TLSCTX_KIND_DTV, true},
    {"exe-dlopen", "libhid-gnu2.so", NULL, true, "libhid-gnu2.so", TLSCTX_KIND_STATIC, false},
    /* No optional static TLS left: TLSDESC gets glibc's dynamic descriptor argument. */
    {"exe-dlopen", "libgnu2.so", NO_SURPLUS, false, "libgnu2.so", TLSCTX_KIND_DTV, true},
    {"exe-dlopen", "libhid-gnu2.so", NO_SURPLUS, true, "libhid-gnu2.so", TLSCTX_KIND_DTV, true},
    {"exe-gnu2", NULL, NO_SURPLUS, false, "libgnu2.so", TLSCTX_KIND_STATIC, false},
};

static void test_models(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		check_model(&models[i]);
}

/* The same processes answer from the cache the second time. */
static void test_models_cached(void **state)
{
	tlsctx__cache_clear();
	check_model(&models[9]);
	check_model(&models[9]);
	check_model(&models[14]);
	tlsctx__cache_clear();
}

/* Without allow_symtab, a variable that is only in .symtab is not found. */
static void test_symtab_only(void **state)
{
	struct tlsctx_loc loc;
	struct child c;

	child_start(&c, "exe-symtab", NULL, NULL);
	assert_int_equal(tlsctx__resolve_pid(c.pid, TLSCTX_SYMBOL, false, &loc, NULL, 0), -ENOENT);
	assert_int_equal(tlsctx__resolve_pid(c.pid, "no_such_tls_variable", true, &loc, NULL, 0),
			 -ENOENT);
	child_stop(&c);
}

static void test_gone(void **state)
{
	struct tlsctx_loc loc;

	assert_int_equal(tlsctx__resolve_pid(gone_pid(), TLSCTX_SYMBOL, true, &loc, NULL, 0),
			 -ESRCH);
}

/* ---- classification of the files ---------------------------------------------------------- */

static int classify_file(const char *name, bool allow_symtab, struct tlsctx_elf_info *info)
{
	char path[512];
	Elf *elf;
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", TLS_PROGS_DIR, name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	err = tlsctx__classify(elf, TLSCTX_SYMBOL, allow_symtab, info);
	elf_end(elf);
	close(fd);
	return err;
}

static void test_classify(void **state)
{
	static const struct {
		const char *file;
		bool allow_symtab;
		int err;
		enum tlsctx_access access;
		uint32_t reloc;
		bool defined;
	} cases[] = {
	    {"exe-pie", false, 0, TLSCTX_LOCAL_EXEC, 0, true},
	    {"exe-nopie", false, 0, TLSCTX_LOCAL_EXEC, 0, true},
	    {"exe-symtab", false, -ENOENT, 0, 0, false},
	    {"exe-symtab", true, 0, TLSCTX_LOCAL_EXEC, 0, true},
	    {"libgnu2.so", false, 0, TLSCTX_TLSDESC, R_X86_64_TLSDESC, true},
	    {"libgnu.so", false, 0, TLSCTX_GENERAL_DYNAMIC, R_X86_64_DTPMOD64, true},
	    {"libprot.so", false, 0, TLSCTX_TLSDESC, R_X86_64_TLSDESC, true},
	    {"libhid-gnu.so", false, -ENOENT, 0, 0, false},
	    {"libhid-gnu.so", true, 0, TLSCTX_LOCAL_DYNAMIC, R_X86_64_DTPMOD64, true},
	    {"libhid-gnu2.so", true, 0, TLSCTX_LOCAL_DYNAMIC, R_X86_64_TLSDESC, true},
	    {"libie.so", false, 0, TLSCTX_INITIAL_EXEC, R_X86_64_TPOFF64, false},
	    {"exe-ie", false, 0, TLSCTX_INITIAL_EXEC, R_X86_64_TPOFF64, false},
	    /* Defines it, never accesses it: no relocation to learn from. */
	    {"libdef.so", false, -ENOTSUP, 0, 0, false},
	    {"exe-dlopen", true, -ENOENT, 0, 0, false},
	};
	struct tlsctx_elf_info info;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = classify_file(cases[i].file, cases[i].allow_symtab, &info);

		if (err != cases[i].err)
			fail_msg("%s: %d, expected %d", cases[i].file, err, cases[i].err);
		if (err)
			continue;
		assert_int_equal(info.access, cases[i].access);
		assert_int_equal(info.reloc_type, cases[i].reloc);
		assert_int_equal(info.defined, cases[i].defined);
		assert_true(info.vaddr_lo < info.vaddr_hi);
	}
	/* The hidden variable sits after .tdata: a module-level relocation needs the offset. */
	assert_int_equal(classify_file("libhid-gnu.so", true, &info), 0);
	assert_int_equal(info.sym_value, 0x40);
	assert_int_equal(classify_file("exe-big", false, &info), 0);
	assert_int_equal(info.static_tpoff, 0x40 - 0x100); /* memsz 0xe4 rounded up to 64 */
}

/* glibc's placement of the executable's block, including a PT_TLS start off its alignment. */
static void test_exe_block_offset(void **state)
{
	uint64_t vaddr, memsz, align, off;
	int i;

	assert_int_equal(tlsctx__exe_block_offset(0x3dd0, 8, 8), 8);
	assert_int_equal(tlsctx__exe_block_offset(0x3d80, 0xe4, 0x40), 0x100);
	assert_int_equal(tlsctx__exe_block_offset(0x1000, 0, 0), 0);
	/* p_vaddr 8 past a 64-byte boundary: the block starts 8 past one too. */
	assert_int_equal(tlsctx__exe_block_offset(0x1008, 0xe4, 0x40), 0xf8);
	srand(7);
	for (i = 0; i < 10000; i++) {
		align = 1ull << (rand() % 13);
		vaddr = (uint64_t)rand();
		memsz = (uint64_t)(rand() % 5000) + align;
		off = tlsctx__exe_block_offset(vaddr, memsz, align);
		/* The block (at thread pointer - off, the thread pointer being max-aligned) keeps
		 * p_vaddr's place modulo the alignment, fits, and wastes less than one alignment.
		 */
		assert_int_equal((0 - off) & (align - 1), vaddr & (align - 1));
		assert_true(off >= memsz);
		assert_true(off < memsz + align);
	}
}

/* ---- broken files ------------------------------------------------------------------------- */

static void *slurp(const char *name, size_t *len)
{
	char path[512];
	struct stat st;
	void *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", TLS_PROGS_DIR, name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Classifies @len bytes of @buf written to a file: the file path is what the agent meets. */
static int classify_bytes(const char *dir, const void *buf, size_t len, bool allow_symtab,
			  struct tlsctx_elf_info *info)
{
	char path[512];
	Elf *elf;
	int fd, err;

	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	err = elf ? tlsctx__classify(elf, TLSCTX_SYMBOL, allow_symtab, info) : -EINVAL;
	elf_end(elf);
	close(fd);
	unlink(path);
	return err;
}

static void check_truncations(const char *dir, const char *name, bool allow_symtab)
{
	struct tlsctx_elf_info full, info;
	size_t len, cut;
	uint8_t *buf = slurp(name, &len);
	int err;

	assert_int_equal(classify_bytes(dir, buf, len, allow_symtab, &full), 0);
	for (cut = 0; cut < len; cut += cut < 256 ? 7 : 97) {
		err = classify_bytes(dir, buf, cut, allow_symtab, &info);
		/* A cut that keeps everything classify reads gives the same answer. */
		if (!err)
			assert_memory_equal(&info, &full, sizeof(info));
		else
			assert_true(err == -EINVAL || err == -ENOENT || err == -ENOTSUP);
	}
	free(buf);
}

static void test_broken_files(void **state)
{
	char dir[] = "/tmp/test_tlsctx.XXXXXX";
	struct tlsctx_elf_info info;
	uint8_t *buf, *copy;
	size_t len, i, j;
	int err;

	assert_non_null(mkdtemp(dir));
	check_truncations(dir, "libgnu2.so", false);
	check_truncations(dir, "libhid-gnu.so", true);
	check_truncations(dir, "exe-big", false);

	/* Random bytes, with and without a valid ELF header in front. */
	buf = slurp("libgnu.so", &len);
	copy = malloc(len);
	assert_non_null(copy);
	srand(11);
	for (i = 0; i < 50; i++) {
		for (j = 0; j < len; j++)
			copy[j] = (uint8_t)rand();
		if (i & 1)
			memcpy(copy, buf, 64);
		err = classify_bytes(dir, copy, len, true, &info);
		assert_true(err < 0);
	}
	/* Garbled: random bytes written over random places of a good file. */
	for (i = 0; i < 400; i++) {
		memcpy(copy, buf, len);
		for (j = 0; j < 16; j++)
			copy[(size_t)rand() % len] = (uint8_t)rand();
		if (i % 4 == 0) /* and over the headers, where it hurts most */
			for (j = 0; j < 8; j++)
				copy[(size_t)rand() % 1024] = (uint8_t)rand();
		(void)classify_bytes(dir, copy, len, true, &info);
	}
	free(copy);
	free(buf);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(tlsctx__classify(NULL, TLSCTX_SYMBOL, true, &info), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exe_block_offset), cmocka_unit_test(test_classify),
	    cmocka_unit_test(test_models),	     cmocka_unit_test(test_models_cached),
	    cmocka_unit_test(test_symtab_only),	     cmocka_unit_test(test_gone),
	    cmocka_unit_test(test_broken_files),
	};

	signal(SIGPIPE, SIG_IGN);
	elf_version(EV_CURRENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
