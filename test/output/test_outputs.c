// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the local writers: folded stacks (exact text), pprof (gunzip
 * + protobuf-c unpack, and `go tool pprof -top` when Go is installed) and the
 * SVG flame graph (parsed by Python's xml.dom.minidom).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "output/flamegraph.h"
#include "output/folded.h"
#include "output/otlpfile.h"
#include "output/pprof.h"
#include "otlp/otlp_pb.h"
#include "pprof/profile.pb-c.h"
#include "profile/profile.h"

#define PERIOD 10101010 /* 99 Hz */

static char dir[] = "/tmp/spanprof-test-outputs-XXXXXX";

/* Ids of what the fixture profile holds. */
struct fixture {
	struct profile *p;
	uint32_t s_main, s_compute, s_helper, s_syscall, s_weird, s_app, s_worker, s_lonely;
	uint32_t m_lib, m_app;
	uint32_t f_main, f_compute, f_helper, f_syscall, f_weird;
	uint32_t l_main, l_compute, l_lib, l_syscall, l_kunknown, l_weird;
	uint32_t st_compute, st_lib, st_kernel, st_weird;
};

static char *path_in_dir(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return NULL;
	return path;
}

static uint32_t func(struct profile *p, const char *name, const char *file)
{
	struct profile_function f = {
	    .name = profile__intern_string(p, name),
	    .filename = profile__intern_string(p, file),
	};

	return profile__intern_function(p, &f);
}

static void add(struct fixture *fx, uint32_t stack, uint32_t pid, uint32_t tid, uint32_t cpu,
		uint32_t comm, uint32_t process, uint64_t count)
{
	struct profile_sample_key k = {
	    .stack = stack,
	    .pid = pid,
	    .tid = tid,
	    .cpu = cpu,
	    .comm = comm,
	    .process_name = process,
	};

	assert_int_equal(profile__add_sample(fx->p, &k, 1700000000000000000ull + count, count), 0);
}

/*
 * myapp (pid 100) runs main -> compute (with inlined_helper inlined into it),
 * which calls into an unsymbolized libfoo.so, and main -> a syscall. Another
 * process, with no process name but a thread name "lonely", runs main -> a
 * function whose name holds characters both text formats must escape.
 */
static int setup(void **state)
{
	static struct fixture fx;
	struct profile *p = profile__new();
	struct profile_mapping lib =
				   {
				       .memory_start = 0x7f0000000000,
				       .memory_limit = 0x7f0000010000,
				       .file_offset = 0x1000,
				   },
			       app = {
				   .memory_start = 0x400000,
				   .memory_limit = 0x500000,
			       };
	struct profile_line line;
	struct profile_line inl[2];
	uint32_t stack[3];
	struct profile_meta meta = {
	    .start_unix_nano = 1700000000000000000ull,
	    .duration_nano = 5000000000ull,
	    .period_nano = PERIOD,
	    .frequency_hz = 99,
	};

	if (!p)
		return -1;
	memset(&fx, 0, sizeof(fx));
	fx.p = p;
	profile__set_meta(p, &meta);
	fx.s_app = profile__intern_string(p, "myapp");
	fx.s_worker = profile__intern_string(p, "worker");
	fx.s_lonely = profile__intern_string(p, "lonely");
	lib.filename = profile__intern_string(p, "/usr/lib/libfoo.so");
	lib.build_id = profile__intern_string(p, "abcdef0123456789");
	app.filename = profile__intern_string(p, "/usr/bin/myapp");
	app.build_id = profile__intern_string(p, "00112233");
	fx.m_lib = profile__intern_mapping(p, &lib);
	fx.m_app = profile__intern_mapping(p, &app);

	fx.f_main = func(p, "main", "main.c");
	fx.f_compute = func(p, "compute", "compute.c");
	fx.f_helper = func(p, "inlined_helper", "helper.h");
	fx.f_syscall = func(p, "do_syscall_64", NULL);
	fx.f_weird = func(p, "tmpl<a&b>;x\ny", NULL);

	line = (struct profile_line){.function = fx.f_main, .line = 10};
	fx.l_main = profile__intern_location(p, fx.m_app, 0x401000, FRAME_NATIVE, &line, 1);
	inl[0] = (struct profile_line){.function = fx.f_helper, .line = 5};
	inl[1] = (struct profile_line){.function = fx.f_compute, .line = 20};
	fx.l_compute = profile__intern_location(p, fx.m_app, 0x401100, FRAME_NATIVE, inl, 2);
	fx.l_lib = profile__intern_location(p, fx.m_lib, 0x7f0000001234, FRAME_NATIVE, NULL, 0);
	line = (struct profile_line){.function = fx.f_syscall};
	fx.l_syscall = profile__intern_location(p, 0, 0xffffffff81000000, FRAME_KERNEL, &line, 1);
	fx.l_kunknown = profile__intern_location(p, 0, 0xffffffff81000100, FRAME_KERNEL, NULL, 0);
	line = (struct profile_line){.function = fx.f_weird, .line = 3};
	fx.l_weird = profile__intern_location(p, fx.m_app, 0x402000, FRAME_NATIVE, &line, 1);

	/* Stacks are leaf first. */
	stack[0] = fx.l_compute, stack[1] = fx.l_main;
	fx.st_compute = profile__intern_stack(p, stack, 2);
	stack[0] = fx.l_lib, stack[1] = fx.l_compute, stack[2] = fx.l_main;
	fx.st_lib = profile__intern_stack(p, stack, 3);
	stack[0] = fx.l_kunknown, stack[1] = fx.l_syscall, stack[2] = fx.l_main;
	fx.st_kernel = profile__intern_stack(p, stack, 3);
	stack[0] = fx.l_weird, stack[1] = fx.l_main;
	fx.st_weird = profile__intern_stack(p, stack, 2);

	add(&fx, fx.st_compute, 100, 101, 0, fx.s_worker, fx.s_app, 3);
	add(&fx, fx.st_compute, 100, 101, 1, fx.s_worker, fx.s_app, 2); /* other CPU */
	add(&fx, fx.st_compute, 100, 102, 0, fx.s_worker, fx.s_app, 1); /* other thread */
	add(&fx, fx.st_lib, 100, 101, 0, fx.s_worker, fx.s_app, 4);
	add(&fx, fx.st_kernel, 100, 100, 2, fx.s_app, fx.s_app, 1);
	add(&fx, fx.st_weird, 300, 300, 0, fx.s_lonely, 0, 1);
	assert_int_equal(profile__total_count(p), 12);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	profile__free(fx->p);
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(n + 1);
		if (buf && fread(buf, 1, n, f) == (size_t)n) {
			buf[n] = '\0';
			if (len)
				*len = n;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

static void assert_no_tmp(const char *path)
{
	char tmp[4096];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	assert_int_equal(access(tmp, F_OK), -1);
}

static void test_folded_text(void **state)
{
	struct fixture *fx = *state;
	char *path = path_in_dir("out.folded");
	char *text;

	assert_int_equal(folded__write(fx->p, path), 0);
	assert_no_tmp(path);
	text = slurp(path, NULL);
	assert_non_null(text);
	assert_string_equal(text, "lonely;main;tmpl<a&b>:x y 1\n"
				  "myapp;main;compute;inlined_helper 6\n"
				  "myapp;main;compute;inlined_helper;[libfoo.so+0x2234] 4\n"
				  "myapp;main;do_syscall_64_[k];[unknown]_[k] 1\n");
	free(text);
	free(path);
}

static void test_folded_empty_profile(void **state)
{
	struct profile *p = profile__new();
	char *path = path_in_dir("empty.folded");
	size_t len = 99;
	char *text;

	assert_int_equal(folded__write(p, path), 0);
	text = slurp(path, &len);
	assert_non_null(text);
	assert_int_equal(len, 0);
	free(text);
	free(path);
	profile__free(p);
}

static void test_writers_leave_nothing_on_error(void **state)
{
	struct fixture *fx = *state;
	char *missing = path_in_dir("no/such/dir/out");
	char *isdir = path_in_dir("a-directory");

	assert_int_equal(folded__write(fx->p, missing), -ENOENT);
	assert_int_equal(pprof__write(fx->p, missing), -ENOENT);
	assert_int_equal(flamegraph__write_svg(fx->p, missing, NULL), -ENOENT);
	/* rename() onto a directory fails after the data is written. */
	assert_int_equal(mkdir(isdir, 0755), 0);
	assert_int_equal(folded__write(fx->p, isdir), -EISDIR);
	assert_no_tmp(isdir);
	assert_int_equal(pprof__write(fx->p, isdir), -EISDIR);
	assert_no_tmp(isdir);
	assert_int_equal(flamegraph__write_svg(fx->p, isdir, "t"), -EISDIR);
	assert_no_tmp(isdir);
	rmdir(isdir);
	free(missing);
	free(isdir);
}

static Perftools__Profiles__Profile *read_pprof(const char *path)
{
	Perftools__Profiles__Profile *msg = NULL;
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = malloc(cap);
	gzFile gz = gzopen(path, "rb");
	int n;

	if (!gz || !buf)
		goto out;
	while ((n = gzread(gz, buf + len, cap - len)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *more = realloc(buf, cap *= 2);

			if (!more)
				goto out;
			buf = more;
		}
	}
	if (n == 0)
		msg = perftools__profiles__profile__unpack(NULL, len, buf);
out:
	if (gz)
		gzclose(gz);
	free(buf);
	return msg;
}

static const char *str(const Perftools__Profiles__Profile *m, int64_t i)
{
	return i >= 0 && (size_t)i < m->n_string_table ? m->string_table[i] : "<out of range>";
}

static const Perftools__Profiles__Label *
label(const Perftools__Profiles__Profile *m, const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(m, s->label[i]->key), key))
			return s->label[i];
	return NULL;
}

static void test_pprof_fields(void **state)
{
	struct fixture *fx = *state;
	char *path = path_in_dir("out.pb.gz");
	Perftools__Profiles__Profile *m;
	const Perftools__Profiles__Location *loc;
	const Perftools__Profiles__Sample *s;
	int64_t total = 0;

	assert_int_equal(pprof__write(fx->p, path), 0);
	assert_no_tmp(path);
	m = read_pprof(path);
	assert_non_null(m);

	/* Header. */
	assert_string_equal(str(m, 0), "");
	assert_int_equal(m->n_sample_type, 2);
	assert_string_equal(str(m, m->sample_type[0]->type), "samples");
	assert_string_equal(str(m, m->sample_type[0]->unit), "count");
	assert_string_equal(str(m, m->sample_type[1]->type), "cpu");
	assert_string_equal(str(m, m->sample_type[1]->unit), "nanoseconds");
	assert_non_null(m->period_type);
	assert_string_equal(str(m, m->period_type->type), "cpu");
	assert_string_equal(str(m, m->period_type->unit), "nanoseconds");
	assert_int_equal(m->period, PERIOD);
	assert_int_equal(m->time_nanos, 1700000000000000000ll);
	assert_int_equal(m->duration_nanos, 5000000000ll);
	assert_string_equal(str(m, m->default_sample_type), "cpu");
	assert_int_equal(m->n_comment, 1);
	assert_memory_equal(str(m, m->comment[0]), "spanprof ", 9);
	/* The profile's strings keep their indices. */
	for (uint32_t i = 0; i < profile__nstrings(fx->p); i++)
		assert_string_equal(str(m, i), profile__string(fx->p, i));

	/* Mappings: ids are the profile's indices. */
	assert_int_equal(m->n_mapping, 2);
	assert_int_equal(m->mapping[0]->id, fx->m_lib);
	assert_string_equal(str(m, m->mapping[0]->filename), "/usr/lib/libfoo.so");
	assert_string_equal(str(m, m->mapping[0]->build_id), "abcdef0123456789");
	assert_int_equal(m->mapping[0]->memory_start, 0x7f0000000000);
	assert_int_equal(m->mapping[0]->memory_limit, 0x7f0000010000);
	assert_int_equal(m->mapping[0]->file_offset, 0x1000);
	assert_false(m->mapping[0]->has_functions); /* nothing symbolized in it */
	assert_int_equal(m->mapping[1]->id, fx->m_app);
	assert_string_equal(str(m, m->mapping[1]->filename), "/usr/bin/myapp");
	assert_true(m->mapping[1]->has_functions);
	assert_true(m->mapping[1]->has_filenames);
	assert_true(m->mapping[1]->has_line_numbers);
	assert_true(m->mapping[1]->has_inline_frames);

	/* Functions. */
	assert_int_equal(m->n_function, 5);
	assert_int_equal(m->function[fx->f_helper - 1]->id, fx->f_helper);
	assert_string_equal(str(m, m->function[fx->f_helper - 1]->name), "inlined_helper");
	assert_string_equal(str(m, m->function[fx->f_helper - 1]->filename), "helper.h");

	/* Locations: inline chain innermost first, as in the profile. */
	assert_int_equal(m->n_location, 6);
	loc = m->location[fx->l_compute - 1];
	assert_int_equal(loc->id, fx->l_compute);
	assert_int_equal(loc->mapping_id, fx->m_app);
	assert_int_equal(loc->address, 0x401100);
	assert_int_equal(loc->n_line, 2);
	assert_int_equal(loc->line[0]->function_id, fx->f_helper);
	assert_int_equal(loc->line[0]->line, 5);
	assert_int_equal(loc->line[1]->function_id, fx->f_compute);
	assert_int_equal(loc->line[1]->line, 20);
	loc = m->location[fx->l_kunknown - 1];
	assert_int_equal(loc->mapping_id, 0);
	assert_int_equal(loc->address, 0xffffffff81000100);
	assert_int_equal(loc->n_line, 0);

	/* Samples: the two CPUs of thread 101 on st_compute are merged. */
	assert_int_equal(m->n_sample, 5);
	s = m->sample[0];
	assert_int_equal(s->n_location_id, 2);
	assert_int_equal(s->location_id[0], fx->l_compute);
	assert_int_equal(s->location_id[1], fx->l_main);
	assert_int_equal(s->n_value, 2);
	assert_int_equal(s->value[0], 5);
	assert_int_equal(s->value[1], 5ll * PERIOD);
	assert_int_equal(label(m, s, "pid")->num, 100);
	assert_int_equal(label(m, s, "tid")->num, 101);
	assert_string_equal(str(m, label(m, s, "comm")->str), "worker");
	assert_string_equal(str(m, label(m, s, "process")->str), "myapp");
	s = m->sample[1];
	assert_int_equal(label(m, s, "tid")->num, 102);
	assert_int_equal(s->value[0], 1);
	s = m->sample[4];
	assert_int_equal(label(m, s, "pid")->num, 300);
	assert_null(label(m, s, "process")); /* no process name */
	assert_string_equal(str(m, label(m, s, "comm")->str), "lonely");
	for (size_t i = 0; i < m->n_sample; i++) {
		assert_int_equal(m->sample[i]->value[1], m->sample[i]->value[0] * PERIOD);
		total += m->sample[i]->value[0];
	}
	assert_int_equal(total, 12);

	perftools__profiles__profile__free_unpacked(m, NULL);
	free(path);
}

/* Ids of the span-linked profile. */
struct linked {
	struct profile *p;
	uint32_t st_a, st_b, link_a, link_b, set_small, set_big;
	uint32_t s_app, s_worker;
};

static const struct profile_link span_a = {
    .trace_id = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0xaa, 0xbb, 0xcc, 0xdd,
		 0xee, 0xff},
    .span_id = {0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x20},
};
static const struct profile_link span_b = {
    .trace_id = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0xaa, 0xbb, 0xcc, 0xdd,
		 0xee, 0xff},
    .span_id = {0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87},
};
#define SPAN_A_TRACE "00010203040506070809aabbccddeeff"
#define SPAN_A_SPAN "0a0b0c0d0e0f1020"
#define SPAN_B_SPAN "f0e1d2c3b4a59687"

