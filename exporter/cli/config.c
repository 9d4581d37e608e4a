/* SPDX-License-Identifier: Apache-2.0 */
/* config: YAML configuration files fed through an argp option table (config.h). */
#include <ctype.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "cli/config.h"

/* Name argp_error() prints before a message; stripped again from what it wrote. */
#define STATE_NAME "spanprof-config"

struct config_entry {
	char *key;
	char *raw;
	unsigned line;
};

struct config {
	struct config_entry *entries;
	size_t nentries, cap_entries;
	char **strings; /* values handed to parsers: they live as long as the config */
	size_t nstrings, cap_strings;
};

/* One file being applied. */
struct apply {
	struct config *c;
	const char *name;
	const struct config_target *t;
	yaml_document_t *doc;
	int errors;
};

struct config *config__new(void)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c)
		errno = ENOMEM;
	return c;
}

void config__free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nentries; i++) {
		free(c->entries[i].key);
		free(c->entries[i].raw);
	}
	for (size_t i = 0; i < c->nstrings; i++)
		free(c->strings[i]);
	free(c->entries);
	free(c->strings);
	free(c);
}

size_t config__nkeys(const struct config *c)
{
	return c->nentries;
}

const char *config__key(const struct config *c, size_t i, const char **raw, unsigned *line)
{
	if (i >= c->nentries)
		return NULL;
	if (raw)
		*raw = c->entries[i].raw ? c->entries[i].raw : "";
	if (line)
		*line = c->entries[i].line;
	return c->entries[i].key;
}

static const struct config_entry *find_entry(const struct config *c, const char *key)
{
	for (size_t i = 0; i < c->nentries; i++)
		if (!strcmp(c->entries[i].key, key))
			return &c->entries[i];
	return NULL;
}

unsigned config__line(const struct config *c, const char *key)
{
	const struct config_entry *e = find_entry(c, key);

	return e ? e->line : 0;
}

/* Keeps @s (malloc'd) in @c; frees it and returns NULL on allocation failure. */
static char *keep(struct config *c, char *s)
{
	if (!s)
		return NULL;
	if (c->nstrings == c->cap_strings) {
		size_t cap = c->cap_strings ? 2 * c->cap_strings : 16;
		char **n = realloc(c->strings, cap * sizeof(*n));

		if (!n) {
			free(s);
			return NULL;
		}
		c->strings = n;
		c->cap_strings = cap;
	}
	c->strings[c->nstrings++] = s;
	return s;
}

