// SPDX-License-Identifier: Apache-2.0
/* Unit tests of ksyms: kallsyms-format files written by the test, and the host's own file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols/symbolize.h"

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/spanprof-ksyms-XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static struct ksyms *load_text(const char *text, int *err)
{
	char *path = write_tmp(text);
	struct ksyms *k;

	errno = 0;
	k = ksyms__load(path);
	*err = k ? 0 : errno;
	unlink(path);
	free(path);
	return k;
}

/* Unsorted on purpose; aliases, data symbols and modules mixed in. */
static const char sample[] = "ffffffff81000000 T _stext\n"
			     "ffffffff81000000 t startup_64\n"
			     "ffffffff81100000 T schedule\n"
			     "ffffffff81000100 t early_setup\n"
			     "ffffffff82000000 D some_data\n"
			     "ffffffff81100400 W weak_fn\n"
			     "ffffffffc0a00000 t nf_hook\t[nf_tables]\n"
			     "ffffffffc0a00200 T nft_do_chain\t[nf_tables]\n"
			     "ffffffffc0b00000 t ext4_fill\t[ext4]\n";

static void test_lookup(void **state)
{
	const char *mod = (const char *)1;
	struct ksyms *k;
	uint64_t off;
	int err;

	k = load_text(sample, &err);
	assert_non_null(k);
	assert_int_equal(ksyms__count(k), 7); /* alias folded, data dropped */

	assert_null(ksyms__lookup(k, 0xffffffff80ffffffULL, &off));
	/* The global name wins among aliases. */
	assert_string_equal(ksyms__lookup(k, 0xffffffff81000000ULL, &off), "_stext");
	assert_int_equal(off, 0);
	assert_string_equal(ksyms__lookup(k, 0xffffffff81000123ULL, &off), "early_setup");
	assert_int_equal(off, 0x23);
	assert_string_equal(ksyms__lookup_module(k, 0xffffffff811003ffULL, &off, &mod), "schedule");
	assert_null(mod);
	assert_string_equal(ksyms__lookup(k, 0xffffffff81100400ULL, NULL), "weak_fn");
	assert_string_equal(ksyms__lookup_module(k, 0xffffffffc0a00010ULL, &off, &mod), "nf_hook");
	assert_string_equal(mod, "nf_tables");
	assert_int_equal(off, 0x10);
	assert_string_equal(ksyms__lookup_module(k, 0xffffffffc0a00210ULL, NULL, &mod),
			    "nft_do_chain");
	assert_string_equal(mod, "nf_tables");
	assert_string_equal(ksyms__lookup_module(k, 0xffffffffc0b00008ULL, NULL, &mod),
			    "ext4_fill");
	assert_string_equal(mod, "ext4");
	/* Far past the last symbol: unknown rather than a wild guess. */
	assert_null(ksyms__lookup(k, 0xffffffffc0c00000ULL, NULL));
	ksyms__free(k);
	ksyms__free(NULL);
}

/* kptr_restrict: every address reads as zero. */
static void test_restricted(void **state)
{
	int err;

	assert_null(load_text("0000000000000000 T _stext\n"
			      "0000000000000000 T schedule\n"
			      "0000000000000000 t nf_hook\t[nf_tables]\n",
			      &err));
	assert_int_equal(err, EPERM);
}

static void test_errors(void **state)
{
	int err;

	assert_null(load_text("", &err));
	assert_int_equal(err, ENODATA);
	assert_null(load_text("ffffffff81000000 T _stext\nnot a line\n", &err));
	assert_int_equal(err, EINVAL);
	assert_null(load_text("ffffffffc0a00000 t nf_hook\t[nf_tables\n", &err));
	assert_int_equal(err, EINVAL);
	errno = 0;
	assert_null(ksyms__load("/nonexistent/kallsyms"));
	assert_int_equal(errno, ENOENT);
}

/* The host's file: readable without root, but may be all zeros then (EPERM). */
static void test_host(void **state)
{
	struct ksyms *k = ksyms__load("/proc/kallsyms");
	uint64_t off;

	if (!k) {
		assert_true(errno == EPERM || errno == ENOENT);
		print_message("host kallsyms not usable (%s): only the error path checked\n",
			      strerror(errno));
		return;
	}
	assert_true(ksyms__count(k) > 1000);
	/* A well-known function, its address taken from the file by another reader. */
	{
		FILE *f =
		    popen("awk '$3 == \"schedule\" && $2 == \"T\" {print $1}' /proc/kallsyms", "r");
		unsigned long long addr = 0;

		assert_non_null(f);
		assert_int_equal(fscanf(f, "%llx", &addr), 1);
		pclose(f);
		assert_string_equal(ksyms__lookup(k, addr + 1, &off), "schedule");
		assert_int_equal(off, 1);
	}
	ksyms__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lookup),
	    cmocka_unit_test(test_restricted),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