static void add_linked(struct linked *lk, uint32_t stack, uint32_t cpu, uint32_t link,
		       uint32_t attrs, uint64_t count)
{
	struct profile_sample_key k = {
	    .stack = stack,
	    .pid = 100,
	    .tid = 101,
	    .cpu = cpu,
	    .comm = lk->s_worker,
	    .process_name = lk->s_app,
	    .link = link,
	    .attrs = attrs,
	};

	assert_int_equal(profile__add_sample(lk->p, &k, 0, count), 0);
}

/*
 * One thread (pid 100, tid 101) runs in_span_a() in span A and in_span_b() in span B, and
 * both outside any span, with and without context attributes; the samples of each
 * {stack, link, attributes} are spread over two CPUs (which pprof merges).
 */
static void make_linked(struct linked *lk)
{
	struct profile *p = profile__new();
	struct profile_meta meta = {.period_nano = PERIOD, .frequency_hz = 99};
	struct profile_line line = {0};
	struct profile_attr big[5];
	uint32_t loc;

	assert_non_null(p);
	memset(lk, 0, sizeof(*lk));
	lk->p = p;
	profile__set_meta(p, &meta);
	lk->s_app = profile__intern_string(p, "linkedapp");
	lk->s_worker = profile__intern_string(p, "worker");
	line.function = func(p, "in_span_a", "a.c");
	loc = profile__intern_location(p, 0, 0x1000, FRAME_NATIVE, &line, 1);
	lk->st_a = profile__intern_stack(p, &loc, 1);
	line.function = func(p, "in_span_b", "b.c");
	loc = profile__intern_location(p, 0, 0x2000, FRAME_NATIVE, &line, 1);
	lk->st_b = profile__intern_stack(p, &loc, 1);
	lk->link_a = profile__intern_link(p, &span_a);
	lk->link_b = profile__intern_link(p, &span_b);
	for (int i = 0; i < 5; i++) {
		char k[16], v[16];

		snprintf(k, sizeof(k), "ctx.k%d", i);
		snprintf(v, sizeof(v), "v%d", i);
		big[i] = (struct profile_attr){profile__intern_string(p, k),
					       profile__intern_string(p, v)};
	}
	lk->set_small = profile__intern_attrset(p, big, 1);
	lk->set_big = profile__intern_attrset(p, big, 5);
	assert_true(lk->st_a && lk->st_b && lk->link_a && lk->link_b && lk->set_small &&
		    lk->set_big);

	/* Samples 0..5 of the pprof output, in first-seen order. */
	for (uint32_t cpu = 0; cpu < 2; cpu++) {
		add_linked(lk, lk->st_a, cpu, 0, 0, 1);
		add_linked(lk, lk->st_a, cpu, lk->link_a, 0, 2);
		add_linked(lk, lk->st_a, cpu, lk->link_a, lk->set_small, 3);
		add_linked(lk, lk->st_a, cpu, lk->link_a, lk->set_big, 4);
		add_linked(lk, lk->st_a, cpu, 0, lk->set_small, 5);
		add_linked(lk, lk->st_b, cpu, lk->link_b, lk->set_small, 6);
	}
	assert_int_equal(profile__nsamples(p), 12);
}

