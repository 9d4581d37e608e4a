/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the configuration file (exporter/cli/config.c) and for the precedence of flags,
 * OTEL_* environment, file and defaults of `spanprof record` (exporter/cli/main.c, linked with
 * main renamed: exporter/cli/cli.h). No root: nothing is sampled.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cli/cli.h"
#include "cli/config.h"
#include "record/record.h"

static char tmpdir[] = "/tmp/spanprof-test-config-XXXXXX";
static char paths[16][256];
static int npaths;

/* Writes @text to a new file in the test directory; returns its path. */
static const char *write_file(const char *text)
{
	char *p = paths[npaths];
	FILE *f;

	assert_true(npaths < 16);
	snprintf(p, sizeof(paths[0]), "%s/c%d.yaml", tmpdir, npaths++);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return p;
}

static const char *const otel_vars[] = {
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_INSECURE",
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_CLIENT_KEY",
    "OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
    "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION",
    "SPANPROF_CONFIG",
};

static int setup(void **state)
{
	for (size_t i = 0; i < sizeof(otel_vars) / sizeof(otel_vars[0]); i++)
		unsetenv(otel_vars[i]);
	return 0;
}

static int teardown(void **state)
{
	for (int i = 0; i < npaths; i++)
		unlink(paths[i]);
	npaths = 0;
	return setup(state);
}

/* A self-signed certificate (CA) and its key in PEM, for the checks of the TLS files. */
static char ca_pem[300], key_pem[300], env_ca_pem[300];

static int write_cert(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	FILE *f = NULL, *g = NULL, *h = NULL;
	int ok;

	snprintf(ca_pem, sizeof(ca_pem), "%s/ca.pem", tmpdir);
	snprintf(env_ca_pem, sizeof(env_ca_pem), "%s/env-ca.pem", tmpdir);
	snprintf(key_pem, sizeof(key_pem), "%s/key.pem", tmpdir);
	ok = k && x && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) &&
	     X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), 3600) && X509_set_pubkey(x, k) &&
	     X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
					(const unsigned char *)"spanprof-test", -1, -1, 0) &&
	     X509_set_issuer_name(x, X509_get_subject_name(x)) && X509_sign(x, k, EVP_sha256()) &&
	     (f = fopen(ca_pem, "w")) && PEM_write_X509(f, x) && (h = fopen(env_ca_pem, "w")) &&
	     PEM_write_X509(h, x) && (g = fopen(key_pem, "w")) &&
	     PEM_write_PrivateKey(g, k, NULL, NULL, 0, NULL, NULL);
	if (f)
		ok &= !fclose(f);
	if (g)
		ok &= !fclose(g);
	if (h)
		ok &= !fclose(h);
	X509_free(x);
	EVP_PKEY_free(k);
	return ok ? 0 : -1;
}

static int group_setup(void **state)
{
	return mkdtemp(tmpdir) ? write_cert() : -1;
}

static int group_teardown(void **state)
{
	unlink(ca_pem);
	unlink(env_ca_pem);
	unlink(key_pem);
	return rmdir(tmpdir);
}

