/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/otel_env.h"
#include "util/util.h"

const char *otel_env__exporter(const char *name)
{
	char var[128];
	const char *v;

	snprintf(var, sizeof(var), "OTEL_EXPORTER_OTLP_PROFILES_%s", name);
	v = getenv(var);
	if (v && *v)
		return v;
	snprintf(var, sizeof(var), "OTEL_EXPORTER_OTLP_%s", name);
	v = getenv(var);
	return v && *v ? v : NULL;
}

/* Copies [s, e) trimmed, percent-decoding if @decode, into a new string. */
static char *copy_trimmed(const char *s, const char *e, int decode)
{
	char *out, *o;

	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	out = o = malloc(e - s + 1);
	if (!out)
		return NULL;
	while (s < e) {
		if (decode && *s == '%' && e - s >= 3 && util__hexval(s[1]) >= 0 &&
		    util__hexval(s[2]) >= 0) {
			*o++ = (char)(util__hexval(s[1]) * 16 + util__hexval(s[2]));
			s += 3;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

int otel_env__parse_list(const char *s, int (*cb)(void *ctx, const char *key, const char *value),
			 void *ctx)
{
	int skipped = 0, err;

	while (s && *s) {
		const char *end = strchr(s, ','), *eq;
		char *key, *value;

		if (!end)
			end = s + strlen(s);
		eq = memchr(s, '=', end - s);
		if (!eq) {
			/* An empty entry (",,") is not an error worth counting. */
			for (const char *p = s; p < end; p++)
				if (!isspace((unsigned char)*p)) {
					skipped++;
					break;
				}
			s = *end ? end + 1 : end;
			continue;
		}
		key = copy_trimmed(s, eq, 1);
		value = copy_trimmed(eq + 1, end, 1);
		if (!key || !value) {
			free(key);
			free(value);
			return -ENOMEM;
		}
		if (!*key) {
			skipped++;
		} else {
			err = cb(ctx, key, value);
			if (err < 0) {
				free(key);
				free(value);
				return err;
			}
		}
		free(key);
		free(value);
		s = *end ? end + 1 : end;
	}
	return skipped;
}

int otel_env__bool(const char *s)
{
	if (!strcasecmp(s, "true"))
		return 1;
	if (!strcasecmp(s, "false"))
		return 0;
	return -EINVAL;
}
