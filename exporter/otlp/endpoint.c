// SPDX-License-Identifier: Apache-2.0
/* endpoint: the check of an OTLP/gRPC endpoint (exporter/otlp/endpoint.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "otlp/endpoint.h"

static int __attribute__((format(printf, 3, 4)))
bad(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int name_char(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

static int v6_char(int c)
{
	return isxdigit(c) || c == ':' || c == '.';
}

int endpoint__parse(const char *s, struct endpoint *out, char *why, size_t why_len)
{
	struct endpoint e = {.scheme = ENDPOINT_NO_SCHEME};
	const char *rest = s, *sep, *host, *host_end, *port = NULL, *end;
	size_t len, hlen;
	unsigned long p = 0;

	if (!s || !*s)
		return bad(why, why_len, "it is empty: give host:port");
	for (const char *c = s; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return bad(why, why_len, "character %zu is a control character (0x%02x)",
				   (size_t)(c - s) + 1, (unsigned char)*c);
		if (*c == ' ')
			return bad(why, why_len, "character %zu is a space", (size_t)(c - s) + 1);
	}
	if (!strncmp(s, "http://", 7)) {
		e.scheme = ENDPOINT_HTTP;
		rest = s + 7;
	} else if (!strncmp(s, "https://", 8)) {
		e.scheme = ENDPOINT_HTTPS;
		rest = s + 8;
	} else if ((sep = strstr(s, "://"))) {
		return bad(why, why_len, "scheme '%.*s' is not http or https", (int)(sep - s), s);
	}
	len = strlen(rest);
	if (len && rest[len - 1] == '/')
		len--; /* one trailing "/" */
	end = rest + len;
	if ((sep = memchr(rest, '/', len)))
		return bad(why, why_len,
			   "path '%s' is not allowed: a gRPC endpoint is host:port (spanprof sends "
			   "to the OTLP profiles service itself)",
			   sep);
	host = rest;
	if (*rest == '[') {
		host = rest + 1;
		host_end = memchr(host, ']', end - host);
		if (!host_end)
			return bad(why, why_len, "'[' without its ']' around an IPv6 address");
		if (host_end + 1 < end) {
			if (host_end[1] != ':')
				return bad(why, why_len, "'%.*s' after ']': want ]:port",
					   (int)(end - host_end - 1), host_end + 1);
			port = host_end + 2;
		}
		for (const char *c = host; c < host_end; c++) {
			if (*c == '%') /* zone: an interface name */
				break;
			if (!v6_char((unsigned char)*c))
				return bad(why, why_len, "'%.*s' is not an IPv6 address",
					   (int)(host_end - host), host);
		}
	} else {
		host_end = memchr(rest, ':', len) ? strrchr(rest, ':') : end;
		if (host_end > end)
			host_end = end;
		if (memchr(host, ':', host_end - host))
			return bad(why, why_len, "an IPv6 address needs brackets: [%.*s]:port",
				   (int)(host_end - host), host);
		if (host_end < end)
			port = host_end + 1;
		for (const char *c = host; c < host_end; c++)
			if (!name_char((unsigned char)*c))
				return bad(why, why_len,
					   "host '%.*s' has '%c' (want letters, digits, '-', '.')",
					   (int)(host_end - host), host, *c);
	}
	hlen = host_end - host;
	if (!hlen)
		return bad(why, why_len, "the host is empty");
	if (hlen > ENDPOINT_MAX_HOST)
		return bad(why, why_len, "the host is longer than %d characters",
			   ENDPOINT_MAX_HOST);
	if (port) {
		for (const char *c = port; c < end && p <= 65535; c++) {
			if (!isdigit((unsigned char)*c))
				return bad(why, why_len, "port '%.*s' is not a number",
					   (int)(end - port), port);
			p = p * 10 + (*c - '0');
		}
		if (port == end || p < 1 || p > 65535)
			return bad(why, why_len, "port '%.*s' is not from 1 to 65535",
				   (int)(end - port), port);
	} else if (e.scheme == ENDPOINT_NO_SCHEME) {
		return bad(why, why_len,
			   "no port: give host:port (or http://host, https://host for port %d)",
			   ENDPOINT_DEFAULT_PORT);
	} else {
		p = ENDPOINT_DEFAULT_PORT;
	}
	e.port = p;
	memcpy(e.host, host, hlen);
	snprintf(e.target, sizeof(e.target), *rest == '[' ? "[%s]:%u" : "%s:%u", e.host, e.port);
	if (out)
		*out = e;
	return 0;
}