static const char *label_str(const Perftools__Profiles__Profile *m,
			     const Perftools__Profiles__Sample *s, const char *key)
{
	const Perftools__Profiles__Label *l = label(m, s, key);

	if (!l)
		return NULL;
	assert_int_equal(l->num, 0);
	return str(m, l->str);
}

static void test_pprof_links_and_context(void **state)
{
	char *path = path_in_dir("linked.pb.gz");
	Perftools__Profiles__Profile *m;
	struct linked lk;
	/* Per output sample: span id (NULL: none), number of context labels, count. */
	static const struct {
		const char *span;
		size_t nctx;
		int64_t count;
	} want[6] = {
	    {NULL, 0, 2},	 {SPAN_A_SPAN, 0, 4}, {SPAN_A_SPAN, 1, 6},
	    {SPAN_A_SPAN, 5, 8}, {NULL, 1, 10},	      {SPAN_B_SPAN, 1, 12},
	};

	make_linked(&lk);
	assert_int_equal(pprof__write(lk.p, path), 0);
	m = read_pprof(path);
	assert_non_null(m);
	/* Equal but for link or attributes: not merged; equal but for the CPU: merged. */
	assert_int_equal(m->n_sample, 6);
	for (size_t i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *s = m->sample[i];

		assert_int_equal(s->value[0], want[i].count);
		assert_int_equal(s->value[1], want[i].count * PERIOD);
		assert_int_equal(label(m, s, "pid")->num, 100);
		assert_int_equal(label(m, s, "tid")->num, 101);
		assert_string_equal(label_str(m, s, "comm"), "worker");
		assert_string_equal(label_str(m, s, "process"), "linkedapp");
		if (want[i].span) {
			assert_string_equal(label_str(m, s, "trace_id"), SPAN_A_TRACE);
			assert_string_equal(label_str(m, s, "span_id"), want[i].span);
		} else {
			assert_null(label(m, s, "trace_id"));
			assert_null(label(m, s, "span_id"));
		}
		/* pid, tid, comm, process, the span's two, then one per context attribute. */
		assert_int_equal(s->n_label, 4 + (want[i].span ? 2 : 0) + want[i].nctx);
		if (want[i].nctx)
			assert_string_equal(label_str(m, s, "ctx.k0"), "v0");
		else
			assert_null(label(m, s, "ctx.k0"));
		if (want[i].nctx == 5) {
			assert_string_equal(label_str(m, s, "ctx.k1"), "v1");
			assert_string_equal(label_str(m, s, "ctx.k3"), "v3");
			assert_string_equal(label_str(m, s, "ctx.k4"), "v4");
		} else {
			assert_null(label(m, s, "ctx.k1"));
		}
	}
	/* Span B's stack is in_span_b. */
	assert_int_equal(m->sample[5]->location_id[0], m->sample[0]->location_id[0] + 1);
	perftools__profiles__profile__free_unpacked(m, NULL);
	profile__free(lk.p);

	/* Without links or attributes, no such labels (test_pprof_fields' profile has none). */
	{
		struct fixture *fx = *state;

		assert_int_equal(pprof__write(fx->p, path), 0);
		m = read_pprof(path);
		assert_non_null(m);
		for (size_t i = 0; i < m->n_sample; i++) {
			assert_null(label(m, m->sample[i], "trace_id"));
			assert_null(label(m, m->sample[i], "span_id"));
			assert_true(m->sample[i]->n_label <= 4);
		}
		perftools__profiles__profile__free_unpacked(m, NULL);
	}
	free(path);
}

