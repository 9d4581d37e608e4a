// SPDX-License-Identifier: Apache-2.0
/*
 * pprof: builds the protobuf-c message in a few flat arrays (one per
 * message type, sized up front from the profile) and streams it through
 * zlib into PATH.tmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "output/pprof.h"
#include "pprof/profile.pb-c.h"

#ifndef SPANPROF_VERSION
#define SPANPROF_VERSION "dev"
#endif

#define MAX_EXTRA_STRINGS 24
#define NLABELS 7 /* pid tid comm process trace_id span_id lock_address, then the context */

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

/* pprof has no CPU label: samples equal in everything else become one. */
struct merge_key {
	uint32_t stack;
	uint32_t pid;
	uint32_t tid;
	uint32_t comm;
	uint32_t process_name;
	uint32_t link;
	uint32_t attrs;
	uint64_t addr;
};

struct merge_ent {
	UT_hash_handle hh;
	struct merge_key key;
	uint32_t idx;
};

struct pprof_build {
	const struct profile *p;
	uint32_t type; /* enum profile_type: only its samples are written */
	PbProfile msg;
	PbValueType types[2], period_type;
	PbValueType *type_ptrs[2];
	int64_t comment;
	char **strings;
	uint32_t nstrings, first_extra;
	PbFunction *fns, **fn_ptrs;
	PbMapping *maps, **map_ptrs;
	PbLocation *locs, **loc_ptrs;
	PbLine *lines, **line_ptrs;
	uint64_t *stack_ids; /* location ids of every stack, back to back */
	size_t *stack_first; /* per stack: its first id in stack_ids */
	PbSample *samples, **sample_ptrs;
	int64_t *values;
	PbLabel *labels, **label_ptrs;
	struct merge_ent *ents, *merge_idx;
	int64_t key_pid, key_tid, key_comm, key_process; /* label keys */
	int64_t key_trace_id, key_span_id, key_lock;
	uint32_t first_link_string; /* string index of link 1's trace id hex (span id: + 1) */
	char *link_hex;		    /* 33 + 17 bytes per link */
	uint32_t labels_per_sample; /* NLABELS + the largest attribute set */
};

/* String index of @s: the profile's own, else appended to the table. */
static int64_t pprof__string(struct pprof_build *b, const char *s)
{
	uint32_t i = profile__find_string(b->p, s);

	if (i)
		return i;
	for (i = b->first_extra; i < b->nstrings; i++)
		if (!strcmp(b->strings[i], s))
			return i;
	/* Only the fixed names of this file come here: MAX_EXTRA_STRINGS is enough. */
	b->strings[b->nstrings] = (char *)s;
	return b->nstrings++;
}

static int pprof__strings(struct pprof_build *b)
{
	uint32_t n = profile__nstrings(b->p);

	uint32_t nlinks = profile__nlinks(b->p);

	/* Two label values per link (trace id and span id in hex), after the fixed extras. */
	b->strings = calloc(n + MAX_EXTRA_STRINGS + 2 * (size_t)nlinks, sizeof(*b->strings));
	b->link_hex = malloc((size_t)nlinks * 50);
	if (!b->strings || !b->link_hex)
		return -ENOMEM;
	/* protobuf-c only reads them, whatever the missing const says. */
	for (uint32_t i = 0; i < n; i++)
		b->strings[i] = (char *)profile__string(b->p, i);
	b->nstrings = b->first_extra = n;
	b->key_pid = pprof__string(b, "pid");
	b->key_tid = pprof__string(b, "tid");
	b->key_comm = pprof__string(b, "comm");
	b->key_process = pprof__string(b, "process");
	b->key_trace_id = pprof__string(b, "trace_id");
	b->key_span_id = pprof__string(b, "span_id");
	b->key_lock = pprof__string(b, "lock_address");
	/* Fixed extras end here: link strings follow (pprof__string never looks past them). */
	b->first_link_string = b->nstrings;
	for (uint32_t i = 1; i < nlinks; i++) {
		const struct profile_link *l = profile__link(b->p, i);
		char *t = b->link_hex + (size_t)i * 50, *sp = t + 33;

		for (int j = 0; j < 16; j++)
			sprintf(t + 2 * j, "%02x", l->trace_id[j]);
		for (int j = 0; j < 8; j++)
			sprintf(sp + 2 * j, "%02x", l->span_id[j]);
		b->strings[b->nstrings++] = t;
		b->strings[b->nstrings++] = sp;
	}
	return 0;
}