/* Runs fn(argc, argv) with stdout and stderr captured into *out and *err (malloc'd). */
static int capture(int (*fn)(int, char **), int argc, char **argv, char **out, char **err)
{
	FILE *fo = tmpfile(), *fe = tmpfile();
	int so, se, rc;
	long n;

	assert_non_null(fo);
	assert_non_null(fe);
	fflush(stdout);
	fflush(stderr);
	so = dup(1);
	se = dup(2);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	rc = fn(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	for (int i = 0; i < 2; i++) {
		FILE *f = i ? fe : fo;
		char **dst = i ? err : out;

		n = ftell(f);
		assert_true(n >= 0);
		*dst = calloc(1, n + 1);
		rewind(f);
		assert_int_equal(fread(*dst, 1, n, f), (size_t)n);
		fclose(f);
	}
	return rc;
}

/* `spanprof config check` on @yaml: the exit code; stdout and stderr in *out, *err. */
static int check(const char *yaml, const char **path, char **out, char **err)
{
	char *argv[] = {"config", "check", NULL, NULL};

	argv[2] = (char *)write_file(yaml);
	if (path)
		*path = argv[2];
	return capture(cli__config_main, 3, argv, out, err);
}

/* Asserts that @err has the line "PATH:@where: @what" (what: a prefix of the message). */
static void assert_error(const char *err, const char *path, const char *where, const char *what)
{
	char want[512];

	snprintf(want, sizeof(want), "%s:%s: %s", path, where, what);
	if (!strstr(err, want))
		fail_msg("expected '%s' in:\n%s", want, err);
}

/* --- the errors of `spanprof config check`, each with its line and column ---------------- */

static void test_check_ok_prints_settings(void **state)
{
	const char *path;
	char *out, *err, want[300];

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317", 1);
	assert_int_equal(check("# node agent\n"
			       "frequency: 99\n"
			       "pid: [10, 20]\n"
			       "endpoint: localhost:9\n"
			       "header: {X-Team: secret-token}\n",
			       &path, &out, &err),
			 0);
	snprintf(want, sizeof(want), "%s: ok\n", path);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "frequency: 99  # file line 2\n"));
	assert_non_null(strstr(out, "pid: [10, 20]  # file line 3\n"));
	assert_non_null(strstr(out, "endpoint: \"http://127.0.0.1:4317\"  # "
				    "OTEL_EXPORTER_OTLP_ENDPOINT (replaces file line 4)\n"));
	assert_non_null(strstr(out, "duration: not set"));
	assert_non_null(strstr(out, "export-interval: 5  # default\n"));
	assert_non_null(strstr(out, "header: {x-team: \"***\"}  # file line 5\n"));
	assert_null(strstr(out, "secret-token")); /* credentials are not printed */
	assert_string_equal(err, "");
	free(out);
	free(err);
}

static void test_check_every_error_with_line(void **state)
{
	const char *p;
	char *out, *err;

	assert_int_equal(check("frequency: 100000\n"	     /* 1: the parser rejects it */
			       "duraton: 3\n"		     /* 2: unknown, with a hint */
			       "pid: {a: b}\n"		     /* 3: mapping for a plain value */
			       "quiet: maybe\n"		     /* 4: not a boolean */
			       "header: [noequals]\n"	     /* 5: rejected list item */
			       "pid: 3\n"		     /* 6: duplicate */
			       "config: other.yaml\n"	     /* 7: not in a file */
			       "export-interval: [1, 2]\n"   /* 8: list for a single value */
			       "endpoint:\n"		     /* 9: no value */
			       "tls-ca: {a: 1}\n"	     /* 10: mapping, not KEY=VALUE */
			       "pid: [1, [2]]\n"	     /* 11: duplicate (first on 3) */
			       "header: [a=b, {c: d}]\n"     /* 12: duplicate */
			       "context-uprobe: [\"bad\"]\n" /* 13: rejected item */
			       "frobnicate-widely: 1\n",     /* 14: unknown, no hint */
			       &p, &out, &err),
			 2);
	assert_error(err, p, "1:12",
		     "key 'frequency': wants a whole number from 1 to 10000, "
		     "not '100000'");
	assert_error(err, p, "2:1", "key 'duraton': unknown key (did you mean 'duration'?)");
	assert_error(err, p, "3:6", "key 'pid': wants PID[,PID...], not a mapping");
	assert_error(err, p, "4:8", "key 'quiet': wants true or false, not 'maybe'");
	assert_error(err, p, "5:10", "key 'header': wants KEY=VALUE, not 'noequals'");
	assert_error(err, p, "6:1", "key 'pid': duplicate key (first set on line 3)");
	assert_error(err, p, "7:1", "key 'config': can't be set in a configuration file");
	assert_error(err, p, "8:18", "key 'export-interval': takes a single value (SECONDS)");
	assert_error(err, p, "9:10", "key 'endpoint': has no value");
	assert_error(err, p, "10:9", "key 'tls-ca': wants FILE, not a mapping");
	assert_error(err, p, "11:1", "key 'pid': duplicate key (first set on line 3)");
	assert_error(err, p, "12:1", "key 'header': duplicate key (first set on line 5)");
	assert_error(err, p, "13:18", "key 'context-uprobe': wants BINARY:SYMBOL");
	assert_error(err, p, "14:1", "key 'frobnicate-widely': unknown key (the keys are");
	assert_non_null(strstr(err, ": 14 errors\n"));
	assert_null(strstr(out, ": ok"));
	free(out);
	free(err);
}

static void test_check_list_item_shape(void **state)
{
	const char *p;
	char *out, *err;

	assert_int_equal(check("pid:\n  - 1\n  - [2, 3]\n", &p, &out, &err), 2);
	assert_error(err, p, "3:5", "key 'pid': list items are values (PID[,PID...]), not a list");
	free(out);
	free(err);
	assert_int_equal(check("pid: [1, ~]\n", &p, &out, &err), 2);
	assert_error(err, p, "1:10", "key 'pid': a list item has no value");
	free(out);
	free(err);
}

