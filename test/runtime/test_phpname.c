// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of exporter/runtime/php/: the layouts of PHP's structures per version, the naming of
 * PHP frame records (bpf/php.h) against a synthetic memory image laid out as PHP 8.2 lays out
 * its zend_function, zend_class_entry and zend_string (runtime/php/phpproc.h), and the version
 * and build a PHP file says of itself (phptab__version_of()). No process, no root.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/php/phpproc.h"
#include "runtime/php/phptab.h"

/* The image: BASE.. BASE + sizeof(mem), zeroed per test. */
#define BASE 0x7f0000000000ull
static unsigned char mem[1 << 16];
static int reads;

static int img_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	(void)ctx;
	reads++;
	if (addr < BASE || addr + n > BASE + sizeof(mem) || addr + n < addr)
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), n);
	return 0;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

/* A zend_string at @addr holding @s (len at 16, val at 24). */
static void put_str(uint64_t addr, const char *s)
{
	put64(addr + 16, strlen(s));
	memcpy(mem + (addr - BASE) + 24, s, strlen(s));
}

static struct php_layout l82;

/* Addresses in the image. */
#define FN_USER (BASE + 0x100)
#define FN_INTERNAL (BASE + 0x400)
#define FN_MAIN (BASE + 0x700)
#define STR_NAME (BASE + 0x1000)
#define STR_FILE (BASE + 0x1100)
#define STR_CLASS (BASE + 0x1200)
#define STR_INAME (BASE + 0x1300)
#define CLASS (BASE + 0x2000)
#define OPCODES (BASE + 0x3000)

/* A user method Shape::area of /srv/app/shape.php, an internal function array_map, a file's own
 * code (no name). */
static int setup(void **state)
{
	(void)state;
	memset(mem, 0, sizeof(mem));
	reads = 0;
	assert_int_equal(phplayout__of(8, 2, &l82), 0);
	put_str(STR_NAME, "area");
	put_str(STR_FILE, "/srv/app/shape.php");
	put_str(STR_CLASS, "Shape");
	put_str(STR_INAME, "array_map");
	put64(CLASS + l82.ce_name, STR_CLASS);
	mem[FN_USER - BASE] = PHP_USER_FUNCTION;
	put64(FN_USER + l82.fn_name, STR_NAME);
	put64(FN_USER + l82.fn_scope, CLASS);
	put64(FN_USER + l82.op_opcodes, OPCODES);
	put64(FN_USER + l82.op_filename, STR_FILE);
	mem[FN_INTERNAL - BASE] = PHP_INTERNAL_FUNCTION;
	put64(FN_INTERNAL + l82.fn_name, STR_INAME);
	mem[FN_MAIN - BASE] = PHP_USER_FUNCTION;
	put64(FN_MAIN + l82.op_opcodes, OPCODES + 0x800);
	put64(FN_MAIN + l82.op_filename, STR_FILE);
	return 0;
}

/* The record BPF would write for the function at @fn of @type at @line (bpf/php.h). */
static void record(uint64_t fn, uint32_t type, uint32_t line, uint64_t *w0, uint64_t *w1)
{
	uint64_t name = 0, opcodes = 0;

	memcpy(&name, mem + (fn - BASE) + l82.fn_name, 8);
	if (type != PHP_INTERNAL_FUNCTION)
		memcpy(&opcodes, mem + (fn - BASE) + l82.op_opcodes, 8);
	*w0 = fn | (uint64_t)type << PHP_TYPE_SHIFT;
	*w1 = line | (uint64_t)php_fingerprint(type, opcodes, name) << 32;
}