static int pprof__functions(struct pprof_build *b)
{
	uint32_t n = profile__nfunctions(b->p) - 1;

	b->fns = calloc(n, sizeof(*b->fns));
	b->fn_ptrs = calloc(n, sizeof(*b->fn_ptrs));
	if (n && (!b->fns || !b->fn_ptrs))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_function *f = profile__function(b->p, i + 1);
		PbFunction *pf = &b->fns[i];

		perftools__profiles__function__init(pf);
		pf->id = i + 1;
		pf->name = f->name ? f->name : f->system_name;
		pf->system_name = f->system_name;
		pf->filename = f->filename;
		b->fn_ptrs[i] = pf;
	}
	b->msg.function = b->fn_ptrs;
	b->msg.n_function = n;
	return 0;
}

static int pprof__mappings(struct pprof_build *b)
{
	uint32_t n = profile__nmappings(b->p) - 1;

	b->maps = calloc(n, sizeof(*b->maps));
	b->map_ptrs = calloc(n, sizeof(*b->map_ptrs));
	if (n && (!b->maps || !b->map_ptrs))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_mapping *m = profile__mapping(b->p, i + 1);
		PbMapping *pm = &b->maps[i];

		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = m->memory_start;
		pm->memory_limit = m->memory_limit;
		pm->file_offset = m->file_offset;
		pm->filename = m->filename;
		pm->build_id = m->build_id;
		b->map_ptrs[i] = pm;
	}
	b->msg.mapping = b->map_ptrs;
	b->msg.n_mapping = n;
	return 0;
}

/* Locations and their lines; also sets the has_* flags of their mappings. */
static int pprof__locations(struct pprof_build *b)
{
	uint32_t n = profile__nlocations(b->p) - 1;
	size_t nlines = 0, l = 0;

	for (uint32_t i = 1; i <= n; i++)
		nlines += profile__location(b->p, i)->nlines;
	b->locs = calloc(n, sizeof(*b->locs));
	b->loc_ptrs = calloc(n, sizeof(*b->loc_ptrs));
	b->lines = calloc(nlines, sizeof(*b->lines));
	b->line_ptrs = calloc(nlines, sizeof(*b->line_ptrs));
	if ((n && (!b->locs || !b->loc_ptrs)) || (nlines && (!b->lines || !b->line_ptrs)))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_location *loc = profile__location(b->p, i + 1);
		const struct profile_line *lines = profile__location_lines(b->p, i + 1);
		PbMapping *pm = loc->mapping ? &b->maps[loc->mapping - 1] : NULL;
		PbLocation *pl = &b->locs[i];

		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = loc->mapping;
		pl->address = loc->address;
		pl->line = nlines ? &b->line_ptrs[l] : NULL;
		for (uint32_t j = 0; j < loc->nlines; j++) {
			const struct profile_function *f;
			PbLine *ln = &b->lines[l];

			if (!lines[j].function)
				continue;
			f = profile__function(b->p, lines[j].function);
			perftools__profiles__line__init(ln);
			ln->function_id = lines[j].function;
			ln->line = lines[j].line;
			b->line_ptrs[l++] = ln;
			pl->n_line++;
			if (pm) {
				pm->has_filenames |= f->filename != 0;
				pm->has_line_numbers |= lines[j].line != 0;
			}
		}
		if (pm && pl->n_line) {
			pm->has_functions = true;
			pm->has_inline_frames |= pl->n_line > 1;
		}
		b->loc_ptrs[i] = pl;
	}
	b->msg.location = b->loc_ptrs;
	b->msg.n_location = n;
	return 0;
}

/* Location ids of every stack, widened to the uint64 pprof wants. */
static int pprof__stacks(struct pprof_build *b)
{
	uint32_t n = profile__nstacks(b->p);
	size_t total = 0;

	b->stack_first = calloc(n, sizeof(*b->stack_first));
	if (!b->stack_first)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		b->stack_first[i] = total;
		total += profile__stack(b->p, i)->nlocations;
	}
	b->stack_ids = calloc(total, sizeof(*b->stack_ids));
	if (total && !b->stack_ids)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *locs = profile__stack_locations(b->p, i);
		uint32_t len = profile__stack(b->p, i)->nlocations;

		for (uint32_t j = 0; j < len; j++)
			b->stack_ids[b->stack_first[i] + j] = locs[j];
	}
	return 0;
}