static void test_check_yaml_syntax_error(void **state)
{
	const char *p;
	char *out, *err;

	assert_int_equal(check("frequency: 9\nduration: 1\n  bad: [\n", &p, &out, &err), 2);
	assert_error(err, p, "3:6", "YAML syntax error: mapping values are not allowed");
	free(out);
	free(err);
	assert_int_equal(check("frequency: 9\npid: [1, 2\n", &p, &out, &err), 2);
	assert_error(err, p, "3:1",
		     "YAML syntax error: did not find expected ',' or ']' "
		     "(while parsing a flow sequence, line 2)");
	free(out);
	free(err);
	assert_int_equal(check("frequency: \"99\n", &p, &out, &err), 2);
	assert_error(err, p, "2:1", "YAML syntax error: found unexpected end of stream");
	free(out);
	free(err);
}

static void test_check_document_shape(void **state)
{
	const char *p;
	char *out, *err;

	assert_int_equal(check("- frequency: 9\n", &p, &out, &err), 2);
	assert_error(err, p, "1:1", "the top level must be a mapping");
	free(out);
	free(err);
	assert_int_equal(check("frequency: 9\n---\nduration: 1\n", &p, &out, &err), 2);
	assert_error(err, p, "3:1", "a second YAML document");
	free(out);
	free(err);
	assert_int_equal(check("? [a, b]\n: 1\n", &p, &out, &err), 2);
	assert_error(err, p, "1:3", "keys are option names, not a list");
	free(out);
	free(err);
	/* Empty files and comments only: nothing set, valid. */
	assert_int_equal(check("", &p, &out, &err), 0);
	assert_non_null(strstr(out, "frequency: 19  # default\n"));
	free(out);
	free(err);
	assert_int_equal(check("# nothing here\n", &p, &out, &err), 0);
	free(out);
	free(err);
}

static void test_check_nesting_depth(void **state)
{
	size_t n = 100000, len = 5 + 2 * n + 2;
	char *yaml = malloc(len), *out, *err;
	const char *p;

	/* Deep nesting is refused quickly (libyaml's scanner is quadratic in the depth). */
	memcpy(yaml, "pid: ", 5);
	memset(yaml + 5, '[', n);
	memset(yaml + 5 + n, ']', n);
	memcpy(yaml + 5 + 2 * n, "\n", 2);
	assert_int_equal(check(yaml, &p, &out, &err), 2);
	assert_error(err, p, "1:21", "nested deeper than 16 levels");
	free(yaml);
	free(out);
	free(err);
}

static void test_check_cross_option_error(void **state)
{
	const char *p;
	char *out, *err, want[300];

	/* The parser's ARGP_KEY_END check runs on the file's values. */
	assert_int_equal(
	    check("no-span-links: true\ncontext-uprobe: /bin/true:main\n", &p, &out, &err), 2);
	snprintf(want, sizeof(want), "%s: --context-uprobe and --no-span-links contradict", p);
	assert_non_null(strstr(err, want));
	free(out);
	free(err);
	/* The checks after the environment: the file, and the line of a key it set. */
	assert_int_equal(check("tls-cert: /c.pem\n", &p, &out, &err), 2);
	assert_error(err, p, "1", "key 'tls-cert': mTLS needs both --tls-cert and --tls-key");
	free(out);
	free(err);
	assert_int_equal(check("frequency: 99\nself-metrics: true\n", &p, &out, &err), 2);
	assert_error(err, p, "2", "key 'self-metrics': --self-metrics sends to the OTLP endpoint");
	snprintf(want, sizeof(want), "spanprof: %s: 1 error\n", p);
	assert_non_null(strstr(err, want));
	assert_string_equal(out, "");
	free(out);
	free(err);
	assert_int_equal(check("endpoint: localhost:4317\nself-metrics: true\nstats-interval: 0\n",
			       &p, &out, &err),
			 2);
	assert_error(err, p, "3",
		     "key 'stats-interval': --self-metrics sends every --stats-interval");
	free(out);
	free(err);
}

static struct config *wrapped_cfg;

/* cli__record_configure() with the signature capture() wants. */
static int record_configure(int argc, char **argv)
{
	static struct record_opts o;
	int rc = cli__record_configure(argc, argv, &o, &wrapped_cfg);

	config__free(wrapped_cfg);
	wrapped_cfg = NULL;
	return rc;
}

