// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests of the truncation markers (exporter/stackend/): the names of the stack ends of
 * bpf/sampler.h, the marker location in the profile model, and the marker as each output shows
 * it: the folded line (exact text), pprof (gunzip + protobuf-c unpack), OTLP (unpacked; the
 * location's profile.frame.type is "abort") and the view document read back from both (frame
 * kind 3). The marker always sits at the root end of the stack.
 */
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
#include <json-c/json.h>
#include <zlib.h>

#include "output/folded.h"
#include "otlp/otlp_encode.h"
#include "otlp/otlp_pb.h"
#include "output/pprof.h"
#include "pprof/profile.pb-c.h"
#include "profile/profile.h"
#include "sampler.h"
#include "profile/stackend.h"
#include "view/doc.h"
#include "view/read.h"

#define NOT_LOADED "[truncated: not loaded yet]"

static char dir[] = "/tmp/spanprof-test-stackend-XXXXXX";

static char *path_in_dir(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return NULL;
	return path;
}

static void test_names(void **state)
{
	(void)state;
	assert_null(stackend__name(SP_USTACK_COMPLETE));
	assert_null(stackend__name(SP_USTACK_END_MAX));
	assert_null(stackend__name(UINT32_MAX));
	assert_string_equal(stackend__name(SP_USTACK_DEPTH), "[truncated: depth limit]");
	assert_string_equal(stackend__name(SP_USTACK_NOT_LOADED), NOT_LOADED);
	assert_string_equal(stackend__name(SP_USTACK_NO_UNWIND_INFO),
			    "[truncated: no unwind info]");
	assert_string_equal(stackend__name(SP_USTACK_UNREADABLE), "[truncated: unreadable stack]");
	/* Every other reason has a name of its own, bracketed like the other synthetic frames. */
	for (uint32_t i = 1; i < SP_USTACK_END_MAX; i++) {
		const char *n = stackend__name(i);

		assert_non_null(n);
		assert_true(n[0] == '[' && n[strlen(n) - 1] == ']');
		assert_true(!strncmp(n, "[truncated: ", 12) || !strncmp(n, "[unverified: ", 13));
		for (uint32_t j = 1; j < i; j++)
			assert_string_not_equal(n, stackend__name(j));
	}
}

/* The stack ends of the CFI walk's stop counters (bpf/sampler.h): only END is complete. */
static void test_of_stat(void **state)
{
	(void)state;
	assert_int_equal(sp_ustack_end_of_stat(SP_STAT_UNW_END), SP_USTACK_COMPLETE);
	assert_int_equal(sp_ustack_end_of_stat(SP_STAT_UNW_DEPTH), SP_USTACK_DEPTH);
	assert_int_equal(sp_ustack_end_of_stat(SP_STAT_UNW_FP_END), SP_USTACK_NO_UNWIND_INFO);
	assert_int_equal(sp_ustack_end_of_stat(SP_STAT_UNW_READ_FAILED), SP_USTACK_UNREADABLE);
	for (uint32_t s = SP_STAT_UNW_FP_END; s <= SP_STAT_UNW_DEPTH; s++)
		assert_int_not_equal(sp_ustack_end_of_stat(s), SP_USTACK_COMPLETE);
	/* Not a stop counter: never "complete". */
	assert_int_not_equal(sp_ustack_end_of_stat(SP_STAT_SAMPLES), SP_USTACK_COMPLETE);
}

static void test_location(void **state)
{
	struct profile *p = profile__new();
	const struct profile_location *l;
	const struct profile_line *ln;
	uint32_t a, b, c;

	(void)state;
	assert_non_null(p);
	errno = EBADF;
	assert_int_equal(stackend__location(p, SP_USTACK_COMPLETE), 0);
	assert_int_equal(errno, 0);
	assert_int_equal(stackend__location(p, 200), 0);
	a = stackend__location(p, SP_USTACK_DEPTH);
	b = stackend__location(p, SP_USTACK_NOT_LOADED);
	c = stackend__location(p, SP_USTACK_DEPTH);
	assert_int_not_equal(a, 0);
	assert_int_not_equal(a, b);
	assert_int_equal(a, c);
	l = profile__location(p, b);
	assert_int_equal(l->kind, FRAME_ABORT);
	assert_int_equal(l->mapping, 0);
	assert_int_equal(l->address, SP_USTACK_NOT_LOADED);
	assert_int_equal(l->nlines, 1);
	ln = profile__location_lines(p, b);
	assert_string_equal(profile__string(p, profile__function(p, ln[0].function)->name),
			    NOT_LOADED);
	profile__free(p);
}