static void pprof__labels(struct pprof_build *b, PbSample *ps, uint32_t i,
			  const struct profile_sample_key *k)
{
	PbLabel *lab = &b->labels[(size_t)i * b->labels_per_sample];
	const struct profile_attrset *as = profile__attrset(b->p, k->attrs);
	const struct profile_attr *attrs = profile__attrset_attrs(b->p, k->attrs);

	ps->label = &b->label_ptrs[(size_t)i * b->labels_per_sample];
	for (uint32_t j = 0; j < b->labels_per_sample; j++)
		perftools__profiles__label__init(&lab[j]);
	lab[0].key = b->key_pid;
	lab[0].num = k->pid;
	lab[1].key = b->key_tid;
	lab[1].num = k->tid;
	ps->label[ps->n_label++] = &lab[0];
	ps->label[ps->n_label++] = &lab[1];
	if (k->comm) {
		lab[2].key = b->key_comm;
		lab[2].str = k->comm;
		ps->label[ps->n_label++] = &lab[2];
	}
	if (k->process_name) {
		lab[3].key = b->key_process;
		lab[3].str = k->process_name;
		ps->label[ps->n_label++] = &lab[3];
	}
	/* The span (pprof -tagfocus trace_id=... / span_id=...), as Pyroscope labels it. */
	if (k->link) {
		lab[4].key = b->key_trace_id;
		lab[4].str = b->first_link_string + 2 * (k->link - 1);
		lab[5].key = b->key_span_id;
		lab[5].str = lab[4].str + 1;
		ps->label[ps->n_label++] = &lab[4];
		ps->label[ps->n_label++] = &lab[5];
	}
	if (k->addr) {
		lab[6].key = b->key_lock;
		lab[6].num = (int64_t)k->addr;
		ps->label[ps->n_label++] = &lab[6];
	}
	for (uint32_t j = 0; as && j < as->nattrs; j++) {
		if (!attrs[j].value)
			continue; /* pprof readers drop labels with an empty value */
		lab[NLABELS + j].key = attrs[j].key;
		lab[NLABELS + j].str = attrs[j].value;
		ps->label[ps->n_label++] = &lab[NLABELS + j];
	}
}

static int pprof__samples(struct pprof_build *b)
{
	uint32_t n = profile__nsamples(b->p), out = 0;

	b->samples = calloc(n, sizeof(*b->samples));
	b->sample_ptrs = calloc(n, sizeof(*b->sample_ptrs));
	b->values = calloc((size_t)n * 2, sizeof(*b->values));
	b->labels_per_sample = NLABELS;
	for (uint32_t i = 1; i < profile__nattrsets(b->p); i++)
		if (NLABELS + profile__attrset(b->p, i)->nattrs > b->labels_per_sample)
			b->labels_per_sample = NLABELS + profile__attrset(b->p, i)->nattrs;
	b->labels = calloc((size_t)n * b->labels_per_sample, sizeof(*b->labels));
	b->label_ptrs = calloc((size_t)n * b->labels_per_sample, sizeof(*b->label_ptrs));
	b->ents = calloc(n, sizeof(*b->ents));
	if (n && (!b->samples || !b->sample_ptrs || !b->values || !b->labels || !b->label_ptrs ||
		  !b->ents))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_sample *s = profile__sample(b->p, i);
		struct merge_ent *e = NULL, *add = &b->ents[out];
		PbSample *ps = &b->samples[out];
		int64_t v0 = (int64_t)profile__sample_value(b->p, s, 0);
		int64_t v1 = (int64_t)profile__sample_value(b->p, s, 1);

		if (s->key.type != b->type)
			continue;
		add->key = (struct merge_key){
		    .stack = s->key.stack,
		    .pid = s->key.pid,
		    .tid = s->key.tid,
		    .comm = s->key.comm,
		    .process_name = s->key.process_name,
		    .link = s->key.link,
		    .attrs = s->key.attrs,
		    .addr = s->key.addr,
		};
		HASH_FIND(hh, b->merge_idx, &add->key, sizeof(add->key), e);
		if (e) {
			b->values[2 * e->idx] += v0;
			b->values[2 * e->idx + 1] += v1;
			continue;
		}
		add->idx = out;
		HASH_ADD(hh, b->merge_idx, key, sizeof(add->key), add);
		if (!add->hh.tbl)
			return -ENOMEM;

		perftools__profiles__sample__init(ps);
		ps->location_id = &b->stack_ids[b->stack_first[s->key.stack]];
		ps->n_location_id = profile__stack(b->p, s->key.stack)->nlocations;
		ps->value = &b->values[2 * out];
		ps->n_value = 2;
		ps->value[0] = v0;
		ps->value[1] = v1;
		pprof__labels(b, ps, out, &s->key);
		b->sample_ptrs[out++] = ps;
	}
	b->msg.sample = b->sample_ptrs;
	b->msg.n_sample = out;
	return 0;
}