/* record_configure() in a child, for flags argp refuses by exiting: 1 if it exited non-zero. */
static int record_configure_child(int argc, char **argv)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (!pid)
		_exit(record_configure(argc, argv) ? 3 : 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) ? 1 : 0;
}

static void test_cross_option_error_with_flags(void **state)
{
	const char *path = write_file("endpoint: https://collector:4317\ntls-cert: /c.pem\n");
	char *argv[] = {"spanprof record", "--config", (char *)path, "--tls-cert", "/a.pem", NULL};
	char *out, *err, want[300];

	/* The file's tls-cert gave way to the flag's: its line is not the culprit. */
	assert_int_equal(capture(record_configure, 5, argv, &out, &err), 2);
	snprintf(want, sizeof(want), "%s: mTLS needs both --tls-cert and --tls-key\n", path);
	assert_non_null(strstr(err, want));
	free(out);
	free(err);
	/* The file's endpoint against the flag --insecure: the endpoint's line. */
	argv[3] = "--insecure";
	argv[4] = NULL;
	assert_int_equal(capture(record_configure, 4, argv, &out, &err), 2);
	snprintf(want, sizeof(want), "%s:1: key 'endpoint': --insecure (or", path);
	assert_non_null(strstr(err, want));
	free(out);
	free(err);
	/* Without a file, no file is named. */
	argv[1] = "--self-metrics";
	argv[2] = NULL;
	assert_int_equal(capture(record_configure, 2, argv, &out, &err), 2);
	assert_string_equal(err, "spanprof: --self-metrics sends to the OTLP endpoint: give "
				 "--endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)\n");
	free(out);
	free(err);
}

static void test_check_nul_and_missing_file(void **state)
{
	char *argv[] = {"config", "check", "/nonexistent/spanprof.yaml", NULL};
	const char *p;
	char *out, *err;

	assert_int_equal(check("output-dir: \"a\\0b\"\n", &p, &out, &err), 2);
	assert_error(err, p, "1:13", "key 'output-dir': the value contains a NUL character");
	free(out);
	free(err);
	assert_int_equal(capture(cli__config_main, 3, argv, &out, &err), 2);
	assert_non_null(
	    strstr(err, "/nonexistent/spanprof.yaml: can't open: No such file or directory"));
	free(out);
	free(err);
	argv[1] = "frobnicate";
	assert_int_equal(capture(cli__config_main, 3, argv, &out, &err), 2);
	assert_non_null(strstr(err, "Usage: spanprof config check FILE"));
	free(out);
	free(err);
}

/* --- lists, booleans, mappings ------------------------------------------------------------ */

/* cli__record_configure() on "spanprof record ARGS..." (a NULL-terminated list). */
static int configure(struct record_opts *o, struct config **cfg, ...)
{
	static char store[16][256];
	char *argv[17] = {"spanprof record"};
	int argc = 1;
	const char *a;
	va_list ap;

	va_start(ap, cfg);
	while ((a = va_arg(ap, const char *))) {
		assert_true(argc < 17);
		snprintf(store[argc - 1], sizeof(store[0]), "%s", a);
		argv[argc] = store[argc - 1];
		argc++;
	}
	va_end(ap);
	return cli__record_configure(argc, argv, o, cfg);
}

static struct record_opts *opts(void)
{
	static struct record_opts o;

	return &o;
}

static const char *header(const struct record_opts *o, const char *key)
{
	for (size_t i = 0; i < o->nheaders; i++)
		if (!strcmp(o->headers[i].key, key))
			return o->headers[i].value;
	return NULL;
}

