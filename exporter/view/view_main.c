// SPDX-License-Identifier: Apache-2.0
/*
 * view: the document of `spanprof view` (docs/view-format.md): the merged tables, the time
 * buckets and the aggregated rows, its JSON writer, and the command that writes the page or
 * serves it on loopback.
 *
 * Every table is an array plus an open-addressing index of (hash, element index + 1), so the
 * arrays can grow by realloc. Samples with a timestamp are kept as events (series, time,
 * value) until the last input is read: only then is the time range, hence the bucket width,
 * known. view_doc__finish() then groups the events by series (a counting sort) and sums each
 * series' buckets into rows.
 */
#include <argp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "view/doc.h"
#include "view/read.h"
#include "view/view.h"

/* --- the command -------------------------------------------------------------------------- */

struct view_opts {
	char **inputs;
	int ninputs;
	const char *output;
	const char *serve;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char span_id[17], trace_id[33];
};

enum {
	OPT_SERVE = 0x200,
	OPT_SPAN_ID,
	OPT_TRACE_ID,
};

static const struct argp_option view_options[] = {
    {"output", 'o', "FILE.html", 0,
     "Write the page here (default: profile.html next to the first INPUT, or inside it when "
     "it is a directory); without --serve the page is always written",
     0},
    {"serve", OPT_SERVE, "127.0.0.1:PORT", 0,
     "Serve the page at http://127.0.0.1:PORT/ until SIGINT or SIGTERM instead of writing it "
     "(with --output as well: both). Loopback only (127.0.0.0/8, [::1], localhost); PORT 0 "
     "picks a free port",
     0},
    {"span-id", OPT_SPAN_ID, "HEX", 0,
     "Open the page on this span (16 hex digits; also #span=ID in the page's URL)", 0},
    {"trace-id", OPT_TRACE_ID, "HEX", 0,
     "Open the page on the spans of this trace (32 hex digits; also #trace=ID)", 0},
    {0},
};