/* Many spans: each sample's labels name its own link. */
static void test_pprof_many_links(void **state)
{
	struct profile *p = profile__new();
	char *path = path_in_dir("many-links.pb.gz");
	Perftools__Profiles__Profile *m;
	struct profile_function f = {0};
	struct profile_line line = {0};
	uint32_t loc, stack;
	const uint32_t n = 3000;

	assert_non_null(p);
	f.name = profile__intern_string(p, "fn");
	line.function = profile__intern_function(p, &f);
	loc = profile__intern_location(p, 0, 0x1000, FRAME_NATIVE, &line, 1);
	stack = profile__intern_stack(p, &loc, 1);
	for (uint32_t i = 0; i < n; i++) {
		struct profile_link l;
		struct profile_sample_key k = {.stack = stack, .pid = 7, .tid = 7};

		for (int j = 0; j < 16; j++)
			l.trace_id[j] = (uint8_t)(i >> (j % 2 ? 8 : 0)) + (uint8_t)j;
		for (int j = 0; j < 8; j++)
			l.span_id[j] = (uint8_t)(i >> (j % 2 ? 0 : 8)) ^ 0x5a;
		/* Every third sample outside a span; its link is still in the profile. */
		k.link = profile__intern_link(p, &l);
		assert_true(k.link != 0);
		if (i % 3 == 2)
			k.link = 0;
		assert_int_equal(profile__add_sample(p, &k, 0, 1), 0);
	}
	assert_int_equal(pprof__write(p, path), 0);
	m = read_pprof(path);
	assert_non_null(m);
	/* The unlinked samples are one; the others one per span. */
	assert_int_equal(m->n_sample, n - n / 3 + 1);
	for (size_t i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *s = m->sample[i];
		const char *trace = label_str(m, s, "trace_id"), *span = label_str(m, s, "span_id");
		/* First-seen order: samples 0, 1, 2 (and 5, 8...: unlinked, merged), 3, 4, 6, 7...
		 */
		uint32_t src = i < 3 ? (uint32_t)i : 3 + (uint32_t)(i - 3) / 2 * 3 + (i - 3) % 2;
		const struct profile_link *l = profile__link(p, 1 + src); /* sample j: link j + 1 */
		char hex[33];

		if (i == 2) {
			assert_null(trace);
			assert_null(span);
			assert_int_equal(s->value[0], n / 3);
			continue;
		}
		assert_int_equal(s->value[0], 1);
		assert_non_null(trace);
		assert_non_null(span);
		for (int j = 0; j < 16; j++)
			snprintf(hex + 2 * j, 3, "%02x", l->trace_id[j]);
		assert_string_equal(trace, hex);
		for (int j = 0; j < 8; j++)
			snprintf(hex + 2 * j, 3, "%02x", l->span_id[j]);
		assert_string_equal(span, hex);
	}
	perftools__profiles__profile__free_unpacked(m, NULL);
	free(path);
	profile__free(p);
}