static int add_entry(struct config *c, const char *key, char *raw, unsigned line)
{
	if (c->nentries == c->cap_entries) {
		size_t cap = c->cap_entries ? 2 * c->cap_entries : 16;
		struct config_entry *n = realloc(c->entries, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->entries = n;
		c->cap_entries = cap;
	}
	c->entries[c->nentries].key = strdup(key);
	if (!c->entries[c->nentries].key)
		return -ENOMEM;
	c->entries[c->nentries].raw = raw;
	c->entries[c->nentries++].line = line;
	return 0;
}

/* @s shortened and with control characters replaced, for messages. */
static const char *printable(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; s[i] && i + 4 < size; i++)
		buf[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (s[i]) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* Prints "NAME:LINE:COL: [key 'KEY': ]MESSAGE" and counts it. @mark NULL: no position. */
static void __attribute__((format(printf, 4, 5)))
report(struct apply *a, const yaml_mark_t *mark, const char *key, const char *fmt, ...)
{
	char kbuf[80];
	va_list ap;

	a->errors++;
	if (!a->t->err)
		return;
	if (mark)
		fprintf(a->t->err, "%s:%zu:%zu: ", a->name, mark->line + 1, mark->column + 1);
	else
		fprintf(a->t->err, "%s: ", a->name);
	if (key)
		fprintf(a->t->err, "key '%s': ", printable(key, kbuf, sizeof(kbuf)));
	va_start(ap, fmt);
	vfprintf(a->t->err, fmt, ap);
	va_end(ap);
	fputc('\n', a->t->err);
}

/* The option named @name, and in *@real the entry whose argument and flags it has (aliases). */
static const struct argp_option *find_option(const struct argp *argp, const char *name,
					     const struct argp_option **real)
{
	const struct argp_option *last = NULL;

	for (const struct argp_option *o = argp->options; o && (o->name || o->key || o->doc); o++) {
		if (!(o->flags & OPTION_ALIAS))
			last = o;
		if (!o->name || (o->flags & OPTION_DOC))
			continue;
		if (!strcmp(o->name, name)) {
			*real = (o->flags & OPTION_ALIAS) && last ? last : o;
			return o;
		}
	}
	return NULL;
}

/* Edit distance of @a and @b, stopping at 3 (only near misses matter). */
static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64], prev, tmp;

	if (la >= 64 || lb >= 64 || (la > lb ? la - lb : lb - la) > 2)
		return 3;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned sub =
			    prev + (a[i - 1] != b[j - 1] && !(a[i - 1] == '_' && b[j - 1] == '-'));

			tmp = row[j];
			row[j] = sub;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

/* The known key nearest to @name (edit distance <= 2, '_' for '-' free), or NULL. */
static const char *nearest_option(const struct argp *argp, const char *name)
{
	const char *best = NULL;
	unsigned best_d = 3;

	for (const struct argp_option *o = argp->options; o && (o->name || o->key || o->doc); o++) {
		unsigned d;

		if (!o->name || (o->flags & OPTION_DOC))
			continue;
		d = distance(name, o->name);
		if (d < best_d) {
			best_d = d;
			best = o->name;
		}
	}
	return best;
}

static int repeatable(const struct argp_option *real)
{
	return real->doc && strcasestr(real->doc, "repeatable");
}

static int is_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* 1 true, 0 false, -1 neither (YAML 1.1 booleans, case-insensitive, 'y'/'n' excepted). */
static int yaml_bool(const yaml_node_t *n)
{
	static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no",
									       "off"};
	const char *v = (const char *)n->data.scalar.value;

	if (n->type != YAML_SCALAR_NODE)
		return -1;
	for (size_t i = 0; i < 3; i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

/* A scalar's text, or NULL (reported) if it holds a NUL byte. */
static const char *scalar_text(struct apply *a, const yaml_node_t *n, const char *key)
{
	const char *v = (const char *)n->data.scalar.value;

	if (strlen(v) != n->data.scalar.length) {
		report(a, &n->start_mark, key, "the value contains a NUL character");
		return NULL;
	}
	return v;
}

static const char *node_kind(const yaml_node_t *n)
{
	return n->type == YAML_MAPPING_NODE    ? "a mapping"
	       : n->type == YAML_SEQUENCE_NODE ? "a list"
					       : "a value";
}

/*
 * Hands "--NAME=@value" (@value NULL: "--NAME") to the parser. What argp_error() printed
 * becomes the error at @mark, without the program name and without a leading "--NAME".
 */
static void call_parser(struct apply *a, const struct argp_option *opt, int key, const char *value,
			const yaml_mark_t *mark)
{
	char *arg = NULL, *msg = NULL, *m, *nl;
	size_t msglen = 0, flag_len;
	struct argp_state st;
	FILE *ms;
	error_t rc;

	if (value && !(arg = keep(a->c, strdup(value)))) {
		report(a, mark, opt ? opt->name : NULL, "%s", strerror(ENOMEM));
		return;
	}
	ms = open_memstream(&msg, &msglen);
	if (!ms) {
		report(a, mark, opt ? opt->name : NULL, "%s", strerror(errno));
		return;
	}
	memset(&st, 0, sizeof(st));
	st.root_argp = a->t->argp;
	st.flags = ARGP_NO_EXIT;
	st.input = a->t->input;
	st.name = (char *)STATE_NAME;
	st.err_stream = ms;
	st.out_stream = ms;
	rc = a->t->argp->parser(key, arg, &st);
	fclose(ms);
	if (!rc && !msglen) {
		free(msg);
		return;
	}
	m = msg ? msg : (char *)"";
	if (!strncmp(m, STATE_NAME ": ", strlen(STATE_NAME) + 2))
		m += strlen(STATE_NAME) + 2;
	if ((nl = strchr(m, '\n')))
		*nl = '\0';
	/* "--frequency wants a number" reads "key 'frequency': wants a number". */
	flag_len = opt ? strlen(opt->name) : 0;
	if (opt && m[0] == '-' && m[1] == '-' && !strncmp(m + 2, opt->name, flag_len) &&
	    (m[2 + flag_len] == ' ' || m[2 + flag_len] == ':'))
		m += 2 + flag_len + (m[2 + flag_len] == ':') + 1;
	if (!*m)
		m = rc == ARGP_ERR_UNKNOWN ? "not handled by the option parser"
		    : rc		   ? strerror(rc)
					   : "rejected";
	report(a, mark, opt ? opt->name : NULL, "%s", m);
	free(msg);
}

/* Appends @s to the growing string *@buf (for the value as written); best effort. */
static void raw_append(char **buf, size_t *len, const char *s)
{
	size_t n = strlen(s);
	char *b;

	if (!*buf && *len)
		return; /* an earlier allocation failed */
	b = realloc(*buf, *len + n + 1);
	if (!b) {
		free(*buf);
		*buf = NULL;
		*len = 1;
		return;
	}
	memcpy(b + *len, s, n + 1);
	*buf = b;
	*len += n;
}

/* The value as written of entry @i: @raw, malloc'd (NULL: out of memory, reported). */
static int set_raw(struct apply *a, size_t i, char *raw, const yaml_node_t *kn)
{
	if (!raw) {
		report(a, &kn->start_mark, a->c->entries[i].key, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	a->c->entries[i].raw = raw;
	return 0;
}

static void apply_pair(struct apply *a, yaml_node_t *kn, yaml_node_t *vn)
{
	const struct argp_option *opt, *real;
	const struct config_entry *dup;
	char *raw = NULL, *kv = NULL;
	const char *key, *hint, *v;
	size_t rawlen = 0;
	int filter, skip, b, key_code;
	size_t entry;

	if (kn->type != YAML_SCALAR_NODE) {
		report(a, &kn->start_mark, NULL, "keys are option names, not %s", node_kind(kn));
		return;
	}
	key = scalar_text(a, kn, NULL);
	if (!key)
		return;
	opt = find_option(a->t->argp, key, &real);
	if (!opt) {
		hint = nearest_option(a->t->argp, key);
		if (hint)
			report(a, &kn->start_mark, key, "unknown key (did you mean '%s'?)", hint);
		else
			report(a, &kn->start_mark, key,
			       "unknown key (the keys are the long options of the command)");
		return;
	}
	dup = find_entry(a->c, key);
	if (dup) {
		report(a, &kn->start_mark, key, "duplicate key (first set on line %u)", dup->line);
		return;
	}
	/* Seen from here on, even if its value turns out wrong: a second one is a duplicate. */
	if (add_entry(a->c, key, NULL, kn->start_mark.line + 1)) {
		report(a, &kn->start_mark, key, "%s", strerror(ENOMEM));
		return;
	}
	entry = a->c->nentries - 1;
	filter = a->t->filter ? a->t->filter(a->t->filter_ctx, opt) : CONFIG_APPLY;
	if (filter == CONFIG_REJECT) {
		report(a, &kn->start_mark, key, "can't be set in a configuration file");
		return;
	}
	skip = filter == CONFIG_SKIP;
	key_code = opt->key ? opt->key : real->key;

	if (!real->arg) {
		/* An option without argument: a boolean. */
		b = yaml_bool(vn);
		if (b < 0) {
			report(a, &vn->start_mark, key, "wants true or false, not %s%s%s",
			       vn->type == YAML_SCALAR_NODE ? "'" : "",
			       vn->type == YAML_SCALAR_NODE ? (const char *)vn->data.scalar.value
							    : node_kind(vn),
			       vn->type == YAML_SCALAR_NODE ? "'" : "");
			return;
		}
		if (set_raw(a, entry, strdup(b ? "true" : "false"), kn))
			return;
		if (b && !skip)
			call_parser(a, opt, key_code, NULL, &vn->start_mark);
		return;
	}

	if (vn->type == YAML_SCALAR_NODE) {
		if (is_null(vn) && !(real->flags & OPTION_ARG_OPTIONAL)) {
			report(a, &vn->start_mark, key, "has no value (wants %s)", real->arg);
			return;
		}
		v = is_null(vn) ? NULL : scalar_text(a, vn, key);
		if (!is_null(vn) && !v)
			return;
		if (set_raw(a, entry, strdup(v ? v : ""), kn))
			return;
		if (!skip)
			call_parser(a, opt, key_code, v, &vn->start_mark);
		return;
	}

	if (vn->type == YAML_SEQUENCE_NODE) {
		if (!repeatable(real)) {
			report(a, &vn->start_mark, key, "takes a single value (%s), not a list",
			       real->arg);
			return;
		}
		/* Check every item before applying any. */
		for (yaml_node_item_t *it = vn->data.sequence.items.start;
		     it < vn->data.sequence.items.top; it++) {
			yaml_node_t *in = yaml_document_get_node(a->doc, *it);

			if (in->type != YAML_SCALAR_NODE) {
				report(a, &in->start_mark, key,
				       "list items are values (%s), not %s", real->arg,
				       node_kind(in));
				return;
			}
			if (is_null(in)) {
				report(a, &in->start_mark, key,
				       "a list item has no value (wants %s)", real->arg);
				return;
			}
			if (!scalar_text(a, in, key))
				return;
		}
		raw_append(&raw, &rawlen, "[");
		for (yaml_node_item_t *it = vn->data.sequence.items.start;
		     it < vn->data.sequence.items.top; it++) {
			yaml_node_t *in = yaml_document_get_node(a->doc, *it);

			raw_append(&raw, &rawlen, it == vn->data.sequence.items.start ? "" : ", ");
			raw_append(&raw, &rawlen, (const char *)in->data.scalar.value);
		}
		raw_append(&raw, &rawlen, "]");
		if (set_raw(a, entry, raw, kn))
			return;
		for (yaml_node_item_t *it = vn->data.sequence.items.start;
		     !skip && it < vn->data.sequence.items.top; it++) {
			yaml_node_t *in = yaml_document_get_node(a->doc, *it);

			call_parser(a, opt, key_code, (const char *)in->data.scalar.value,
				    &in->start_mark);
		}
		return;
	}

	/* A mapping: KEY=VALUE options only. */
	if (!strchr(real->arg, '=')) {
		report(a, &vn->start_mark, key, "wants %s, not a mapping", real->arg);
		return;
	}
	if (vn->data.mapping.pairs.top - vn->data.mapping.pairs.start > 1 && !repeatable(real)) {
		report(a, &vn->start_mark, key, "takes a single %s, not several", real->arg);
		return;
	}
	for (yaml_node_pair_t *p = vn->data.mapping.pairs.start; p < vn->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(a->doc, p->key);
		yaml_node_t *val = yaml_document_get_node(a->doc, p->value);

		if (k->type != YAML_SCALAR_NODE || val->type != YAML_SCALAR_NODE) {
			yaml_node_t *bad = k->type != YAML_SCALAR_NODE ? k : val;

			report(a, &bad->start_mark, key, "mapping entries are name: value, not %s",
			       node_kind(bad));
			return;
		}
		if (!scalar_text(a, k, key) || !scalar_text(a, val, key))
			return;
	}
	raw_append(&raw, &rawlen, "{");
	for (yaml_node_pair_t *p = vn->data.mapping.pairs.start; p < vn->data.mapping.pairs.top;
	     p++) {
		raw_append(&raw, &rawlen, p == vn->data.mapping.pairs.start ? "" : ", ");
		raw_append(&raw, &rawlen,
			   (const char *)yaml_document_get_node(a->doc, p->key)->data.scalar.value);
		raw_append(&raw, &rawlen, ": ");
		raw_append(
		    &raw, &rawlen,
		    (const char *)yaml_document_get_node(a->doc, p->value)->data.scalar.value);
	}
	raw_append(&raw, &rawlen, "}");
	if (set_raw(a, entry, raw, kn))
		return;
	for (yaml_node_pair_t *p = vn->data.mapping.pairs.start;
	     !skip && p < vn->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(a->doc, p->key);
		yaml_node_t *val = yaml_document_get_node(a->doc, p->value);

		if (asprintf(&kv, "%s=%s", (const char *)k->data.scalar.value,
			     (const char *)val->data.scalar.value) < 0) {
			report(a, &k->start_mark, key, "%s", strerror(ENOMEM));
			return;
		}
		call_parser(a, opt, key_code, kv, &k->start_mark);
		free(kv); /* call_parser() kept its own copy */
	}
}

static void report_yaml_error(struct apply *a, const yaml_parser_t *p)
{
	yaml_mark_t at = p->problem_mark;

	if (p->error == YAML_MEMORY_ERROR) {
		report(a, NULL, NULL, "out of memory reading YAML");
		return;
	}
	if (p->error == YAML_READER_ERROR) {
		/* Encoding problems come with a byte offset, not a line. */
		report(a, NULL, NULL, "not valid YAML text: %s at byte %zu",
		       p->problem ? p->problem : "unreadable", p->problem_offset);
		return;
	}
	if (p->context)
		report(a, &at, NULL, "YAML syntax error: %s (%s, line %zu)",
		       p->problem ? p->problem : "invalid", p->context, p->context_mark.line + 1);
	else
		report(a, &at, NULL, "YAML syntax error: %s", p->problem ? p->problem : "invalid");
}

/*
 * libyaml's scanner takes time quadratic in the nesting depth (50000 '[' take a minute), and
 * a configuration never nests deeper than 3: a first pass over the events stops at the first
 * collection deeper than CONFIG_MAX_DEPTH. 0, or -1 with the error reported. Syntax errors are
 * left to the second pass, which reports them.
 */
static int check_depth(struct apply *a, const char *text, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, err = 0, done = 0;

	if (!yaml_parser_initialize(&p))
		return 0;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (!done && !err && yaml_parser_parse(&p, &ev)) {
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > CONFIG_MAX_DEPTH) {
				report(a, &ev.start_mark, NULL, "nested deeper than %d levels",
				       CONFIG_MAX_DEPTH);
				err = -1;
			}
		} else if (ev.type == YAML_SEQUENCE_END_EVENT ||
			   ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return err;
}

int config__apply_string(struct config *c, const char *name, const char *text, size_t len,
			 const struct config_target *t)
{
	struct apply a = {.c = c, .name = name, .t = t};
	yaml_document_t doc, next;
	yaml_parser_t p;
	yaml_node_t *root;

	if (check_depth(&a, text, len))
		return a.errors;
	if (!yaml_parser_initialize(&p)) {
		report(&a, NULL, NULL, "%s", strerror(ENOMEM));
		return a.errors;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &doc)) {
		report_yaml_error(&a, &p);
		yaml_parser_delete(&p);
		return a.errors;
	}
	a.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (root && root->type != YAML_MAPPING_NODE && !is_null(root)) {
		report(&a, &root->start_mark, NULL,
		       "the top level must be a mapping of 'key: value' lines, not %s",
		       node_kind(root));
	} else if (root && root->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
		     pr < root->data.mapping.pairs.top; pr++)
			apply_pair(&a, yaml_document_get_node(&doc, pr->key),
				   yaml_document_get_node(&doc, pr->value));
	}
	yaml_document_delete(&doc);
	a.doc = NULL;
	if (root) {
		/* One document only: a second one would be silently ignored otherwise. */
		if (!yaml_parser_load(&p, &next)) {
			report_yaml_error(&a, &p);
		} else {
			root = yaml_document_get_root_node(&next);
			if (root)
				report(&a, &root->start_mark, NULL,
				       "a second YAML document: put every key in one mapping");
			yaml_document_delete(&next);
		}
	}
	yaml_parser_delete(&p);
	/* Cross-option checks of the parser see the file's values. */
	if (!a.errors && t->argp->parser)
		call_parser(&a, NULL, ARGP_KEY_END, NULL, NULL);
	return a.errors;
}

int config__apply_file(struct config *c, const char *path, const struct config_target *t)
{
	struct apply a = {.c = c, .name = path, .t = t};
	char *buf = NULL;
	size_t len = 0;
	struct stat st = {0};
	FILE *f;
	int err, fd;

	/* Non-blocking: a FIFO must not wait for a writer (refused below: not a regular file). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		report(&a, NULL, NULL, "can't open: %s", strerror(errno));
		return a.errors;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		report(&a, NULL, NULL,
		       "not a regular file (%s): a configuration file is a YAML file",
		       S_ISFIFO(st.st_mode)			    ? "a FIFO"
		       : S_ISDIR(st.st_mode)			    ? "a directory"
		       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
		       : S_ISSOCK(st.st_mode)			    ? "a socket"
								    : "not readable as a file");
		close(fd);
		return a.errors;
	}
	f = fdopen(fd, "r");
	if (!f) {
		report(&a, NULL, NULL, "can't open: %s", strerror(errno));
		close(fd);
		return a.errors;
	}
	buf = malloc(CONFIG_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		report(&a, NULL, NULL, "%s", strerror(ENOMEM));
		return a.errors;
	}
	len = fread(buf, 1, CONFIG_MAX_BYTES + 1, f);
	err = ferror(f) ? errno : 0;
	fclose(f);
	if (err) {
		report(&a, NULL, NULL, "can't read: %s", strerror(err));
	} else if (len > CONFIG_MAX_BYTES) {
		report(&a, NULL, NULL, "larger than %d bytes: not a configuration file",
		       CONFIG_MAX_BYTES);
	} else {
		err = config__apply_string(c, path, buf, len, t);
		free(buf);
		return err;
	}
	free(buf);
	return a.errors;
}
