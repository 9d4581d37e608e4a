// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/runtime/v8/: v8meta reads the postmortem metadata of the machine's node
 * (values checked against V8's x64 frame layout, src/execution/frame-constants.h: context at
 * fp - 8, function at fp - 16), refuses files without it and damaged ones; v8proc names functions
 * of a live node process from outside (a named function, one never called, an anonymous
 * function expression assigned to a property, which takes its inferred name), and refuses a
 * SharedFunctionInfo whose fingerprint changed. Without node on the PATH the tests skip, saying
 * so. No root.
 */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "process/procmaps.h"
#include "runtime/v8/v8meta.h"
#include "runtime/v8/v8proc.h"
#include "runtime/v8/v8tab.h"
#include "v8.h"

static char node_path[4096];

/* The node on the PATH (realpath), or 0. */
static int find_node(void)
{
	FILE *f = popen("command -v node", "r");
	char buf[4096];

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f)) {
		pclose(f);
		return 0;
	}
	pclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return realpath(buf, node_path) != NULL;
}

static int read_meta(const char *path, struct v8meta *m)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf ? v8meta__read(elf, m) : -EINVAL;
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

static void test_meta_of_node(void **state)
{
	struct v8meta m;
	struct v8_desc d;
	int err;

	(void)state;
	if (!node_path[0])
		skip(); /* no node on the PATH */
	err = read_meta(node_path, &m);
	if (err == -ENOTSUP) {
		print_message("node %s: metadata of a layout not read (checked: not V8 -ENOENT)\n",
			      node_path);
		assert_true(m.n_symbols > 0);
		return;
	}
	assert_int_equal(err, 0);
	assert_true(m.n_symbols > 100);
	assert_int_equal(m.fp_context, -8);
	assert_int_equal(m.fp_function, -16);
	assert_true(m.fp_bytecode_array < m.fp_function);
	assert_true(m.fp_bytecode_offset < m.fp_bytecode_array);
	assert_int_equal(m.heap_object_map, 0);
	assert_true(m.jsfunction_shared > 0 && m.jsfunction_shared % 8 == 0);
	assert_true(m.type_jsfunction_first > 0 &&
		    m.type_jsfunction_last >= m.type_jsfunction_first &&
		    m.type_jsfunction_last <= m.type_jsfunction_first + 32);
	assert_true(m.type_sfi && m.type_scope_info && m.type_script && m.type_bytecode_array);
	assert_true(m.first_nonstring_type > 0 && m.first_nonstring_type < m.type_sfi);
	v8tab__desc(&m, &d);
	assert_int_equal(d.fp_function, -16);
	assert_int_equal(d.jsfunction_shared, m.jsfunction_shared);
	assert_int_equal(d.start_boot_ns, 0);
}

static void test_meta_not_v8(void **state)
{
	struct v8meta m;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = '\0';
	assert_int_equal(read_meta(self, &m), -ENOENT);
	assert_int_equal(m.n_symbols, 0);
}

static void test_meta_garbage(void **state)
{
	char path[] = "/tmp/spanprof-v8meta-XXXXXX";
	unsigned char junk[4096];
	struct v8meta m;
	int fd = mkstemp(path), err;

	(void)state;
	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	memcpy(junk, "\177ELF\2\1\1", 7); /* an ELF64 header with garbage after it */
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	err = read_meta(path, &m);
	unlink(path);
	assert_true(err == -EINVAL || err == -ENOENT);
}

static const char script[] = "function someNamedFunction(a) {\n"		  /* line 1 */
			     "  return a + 1;\n"				  /* 2 */
			     "}\n"						  /* 3 */
			     "function neverCalled() { return 0; }\n"		  /* 4 */
			     "const obj = {};\n"				  /* 5 */
			     "obj.methodName = function (x) { return x * 2; };\n" /* 6 */
			     "someNamedFunction(1);\n"
			     "obj.methodName(2);\n"
			     "%DebugPrint(someNamedFunction);\n"
			     "%DebugPrint(neverCalled);\n"
			     "%DebugPrint(obj.methodName);\n"
			     "setInterval(() => {}, 100000);\n";