/* Per version, the offsets the walk and the naming use; 8.2's as read from Debian's 8.2.36. */
static void test_layouts(void **state)
{
	struct php_layout l;
	struct php_desc d = {0};
	static const struct {
		int major, minor;
		uint16_t last, opcodes, filename;
	} want[] = {
	    {7, 4, 60, 64, 136}, {8, 0, 68, 72, 144}, {8, 1, 68, 72, 144},
	    {8, 2, 80, 88, 152}, {8, 3, 76, 80, 144}, {8, 4, 84, 88, 152},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(phplayout__of(want[i].major, want[i].minor, &l), 0);
		assert_int_equal(l.op_last, want[i].last);
		assert_int_equal(l.op_opcodes, want[i].opcodes);
		assert_int_equal(l.op_filename, want[i].filename);
		assert_int_equal(l.eg_current_execute_data, 488);
		assert_int_equal(l.ed_func, 24);
		assert_int_equal(l.ed_prev, 48);
		assert_int_equal(l.zop_lineno, 24);
	}
	assert_int_equal(phplayout__of(7, 3, &l), -ENOTSUP);
	assert_int_equal(phplayout__of(8, 5, &l), -ENOTSUP);
	assert_int_equal(phplayout__of(5, 6, &l), -ENOTSUP);
	assert_int_equal(phplayout__of(8, 2, &l), 0);
	phplayout__desc(&l, &d);
	assert_int_equal(d.eg_current_execute_data, 488);
	assert_int_equal(d.op_opcodes, 88);
	assert_int_equal(d.op_last, 80);
	assert_int_equal(d.ed_this_type_info, 40);
	assert_int_equal(d.zop_size, 32);
}

static void test_user_method(void **state)
{
	struct phpproc *p = phpproc__new(&l82, img_read, NULL);
	struct php_frame_name nm;
	struct phpproc_stats st;
	uint64_t w0, w1;

	(void)state;
	assert_non_null(p);
	record(FN_USER, PHP_USER_FUNCTION, 23, &w0, &w1);
	assert_int_equal(phpproc__name(p, w0 | PHP_FRAME_ENTRY, w1, &nm), 0);
	assert_string_equal(nm.klass, "Shape");
	assert_string_equal(nm.function, "area");
	assert_string_equal(nm.file, "/srv/app/shape.php");
	assert_int_equal(nm.line, 23);
	assert_false(nm.internal);
	/* Again, at another line: from the cache, no read. */
	reads = 0;
	record(FN_USER, PHP_USER_FUNCTION, 24, &w0, &w1);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), 0);
	assert_int_equal(reads, 0);
	assert_int_equal(nm.line, 24);
	phpproc__stats(p, &st);
	assert_int_equal(st.named, 2);
	assert_int_equal(st.cached, 1);
	phpproc__free(p);
}

static void test_internal_and_main(void **state)
{
	struct phpproc *p = phpproc__new(&l82, img_read, NULL);
	struct php_frame_name nm;
	uint64_t w0, w1;

	(void)state;
	record(FN_INTERNAL, PHP_INTERNAL_FUNCTION, 0, &w0, &w1);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), 0);
	assert_null(nm.klass);
	assert_string_equal(nm.function, "array_map");
	assert_null(nm.file);
	assert_int_equal(nm.line, 0);
	assert_true(nm.internal);
	record(FN_MAIN, PHP_USER_FUNCTION, 5, &w0, &w1);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), 0);
	assert_string_equal(nm.function, "{main}");
	assert_string_equal(nm.file, "/srv/app/shape.php");
	assert_int_equal(nm.line, 5);
	/* Eval'd code: the same without a name, said so. */
	mem[FN_MAIN - BASE] = PHP_EVAL_CODE;
	record(FN_MAIN, PHP_EVAL_CODE, 1, &w0, &w1);
	w0 = (w0 & PHP_ADDR_MASK) | (uint64_t)PHP_EVAL_CODE << PHP_TYPE_SHIFT;
	/* The cache holds the {main} read: the fingerprint is the same, so it stays {main}; a new
	 * process's namer reads it afresh. */
	phpproc__free(p);
	p = phpproc__new(&l82, img_read, NULL);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), 0);
	assert_string_equal(nm.function, "{eval}");
	phpproc__free(p);
}

