/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config: a YAML configuration file whose keys are the long options of an argp parser
 * (docs/configuration.md). Each value goes through the option's own argp parser function,
 * exactly as "--key=VALUE" on the command line would, so a file accepts every flag, with the
 * same checks and the same messages, and an option added to the table is a key at once.
 *
 * Shapes (YAML 1.1/1.2 text read with libyaml; one document whose top level is a mapping):
 *   key: VALUE               one "--key=VALUE"
 *   key: [V1, V2]            "--key=V1 --key=V2": only for options whose help says "repeatable"
 *   key: {K1: V1, K2: V2}    "--key=K1=V1 --key=K2=V2": only for options whose argument name
 *                            has a '=' (KEY=VALUE)
 *   key: true | false        an option without argument: given, or not (also yes/no, on/off)
 * Every problem is reported as "NAME:LINE:COLUMN: key 'KEY': REASON" (lines and columns from 1):
 * YAML syntax errors, a top level that is not a mapping, unknown keys (with the nearest known
 * key as a hint), duplicate keys, values of the wrong shape, values the option's parser
 * rejects, nesting deeper than CONFIG_MAX_DEPTH. Every error of a file is reported, not only the
 * first; a syntax error stops the reading of the file there.
 */
#ifndef SPANPROF_CONFIG_H
#define SPANPROF_CONFIG_H

#include <argp.h>
#include <stddef.h>
#include <stdio.h>

/* Files larger than this are refused (a configuration file is a few hundred bytes). */
#define CONFIG_MAX_BYTES (1 << 20)
/* Deeper nesting of lists and mappings is refused (a configuration needs 3 levels). */
#define CONFIG_MAX_DEPTH 16

/* What config__apply_*() does with a known key; see struct config_target. */
enum config_filter {
	CONFIG_APPLY, /* hand the value to the option's parser */
	CONFIG_SKIP,  /* check the key and the value's shape, but leave it alone (a flag gave it) */
	CONFIG_REJECT, /* an error: the key may not appear in a file */
};

struct config_target {
	/*
	 * Its options (not its children's) are the keys: every entry with a long name that is
	 * not OPTION_DOC. Its parser receives the values with a state whose flags have
	 * ARGP_NO_EXIT and whose err_stream collects what argp_error() prints; a parser must
	 * return non-zero after argp_error() (the command line exits there, a file goes on with
	 * the next key). After the last key, the parser gets ARGP_KEY_END once (no ARGP_KEY_INIT),
	 * so checks across options see the file's values.
	 */
	const struct argp *argp;
	void *input; /* the parser's state->input */
	/* NULL (every key CONFIG_APPLY) or the enum config_filter for @opt. */
	int (*filter)(void *ctx, const struct argp_option *opt);
	void *filter_ctx;
	FILE *err; /* where the errors go, one line each; NULL: not printed */
};

/*
 * What files set: the keys with their lines and values as written, and the value strings
 * handed to the parsers. Parsers keep pointers into those strings (an output directory, a
 * header), so the config must outlive the options it filled.
 */
struct config;

/* An empty config; NULL and errno ENOMEM. */
struct config *config__new(void);

/* Frees @c and every value string it owns; NULL is a no-op. */
void config__free(struct config *c);

/*
 * Reads the YAML file @path (at most CONFIG_MAX_BYTES) and applies it to @t (see above).
 * Returns 0 when every key was applied, else the number of errors found (each printed to
 * t->err; a file that can't be read is one error). An empty file, or one with comments only,
 * sets nothing and is fine. Applying after an error leaves the input partly set: callers stop.
 */
int config__apply_file(struct config *c, const char *path, const struct config_target *t);

/* config__apply_file() on @len bytes of YAML text; @name stands for the file in messages. */
int config__apply_string(struct config *c, const char *name, const char *text, size_t len,
			 const struct config_target *t);

/* Number of keys the applied files set (skipped ones included), in file order. */
size_t config__nkeys(const struct config *c);

/*
 * Key @i (< config__nkeys()): its name, its value as written (a scalar's text, "[a, b]" for
 * a list, "{k: v}" for a mapping; owned by @c) and its line, 1-based. NULL if @i is out of range.
 */
const char *config__key(const struct config *c, size_t i, const char **raw, unsigned *line);

/* Line (1-based) where the applied files set @key, or 0 if they don't. */
unsigned config__line(const struct config *c, const char *key);

#endif