/* @arg: @ndigits hex digits -> lower case in @out. */
static bool parse_hex_id(const char *arg, size_t ndigits, char *out)
{
	if (strlen(arg) != ndigits)
		return false;
	for (size_t i = 0; i < ndigits; i++) {
		char c = arg[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		out[i] = c;
	}
	out[ndigits] = '\0';
	return true;
}

/*
 * HOST:PORT with HOST a loopback address (127.0.0.0/8, ::1 in brackets) or "localhost".
 * 0, -EINVAL (not HOST:PORT) or -EPERM (not loopback).
 */
static int parse_serve(const char *arg, struct view_opts *o)
{
	char host[256];
	const char *colon = strrchr(arg, ':'), *hs = arg;
	size_t hl;
	unsigned long port;
	char *end;

	if (!colon || colon == arg || !colon[1])
		return -EINVAL;
	hl = (size_t)(colon - arg);
	if (arg[0] == '[') {
		if (hl < 2 || arg[hl - 1] != ']')
			return -EINVAL;
		hs = arg + 1;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, hs, hl);
	host[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || port > 65535)
		return -EINVAL;
	memset(&o->addr, 0, sizeof(o->addr));
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (arg[0] != '[') {
		struct sockaddr_in *in = (struct sockaddr_in *)&o->addr;

		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return strchr(host, ':') ? -EINVAL : -EPERM;
		if ((ntohl(in->sin_addr.s_addr) >> 24) != 127)
			return -EPERM;
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		o->addrlen = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&o->addr;

		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			return -EINVAL;
		if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return -EPERM;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		o->addrlen = sizeof(*in6);
	}
	return 0;
}

static error_t view_parse(int key, char *arg, struct argp_state *state)
{
	struct view_opts *o = state->input;
	int err;

	switch (key) {
	case 'o':
		if (!*arg)
			argp_error(state, "--output wants a file name");
		o->output = arg;
		break;
	case OPT_SERVE:
		err = parse_serve(arg, o);
		if (err == -EPERM)
			argp_error(
			    state,
			    "--serve listens on loopback only (127.0.0.1, [::1], localhost), "
			    "not '%s': the page holds function names and span attributes. "
			    "To look from another machine, tunnel: ssh -L 8080:127.0.0.1:8080",
			    arg);
		if (err)
			argp_error(state, "--serve wants 127.0.0.1:PORT or [::1]:PORT, not '%s'",
				   arg);
		o->serve = arg;
		break;
	case OPT_SPAN_ID:
		if (!parse_hex_id(arg, 16, o->span_id))
			argp_error(state,
				   "--span-id wants 16 hex digits (an 8-byte span id), not '%s'",
				   arg);
		break;
	case OPT_TRACE_ID:
		if (!parse_hex_id(arg, 32, o->trace_id))
			argp_error(state,
				   "--trace-id wants 32 hex digits (a 16-byte trace id), not '%s'",
				   arg);
		break;
	case ARGP_KEY_ARG:
		o->inputs[o->ninputs++] = arg;
		break;
	case ARGP_KEY_NO_ARGS:
		argp_error(state, "no INPUT: give profile files or directories (e.g. 'out')");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp view_argp = {
    .options = view_options,
    .parser = view_parse,
    .args_doc = "INPUT...",
    .doc = "Merge profiles into one self-contained HTML page: a flame graph with filters by "
	   "profile type, service, process, thread, time and span, and search. The page works "
	   "offline (file://, no network).\v"
	   "INPUT is a file or a directory (every *.binpb, *.pb.gz, *.json and *.jsonl "
	   "in it). Formats are recognized by their content, gzipped or not:\n"
	   "  pprof            profile.pb.gz (and alloc, lock, offcpu.pb.gz) of 'spanprof record', "
	   "Go pprof\n"
	   "  OTLP protobuf    profiles-NNNNNN.binpb of 'spanprof record --endpoint'\n"
	   "                   (ExportProfilesServiceRequest); the Collector file\n"
	   "                   exporter's 'format: proto' (length-prefixed)\n"
	   "  OTLP/JSON        the Collector file exporter's default output (one\n"
	   "                   ProfilesData per line)\n"
	   "A damaged input is reported and noted in the page; the rest still loads.\n"
	   "Exit status: 0 page written or served, 1 nothing could be read, 2 usage.\n"
	   "\n"
	   "Examples:\n"
	   "  spanprof view out                        # writes out/profile.html\n"
	   "  spanprof view profiles.jsonl --span-id 00f067aa0ba902b7\n"
	   "  spanprof view out --serve 127.0.0.1:8080 # open http://127.0.0.1:8080/",
};

/* Where the page goes when --output is not given: next to (or inside) the first input. */
static char *default_output(const char *first)
{
	struct stat st;
	char *copy, *dir, *out = NULL;

	if (!stat(first, &st) && S_ISDIR(st.st_mode)) {
		if (asprintf(&out, "%s%sprofile.html", first,
			     first[strlen(first) - 1] == '/' ? "" : "/") < 0)
			return NULL;
		return out;
	}
	copy = strdup(first);
	if (!copy)
		return NULL;
	dir = dirname(copy);
	if (asprintf(&out, "%s/profile.html", dir) < 0)
		out = NULL;
	free(copy);
	return out;
}

/* Writes @page to @path through @path.tmp. 0 or -errno. */
static int write_page(const char *path, const char *page, size_t len)
{
	char *tmp = NULL;
	size_t off = 0;
	int fd = -1, err = 0;

	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	while (off < len) {
		ssize_t w = write(fd, page + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err = -errno;
			goto cleanup;
		}
		off += (size_t)w;
	}
	if (close(fd)) {
		fd = -1;
		err = -errno;
		goto cleanup;
	}
	fd = -1;
	if (rename(tmp, path))
		err = -errno;
cleanup:
	if (fd >= 0)
		close(fd);
	if (err && tmp)
		unlink(tmp);
	free(tmp);
	return err;
}

/* --- serving ------------------------------------------------------------------------------ */

struct server {
	struct MHD_Response *page, *not_found, *forbidden, *bad_method;
};

/* Host header of a request to a loopback server: a loopback name, so that a web page whose
 * domain was re-pointed at 127.0.0.1 (DNS rebinding) cannot read the profile. */
static bool host_ok(const char *host)
{
	char name[256];
	const char *end;
	size_t n;
	struct in_addr a;

	if (!host)
		return true; /* HTTP/1.0 */
	if (host[0] == '[') {
		end = strchr(host, ']');
		return end && (size_t)(end - host) == 4 && !strncmp(host, "[::1]", 5);
	}
	end = strchr(host, ':');
	n = end ? (size_t)(end - host) : strlen(host);
	if (n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (!strcasecmp(name, "localhost"))
		return true;
	return inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

static enum MHD_Result serve_request(void *cls, struct MHD_Connection *c, const char *url,
				     const char *method, const char *version,
				     const char *upload_data, size_t *upload_data_size,
				     void **con_cls)
{
	struct server *s = cls;
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, s->bad_method);
	if (!host_ok(host))
		return MHD_queue_response(c, MHD_HTTP_FORBIDDEN, s->forbidden);
	if (strcmp(url, "/") && strcmp(url, "/index.html") && strcmp(url, "/profile.html"))
		return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, s->not_found);
	return MHD_queue_response(c, MHD_HTTP_OK, s->page);
}

static struct MHD_Response *text_response(const char *text)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);

	if (r)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					"text/plain; charset=utf-8");
	return r;
}