static void test_lists_booleans_mappings(void **state)
{
	struct record_opts *o = opts();
	struct config *cfg;
	const char *p;

	p = write_file("pid: [11, \"12,13\"]\n"
		       "quiet: on\n"
		       "no-span-links: false\n"
		       "header: {X-A: one, x-b: \"two=2\"}\n"
		       "duration: 1.5\n");
	assert_int_equal(configure(o, &cfg, "--config", p, NULL), 0);
	assert_int_equal(o->npids, 3);
	assert_int_equal(o->pids[0], 11);
	assert_int_equal(o->pids[2], 13);
	assert_int_equal(o->quiet, 1);
	assert_int_equal(o->no_span_links, 0);
	assert_int_equal(o->nheaders, 2);
	assert_string_equal(header(o, "x-a"), "one");
	assert_string_equal(header(o, "x-b"), "two=2");
	assert_true(o->duration_s == 1.5);
	assert_string_equal(o->output_dir, "out");
	assert_int_equal(config__line(cfg, "header"), 4);
	assert_int_equal(config__line(cfg, "frequency"), 0);
	config__free(cfg);

	p = write_file("header: [\"k1=v1\", \"k2=v2\"]\n"
		       "pid: []\n"
		       "quiet: false\n"
		       "no-span-links: YES\n"
		       "context-uprobe: [\"/bin/a:f\", \"/bin/b:g:tls\"]\n");
	assert_int_equal(configure(o, &cfg, "--config", p, NULL), 2); /* contradiction */
	config__free(cfg);
	p = write_file("header: [\"k1=v1\", \"k2=v2\"]\n"
		       "pid: []\n"
		       "quiet: false\n"
		       "context-uprobe: [\"/bin/a:f\", \"/bin/b:g:tls\"]\n");
	assert_int_equal(configure(o, &cfg, "--config", p, NULL), 0);
	assert_int_equal(o->nheaders, 2);
	assert_string_equal(header(o, "k2"), "v2");
	assert_int_equal(o->npids, 0);
	assert_int_equal(o->quiet, 0);
	assert_int_equal(o->nctx_uprobes, 2);
	assert_string_equal(o->ctx_uprobes[1].symbol, "g");
	config__free(cfg);
}

/* --- precedence: flag > environment > file > default ----------------------------------- */

static void test_flag_overrides_file(void **state)
{
	struct record_opts *o = opts();
	struct config *cfg;
	const char *p;

	p = write_file("frequency: 49\npid: [1, 2]\noutput-dir: /from/file\nduration: 7\n");
	assert_int_equal(configure(o, &cfg, "--frequency", "29", "--config", p, "--pid", "3", NULL),
			 0);
	assert_int_equal(o->frequency_hz, 29); /* the flag, though before --config */
	assert_int_equal(o->npids, 1);	       /* a list given as flags replaces the file's */
	assert_int_equal(o->pids[0], 3);
	assert_string_equal(o->output_dir, "/from/file");
	assert_true(o->duration_s == 7);
	config__free(cfg);
}

static void test_env_overrides_file_flag_overrides_env(void **state)
{
	struct record_opts *o = opts();
	struct config *cfg;
	const char *p;

	char yaml[512];

	snprintf(yaml, sizeof(yaml),
		 "endpoint: file.example:4317\n"
		 "compression: none\n"
		 "export-timeout: 3\n"
		 "insecure: true\n"
		 "tls-ca: %s\n"
		 "header: {x-a: file, x-c: file}\n",
		 ca_pem);
	p = write_file(yaml);
	/* The file alone. */
	assert_int_equal(configure(o, &cfg, "--config", p, NULL), 0);
	assert_string_equal(o->endpoint, "file.example:4317");
	assert_int_equal(o->gzip, 0);
	assert_true(o->export_timeout_s == 3);
	assert_int_equal(o->insecure, 1);
	assert_null(o->output_dir); /* an endpoint and no output-dir: no local files */
	config__free(cfg);

	/* The environment replaces what the file set. */
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "env.example:4317", 1);
	setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1500", 1);
	setenv("OTEL_EXPORTER_OTLP_INSECURE", "false", 1);
	setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", env_ca_pem, 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-a=env,x-b=env", 1);
	assert_int_equal(configure(o, &cfg, "--config", p, NULL), 0);
	assert_string_equal(o->endpoint, "env.example:4317");
	assert_int_equal(o->gzip, 1);
	assert_true(o->export_timeout_s == 1.5);
	assert_int_equal(o->insecure, 0);
	assert_string_equal(o->tls_ca, env_ca_pem);
	assert_int_equal(o->nheaders, 3);
	assert_string_equal(header(o, "x-a"), "env"); /* merged by name: env over file */
	assert_string_equal(header(o, "x-b"), "env");
	assert_string_equal(header(o, "x-c"), "file");
	config__free(cfg);

	/* Flags replace both. */
	assert_int_equal(configure(o, &cfg, "--config", p, "--endpoint", "flag.example:4317",
				   "--compression", "none", "--export-timeout", "2", "--insecure",
				   "--tls-ca", ca_pem, "--header", "x-b=flag", NULL),
			 0);
	assert_string_equal(o->endpoint, "flag.example:4317");
	assert_int_equal(o->gzip, 0);
	assert_true(o->export_timeout_s == 2);
	assert_int_equal(o->insecure, 1);
	assert_string_equal(o->tls_ca, ca_pem);
	assert_string_equal(header(o, "x-a"), "env");
	assert_string_equal(header(o, "x-b"), "flag");
	assert_null(header(o, "x-c")); /* --header replaces the file's list */
	config__free(cfg);
}

