/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for exporter/otlp/endpoint.c: which OTLP endpoints are accepted, and their gRPC
 * target.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "otlp/endpoint.h"

static void accepts(const char *s, enum endpoint_scheme scheme, const char *target)
{
	struct endpoint e;
	char why[256] = "";

	if (endpoint__parse(s, &e, why, sizeof(why)))
		fail_msg("'%s' refused: %s", s, why);
	assert_int_equal(e.scheme, scheme);
	assert_string_equal(e.target, target);
}

/* Refused, with a message containing @part (the bad part named). */
static void refuses(const char *s, const char *part)
{
	char why[256] = "";

	assert_int_equal(endpoint__parse(s, NULL, why, sizeof(why)), -EINVAL);
	if (!strstr(why, part))
		fail_msg("'%s': expected '%s' in '%s'", s, part, why);
}

static void test_accepted_forms(void **state)
{
	accepts("localhost:4317", ENDPOINT_NO_SCHEME, "localhost:4317");
	accepts("127.0.0.1:1", ENDPOINT_NO_SCHEME, "127.0.0.1:1");
	accepts("otel.example.net:65535", ENDPOINT_NO_SCHEME, "otel.example.net:65535");
	accepts("[::1]:4317", ENDPOINT_NO_SCHEME, "[::1]:4317");
	accepts("[fe80::1%eth0]:4317", ENDPOINT_NO_SCHEME, "[fe80::1%eth0]:4317");
	accepts("http://127.0.0.1:4317", ENDPOINT_HTTP, "127.0.0.1:4317");
	accepts("https://otel.example.net:4317/", ENDPOINT_HTTPS, "otel.example.net:4317");
	accepts("localhost:4317/", ENDPOINT_NO_SCHEME, "localhost:4317");
	/* A scheme without a port: the OTLP/gRPC default. */
	accepts("http://collector", ENDPOINT_HTTP, "collector:4317");
	accepts("https://collector/", ENDPOINT_HTTPS, "collector:4317");
	accepts("https://[::1]", ENDPOINT_HTTPS, "[::1]:4317");
	assert_int_equal(endpoint__parse("localhost:1", NULL, NULL, 0), 0);
}

static void test_refused_forms(void **state)
{
	refuses("", "empty");
	refuses("localhost:99999", "port '99999' is not from 1 to 65535");
	refuses("localhost:0", "port '0'");
	refuses("localhost:", "port ''");
	refuses("localhost:43a7", "port '43a7' is not a number");
	refuses("localhost:-1", "port '-1'");
	refuses("localhost", "no port");
	refuses("ftp://x:1", "scheme 'ftp'");
	refuses("HTTP://x:1", "scheme 'HTTP'");
	refuses("host with space:1", "character 5 is a space");
	refuses("not a url ::", "space");
	refuses("localhost:4317/v1/profiles", "path '/v1/profiles'");
	refuses("localhost:4317//", "path '//'");
	refuses("localhost:4317\r", "character 15 is a control character (0x0d)");
	refuses("\tlocalhost:4317", "control character (0x09)");
	refuses(":4317", "the host is empty");
	refuses("http://:4317", "the host is empty");
	refuses("https://", "the host is empty");
	refuses("[]:4317", "the host is empty");
	refuses("::1:4317", "needs brackets");
	refuses("[::1:4317", "without its ']'");
	refuses("[::1]4317", "after ']'");
	refuses("[zz::1]:4317", "not an IPv6 address");
	refuses("ho$t:4317", "has '$'");
	refuses("unix:/run/otel.sock", "path");
}

static void test_long_host(void **state)
{
	char s[ENDPOINT_MAX_HOST + 16];

	memset(s, 'a', ENDPOINT_MAX_HOST);
	strcpy(s + ENDPOINT_MAX_HOST, ":1");
	accepts(s, ENDPOINT_NO_SCHEME, s);
	memset(s, 'a', ENDPOINT_MAX_HOST + 1);
	strcpy(s + ENDPOINT_MAX_HOST + 1, ":1");
	refuses(s, "longer than");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accepted_forms),
	    cmocka_unit_test(test_refused_forms),
	    cmocka_unit_test(test_long_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