/* app (pid 7): hot, called from code the walk could not reach, 3 samples. */
static struct profile *cut_profile(void)
{
	struct profile *p = profile__new();
	struct profile_function f = {0};
	struct profile_mapping m = {0};
	struct profile_line line = {0};
	struct profile_sample_key k = {0};
	uint32_t locs[2];

	assert_non_null(p);
	f.name = f.system_name = profile__intern_string(p, "hot");
	line.function = profile__intern_function(p, &f);
	m.memory_start = 0x400000;
	m.memory_limit = 0x401000;
	m.filename = profile__intern_string(p, "/usr/bin/app");
	locs[0] = profile__intern_location(p, profile__intern_mapping(p, &m), 0x400123,
					   FRAME_NATIVE, &line, 1);
	locs[1] = stackend__location(p, SP_USTACK_NOT_LOADED);
	assert_int_not_equal(locs[0], 0);
	assert_int_not_equal(locs[1], 0);
	k.stack = profile__intern_stack(p, locs, 2);
	k.pid = 7;
	k.tid = 7;
	k.comm = k.process_name = profile__intern_string(p, "app");
	for (int i = 0; i < 3; i++)
		assert_int_equal(profile__add_sample(p, &k, 1700000000000000000ull + i, 1), 0);
	return p;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0;

	assert_non_null(f);
	assert_int_not_equal(getdelim(&buf, &cap, '\0', f), -1);
	*len = strlen(buf);
	fclose(f);
	return buf;
}

static void test_folded(void **state)
{
	struct profile *p = cut_profile();
	char *path = path_in_dir("cut.folded"), *text;
	size_t len;

	(void)state;
	assert_int_equal(folded__write(p, path), 0);
	text = slurp(path, &len);
	assert_string_equal(text, "app;" NOT_LOADED ";hot 3\n");
	free(text);
	unlink(path);
	free(path);
	profile__free(p);
}

static Perftools__Profiles__Profile *read_pprof(const char *path)
{
	gzFile gz = gzopen(path, "rb");
	size_t len = 0, cap = 1 << 20;
	uint8_t *buf = malloc(cap);
	Perftools__Profiles__Profile *m;
	int n;

	assert_non_null(gz);
	assert_non_null(buf);
	while ((n = gzread(gz, buf + len, cap - len)) > 0)
		len += n;
	gzclose(gz);
	m = perftools__profiles__profile__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(m);
	return m;
}

/* The function name of pprof location @id. */
static const char *pprof_loc_name(const Perftools__Profiles__Profile *m, uint64_t id,
				  const Perftools__Profiles__Location **out)
{
	for (size_t i = 0; i < m->n_location; i++) {
		const Perftools__Profiles__Location *l = m->location[i];

		if (l->id != id)
			continue;
		*out = l;
		assert_int_equal(l->n_line, 1);
		for (size_t j = 0; j < m->n_function; j++)
			if (m->function[j]->id == l->line[0]->function_id)
				return m->string_table[m->function[j]->name];
	}
	fail_msg("location %llu not found", (unsigned long long)id);
	return NULL;
}

static void test_pprof_and_view(void **state)
{
	struct profile *p = cut_profile();
	char *path = path_in_dir("cut.pb.gz"), *json;
	Perftools__Profiles__Profile *m;
	const Perftools__Profiles__Location *l = NULL;
	struct view_doc *d;
	json_object *doc, *v, *frames, *names, *kinds, *strings, *stacks, *st;
	size_t len;
	int marker = -1;

	(void)state;
	assert_int_equal(pprof__write(p, path), 0);
	m = read_pprof(path);
	assert_int_equal(m->n_sample, 1);
	assert_int_equal(m->sample[0]->n_location_id, 2); /* leaf first: the marker is the root */
	assert_string_equal(pprof_loc_name(m, m->sample[0]->location_id[1], &l), NOT_LOADED);
	assert_int_equal(l->mapping_id, 0);
	assert_int_equal(l->address, SP_USTACK_NOT_LOADED);
	assert_string_equal(pprof_loc_name(m, m->sample[0]->location_id[0], &l), "hot");
	perftools__profiles__profile__free_unpacked(m, NULL);

	/* spanprof view: the marker frame has kind 3 and is the stack's root. */
	d = view_doc__new();
	assert_non_null(d);
	assert_int_equal(view_read__path(d, path), 1);
	assert_int_equal(view_doc__finish(d), 0);
	assert_int_equal(view_doc__json(d, &json, &len), 0);
	doc = json_tokener_parse(json);
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "frames", &frames));
	assert_true(json_object_object_get_ex(frames, "name", &names));
	assert_true(json_object_object_get_ex(frames, "kind", &kinds));
	assert_true(json_object_object_get_ex(doc, "strings", &strings));
	for (size_t i = 0; i < json_object_array_length(names); i++) {
		v = json_object_array_get_idx(
		    strings, json_object_get_int(json_object_array_get_idx(names, i)));
		if (!strcmp(json_object_get_string(v), NOT_LOADED)) {
			marker = (int)i;
			assert_int_equal(json_object_get_int(json_object_array_get_idx(kinds, i)),
					 VIEW_FRAME_ABORT);
		} else {
			assert_int_not_equal(
			    json_object_get_int(json_object_array_get_idx(kinds, i)),
			    VIEW_FRAME_ABORT);
		}
	}
	assert_int_not_equal(marker, -1);
	assert_true(json_object_object_get_ex(doc, "stacks", &stacks));
	assert_int_equal(json_object_array_length(stacks), 1);
	st = json_object_array_get_idx(stacks, 0);
	assert_int_equal(json_object_array_length(st), 2);
	assert_int_equal(json_object_get_int(json_object_array_get_idx(st, 0)), marker);
	json_object_put(doc);
	free(json);
	view_doc__free(d);
	unlink(path);
	free(path);
	profile__free(p);
}