static void test_spanprof_config_env(void **state)
{
	struct record_opts *o = opts();
	struct config *cfg;
	const char *a, *b;

	a = write_file("frequency: 31\n");
	b = write_file("frequency: 37\n");
	setenv("SPANPROF_CONFIG", a, 1);
	assert_int_equal(configure(o, &cfg, NULL), 0);
	assert_int_equal(o->frequency_hz, 31);
	config__free(cfg);
	assert_int_equal(configure(o, &cfg, "--config", b, NULL), 0);
	assert_int_equal(o->frequency_hz, 37);
	config__free(cfg);
	assert_int_equal(configure(o, &cfg, "--config=", NULL), 0);
	assert_int_equal(o->frequency_hz, 19);
	assert_null(cfg);
	/* Errors in the file stop `record` with 2, before anything is sampled. */
	setenv("SPANPROF_CONFIG", write_file("frequency: 0\n"), 1);
	assert_int_equal(configure(o, &cfg, NULL), 2);
	config__free(cfg);
}

/* --- config.c on its own argp table ------------------------------------------------------- */

struct tin {
	int n, flag, ends;
	char *opt;
	char *items[8];
	int nitems;
};

static error_t tparse(int key, char *arg, struct argp_state *state)
{
	struct tin *t = state->input;

	switch (key) {
	case 'n':
		if (strcmp(arg, "1") && strcmp(arg, "2")) {
			argp_error(state, "--number wants 1 or 2, not '%s'", arg);
			return EINVAL;
		}
		t->n = atoi(arg);
		return 0;
	case 'f':
		t->flag++;
		return 0;
	case 'o':
		t->opt = arg ? arg : "(none)";
		return 0;
	case 'i':
		if (t->nitems >= 8)
			return ENOSPC; /* no message: strerror() stands in (not E2BIG: that is
					  ARGP_ERR_UNKNOWN) */
		t->items[t->nitems++] = arg;
		return 0;
	case 'x':
		return ARGP_ERR_UNKNOWN;
	case ARGP_KEY_END:
		t->ends++;
		if (t->n == 2 && t->flag) {
			argp_error(state, "number 2 and flag don't mix");
			return EINVAL;
		}
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

static const struct argp_option topts[] = {
    {"number", 'n', "N", 0, "A number", 0},
    {"num", 'n', NULL, OPTION_ALIAS, NULL, 0},
    {"flag", 'f', NULL, 0, "A flag", 0},
    {NULL, 0, NULL, 0, "Group:", 1},
    {"optional", 'o', "V", OPTION_ARG_OPTIONAL, "Optional argument", 1},
    {"item", 'i', "K=V", 0, "An item; Repeatable", 1},
    {"unknown-to-parser", 'x', "X", 0, "The parser does not handle it", 1},
    {"skipped", 's', "S", 0, "Given on the command line", 1},
    {0},
};
static const struct argp targp = {.options = topts, .parser = tparse};

static int tfilter(void *ctx, const struct argp_option *opt)
{
	return opt->key == 's' ? CONFIG_SKIP : CONFIG_APPLY;
}

static int apply(struct config *c, struct tin *in, const char *yaml, char **err)
{
	size_t len = 0;
	FILE *ef = open_memstream(err, &len);
	struct config_target t = {.argp = &targp, .input = in, .filter = tfilter, .err = ef};
	int n;

	memset(in, 0, sizeof(*in));
	n = config__apply_string(c, "t.yaml", yaml, strlen(yaml), &t);
	fclose(ef);
	return n;
}

static void test_generic_target(void **state)
{
	struct config *c = config__new();
	const char *raw;
	unsigned line;
	struct tin in;
	char *err;

	assert_int_equal(apply(c, &in,
			       "num: 2\n"
			       "optional:\n"
			       "item: {a: 1, b: 2}\n"
			       "skipped: [whatever, 1]\n", /* no list check for a skipped key? */
			       &err),
			 1);
	/* Skipped keys keep their shape check: 'skipped' is not repeatable. */
	assert_non_null(strstr(err, "t.yaml:4:10: key 'skipped': takes a single value (S)"));
	free(err);
	config__free(c);

	c = config__new();
	assert_int_equal(apply(c, &in,
			       "num: 2\n"
			       "optional:\n"
			       "item: {a: 1, b: 2}\n"
			       "skipped: ignored\n",
			       &err),
			 0);
	assert_string_equal(err, "");
	free(err);
	assert_int_equal(in.n, 2);	       /* through the alias */
	assert_string_equal(in.opt, "(none)"); /* optional argument left out */
	assert_int_equal(in.nitems, 2);
	assert_string_equal(in.items[1], "b=2");
	assert_int_equal(in.ends, 1);
	assert_int_equal(config__nkeys(c), 4);
	assert_string_equal(config__key(c, 2, &raw, &line), "item");
	assert_string_equal(raw, "{a: 1, b: 2}");
	assert_int_equal(line, 3);
	assert_string_equal(config__key(c, 3, &raw, &line), "skipped");
	assert_string_equal(raw, "ignored");
	assert_null(config__key(c, 4, &raw, &line));
	config__free(c);

	c = config__new();
	assert_int_equal(apply(c, &in,
			       "number: 3\n"
			       "flag: 1\n"
			       "unknown-to-parser: a\n"
			       "item: [a, b, c, d, e, f, g, h, i]\n",
			       &err),
			 4);
	assert_non_null(strstr(err, "t.yaml:1:9: key 'number': wants 1 or 2, not '3'\n"));
	assert_non_null(strstr(err, "t.yaml:2:7: key 'flag': wants true or false, not '1'\n"));
	assert_non_null(
	    strstr(err, "t.yaml:3:20: key 'unknown-to-parser': not handled by the option parser"));
	assert_non_null(strstr(err, "t.yaml:4:32: key 'item': No space left on device\n"));
	assert_int_equal(in.ends, 0); /* no cross-option check after errors */
	free(err);
	config__free(c);

	c = config__new();
	assert_int_equal(apply(c, &in, "number: 2\nflag: true\n", &err), 1);
	assert_string_equal(err, "t.yaml: number 2 and flag don't mix\n");
	free(err);
	config__free(c);

	config__free(NULL);
}

/* --- the endpoint, checked once for the flag, the file and the environment --------------- */

static void test_bad_endpoint_everywhere(void **state)
{
	char *argv[] = {"spanprof record", "--endpoint", "localhost:99999", NULL};
	struct config *cfg = NULL;
	const char *p;
	char *out, *err;

	assert_int_equal(
	    check("frequency: 99\nendpoint: \"localhost:4317/v1/profiles\"\n", &p, &out, &err), 2);
	assert_error(err, p, "2:11", "key 'endpoint': ");
	assert_non_null(strstr(err, "path '/v1/profiles' is not allowed"));
	assert_string_equal(out, "");
	free(out);
	free(err);
	assert_int_equal(check("endpoint: localhost\n", &p, &out, &err), 2);
	assert_error(err, p, "1:11", "key 'endpoint': ");
	assert_non_null(strstr(err, "no port"));
	free(out);
	free(err);
	assert_int_equal(check("endpoint: https://collector/\n", &p, &out, &err), 0);
	free(out);
	free(err);
	/* A bad flag is a usage error: argp exits (in a child here). */
	assert_int_equal(capture(record_configure_child, 3, argv, &out, &err), 1);
	assert_non_null(strstr(err, "--endpoint: port '99999' is not from 1 to 65535"));
	free(out);
	free(err);
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x:1", 1);
	assert_int_equal(capture(record_configure, 1, argv, &out, &err), 2);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_ENDPOINT: scheme 'ftp' is not http"));
	free(out);
	free(err);
	setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "localhost:4317\r", 1);
	assert_int_equal(capture(record_configure, 1, argv, &out, &err), 2);
	assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: character 15 is a "
				    "control character"));
	free(out);
	free(err);
	/* A good flag wins over a bad environment, which is then never read. */
	argv[2] = "http://127.0.0.1:4317";
	assert_int_equal(configure(opts(), &cfg, "--endpoint", "http://127.0.0.1:4317", NULL), 0);
	assert_string_equal(opts()->endpoint, "http://127.0.0.1:4317");
	config__free(cfg);
}