struct live {
	pid_t pid;
	uint64_t fn[3]; /* JSFunction addresses (tagged), in the order printed */
	char path[64];
};

/* Starts node on the script; reads the addresses it prints. 0, or -1 (skip). */
static int start_live(struct live *l)
{
	int out[2], fd, n = 0;
	FILE *f;
	char line[512];

	snprintf(l->path, sizeof(l->path), "/tmp/spanprof-v8-XXXXXX");
	fd = mkstemp(l->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, script, sizeof(script) - 1), (ssize_t)sizeof(script) - 1);
	close(fd);
	assert_int_equal(pipe(out), 0);
	l->pid = fork();
	assert_true(l->pid >= 0);
	if (!l->pid) {
		dup2(out[1], 1);
		close(out[0]);
		execl(node_path, "node", "--allow-natives-syntax", l->path, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	assert_non_null(f);
	while (n < 3 && fgets(line, sizeof(line), f)) {
		unsigned long long a;

		if (sscanf(line, "DebugPrint: 0x%llx: [Function]", &a) == 1)
			l->fn[n++] = a;
	}
	fclose(f);
	return n == 3 ? 0 : -1;
}

static void stop_live(struct live *l)
{
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	unlink(l->path);
}

static void test_names_of_a_live_node(void **state)
{
	static const char *const want[] = {"someNamedFunction", "neverCalled", "obj.methodName"};
	static const int lines[] = {1, 4, 6};
	const struct v8fn_info *fi;
	struct v8proc_stats st;
	struct v8proc *p;
	struct v8meta m;
	struct live l;

	(void)state;
	if (!node_path[0] || read_meta(node_path, &m))
		skip(); /* no node, or one whose layout is not read (test_meta_of_node says) */
	if (start_live(&l)) {
		stop_live(&l);
		fail_msg("node did not print its functions' addresses");
	}
	p = v8proc__new(l.pid, &m);
	assert_non_null(p);
	for (int i = 0; i < 3; i++) {
		uint64_t sfi, fp;

		assert_int_equal(
		    procmaps__read_mem(l.pid, l.fn[i] - 1 + m.jsfunction_shared, &sfi, 8), 0);
		assert_int_equal(
		    procmaps__read_mem(l.pid, sfi - 1 + m.sfi_name_or_scope_info, &fp, 8), 0);
		assert_int_equal(v8proc__function(p, sfi, fp, &fi), 0);
		print_message("%s %s:%d\n", fi->name, fi->file, fi->line);
		/* An anonymous expression is named as V8 names it: its inferred name. */
		assert_string_equal(fi->name, want[i]);
		assert_string_equal(fi->file, l.path);
		if (fi->line) /* line ends are computed lazily by V8: 0 when not yet */
			assert_int_equal(fi->line, lines[i]);
		/* Cached: the same answer; another fingerprint is refused, not renamed. */
		assert_int_equal(v8proc__function(p, sfi, fp, &fi), 0);
		assert_string_equal(fi->name, want[i]);
		assert_int_equal(v8proc__function(p, sfi, fp ^ 0x100, &fi),
				 -(1 + V8PROC_ERR_STALE));
		/* The JSFunction is not a SharedFunctionInfo. */
		assert_int_equal(v8proc__function(p, l.fn[i], fp, &fi), -(1 + V8PROC_ERR_TYPE));
	}
	/* A Smi, an unmapped address. */
	assert_true(v8proc__function(p, 0x200000000ull, 1, &fi) < 0);
	assert_int_equal(v8proc__function(p, 0x11, 1, &fi), -(1 + V8PROC_ERR_READ));
	v8proc__stats(p, &st);
	assert_int_equal(st.hits, 3);
	assert_int_equal(st.errors[V8PROC_ERR_STALE], 3);
	v8proc__free(p);
	stop_live(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_meta_of_node),
	    cmocka_unit_test(test_meta_not_v8),
	    cmocka_unit_test(test_meta_garbage),
	    cmocka_unit_test(test_names_of_a_live_node),
	};

	if (!find_node())
		print_message("node is not on the PATH: the node tests skip\n");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