static void pprof__header(struct pprof_build *b)
{
	const struct profile_meta *m = profile__meta(b->p);
	const struct profile_type_info *ti = profile__type_info(b->type);
	PbProfile *msg = &b->msg;

	for (int i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&b->types[i]);
		b->type_ptrs[i] = &b->types[i];
	}
	b->types[0].type = pprof__string(b, ti->values[0].type);
	b->types[0].unit = pprof__string(b, ti->values[0].unit);
	b->types[1].type = pprof__string(b, ti->values[1].type);
	b->types[1].unit = pprof__string(b, ti->values[1].unit);
	msg->sample_type = b->type_ptrs;
	msg->n_sample_type = 2;
	perftools__profiles__value_type__init(&b->period_type);
	b->period_type.type = pprof__string(b, ti->period.type);
	b->period_type.unit = pprof__string(b, ti->period.unit);
	msg->period_type = &b->period_type;
	msg->period = b->type == PROFILE_CPU ? m->period_nano : 1;
	msg->time_nanos = m->start_unix_nano;
	msg->duration_nanos = m->duration_nano;
	msg->default_sample_type = b->types[1].type;
	b->comment = pprof__string(b, "spanprof " SPANPROF_VERSION);
	msg->comment = &b->comment;
	msg->n_comment = 1;
}

/* protobuf-c output that feeds zlib. */
struct gz_buffer {
	ProtobufCBuffer base;
	gzFile gz;
	int err;
};

static void gz_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gz_buffer *g = (struct gz_buffer *)buf;

	while (len && !g->err) {
		unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;
		int zerr;

		if (gzwrite(g->gz, data, chunk) != (int)chunk) {
			gzerror(g->gz, &zerr);
			g->err = zerr == Z_ERRNO ? -errno : -EIO;
		}
		data += chunk;
		len -= chunk;
	}
}

int gz_out__open(struct gz_out *o, const char *path)
{
	int fd, err;

	o->gz = NULL;
	if (asprintf(&o->tmp, "%s.tmp", path) < 0) {
		o->tmp = NULL;
		return -ENOMEM;
	}
	fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		free(o->tmp);
		o->tmp = NULL;
		return err;
	}
	o->gz = gzdopen(fd, "wb");
	if (!o->gz) {
		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -ENOMEM;
	}
	gzbuffer(o->gz, 64 * 1024);
	return 0;
}

int gz_out__close(struct gz_out *o, const char *path, int err)
{
	int zret = gzclose(o->gz); /* closes the file too */

	if (!err && zret != Z_OK)
		err = zret == Z_ERRNO ? -errno : -EIO;
	if (!err && rename(o->tmp, path))
		err = -errno;
	if (err)
		unlink(o->tmp);
	free(o->tmp);
	o->gz = NULL;
	o->tmp = NULL;
	return err;
}

static int write_gzipped(const PbProfile *msg, const char *path)
{
	struct gz_buffer buf = {.base = {.append = gz_append}};
	struct gz_out out;
	int err = gz_out__open(&out, path);

	if (err)
		return err;
	buf.gz = out.gz;
	perftools__profiles__profile__pack_to_buffer(msg, &buf.base);
	return gz_out__close(&out, path, buf.err);
}

int pprof__write(const struct profile *p, const char *path)
{
	return pprof__write_type(p, path, PROFILE_CPU);
}

int pprof__write_type(const struct profile *p, const char *path, uint32_t type)
{
	struct pprof_build b = {.p = p, .type = type};
	int err;

	if (!profile__type_info(type))
		return -EINVAL;
	perftools__profiles__profile__init(&b.msg);
	err = pprof__strings(&b);
	if (!err)
		err = pprof__functions(&b);
	if (!err)
		err = pprof__mappings(&b);
	if (!err)
		err = pprof__locations(&b);
	if (!err)
		err = pprof__stacks(&b);
	if (!err)
		err = pprof__samples(&b);
	if (err)
		goto cleanup;
	pprof__header(&b);
	b.msg.string_table = b.strings;
	b.msg.n_string_table = b.nstrings;
	err = write_gzipped(&b.msg, path);

cleanup:
	HASH_CLEAR(hh, b.merge_idx);
	free(b.strings);
	free(b.link_hex);
	free(b.fns);
	free(b.fn_ptrs);
	free(b.maps);
	free(b.map_ptrs);
	free(b.locs);
	free(b.loc_ptrs);
	free(b.lines);
	free(b.line_ptrs);
	free(b.stack_ids);
	free(b.stack_first);
	free(b.samples);
	free(b.sample_ptrs);
	free(b.values);
	free(b.labels);
	free(b.label_ptrs);
	free(b.ents);
	return err;
}