struct req {
	uint8_t *buf;
	size_t len;
	int n;
};

static int collect(void *ctx, const uint8_t *buf, size_t len, uint64_t samples, uint32_t type)
{
	struct req *r = ctx;

	(void)samples;
	r->buf = malloc(len);
	assert_non_null(r->buf);
	memcpy(r->buf, buf, len);
	r->len = len;
	r->n++;
	return 0;
}

static void test_otlp_and_view(void **state)
{
	struct profile *p = cut_profile();
	struct otlp_encode_opts o = {.host_name = "", .no_file_hash = 1};
	struct req r = {0};
	pb_request *req;
	const pb_dict *dict;
	const pb_stack *st;
	const pb_location *l;
	const pb_kvu *a;
	struct view_doc *d;
	json_object *doc, *frames, *kinds;
	char *json;
	size_t len;
	int abort_frames = 0;

	(void)state;
	assert_int_equal(otlp__encode(p, &o, collect, &r), 0);
	assert_int_equal(r.n, 1);
	req =
	    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, r.len, r.buf);
	assert_non_null(req);
	dict = req->dictionary;
	assert_int_equal(req->n_resource_profiles, 1);
	st = dict->stack_table[req->resource_profiles[0]
				   ->scope_profiles[0]
				   ->profiles[0]
				   ->samples[0]
				   ->stack_index];
	assert_int_equal(st->n_location_indices, 2);
	l = dict->location_table[st->location_indices[1]]; /* leaf first: the root */
	assert_int_equal(l->mapping_index, 0);
	assert_int_equal(l->address, SP_USTACK_NOT_LOADED);
	assert_int_equal(l->n_lines, 1);
	assert_string_equal(
	    dict->string_table[dict->function_table[l->lines[0]->function_index]->name_strindex],
	    NOT_LOADED);
	assert_int_equal(l->n_attribute_indices, 1);
	a = dict->attribute_table[l->attribute_indices[0]];
	assert_string_equal(dict->string_table[a->key_strindex], "profile.frame.type");
	assert_string_equal(a->value->string_value, "abort");
	l = dict->location_table[st->location_indices[0]];
	a = dict->attribute_table[l->attribute_indices[0]];
	assert_string_equal(a->value->string_value, "native");
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
	    req, NULL);

	d = view_doc__new();
	assert_non_null(d);
	assert_int_equal(view_read__buffer(d, "cut.binpb", r.buf, r.len), 1);
	assert_int_equal(view_doc__finish(d), 0);
	assert_int_equal(view_doc__json(d, &json, &len), 0);
	doc = json_tokener_parse(json);
	assert_true(json_object_object_get_ex(doc, "frames", &frames));
	assert_true(json_object_object_get_ex(frames, "kind", &kinds));
	for (size_t i = 0; i < json_object_array_length(kinds); i++)
		abort_frames +=
		    json_object_get_int(json_object_array_get_idx(kinds, i)) == VIEW_FRAME_ABORT;
	assert_int_equal(abort_frames, 1);
	json_object_put(doc);
	free(json);
	view_doc__free(d);
	free(r.buf);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),	   cmocka_unit_test(test_of_stat),
	    cmocka_unit_test(test_location),	   cmocka_unit_test(test_folded),
	    cmocka_unit_test(test_pprof_and_view), cmocka_unit_test(test_otlp_and_view),
	};
	int rc;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