/* A FIFO (or anything not a regular file) is refused at once, never read (a FIFO would block). */
static void test_not_regular_file(void **state)
{
	char fifo[300], *argv[] = {"config", "check", fifo, NULL};
	struct config *cfg = NULL;
	char *out, *err;

	snprintf(fifo, sizeof(fifo), "%s/fifo.yaml", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(capture(cli__config_main, 3, argv, &out, &err), 2);
	assert_non_null(strstr(err, "fifo.yaml: not a regular file (a FIFO)"));
	assert_string_equal(out, "");
	free(out);
	free(err);
	argv[2] = tmpdir;
	assert_int_equal(capture(cli__config_main, 3, argv, &out, &err), 2);
	assert_non_null(strstr(err, "not a regular file (a directory)"));
	free(out);
	free(err);
	setenv("SPANPROF_CONFIG", fifo, 1);
	assert_int_equal(configure(opts(), &cfg, NULL), 2);
	config__free(cfg);
	assert_int_equal(unlink(fifo), 0);
}

/* Two --config: refused (files do not merge), also when the first is --config= (no file). */
static void test_config_twice(void **state)
{
	const char *a = write_file("frequency: 31\n"), *b = write_file("frequency: 37\n");
	char *argv[] = {"spanprof record", "--config", (char *)a, "--config", (char *)b, NULL};
	char *out, *err;

	assert_int_equal(capture(record_configure_child, 5, argv, &out, &err), 1);
	assert_non_null(strstr(err, "--config was given twice"));
	free(out);
	free(err);
	argv[1] = "--config=";
	argv[2] = "--config";
	argv[3] = (char *)b;
	argv[4] = NULL;
	assert_int_equal(capture(record_configure_child, 4, argv, &out, &err), 1);
	assert_non_null(strstr(err, "--config was given twice"));
	free(out);
	free(err);
	/* One is fine. */
	assert_int_equal(capture(record_configure_child, 2, argv, &out, &err), 0);
	free(out);
	free(err);
}

/* config check refuses the TLS files and the output directory that record would refuse. */
static void test_check_files_record_reads(void **state)
{
	char fifo[300], yaml[1200];
	const char *p;
	char *out, *err;

	snprintf(yaml, sizeof(yaml), "endpoint: https://c.example\ntls-ca: %s/missing.pem\n",
		 tmpdir);
	assert_int_equal(check(yaml, &p, &out, &err), 2);
	assert_error(err, p, "2", "key 'tls-ca': --tls-ca: cannot read ");
	assert_non_null(strstr(err, "missing.pem: No such file or directory"));
	free(out);
	free(err);
	assert_int_equal(check("tls-ca: /etc/hostname\n", &p, &out, &err), 2);
	assert_error(err, p, "1", "key 'tls-ca': --tls-ca: /etc/hostname holds no PEM certificate");
	free(out);
	free(err);
	snprintf(fifo, sizeof(fifo), "%s/fifo.pem", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(yaml, sizeof(yaml), "tls-cert: %s\ntls-key: %s\n", ca_pem, fifo);
	assert_int_equal(check(yaml, &p, &out, &err), 2);
	assert_error(err, p, "2", "key 'tls-key': --tls-key: ");
	assert_non_null(strstr(err, "fifo.pem is not a regular file"));
	free(out);
	free(err);
	assert_int_equal(unlink(fifo), 0);
	/* A certificate is no key, a key no certificate. */
	snprintf(yaml, sizeof(yaml), "tls-cert: %s\ntls-key: %s\n", key_pem, key_pem);
	assert_int_equal(check(yaml, &p, &out, &err), 2);
	assert_error(err, p, "1", "key 'tls-cert': --tls-cert: ");
	free(out);
	free(err);
	snprintf(yaml, sizeof(yaml),
		 "endpoint: https://c.example\ntls-ca: %s\ntls-cert: %s\ntls-key: %s\n", ca_pem,
		 ca_pem, key_pem);
	assert_int_equal(check(yaml, &p, &out, &err), 0);
	assert_string_equal(err, "");
	free(out);
	free(err);
	assert_int_equal(check("output-dir: /etc/passwd\n", &p, &out, &err), 2);
	assert_error(err, p, "1", "key 'output-dir': --output-dir /etc/passwd exists and is not");
	free(out);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_check_ok_prints_settings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_every_error_with_line, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_list_item_shape, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_yaml_syntax_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_document_shape, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_nesting_depth, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_cross_option_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_nul_and_missing_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lists_booleans_mappings, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flag_overrides_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_env_overrides_file_flag_overrides_env, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_spanprof_config_env, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_generic_target, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cross_option_error_with_flags, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_endpoint_everywhere, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_regular_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_config_twice, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_check_files_record_reads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