static void test_pprof_empty_profile(void **state)
{
	struct profile *p = profile__new();
	char *path = path_in_dir("empty.pb.gz");
	Perftools__Profiles__Profile *m;

	assert_int_equal(pprof__write(p, path), 0);
	m = read_pprof(path);
	assert_non_null(m);
	assert_int_equal(m->n_sample, 0);
	assert_int_equal(m->n_sample_type, 2);
	perftools__profiles__profile__free_unpacked(m, NULL);
	free(path);
	profile__free(p);
}

static const char *find_go(void)
{
	static char found[4096];
	const char *path = getenv("PATH");

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(found, sizeof(found), "%.*s/go", (int)n, path);
		if (n && access(found, X_OK) == 0)
			return found;
		path += n + (path[n] == ':');
	}
	return access("/usr/local/go/bin/go", X_OK) == 0 ? "/usr/local/go/bin/go" : NULL;
}

/* Runs `go tool pprof @args @path` into @out; fails the test if it fails. */
static void go_pprof(const char *go, const char *args, const char *path, char *out, size_t size)
{
	char cmd[8192];
	size_t len = 0, n;
	FILE *f;

	/* HOME: pprof keeps its history there; keep the test out of the real one. */
	snprintf(cmd, sizeof(cmd), "HOME='%s' '%s' tool pprof %s '%s' 2>&1", dir, go, args, path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (len < size - 1 && (n = fread(out + len, 1, size - 1 - len, f)) > 0)
		len += n;
	out[len] = '\0';
	if (pclose(f) != 0)
		fail_msg("go tool pprof %s failed:\n%s", args, out);
}

static void test_pprof_opens_in_go_tool_pprof(void **state)
{
	struct fixture *fx = *state;
	char *path = path_in_dir("go.pb.gz");
	const char *go = find_go();
	char out[16384];
	struct linked lk;

	if (!go) {
		print_message("skipped: no `go` on PATH nor /usr/local/go/bin/go\n");
		skip();
	}
	assert_int_equal(pprof__write(fx->p, path), 0);
	go_pprof(go, "-top", path, out, sizeof(out));
	assert_non_null(strstr(out, "inlined_helper"));
	assert_non_null(strstr(out, "compute"));
	assert_non_null(strstr(out, "main"));
	assert_non_null(strstr(out, "do_syscall_64"));
	assert_non_null(strstr(out, "Type: cpu"));

	/* Span labels select the span's samples: -tagfocus span_id=... */
	make_linked(&lk);
	assert_int_equal(pprof__write(lk.p, path), 0);
	profile__free(lk.p);
	go_pprof(go, "-top -sample_index=samples -tagfocus span_id=" SPAN_B_SPAN, path, out,
		 sizeof(out));
	assert_non_null(strstr(out, "in_span_b"));
	assert_null(strstr(out, "in_span_a"));
	go_pprof(go, "-top -sample_index=samples -tagfocus span_id=" SPAN_A_SPAN, path, out,
		 sizeof(out));
	assert_non_null(strstr(out, "in_span_a"));
	assert_null(strstr(out, "in_span_b"));
	/* (2 + 3 + 4) per CPU, of (1 + 2 + 3 + 4 + 5 + 6) per CPU. */
	assert_non_null(strstr(out, "accounting for 18, 42.86% of 42 total"));
	/* Anchored: pprof reads a value of digits then letters as a numeric range. */
	go_pprof(go, "-top -sample_index=samples -tagfocus 'trace_id=^" SPAN_A_TRACE "$'", path,
		 out, sizeof(out));
	assert_non_null(strstr(out, "in_span_a"));
	assert_non_null(strstr(out, "in_span_b"));
	/* A context attribute is a label like the others. */
	go_pprof(go, "-top -sample_index=samples -tagfocus ctx.k1=v1", path, out, sizeof(out));
	assert_non_null(strstr(out, "accounting for 8, 19.05% of 42 total"));
	assert_null(strstr(out, "in_span_b"));
	free(path);
}

/* 0 if python3 (or xmllint) parses @path as XML, else nonzero; -1 if neither exists. */
static int parse_xml(const char *path)
{
	char cmd[4096];

	if (system("command -v python3 >/dev/null 2>&1") == 0) {
		snprintf(
		    cmd, sizeof(cmd),
		    "python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "
		    "'%s'",
		    path);
		return system(cmd);
	}
	if (system("command -v xmllint >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
		return system(cmd);
	}
	return -1;
}

static void test_svg(void **state)
{
	struct fixture *fx = *state;
	char *path = path_in_dir("out.svg");
	char *svg;
	int rc;

	assert_int_equal(flamegraph__write_svg(fx->p, path, "CPU <test> & more"), 0);
	assert_no_tmp(path);
	svg = slurp(path, NULL);
	assert_non_null(svg);
	assert_non_null(strstr(svg, "<svg "));
	assert_non_null(strstr(svg, "width=\"1200\""));
	assert_non_null(strstr(svg, "CPU &lt;test&gt; &amp; more"));
	assert_non_null(strstr(svg, "<title>all (12 samples, 100.00%)</title>"));
	assert_non_null(strstr(svg, "<title>myapp (11 samples, 91.67%)</title>"));
	assert_non_null(strstr(svg, "<title>inlined_helper (10 samples, 83.33%)</title>"));
	assert_non_null(strstr(svg, "<title>[libfoo.so+0x2234] (4 samples, 33.33%)</title>"));
	assert_non_null(strstr(svg, "<title>do_syscall_64_[k] (1 samples, 8.33%)</title>"));
	assert_non_null(strstr(svg, "<title>tmpl&lt;a&amp;b&gt;:x y (1 samples, 8.33%)</title>"));
	assert_non_null(strstr(svg, "<script"));
	/* The search box and its result line (integration/test_view_browser.py drives them). */
	assert_non_null(strstr(svg, "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\""));
	assert_non_null(strstr(svg, "<text id=\"matched\""));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);
	rc = parse_xml(path);
	if (rc == -1)
		print_message("note: neither python3 nor xmllint: XML not parsed\n");
	else
		assert_int_equal(rc, 0);
	free(path);
}

/* The fill of the frame titled @name ("<name> (" starts its title) in @svg, as r, g, b. */
static void svg_fill(const char *svg, const char *name, int rgb[3])
{
	char title[256];
	const char *at;

	snprintf(title, sizeof(title), "<title>%s (", name);
	at = strstr(svg, title);
	assert_non_null(at);
	at = strstr(at, "fill=\"rgb(");
	assert_non_null(at);
	assert_int_equal(sscanf(at, "fill=\"rgb(%d,%d,%d)", &rgb[0], &rgb[1], &rgb[2]), 3);
}

/* Go frames (profile.frame.type go) have their own colour family (teal), native ones warm. */
static void test_svg_go_colour(void **state)
{
	struct profile *p = profile__new();
	char *path = path_in_dir("go.svg");
	struct profile_function f = {0};
	struct profile_line line = {0};
	struct profile_sample_key k = {0};
	uint32_t locs[2];
	int go[3], native[3];
	char *svg;

	f.name = profile__intern_string(p, "main.handler");
	line.function = profile__intern_function(p, &f);
	locs[0] = profile__intern_location(p, 0, 0x1000, FRAME_GO, &line, 1);
	f.name = profile__intern_string(p, "c_entry");
	line.function = profile__intern_function(p, &f);
	locs[1] = profile__intern_location(p, 0, 0x2000, FRAME_NATIVE, &line, 1);
	assert_true(locs[0] && locs[1]);
	k.stack = profile__intern_stack(p, locs, 2);
	k.process_name = profile__intern_string(p, "gosvc");
	assert_int_equal(profile__add_sample(p, &k, 0, 10), 0);
	assert_int_equal(flamegraph__write_svg(p, path, NULL), 0);
	svg = slurp(path, NULL);
	assert_non_null(svg);
	svg_fill(svg, "main.handler", go);
	svg_fill(svg, "c_entry", native);
	assert_true(go[0] <= 80 && go[1] >= 170 && go[2] >= 150);
	assert_true(native[0] >= 205 && native[2] <= 40);
	free(svg);
	free(path);
	profile__free(p);
}

static void test_svg_omits_narrow_frames_and_bad_utf8(void **state)
{
	struct profile *p = profile__new();
	char *path = path_in_dir("narrow.svg");
	struct profile_function f = {0};
	struct profile_line line = {0};
	uint32_t loc, wide, narrow;
	char *svg;

	f.name = profile__intern_string(p, "wide_fn");
	line.function = profile__intern_function(p, &f);
	loc = profile__intern_location(p, 0, 0x1000, FRAME_NATIVE, &line, 1);
	wide = profile__intern_stack(p, &loc, 1);
	f.name = profile__intern_string(p, "narrow_fn");
	line.function = profile__intern_function(p, &f);
	loc = profile__intern_location(p, 0, 0x2000, FRAME_NATIVE, &line, 1);
	narrow = profile__intern_stack(p, &loc, 1);
	{
		struct profile_sample_key k = {
		    .stack = wide,
		    .process_name = profile__intern_string(p, "bad\xff\xc3(utf8\xe2\x82"),
		};

		assert_int_equal(profile__add_sample(p, &k, 0, 5000), 0);
		k.stack = narrow;
		assert_int_equal(profile__add_sample(p, &k, 0, 2), 0); /* 0.04% */
	}
	assert_int_equal(flamegraph__write_svg(p, path, NULL), 0);
	svg = slurp(path, NULL);
	assert_non_null(svg);
	assert_non_null(strstr(svg, "wide_fn"));
	assert_null(strstr(svg, "narrow_fn"));
	assert_non_null(strstr(svg, "bad?"
				    "?(utf8?"));
	free(svg);
	assert_true(parse_xml(path) <= 0);
	free(path);
	profile__free(p);
}

static void test_svg_empty_profile(void **state)
{
	struct profile *p = profile__new();
	char *path = path_in_dir("empty.svg");

	assert_int_equal(flamegraph__write_svg(p, path, NULL), 0);
	assert_true(parse_xml(path) <= 0);
	free(path);
	profile__free(p);
}

/*
 * profile.otlp.pb.gz: gzip of length-prefixed ExportProfilesServiceRequests (the file
 * exporter's proto stream) holding every sample, each with its timestamps.
 */
static void test_otlpfile(void **state)
{
	struct fixture *fx = *state;
	char *path = path_in_dir(OTLPFILE_NAME);
	struct profile *empty = profile__new();
	uint8_t buf[1 << 16];
	uint64_t want = 0, events = 0;
	size_t n = 0, off = 0, nreq = 0;
	gzFile gz;
	int r;

	assert_int_equal(otlpfile__write(fx->p, path), 0);
	assert_no_tmp(path);
	gz = gzopen(path, "rb");
	assert_non_null(gz);
	while ((r = gzread(gz, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)r;
	gzclose(gz);
	assert_true(n > 4 && n < sizeof(buf));
	while (off < n) {
		uint32_t len = (uint32_t)buf[off] << 24 | buf[off + 1] << 16 | buf[off + 2] << 8 |
			       buf[off + 3];
		pb_request *req;

		assert_true(len <= n - off - 4);
		req =
		    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
			NULL, len, buf + off + 4);
		assert_non_null(req);
		for (size_t i = 0; i < req->n_resource_profiles; i++)
			for (size_t j = 0; j < req->resource_profiles[i]->n_scope_profiles; j++) {
				const pb_sp *sp = req->resource_profiles[i]->scope_profiles[j];

				for (size_t k = 0; k < sp->n_profiles; k++)
					for (size_t l = 0; l < sp->profiles[k]->n_samples; l++) {
						const pb_sample *sa = sp->profiles[k]->samples[l];

						events += sa->n_timestamps_unix_nano
							      ? sa->n_timestamps_unix_nano
							      : (uint64_t)sa->values[0];
					}
			}
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		    req, NULL);
		off += 4 + (size_t)len;
		nreq++;
	}
	assert_int_equal(off, n);
	assert_true(nreq >= 1);
	for (uint32_t i = 0; i < profile__nsamples(fx->p); i++)
		want += profile__sample(fx->p, i)->count;
	/* Every sample (the fixture's carry one timestamp per count of several: values). */
	assert_int_equal(events, want);
	/* An empty profile: no file. */
	unlink(path);
	assert_int_equal(otlpfile__write(empty, path), 1);
	assert_int_equal(access(path, F_OK), -1);
	assert_no_tmp(path);
	profile__free(empty);
	free(path);
}

static int remove_dir(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/*
 * Event profile types (runs last: it adds events to the shared fixture): each type's writers
 * see only its samples, with its sample types and values; the CPU outputs stay as they were.
 */
static void test_event_types(void **state)
{
	struct fixture *fx = *state;
	char *cpu_path = path_in_dir("out.folded"), *path = path_in_dir("alloc.folded");
	char *before, *after, *text;
	Perftools__Profiles__Profile *m;
	struct profile_sample_key k = {
	    .type = PROFILE_ALLOC,
	    .stack = fx->st_compute,
	    .pid = 100,
	    .tid = 101,
	    .comm = fx->s_worker,
	    .process_name = fx->s_app,
	};
	int64_t objects = 0, space = 0, lock_label = 0;

	assert_int_equal(folded__write(fx->p, cpu_path), 0);
	before = slurp(cpu_path, NULL);
	assert_non_null(before);
	assert_int_equal(profile__add_event(fx->p, &k, 1700000000000000100ull, 8, 4096), 0);
	assert_int_equal(profile__add_event(fx->p, &k, 1700000000000000200ull, 2, 1000), 0);
	k.stack = fx->st_lib;
	assert_int_equal(profile__add_event(fx->p, &k, 1700000000000000300ull, 1, 1 << 20), 0);
	k.type = PROFILE_LOCK;
	k.addr = 0x5555deadbee0;
	assert_int_equal(profile__add_event(fx->p, &k, 1700000000000000400ull, 1, 50000), 0);

	/* CPU outputs: unchanged. */
	assert_int_equal(folded__write(fx->p, cpu_path), 0);
	after = slurp(cpu_path, NULL);
	assert_string_equal(before, after);

	/* alloc: weighted by bytes. */
	assert_int_equal(folded__write_type(fx->p, path, PROFILE_ALLOC), 0);
	text = slurp(path, NULL);
	assert_non_null(text);
	assert_string_equal(text, "myapp;main;compute;inlined_helper 5096\n"
				  "myapp;main;compute;inlined_helper;[libfoo.so+0x2234] 1048576\n");
	free(text);
	free(path);

	path = path_in_dir("alloc.pb.gz");
	assert_int_equal(pprof__write_type(fx->p, path, PROFILE_ALLOC), 0);
	m = read_pprof(path);
	assert_non_null(m);
	assert_int_equal(m->n_sample_type, 2);
	assert_string_equal(str(m, m->sample_type[0]->type), "alloc_objects");
	assert_string_equal(str(m, m->sample_type[0]->unit), "count");
	assert_string_equal(str(m, m->sample_type[1]->type), "alloc_space");
	assert_string_equal(str(m, m->sample_type[1]->unit), "bytes");
	assert_string_equal(str(m, m->default_sample_type), "alloc_space");
	assert_int_equal(m->n_sample, 2);
	for (size_t i = 0; i < m->n_sample; i++) {
		objects += m->sample[i]->value[0];
		space += m->sample[i]->value[1];
	}
	assert_int_equal(objects, 11);
	assert_int_equal(space, 4096 + 1000 + (1 << 20));
	perftools__profiles__profile__free_unpacked(m, NULL);
	free(path);

	path = path_in_dir("lock.pb.gz");
	assert_int_equal(pprof__write_type(fx->p, path, PROFILE_LOCK), 0);
	m = read_pprof(path);
	assert_non_null(m);
	assert_string_equal(str(m, m->sample_type[1]->type), "delay");
	assert_string_equal(str(m, m->sample_type[1]->unit), "nanoseconds");
	assert_int_equal(m->n_sample, 1);
	assert_int_equal(m->sample[0]->value[0], 1);
	assert_int_equal(m->sample[0]->value[1], 50000);
	for (size_t j = 0; j < m->sample[0]->n_label; j++)
		if (!strcmp(str(m, m->sample[0]->label[j]->key), "lock_address"))
			lock_label = m->sample[0]->label[j]->num;
	assert_int_equal(lock_label, 0x5555deadbee0);
	perftools__profiles__profile__free_unpacked(m, NULL);
	free(path);

	/* offcpu: none recorded, still a valid (empty) profile; unknown types refused. */
	path = path_in_dir("offcpu.pb.gz");
	assert_int_equal(pprof__write_type(fx->p, path, PROFILE_OFFCPU), 0);
	m = read_pprof(path);
	assert_non_null(m);
	assert_int_equal(m->n_sample, 0);
	perftools__profiles__profile__free_unpacked(m, NULL);
	assert_int_equal(pprof__write_type(fx->p, path, PROFILE_NTYPES), -EINVAL);
	free(path);
	path = path_in_dir("flamegraph-alloc.svg");
	assert_int_equal(flamegraph__write_svg_type(fx->p, path, "alloc", PROFILE_ALLOC), 0);
	text = slurp(path, NULL);
	assert_non_null(strstr(text, "1053672 bytes"));
	free(text);
	free(path);
	free(before);
	free(after);
	free(cpu_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_folded_text),
	    cmocka_unit_test(test_folded_empty_profile),
	    cmocka_unit_test(test_writers_leave_nothing_on_error),
	    cmocka_unit_test(test_pprof_fields),
	    cmocka_unit_test(test_pprof_links_and_context),
	    cmocka_unit_test(test_pprof_many_links),
	    cmocka_unit_test(test_pprof_empty_profile),
	    cmocka_unit_test(test_pprof_opens_in_go_tool_pprof),
	    cmocka_unit_test(test_svg),
	    cmocka_unit_test(test_svg_omits_narrow_frames_and_bad_utf8),
	    cmocka_unit_test(test_svg_go_colour),
	    cmocka_unit_test(test_svg_empty_profile),
	    cmocka_unit_test(test_otlpfile),
	    cmocka_unit_test(test_event_types),
	};
	int failed;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	failed = cmocka_run_group_tests_name("outputs", tests, setup, teardown);
	if (!getenv("KEEP_OUTPUTS"))
		remove_dir();
	else
		printf("outputs kept in %s\n", dir);
	return failed;
}