/* A function freed and its memory reused since the sample: not named after what is there now. */
static void test_stale_and_bad(void **state)
{
	struct phpproc *p = phpproc__new(&l82, img_read, NULL);
	struct php_frame_name nm;
	struct phpproc_stats st;
	uint64_t w0, w1;

	(void)state;
	/* Sampled, then another function compiled there before the naming: other opcodes. */
	record(FN_USER, PHP_USER_FUNCTION, 23, &w0, &w1);
	put64(FN_USER + l82.op_opcodes, OPCODES + 0x40);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), -PHPPROC_UNNAMED_STALE - 1);
	/* A sample of the new one carries its fingerprint: read and proven. */
	record(FN_USER, PHP_USER_FUNCTION, 23, &w0, &w1);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), 0);
	assert_string_equal(nm.function, "area");
	/* Not a function any more (type garbage). */
	mem[FN_USER - BASE] = 9;
	record(FN_USER, PHP_USER_FUNCTION, 23, &w0, &w1);
	w1 ^= 1ull << 40; /* not the cached fingerprint: read again */
	assert_int_equal(phpproc__name(p, w0, w1, &nm), -PHPPROC_UNNAMED_STALE - 1);
	mem[FN_USER - BASE] = PHP_USER_FUNCTION;
	/* A name with a control character, or longer than any name: not a name. */
	put_str(STR_INAME, "arr\001y");
	record(FN_INTERNAL, PHP_INTERNAL_FUNCTION, 0, &w0, &w1);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), -PHPPROC_UNNAMED_BAD_NAME - 1);
	put64(STR_INAME + 16, 1 << 20);
	assert_int_equal(phpproc__name(p, w0, w1, &nm), -PHPPROC_UNNAMED_BAD_NAME - 1);
	/* Outside the process's memory. */
	w0 = (BASE + sizeof(mem) + 0x1000) | (uint64_t)PHP_USER_FUNCTION << PHP_TYPE_SHIFT;
	assert_int_equal(phpproc__name(p, w0, w1, &nm), -PHPPROC_UNNAMED_UNREADABLE - 1);
	phpproc__stats(p, &st);
	assert_int_equal(st.unnamed[PHPPROC_UNNAMED_STALE], 2);
	assert_int_equal(st.unnamed[PHPPROC_UNNAMED_BAD_NAME], 2);
	assert_int_equal(st.unnamed[PHPPROC_UNNAMED_UNREADABLE], 1);
	assert_int_equal(st.named, 1);
	phpproc__free(p);
}

/* The version and build strings as Debian's php8.2 holds them, among other bytes. */
static void test_version(void **state)
{
	static const char nts[] = "\x7f"
				  "ELF junk API20220829 API2022,NTS "
				  "X-Powered-By: PHP/8.2.36\0 more\0API20220829,NTS\0";
	static const char zts[] = "X-Powered-By: PHP/8.3.0-dev\0API20230831,TS,debug\0";
	static const char none[] = "X-Powered-By: Other/1.0\0API20220829,NTS\0";
	static const char noapi[] = "X-Powered-By: PHP/7.4.33\0";
	struct php_version v;

	(void)state;
	memset(&v, 0, sizeof(v));
	assert_int_equal(phptab__version_of(nts, sizeof(nts) - 1, &v), 0);
	assert_int_equal(v.major, 8);
	assert_int_equal(v.minor, 2);
	assert_int_equal(v.patch, 36);
	assert_int_equal(v.zts, 0);
	assert_int_equal(phptab__version_of(zts, sizeof(zts) - 1, &v), 0);
	assert_int_equal(v.major, 8);
	assert_int_equal(v.minor, 3);
	assert_int_equal(v.zts, 1);
	assert_int_equal(phptab__version_of(none, sizeof(none) - 1, &v), -ENOENT);
	assert_int_equal(phptab__version_of(noapi, sizeof(noapi) - 1, &v), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layouts),
	    cmocka_unit_test_setup(test_user_method, setup),
	    cmocka_unit_test_setup(test_internal_and_main, setup),
	    cmocka_unit_test_setup(test_stale_and_bad, setup),
	    cmocka_unit_test(test_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