static int serve(const struct view_opts *o, const char *page, size_t len)
{
	struct server s = {0};
	struct MHD_Daemon *daemon = NULL;
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	char host[INET6_ADDRSTRLEN];
	sigset_t set;
	int fd = -1, one = 1, sig, err = 0, port;
	bool v6 = o->addr.ss_family == AF_INET6;

	fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "spanprof: view: socket: %s\n", strerror(errno));
		goto cleanup;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&o->addr, o->addrlen) || listen(fd, 64)) {
		err = -errno;
		fprintf(stderr, "spanprof: view: cannot listen on %s: %s\n", o->serve,
			strerror(errno));
		goto cleanup;
	}
	getsockname(fd, (struct sockaddr *)&bound, &blen);
	if (v6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&bound)->sin6_addr, host,
			  sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&bound)->sin_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	}

	s.page = MHD_create_response_from_buffer(len, (void *)page, MHD_RESPMEM_PERSISTENT);
	s.not_found = text_response("not found: the page is at /\n");
	s.forbidden = text_response("forbidden: this server answers to loopback host names only\n");
	s.bad_method = text_response("only GET and HEAD\n");
	if (!s.page || !s.not_found || !s.forbidden || !s.bad_method) {
		err = -ENOMEM;
		goto cleanup;
	}
	MHD_add_response_header(s.page, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
	MHD_add_response_header(s.page, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(s.page, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(s.page, "Referrer-Policy", "no-referrer");

	/* The server's thread inherits the mask: only this thread takes SIGINT and SIGTERM. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
				      (v6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, serve_request, &s, MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
	if (!daemon) {
		err = -EIO;
		fprintf(stderr, "spanprof: view: the HTTP server (libmicrohttpd) did not start\n");
		goto cleanup;
	}
	fd = -1; /* the daemon closes it */
	printf(v6 ? "http://[%s]:%d/\n" : "http://%s:%d/\n", host, port);
	fflush(stdout);
	fprintf(stderr, "spanprof: view: serving the page; Ctrl-C to stop\n");
	sigwait(&set, &sig);

cleanup:
	if (daemon)
		MHD_stop_daemon(daemon);
	if (fd >= 0)
		close(fd);
	if (s.page)
		MHD_destroy_response(s.page);
	if (s.not_found)
		MHD_destroy_response(s.not_found);
	if (s.forbidden)
		MHD_destroy_response(s.forbidden);
	if (s.bad_method)
		MHD_destroy_response(s.bad_method);
	return err;
}

static void size_text(char *out, size_t n, size_t bytes)
{
	if (bytes < 10 * 1024)
		snprintf(out, n, "%zu bytes", bytes);
	else if (bytes < 10 * 1024 * 1024)
		snprintf(out, n, "%zu KiB", bytes / 1024);
	else
		snprintf(out, n, "%.1f MiB", bytes / 1048576.0);
}

int view__main(int argc, char **argv)
{
	struct view_opts o = {0};
	struct view_doc *d = NULL;
	char *page = NULL, *out_path = NULL, sz[32];
	size_t page_len = 0;
	uint32_t nfailed = 0;
	int loaded = 0, status = 1, err;

	o.inputs = calloc((size_t)argc + 1, sizeof(*o.inputs));
	if (!o.inputs) {
		fprintf(stderr, "spanprof: view: out of memory\n");
		return 1;
	}
	argv[0] = "spanprof view";
	if (argp_parse(&view_argp, argc, argv, 0, NULL, &o)) {
		status = 2;
		goto cleanup;
	}
	d = view_doc__new();
	if (!d)
		goto oom;
	for (int i = 0; i < o.ninputs; i++) {
		err = view_read__path(d, o.inputs[i]);
		if (err < 0)
			goto oom;
		loaded += err;
	}
	for (uint32_t i = 0; i < view_doc__ninputs(d); i++) {
		const struct view_input *in = view_doc__input(d, i);

		if (!in->error)
			continue;
		nfailed++;
		if (in->samples)
			fprintf(stderr,
				"spanprof: view: %s: %s (the %llu samples before it are kept)\n",
				in->path, in->error, (unsigned long long)in->samples);
		else
			fprintf(stderr, "spanprof: view: %s: %s\n", in->path, in->error);
	}
	if (!loaded) {
		fprintf(stderr, "spanprof: view: nothing could be read from the inputs: no page\n");
		status = 1;
		goto cleanup;
	}
	if (view_doc__set_initial(d, o.span_id[0] ? o.span_id : NULL,
				  o.trace_id[0] ? o.trace_id : NULL) ||
	    view_doc__finish(d))
		goto oom;
	/* A traces file names the spans of the samples; one that names none is worth a note. */
	for (uint32_t i = 0; i < view_doc__ninputs(d); i++) {
		const struct view_input *in = view_doc__input(d, i);

		if (in->spans && !in->spans_matched)
			fprintf(
			    stderr,
			    "spanprof: view: %s: note: none of its %llu spans has samples in the "
			    "profiles read\n",
			    in->path, (unsigned long long)in->spans);
	}
	err = view__page(d, spanprof_view_page,
			 (size_t)(spanprof_view_page_end - spanprof_view_page), &page, &page_len);
	if (err == -EINVAL) {
		fprintf(stderr,
			"spanprof: view: the embedded page template has no %s placeholder "
			"(a build problem: rebuild spanprof)\n",
			VIEW_PAGE_TOKEN);
		goto cleanup;
	}
	if (err)
		goto oom;
	size_text(sz, sizeof(sz), page_len);
	fprintf(stderr,
		"spanprof: view: %llu samples from %u input%s (%u with errors), %u service%s, "
		"%u rows; page %s\n",
		(unsigned long long)view_doc__nsamples(d), view_doc__ninputs(d),
		view_doc__ninputs(d) == 1 ? "" : "s", nfailed, view_doc__nservices(d),
		view_doc__nservices(d) == 1 ? "" : "s", view_doc__nrows(d), sz);
	if (o.output || !o.serve) {
		out_path = o.output ? strdup(o.output) : default_output(o.inputs[0]);
		if (!out_path)
			goto oom;
		err = write_page(out_path, page, page_len);
		if (err) {
			fprintf(stderr, "spanprof: view: cannot write %s: %s\n", out_path,
				strerror(-err));
			goto cleanup;
		}
		printf("%s\n", out_path);
		fflush(stdout);
	}
	if (o.serve && serve(&o, page, page_len))
		goto cleanup;
	status = 0;
	goto cleanup;
oom:
	fprintf(stderr, "spanprof: view: out of memory\n");
	status = 1;
cleanup:
	view_doc__free(d);
	free(page);
	free(out_path);
	free(o.inputs);
	return status;
}
