/* SPDX-License-Identifier: Apache-2.0 */
/* spanprof: command-line entry point. Subcommands parse their own options with argp. */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "profile/profile.h"
#include "cli/cli.h"
#include "cli/config.h"
#include "cli/record_env.h"
#include "otlp/endpoint.h"
#include "otlp/grpc_client.h"
#include "otlp/otlp_encode.h"
#include "record/record.h"
#include "cli/record_config.h"
#include "sampler.h"
#include "telemetry/selfstats.h"
#include "util/regfile.h"
#include "sampling/targets.h"
#include "view/view.h"

const char *argp_program_version = "spanprof " SPANPROF_VERSION;
const char *argp_program_bug_address = "the project's issue tracker";

static const char usage_text[] =
    "Usage: spanprof COMMAND [OPTION...]\n"
    "\n"
    "spanprof samples what every CPU runs with eBPF (kernel and user stacks),\n"
    "names the frames on the host and writes the profile.\n"
    "\n"
    "Commands:\n"
    "  record    sample CPUs and write a symbolized profile (pprof, folded stacks,\n"
    "            flame graph), or send it as OTLP profiles to a Collector\n"
    "  view      merge profiles (pprof, OTLP files) into one HTML page: flame\n"
    "            graph filtered by service, thread, time and span\n"
    "  config check FILE\n"
    "            check a YAML configuration file for 'spanprof record --config FILE'\n"
    "            (docs/configuration.md): names each bad key and its line\n"
    "\n"
    "Run 'spanprof COMMAND --help' for the options of a command.\n"
    "  -h, --help       this text\n"
    "  -V, --version    print the version\n";

enum {
	OPT_QUIET = 'q',
	OPT_VERBOSE = 'v',
	OPT_STATS_JSON = 0x80,
	OPT_RINGBUF = 0x81,
	OPT_ENDPOINT = 0x100,
	OPT_INTERVAL,
	OPT_TIMEOUT,
	OPT_HEADER,
	OPT_INSECURE,
	OPT_TLS_CA,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_COMPRESSION,
	OPT_MAX_REQUEST,
	OPT_QUEUE,
	OPT_SAMPLE_ATTRS,
	OPT_FLUSH,
	OPT_SYMCACHE,
	OPT_SYMCACHE_MAX,
	OPT_SLOW_FILE_TIMEOUT,
	OPT_DEBUGINFOD,
	OPT_DEBUGINFOD_CACHE,
	OPT_UNWIND_MAX,
	OPT_NO_SPAN_LINKS,
	OPT_CTX_UPROBE,
	OPT_PROFILE,
	OPT_ALLOC_SAMPLE,
	OPT_ALLOC_MIN,
	OPT_LOCK_MIN,
	OPT_OFFCPU_MIN,
	OPT_CONFIG,
	OPT_STATS_INTERVAL,
	OPT_SELF_METRICS,
	OPT_LOG_LEVEL,
	OPT_EXE,
	OPT_CGROUP,
	OPT_CONTAINER_ID,
	OPT_K8S_POD,
	OPT_K8S,
	OPT_JAVA_PERFMAP,
	OPT_NO_PYTHON,
	OPT_NO_PYTHON_CODE_CACHE,
	OPT_PYTHON_CODE_CACHE_AFTER,
	OPT_NO_V8,
	OPT_NO_JVM,
	OPT_SHORT_NAMES,
};

static const struct argp_option record_options[] = {
    {"frequency", 'F', "HZ", 0, "Samples per second on each CPU (default 19, max 10000)", 0},
    {"duration", 'd', "SECONDS", 0,
     "Stop after this long (fractions allowed); default: run until SIGINT or SIGTERM", 0},
    {"profile", OPT_PROFILE, "TYPE[,TYPE...]", 0,
     "What to profile: cpu (on-CPU samples, the default), alloc (heap allocations by bytes, "
     "uprobes on malloc & co.), lock (mutex and rwlock contention), offcpu (time blocked off "
     "CPU). Each type is a profile of its own in the outputs and in each OTLP request; a type "
     "may be listed once",
     0},
    {"alloc-sample-bytes", OPT_ALLOC_SAMPLE, "BYTES", 0,
     "alloc: one sample every BYTES allocated on average, randomized; values are scaled to "
     "unbiased estimates (default 524288; 0: every allocation)",
     0},
    {"alloc-min-bytes", OPT_ALLOC_MIN, "BYTES", 0,
     "alloc: ignore allocations smaller than this (default 0)", 0},
    {"lock-min-wait", OPT_LOCK_MIN, "TIME", 0,
     "lock: report lock waits from this long on (default 10us; units ns, us, ms, s)", 0},
    {"offcpu-min", OPT_OFFCPU_MIN, "TIME", 0,
     "offcpu: report blocked periods from this long on (default 1ms; units ns, us, ms, s)", 0},
    {"pid", 'p', "PID[,PID...]", 0,
     "Sample only these processes (and all their threads); repeatable. A thread id "
     "selects its whole process. Default: every process. Without other targeting options "
     "the run ends (and writes its outputs) once all of them have exited",
     0},
    {"output-dir", 'o', "DIR", 0,
     "Write profile.pb.gz, profile.folded and flamegraph.svg here (default: out). With an "
     "endpoint: write each OTLP request sent as DIR/profiles-NNNNNN.binpb instead",
     0},
    {"quiet", OPT_QUIET, NULL, 0, "No progress line", 0},
    {"verbose", OPT_VERBOSE, NULL, 0,
     "Print the start-up timeline (each step's time since launch, each BPF program's verified "
     "instructions) and end the run with the full accounting (every counter, one line per "
     "stage) instead of the short report (what was sampled, where it went, the problems to act "
     "on)",
     0},
    {"stats-json", OPT_STATS_JSON, "FILE", 0,
     "At the end of the run, write every counter of the full accounting to FILE as JSON "
     "(written whole or not at all; schema: docs/stats-json.md)",
     0},
    {"ring-buffer-mb", OPT_RINGBUF, "MIB", 0,
     "Size of the BPF ring buffer that carries the samples to the agent (a power of two; "
     "default: one second of samples on every CPU, 2 to 64 MiB). Raise it when the summary says "
     "samples were lost to a full ring buffer",
     0},
    {"config", OPT_CONFIG, "FILE", 0,
     "Read options from this YAML file; its keys are the long options (docs/configuration.md). "
     "A flag wins over the environment, the environment over the file. Default: "
     "$SPANPROF_CONFIG; --config= reads none. One file only (files do not merge). Check a file "
     "with 'spanprof config check FILE'",
     0},
    {"symbol-cache-mb", OPT_SYMCACHE, "MIB", 0,
     "Memory for symbol tables and DWARF of profiled binaries; least recently used files are "
     "unloaded beyond it (default 12). Files unused for 30 s are closed",
     0},
    {"symbol-cache-max-mb", OPT_SYMCACHE_MAX, "MIB", 0,
     "When files unloaded for room are needed again and again, --symbol-cache-mb grows by half "
     "at a time up to this (default 32; at most --symbol-cache-mb: fixed)",
     0},
    {"slow-file-timeout", OPT_SLOW_FILE_TIMEOUT, "SECONDS", 0,
     "A file of a profiled program on FUSE or a network file system is read by a helper "
     "process: one that has not read it within this long is given up, and that file system's "
     "files are left alone for 60 s (default 2)",
     0},
    {"debuginfod", OPT_DEBUGINFOD, "URLS", 0,
     "Fetch, in the background, the debug files of binaries that have none on this host from "
     "these debuginfod servers (space-separated URLs; default: $DEBUGINFOD_URLS; an empty value "
     "turns it off). Files go to the debuginfod client cache ($DEBUGINFOD_CACHE_PATH, else "
     "~/.cache/debuginfod_client); frames are named once their file arrives",
     0},
    {"debuginfod-cache-mb", OPT_DEBUGINFOD_CACHE, "MIB", 0,
     "Keep the debuginfod client cache under this size, least recently used files removed "
     "first (default 1024; 0: only the library's own cleaning of files unused for a week)",
     0},
    {"unwind-max-mb", OPT_UNWIND_MAX, "MIB", 0,
     "Memory for the CFI unwind tables of user code built without frame pointers (default "
     "256; 0: frame pointers only). Files that do not fit are walked with frame pointers",
     0},
    {NULL, 0, NULL, 0, "Span links (OTEP 4947 thread context, docs/span-links.md):", 2},
    {"no-span-links", OPT_NO_SPAN_LINKS, NULL, 0,
     "Don't read the otel_thread_ctx_v1 thread context of profiled processes (default: "
     "samples taken inside a span carry its trace and span id)",
     2},
    {"context-uprobe", OPT_CTX_UPROBE, "BINARY:SYMBOL[:MODE]", 0,
     "Capture the thread context with a uprobe on the program's context-switch function. "
     "MODE: argN (default arg1: the record pointer is argument N at entry; a NULL pointer "
     "ends the context), tls (read otel_thread_ctx_v1, also from .symtab, when the function "
     "returns), with ',scoped' the context ends when the function returns. Repeatable",
     2},
    {NULL, 0, NULL, 0,
     "Targeting (default: every process of the host). With several targeting options, "
     "--pid included, a process is sampled when it matches any of them; the others are "
     "dropped in BPF. Paths are read under $SPANPROF_HOST_ROOT when it is set (e.g. /host "
     "in a DaemonSet); names are resolved again every 2 s:",
     3},
    {"exe", OPT_EXE, "PATH", 0,
     "Sample only processes running this executable file (matched by device and inode, so "
     "symlinks and hard links match; a binary replaced later is matched too). It must exist "
     "and be a regular, executable file. Repeatable",
     3},
    {"cgroup", OPT_CGROUP, "PATH", 0,
     "Sample only processes in this cgroup v2 directory or below it, e.g. "
     "/sys/fs/cgroup/system.slice/nginx.service (absolute, or relative to the cgroup v2 "
     "mount). Repeatable",
     3},
    {"container-id", OPT_CONTAINER_ID, "ID", 0,
     "Sample only this container (docker, containerd, cri-o, podman): its full id or a "
     "prefix of at least 12 hex digits naming one container. Repeatable",
     3},
    {"k8s-pod", OPT_K8S_POD, "UID|NAMESPACE/NAME", 0,
     "Sample only this Kubernetes pod (all its containers), by uid or by name (found in the "
     "kubelet's /var/log/pods). Repeatable",
     3},
    {"k8s", OPT_K8S, NULL, 0,
     "Add Kubernetes resource attributes: k8s.pod.uid (from the cgroup path), k8s.pod.name, "
     "k8s.namespace.name, k8s.container.name (from the kubelet's /var/log/pods and "
     "/var/log/containers) and k8s.node.name (from K8S_NODE_NAME or NODE_NAME)",
     3},
    {"java-perfmap", OPT_JAVA_PERFMAP, NULL, 0,
     "Ask each HotSpot JVM sampled in JIT code to write its perf map (as 'jcmd PID "
     "Compiler.perfmap' does, through the JVM's attach socket; SIGQUIT starts its listener) "
     "every 10 s, so its compiled Java frames are named (docs/jit.md)",
     3},
    {"no-python", OPT_NO_PYTHON, NULL, 0,
     "Don't walk the Python frames of CPython processes (default: CPython 3.8 and later show "
     "their Python functions, files and lines in place of the interpreter loop's native "
     "frames, docs/python.md)",
     3},
    {"no-python-code-cache", OPT_NO_PYTHON_CODE_CACHE, NULL, 0,
     "Read every Python frame's code object at every sample instead of keeping what earlier "
     "samples proved (which needs a uprobe on each CPython process's code-object "
     "deallocation, hit once per code object freed; docs/python.md)",
     3},
    {"python-code-cache-after", OPT_PYTHON_CODE_CACHE_AFTER, "SECONDS", 0,
     "Give a CPython process the code-object cache (and its uprobe) once it has been known this "
     "long (default 10: short-lived interpreters, which free thousands of code objects as they "
     "exit, never pay for the uprobe; 0: at once)",
     3},
    {"no-v8", OPT_NO_V8, NULL, 0,
     "Don't read the JavaScript frames of node processes from V8's own structures (default: "
     "node's JavaScript functions are named without any flag, docs/node.md; JIT frames are "
     "then named only from a perf map or jitdump)",
     3},
    {"no-jvm", OPT_NO_JVM, NULL, 0,
     "Don't walk and name the Java frames of JVMs from HotSpot's own structures (default: "
     "Java methods are named without any flag, docs/java.md; JIT frames are then named only "
     "from a perf map, --java-perfmap)",
     3},
    {"short-names", OPT_SHORT_NAMES, NULL, 0,
     "Show C++ and Rust functions without parameter lists and template arguments "
     "(app::sort_words::{lambda#1}::operator()); the full name stays the frame's system name "
     "(pprof, OTLP)",
     3},
    {NULL, 0, NULL, 0, "OTLP export (OpenTelemetry Collector, gRPC):", 1},
    {"endpoint", OPT_ENDPOINT, "HOST:PORT", 0,
     "Send OTLP profiles to this gRPC endpoint: host:port, [v6]:port, http://host[:port] or "
     "https://host[:port] (port 1-65535, default 4317 with a scheme; no path). Plaintext for "
     "loopback and http://, TLS otherwise. Env: OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, "
     "OTEL_EXPORTER_OTLP_ENDPOINT",
     1},
    {"export-interval", OPT_INTERVAL, "SECONDS", 0, "Send a request this often (default 5)", 1},
    {"export-timeout", OPT_TIMEOUT, "SECONDS", 0,
     "Deadline of one Export call (default 10; env OTEL_EXPORTER_OTLP_TIMEOUT in ms)", 1},
    {"header", OPT_HEADER, "KEY=VALUE", 0,
     "Add a gRPC metadata header; repeatable (env OTEL_EXPORTER_OTLP_HEADERS)", 1},
    {"insecure", OPT_INSECURE, NULL, 0,
     "Plaintext even for a non-loopback endpoint (env OTEL_EXPORTER_OTLP_INSECURE=true)", 1},
    {"tls-ca", OPT_TLS_CA, "FILE", 0,
     "PEM CA bundle to verify the Collector (default: system roots; env "
     "OTEL_EXPORTER_OTLP_CERTIFICATE)",
     1},
    {"tls-cert", OPT_TLS_CERT, "FILE", 0,
     "PEM client certificate for mTLS (env OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE)", 1},
    {"tls-key", OPT_TLS_KEY, "FILE", 0,
     "PEM client key for mTLS (env OTEL_EXPORTER_OTLP_CLIENT_KEY)", 1},
    {"compression", OPT_COMPRESSION, "gzip|none", 0,
     "Compress requests (default gzip; env OTEL_EXPORTER_OTLP_COMPRESSION)", 1},
    {"max-request-bytes", OPT_MAX_REQUEST, "BYTES", 0,
     "Split requests larger than this (default 4194304, the Collector's default limit)", 1},
    {"sample-attributes", OPT_SAMPLE_ATTRS, "LIST", 0,
     "Per-sample attributes sent over OTLP, comma-separated: thread.name, thread.id, "
     "cpu.logical_number, or all, or none (default thread.name: a backend that makes each "
     "sample attribute a series label, like Pyroscope, gets no series per thread id or CPU)",
     1},
    {"queue-bytes", OPT_QUEUE, "BYTES", 0,
     "Hold at most this much while the Collector is unreachable; the oldest requests are "
     "dropped first (default 67108864)",
     1},
    {"flush-timeout", OPT_FLUSH, "SECONDS", 0,
     "On SIGINT/SIGTERM/SIGHUP, wait at most this long in all (profiles and self-metrics) for "
     "queued requests to be sent (default 10)",
     1},
    {NULL, 0, NULL, 0, "Self-telemetry (docs/self-telemetry.md):", 4},
    {"stats-interval", OPT_STATS_INTERVAL, "SECONDS", 0,
     "Log the agent's own counters (samples, drops, unwinding, symbolization, BPF map fill, "
     "export results, CPU, RSS) as 'spanprof: info: stats ...' lines this often (default 60; "
     "0: never)",
     4},
    {"self-metrics", OPT_SELF_METRICS, NULL, 0,
     "Also send those counters as OTLP metrics (spanprof.*) to the --endpoint, every "
     "--stats-interval, with the same TLS and headers. Resource: OTEL_SERVICE_NAME, "
     "OTEL_RESOURCE_ATTRIBUTES",
     4},
    {"log-level", OPT_LOG_LEVEL, "LEVEL", 0,
     "error, warn, info or debug (default info); below info the stats lines are not logged", 4},
    {0},
};

/*
 * BINARY:SYMBOL[:MODE[,scoped]] -> binary, symbol, SP_CTXP_* mode. The binary path may not
 * contain ':' (uprobe paths never need it). Modifies @arg. 0 or -EINVAL.
 */
static int parse_ctx_uprobe(char *arg, struct record_ctx_uprobe *u)
{
	char *sym = strchr(arg, ':'), *mode, *scoped;

	if (!sym || sym == arg || !sym[1])
		return -EINVAL;
	*sym++ = '\0';
	u->binary = arg;
	u->symbol = sym;
	u->mode = 1; /* arg1 */
	mode = strchr(sym, ':');
	if (!mode)
		return 0;
	*mode++ = '\0';
	if (!*sym)
		return -EINVAL;
	scoped = strchr(mode, ',');
	if (scoped) {
		*scoped++ = '\0';
		if (strcmp(scoped, "scoped"))
			return -EINVAL;
	}
	if (!strcmp(mode, "tls"))
		u->mode = SP_CTXP_TLS;
	else if (!strncmp(mode, "arg", 3) && mode[3] >= '1' && mode[3] <= '6' && !mode[4])
		u->mode = mode[3] - '0';
	else if (!*mode && scoped)
		u->mode = 1;
	else
		return -EINVAL;
	if (scoped && (u->mode & SP_CTXP_TLS))
		return -EINVAL; /* tls reads at return: nothing would stay */
	if (scoped)
		u->mode |= SP_CTXP_CLEAR;
	return 0;
}

/*
 * Numbers are written in decimal: digits, one optional point and exponent ("1.5", "2e3"), no
 * sign, blank, hex ("0x10", which strtod takes) or "inf"/"nan". The parsers below check this
 * first, so every option reads numbers the same way. Returns the length of the decimal number
 * @s starts with, 0 when it starts with none.
 */
static size_t decimal_len(const char *s)
{
	size_t n = strspn(s, "0123456789");

	if (s[n] == '.')
		n += 1 + strspn(s + n + 1, "0123456789");
	if (!n || (n == 1 && s[0] == '.'))
		return 0;
	if (s[n] == 'e' || s[n] == 'E') {
		size_t k = n + 1 + (s[n + 1] == '+' || s[n + 1] == '-');
		size_t d = strspn(s + k, "0123456789");

		if (d)
			n = k + d;
	}
	return n;
}

/* @s is a decimal number and nothing else (decimal_len()). */
static bool is_decimal(const char *s)
{
	size_t n = decimal_len(s);

	return n && !s[n];
}

static int parse_u32(const char *s, unsigned long min, unsigned long max, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!is_decimal(s) || strpbrk(s, ".eE"))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * --exe PATH (under $SPANPROF_HOST_ROOT when set), when it exists, must be a regular file with
 * an execute bit: a directory or a device would match no process, silently. NULL when it is (or
 * does not exist yet: a program installed after the agent starts is looked for every 2 s, with a
 * warning at the start), else why not. A dangling symlink under a host root is let through: an
 * absolute target points into the host's tree, which the targeting code resolves itself.
 */
static const char *exe_path_problem(const char *path)
{
	const char *root = getenv("SPANPROF_HOST_ROOT");
	char full[PATH_MAX];
	struct stat st;

	if (!root || !strcmp(root, "/"))
		root = "";
	if (snprintf(full, sizeof(full), "%s%s", root, path) >= (int)sizeof(full))
		return "path too long";
	if (stat(full, &st)) {
		if (*root && !lstat(full, &st) && S_ISLNK(st.st_mode))
			return NULL;
		return errno == ENOENT ? NULL : strerror(errno);
	}
	if (S_ISDIR(st.st_mode))
		return "a directory";
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (!(st.st_mode & 0111))
		return "not executable";
	return NULL;
}

static struct record_flags_set flags_set;
/* The last option given that only a profile type reads (--lock-min-wait: lock), by type. */
static const char *type_option_given[PROFILE_NTYPES];
static const char *config_path; /* --config, else $SPANPROF_CONFIG */

/*
 * argp_error(), then refuse the option. On the command line argp_error() exits; for a
 * configuration file (ARGP_NO_EXIT, exporter/cli/config.h) it keeps the message and returns, and
 * the parser must not go on with the bad value.
 */
#define OPT_FAIL(state, ...)                                                                       \
	do {                                                                                       \
		argp_error(state, __VA_ARGS__);                                                    \
		return EINVAL;                                                                     \
	} while (0)

/*
 * Appends @arg to a targeting list (--exe, --cgroup, --container-id, --k8s-pod: @list holds *@n
 * of at most RECORD_MAX_TARGETS). @bad: @arg is refused with the message @why (printf format).
 * Returns 0, or EINVAL after argp_error() (a full list or a bad value).
 */
static error_t add_target(struct argp_state *state, const char *flag, const char **list, size_t *n,
			  char *arg, bool bad, const char *why, ...)
    __attribute__((format(printf, 7, 8)));
static error_t add_target(struct argp_state *state, const char *flag, const char **list, size_t *n,
			  char *arg, bool bad, const char *why, ...)
{
	char *msg = NULL;
	va_list ap;

	if (*n >= RECORD_MAX_TARGETS)
		OPT_FAIL(state, "at most %d %s", RECORD_MAX_TARGETS, flag);
	if (bad) {
		va_start(ap, why);
		if (vasprintf(&msg, why, ap) < 0)
			msg = NULL;
		va_end(ap);
		argp_error(state, "%s", msg ? msg : why);
		free(msg);
		return EINVAL;
	}
	list[(*n)++] = arg;
	return 0;
}

static error_t parse_seconds(struct argp_state *state, const char *flag, const char *arg,
			     double min, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (!is_decimal(arg) || errno || end == arg || *end || !(v >= min) || v > 1e7)
		OPT_FAIL(state, "%s wants a number of seconds from %g to 10000000, not '%s'", flag,
			 min, arg);
	*out = v;
	return 0;
}

static error_t parse_bytes(struct argp_state *state, const char *flag, const char *arg, size_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (!is_decimal(arg) || errno || end == arg || *end || v < 4096 || v > (1ull << 40))
		OPT_FAIL(state, "%s wants a number of bytes from 4096 to 2^40, not '%s'", flag,
			 arg);
	*out = v;
	return 0;
}

/* "10us", "1ms", "2s", "500ns" (or "0") -> nanoseconds; -1 if malformed. */
static int64_t parse_duration_ns(const char *arg)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || end != arg + decimal_len(arg) || !(v >= 0))
		return -1;
	if (!*end)
		return v == 0 ? 0 : -1; /* a unit is needed, except for 0 */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit))
			return v * units[i].ns > 3600e9 ? -1 : (int64_t)(v * units[i].ns + 0.5);
	return -1;
}

static error_t parse_size(struct argp_state *state, const char *flag, const char *arg,
			  uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (!is_decimal(arg) || strpbrk(arg, ".eE") || errno || end == arg || *end ||
	    v > (1ull << 40))
		OPT_FAIL(state, "%s wants a whole number of bytes from 0 to 2^40, not '%s'", flag,
			 arg);
	*out = v;
	return 0;
}

/*
 * @arg, a comma-separated list of per-sample attribute names (or "all", "none"), into
 * OTLP_SAMPLE_* bits in *out. Returns 0, or -EINVAL for an unknown name or an empty item.
 */
static int parse_sample_attrs(const char *arg, unsigned int *out)
{
	static const struct {
		const char *name;
		unsigned int bit;
	} names[] = {{"thread.name", OTLP_SAMPLE_THREAD_NAME},
		     {"thread.id", OTLP_SAMPLE_THREAD_ID},
		     {"cpu.logical_number", OTLP_SAMPLE_CPU},
		     {"all", OTLP_SAMPLE_ALL},
		     {"none", 0}};
	unsigned int bits = 0;
	const char *p = arg;

	for (;;) {
		size_t n = strcspn(p, ","), k;

		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (strlen(names[k].name) == n && !strncmp(p, names[k].name, n))
				break;
		if (k == sizeof(names) / sizeof(names[0]))
			return -EINVAL;
		bits |= names[k].bit;
		if (!p[n])
			break;
		p += n + 1;
	}
	*out = bits;
	return 0;
}

static error_t record_parse(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;
	char *eq, spec[PATH_MAX + 256];
	char *tok, *save = NULL;
	const char *why;
	char *end;

	switch (key) {
	case 'F':
		if (parse_u32(arg, 1, RECORD_MAX_HZ, &o->frequency_hz))
			OPT_FAIL(state, "--frequency wants a whole number from 1 to %d, not '%s'",
				 RECORD_MAX_HZ, arg);
		break;
	case 'd':
		errno = 0;
		o->duration_s = strtod(arg, &end);
		if (!is_decimal(arg) || errno || end == arg || *end || !(o->duration_s > 0) ||
		    o->duration_s > 1e7)
			OPT_FAIL(state,
				 "--duration wants a number of seconds above 0 and up to 10000000, "
				 "not '%s'",
				 arg);
		break;
	case 'p':
		/* strtok_r() would skip empty items: "1,,2" or "1," is a typo, said as one. */
		if (!*arg || *arg == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))
			OPT_FAIL(state, "--pid wants process ids separated by commas, not '%s'",
				 arg);
		for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (o->npids >= RECORD_MAX_PIDS)
				OPT_FAIL(state, "at most %d PIDs", RECORD_MAX_PIDS);
			if (parse_u32(tok, 1, INT32_MAX, &o->pids[o->npids]))
				OPT_FAIL(state, "--pid wants process ids, not '%s'", tok);
			o->npids++;
		}
		break;
	case 'o':
		if (!*arg)
			OPT_FAIL(state, "--output-dir wants a directory");
		o->output_dir = arg;
		break;
	case OPT_QUIET:
		o->quiet = 1;
		break;
	case OPT_VERBOSE:
		o->verbose = 1;
		break;
	case OPT_STATS_JSON:
		if (!*arg)
			OPT_FAIL(state, "--stats-json wants a file name");
		o->stats_json = arg;
		break;
	case OPT_RINGBUF:
		if (parse_u32(arg, 1, 1024, &o->ringbuf_mb) ||
		    (o->ringbuf_mb & (o->ringbuf_mb - 1)))
			OPT_FAIL(state,
				 "--ring-buffer-mb wants a power of two from 1 to 1024 (MiB), not "
				 "'%s'",
				 arg);
		break;
	case OPT_SYMCACHE:
		if (parse_u32(arg, 4, 1 << 20, &o->symcache_mb))
			OPT_FAIL(
			    state,
			    "--symbol-cache-mb wants a number of MiB from 4 to 1048576, not '%s'",
			    arg);
		break;
	case OPT_SLOW_FILE_TIMEOUT:
		return parse_seconds(state, "--slow-file-timeout", arg, 0.001,
				     &o->slow_file_timeout_s);
	case OPT_SYMCACHE_MAX:
		if (parse_u32(arg, 4, 1 << 20, &o->symcache_max_mb))
			OPT_FAIL(state,
				 "--symbol-cache-max-mb wants a number of MiB from 4 to 1048576, "
				 "not '%s'",
				 arg);
		break;
	case OPT_DEBUGINFOD:
		o->debuginfod_urls = arg;
		break;
	case OPT_DEBUGINFOD_CACHE:
		if (parse_u32(arg, 0, 1 << 24, &o->debuginfod_cache_mb))
			OPT_FAIL(state,
				 "--debuginfod-cache-mb wants a number of MiB from 0 to 16777216, "
				 "not '%s'",
				 arg);
		break;
	case OPT_ENDPOINT:
		if (endpoint__parse(arg, NULL, spec, sizeof(spec)))
			OPT_FAIL(state, "--endpoint: %s", spec);
		o->endpoint = arg;
		flags_set.endpoint = 1;
		break;
	case OPT_INTERVAL:
		return parse_seconds(state, "--export-interval", arg, 0.1, &o->export_interval_s);
	case OPT_TIMEOUT:
		if (parse_seconds(state, "--export-timeout", arg, 0.001, &o->export_timeout_s))
			return EINVAL;
		flags_set.export_timeout = 1;
		break;
	case OPT_FLUSH:
		return parse_seconds(state, "--flush-timeout", arg, 0, &o->flush_timeout_s);
	case OPT_HEADER:
		eq = strchr(arg, '=');
		if (!eq || eq == arg)
			OPT_FAIL(state, "--header wants KEY=VALUE, not '%s'", arg);
		if (o->nheaders >= RECORD_MAX_HEADERS)
			OPT_FAIL(state, "at most %d headers", RECORD_MAX_HEADERS);
		*eq = '\0';
		o->headers[o->nheaders].key = arg;
		o->headers[o->nheaders++].value = eq + 1;
		flags_set.headers = 1;
		break;
	case OPT_INSECURE:
		o->insecure = 1;
		flags_set.insecure = 1;
		break;
	case OPT_TLS_CA:
		o->tls_ca = arg;
		flags_set.tls_ca = 1;
		break;
	case OPT_TLS_CERT:
		o->tls_cert = arg;
		flags_set.tls_cert = 1;
		break;
	case OPT_TLS_KEY:
		o->tls_key = arg;
		flags_set.tls_key = 1;
		break;
	case OPT_COMPRESSION:
		if (strcmp(arg, "gzip") && strcmp(arg, "none"))
			OPT_FAIL(state, "--compression wants gzip or none, not '%s'", arg);
		o->gzip = !strcmp(arg, "gzip");
		flags_set.gzip = 1;
		break;
	case OPT_MAX_REQUEST:
		return parse_bytes(state, "--max-request-bytes", arg, &o->max_request_bytes);
	case OPT_SAMPLE_ATTRS:
		if (parse_sample_attrs(arg, &o->otlp_sample_attrs))
			OPT_FAIL(state,
				 "--sample-attributes wants a comma-separated list of thread.name, "
				 "thread.id and cpu.logical_number, or all, or none, not '%s'",
				 arg);
		break;
	case OPT_QUEUE:
		return parse_bytes(state, "--queue-bytes", arg, &o->queue_bytes);
	case OPT_UNWIND_MAX:
		if (parse_u32(arg, 0, 1 << 20, &o->unwind_max_mb))
			OPT_FAIL(
			    state,
			    "--unwind-max-mb wants a number of MiB from 0 to 1048576, not '%s'",
			    arg);
		break;
	case OPT_NO_SPAN_LINKS:
		o->no_span_links = 1;
		break;
	case OPT_PROFILE:
		o->profile_types = 0;
		for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			size_t len;
			int t;

			tok += strspn(tok, " \t"); /* "cpu, alloc" */
			len = strlen(tok);
			while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
				tok[--len] = '\0';
			if (!len)
				continue;
			t = profile__type_by_name(tok);

			if (t < 0)
				OPT_FAIL(state,
					 "--profile wants types among cpu, alloc, lock, offcpu, "
					 "not '%s'",
					 tok);
			/* A mistake, not a wish: say so rather than guess what was meant. */
			if (o->profile_types & (1u << t))
				OPT_FAIL(state, "--profile lists '%s' twice", tok);
			o->profile_types |= 1u << t;
		}
		if (!o->profile_types)
			OPT_FAIL(state, "--profile wants at least one type (cpu, alloc, lock, "
					"offcpu)");
		break;
	case OPT_ALLOC_SAMPLE:
		type_option_given[PROFILE_ALLOC] = "--alloc-sample-bytes";
		return parse_size(state, "--alloc-sample-bytes", arg, &o->alloc_sample_bytes);
	case OPT_ALLOC_MIN:
		type_option_given[PROFILE_ALLOC] = "--alloc-min-bytes";
		return parse_size(state, "--alloc-min-bytes", arg, &o->alloc_min_bytes);
	case OPT_LOCK_MIN:
	case OPT_OFFCPU_MIN: {
		int64_t ns = parse_duration_ns(arg);

		if (key == OPT_LOCK_MIN)
			type_option_given[PROFILE_LOCK] = "--lock-min-wait";
		else
			type_option_given[PROFILE_OFFCPU] = "--offcpu-min";

		if (ns < 0)
			OPT_FAIL(state, "%s wants a time with a unit (10us, 1ms, 0.5s), not '%s'",
				 key == OPT_LOCK_MIN ? "--lock-min-wait" : "--offcpu-min", arg);
		if (key == OPT_LOCK_MIN)
			o->lock_min_wait_ns = ns;
		else
			o->offcpu_min_ns = ns;
		break;
	}
	case OPT_CONFIG:
		config_path = arg; /* read after the command line: see cli__record_configure() */
		break;
	case OPT_STATS_INTERVAL:
		if (parse_seconds(state, "--stats-interval", arg, 0, &o->stats_interval_s))
			return EINVAL;
		if (o->stats_interval_s > 0 && o->stats_interval_s < 1)
			OPT_FAIL(state, "--stats-interval wants 0 (off) or at least 1 second");
		break;
	case OPT_SELF_METRICS:
		o->self_metrics = 1;
		break;
	case OPT_LOG_LEVEL:
		o->log_level = selfstats__parse_log_level(arg);
		if (o->log_level < 0)
			OPT_FAIL(state, "--log-level wants error, warn, info or debug, not '%s'",
				 arg);
		break;
	case ARGP_KEY_END:
		if (o->no_span_links && o->nctx_uprobes)
			OPT_FAIL(state,
				 "--context-uprobe and --no-span-links contradict each other");
		break;
	case OPT_CTX_UPROBE:
		if (o->nctx_uprobes >= RECORD_MAX_CTX_UPROBES)
			OPT_FAIL(state, "at most %d --context-uprobe", RECORD_MAX_CTX_UPROBES);
		if (strlen(arg) >= sizeof(spec))
			OPT_FAIL(state, "--context-uprobe: '%s' is too long", arg);
		strcpy(spec, arg); /* parse_ctx_uprobe() cuts arg into pieces */
		if (parse_ctx_uprobe(arg, &o->ctx_uprobes[o->nctx_uprobes]))
			OPT_FAIL(state,
				 "--context-uprobe wants BINARY:SYMBOL[:argN[,scoped]|:tls] "
				 "(N from 1 to 6), not '%s'",
				 spec);
		o->nctx_uprobes++;
		break;
	case OPT_EXE:
		if (*arg && (why = exe_path_problem(arg)))
			OPT_FAIL(state, "--exe wants an executable file, not '%s' (%s)", arg, why);
		return add_target(state, "--exe", o->exes, &o->nexes, arg, !*arg,
				  "--exe wants a path");
	case OPT_CGROUP:
		return add_target(state, "--cgroup", o->cgroups, &o->ncgroups, arg, !*arg,
				  "--cgroup wants a cgroup v2 directory");
	case OPT_CONTAINER_ID:
		return add_target(state, "--container-id", o->container_ids, &o->ncontainer_ids,
				  arg, targets__check_container_id(arg),
				  "--container-id wants 12 to 64 hex digits (a container id or a "
				  "prefix of one), not '%s'",
				  arg);
	case OPT_K8S_POD:
		return add_target(state, "--k8s-pod", o->k8s_pods, &o->nk8s_pods, arg,
				  targets__check_pod(arg),
				  "--k8s-pod wants a pod uid (8-4-4-4-12 hex digits) or "
				  "NAMESPACE/NAME, not '%s'",
				  arg);
	case OPT_K8S:
		o->k8s = 1;
		break;
	case OPT_JAVA_PERFMAP:
		o->java_perfmap = 1;
		break;
	case OPT_NO_PYTHON:
		o->no_python = 1;
		break;
	case OPT_NO_PYTHON_CODE_CACHE:
		o->no_python_code_cache = 1;
		break;
	case OPT_PYTHON_CODE_CACHE_AFTER:
		return parse_seconds(state, "--python-code-cache-after", arg, 0,
				     &o->python_code_cache_after_s);
	case OPT_NO_V8:
		o->no_v8 = 1;
		break;
	case OPT_NO_JVM:
		o->no_jvm = 1;
		break;
	case OPT_SHORT_NAMES:
		o->short_names = 1;
		break;
	case ARGP_KEY_ARG:
		OPT_FAIL(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp record_argp = {
    .options = record_options,
    .parser = record_parse,
    .doc = "Sample every CPU (or the given processes) and write a symbolized profile.\v"
	   "Outputs, written when sampling ends (duration over, Ctrl-C or SIGTERM):\n"
	   "  DIR/profile.pb.gz   gzipped pprof profile ('go tool pprof -top DIR/profile.pb.gz')\n"
	   "  DIR/profile.folded  folded stacks (flamegraph.pl, inferno, speedscope)\n"
	   "  DIR/flamegraph.svg  a flame graph to open in a browser\n"
	   "With --profile alloc, lock or offcpu, each of those types also writes TYPE.pb.gz, "
	   "TYPE.folded and flamegraph-TYPE.svg.\n"
	   "\n"
	   "Needs root (CAP_BPF and CAP_PERFMON, CAP_SYS_PTRACE to read other processes) and a "
	   "kernel with BTF.\n"
	   "Examples:\n"
	   "  spanprof record --duration 10 --output-dir out\n"
	   "  spanprof record --endpoint localhost:4317          # OTLP to a local Collector\n"
	   "  spanprof record --k8s --k8s-pod shop/checkout-7d9f --endpoint localhost:4317\n"
	   "  OTEL_EXPORTER_OTLP_ENDPOINT=https://otel:4317 spanprof record --tls-ca ca.pem\n"
	   "  spanprof record --config /etc/spanprof/spanprof.yaml --duration 30\n"
	   "  spanprof record --endpoint localhost:4317 --self-metrics  # + own metrics\n"
	   "\n"
	   "Configuration file (--config FILE or $SPANPROF_CONFIG): YAML whose keys are the long "
	   "options above ('frequency: 99', 'pid: [1, 2]', 'quiet: true', 'header: {k: v}'). "
	   "Precedence: flag > OTEL_* environment > file > default. 'spanprof config check FILE' "
	   "validates a file.",
};

/* Option keys given on the command line: the configuration file leaves them alone. */
static int cli_keys[128];
static size_t ncli_keys;

static error_t record_cli_parse(int key, char *arg, struct argp_state *state)
{
	/* Files do not merge: a second --config would silently replace the first. */
	for (size_t i = 0; key == OPT_CONFIG && i < ncli_keys; i++)
		if (cli_keys[i] == OPT_CONFIG)
			OPT_FAIL(state, "--config was given twice ('%s' after '%s'): give one file",
				 arg, config_path);
	if (key > 0 && key < ARGP_KEY_END && ncli_keys < sizeof(cli_keys) / sizeof(cli_keys[0]))
		cli_keys[ncli_keys++] = key;
	return record_parse(key, arg, state);
}

/* config_target.filter: flags win over the file; --config has no place in a file. */
static int config_filter(void *ctx, const struct argp_option *opt)
{
	if (opt->key == OPT_CONFIG)
		return CONFIG_REJECT;
	for (size_t i = 0; ctx && i < ncli_keys; i++)
		if (cli_keys[i] == opt->key)
			return CONFIG_SKIP;
	return CONFIG_APPLY;
}

static void record_defaults(struct record_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->frequency_hz = RECORD_DEFAULT_HZ;
	o->symcache_mb = RECORD_DEFAULT_SYMCACHE_MB;
	o->symcache_max_mb = RECORD_DEFAULT_SYMCACHE_MAX_MB;
	o->debuginfod_cache_mb = RECORD_DEFAULT_DEBUGINFOD_CACHE_MB;
	o->insecure = -1;
	o->gzip = 1;
	o->export_interval_s = 5;
	o->python_code_cache_after_s = 10;
	o->export_timeout_s = 10;
	o->flush_timeout_s = 10;
	o->slow_file_timeout_s = REGFILE_DEADLINE_MS / 1000.0;
	o->max_request_bytes = 4 << 20;
	o->queue_bytes = 64 << 20;
	o->otlp_sample_attrs = OTLP_SAMPLE_THREAD_NAME;
	o->unwind_max_mb = RECORD_DEFAULT_UNWIND_MB;
	o->profile_types = 1u << PROFILE_CPU;
	o->alloc_sample_bytes = RECORD_DEFAULT_ALLOC_SAMPLE_BYTES;
	o->lock_min_wait_ns = RECORD_DEFAULT_LOCK_MIN_WAIT_NS;
	o->offcpu_min_ns = RECORD_DEFAULT_OFFCPU_MIN_NS;
	o->stats_interval_s = 60;
	o->log_level = SELFSTATS_LOG_INFO;
}

/*
 * Line of the configuration file that set option @name, 0 if none did or a flag replaced it
 * (@with_flags: the command line's keys count).
 */
static unsigned file_line(const struct config *cfg, const char *name, int with_flags)
{
	if (!cfg)
		return 0;
	for (const struct argp_option *opt = record_options; opt->name || opt->doc; opt++) {
		if (!opt->name || strcmp(opt->name, name))
			continue;
		for (size_t i = 0; with_flags && i < ncli_keys; i++)
			if (cli_keys[i] == opt->key)
				return 0;
		return config__line(cfg, name);
	}
	return 0;
}

/*
 * A check across options failed: "FILE:LINE: key 'KEY': MESSAGE" and "spanprof: FILE: 1 error"
 * when a configuration file was read (the line of the first of the NULL-terminated @keys the
 * file set, if any), else "spanprof: MESSAGE". Returns 2, the exit status.
 */
static int __attribute__((format(printf, 5, 6)))
across_fail(const struct config *cfg, const char *path, int with_flags, const char *const *keys,
	    const char *fmt, ...)
{
	unsigned line = 0;
	va_list ap;

	if (path && *path) {
		for (; *keys && !line; keys++)
			line = file_line(cfg, *keys, with_flags);
		if (line)
			fprintf(stderr, "%s:%u: key '%s': ", path, line, keys[-1]);
		else
			fprintf(stderr, "%s: ", path);
	} else {
		fputs("spanprof: ", stderr);
	}
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (path && *path)
		fprintf(stderr, "spanprof: %s: 1 error\n", path);
	return 2;
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

/*
 * The files record reads at start-up, checked here with record's own checks so that `config
 * check` refuses what `record` would (and record refuses them before any BPF): the TLS files
 * (grpc_client__check_tls_files()), an output directory that is something else.
 */
static int check_files(const struct record_opts *o, const struct config *cfg, const char *path,
		       int with_flags)
{
	const struct grpc_client_opts tls[] = {
	    {.ca_file = o->tls_ca}, {.cert_file = o->tls_cert}, {.key_file = o->tls_key}};
	const char *const keys[] = {"tls-ca", "tls-cert", "tls-key"};
	const char *files[] = {o->tls_ca, o->tls_cert, o->tls_key};
	char why[PATH_MAX + 128];
	struct stat st;

	for (size_t i = 0; i < 3; i++)
		if (files[i] && grpc_client__check_tls_files(&tls[i], why, sizeof(why)))
			return across_fail(cfg, path, with_flags, KEYS(keys[i]), "--%s: %s%s%s%s",
					   keys[i], why, o->endpoint ? " (TLS for " : "",
					   o->endpoint ? o->endpoint : "", o->endpoint ? ")" : "");
	if (o->output_dir && *o->output_dir && !stat(o->output_dir, &st) && !S_ISDIR(st.st_mode))
		return across_fail(cfg, path, with_flags, KEYS("output-dir"),
				   "--output-dir %s exists and is not a directory", o->output_dir);
	return 0;
}

/*
 * The checks across options, on the final values (flags, environment, file): each message
 * names the file and the line of a key it set (across_fail()). 0, or 2 after the message.
 */
static int check_across(const struct record_opts *o, const struct config *cfg, const char *path,
			int with_flags)
{
	if (o->endpoint && !strncmp(o->endpoint, "http://", 7) &&
	    (o->tls_ca || o->tls_cert || o->tls_key))
		return across_fail(
		    cfg, path, with_flags, KEYS("endpoint", "tls-ca", "tls-cert", "tls-key"),
		    "TLS files were given for a plaintext http:// endpoint: use https://%s",
		    o->endpoint + 7);
	if (o->endpoint && !strncmp(o->endpoint, "https://", 8) && o->insecure == 1)
		return across_fail(cfg, path, with_flags, KEYS("insecure", "endpoint"),
				   "--insecure (or OTEL_EXPORTER_OTLP_INSECURE=true) contradicts "
				   "the https:// endpoint %s: drop one of them",
				   o->endpoint);
	if (!!o->tls_cert != !!o->tls_key)
		return across_fail(cfg, path, with_flags, KEYS("tls-cert", "tls-key"),
				   "mTLS needs both --tls-cert and --tls-key");
	if (o->self_metrics && !o->endpoint)
		return across_fail(cfg, path, with_flags, KEYS("self-metrics"),
				   "--self-metrics sends to the OTLP endpoint: give --endpoint (or "
				   "OTEL_EXPORTER_OTLP_ENDPOINT)");
	if (o->self_metrics && !(o->stats_interval_s > 0))
		return across_fail(cfg, path, with_flags, KEYS("stats-interval", "self-metrics"),
				   "--self-metrics sends every --stats-interval: it cannot be 0");
	return check_files(o, cfg, path, with_flags);
}

/* The file's values, then the environment where no flag set a value, then the last defaults. */
static int apply_file_and_env(struct record_opts *o, const char *path, struct config **cfgp,
			      int with_flags)
{
	struct config_target t = {
	    .argp = &record_argp,
	    .input = o,
	    .filter = config_filter,
	    .filter_ctx = with_flags ? cli_keys : NULL,
	    .err = stderr,
	};
	struct record_flags_set by_flags = flags_set;
	int output_dir_set, n;

	*cfgp = NULL;
	if (path && *path) {
		*cfgp = config__new();
		if (!*cfgp)
			return 2;
		n = config__apply_file(*cfgp, path, &t);
		/* What the file set may still be replaced by the environment. */
		flags_set = by_flags;
		if (n) {
			fprintf(stderr, "spanprof: %s: %d error%s\n", path, n, n > 1 ? "s" : "");
			return 2;
		}
	}
	output_dir_set = o->output_dir != NULL;
	if (record_env__apply(o, &flags_set)) {
		/* The environment, or headers (from the file too) that gRPC would refuse. */
		if (path && *path)
			fprintf(stderr, "spanprof: %s: 1 error (with the environment)\n", path);
		return 2;
	}
	if (check_across(o, *cfgp, path, with_flags))
		return 2;
	for (uint32_t t = 0; t < PROFILE_NTYPES; t++)
		if (type_option_given[t] && !(o->profile_types & (1u << t)))
			fprintf(stderr,
				"spanprof: warning: %s has no effect without --profile %s (among "
				"the types)\n",
				type_option_given[t], profile__type_info(t)->name);
	/* Local files by default; with an endpoint only when asked for. */
	if (!output_dir_set && !o->endpoint)
		o->output_dir = "out";
	return 0;
}

int cli__record_configure(int argc, char **argv, struct record_opts *o, struct config **cfgp)
{
	struct argp cli = record_argp;

	record_defaults(o);
	memset(&flags_set, 0, sizeof(flags_set));
	memset(type_option_given, 0, sizeof(type_option_given));
	ncli_keys = 0;
	config_path = getenv("SPANPROF_CONFIG");
	cli.parser = record_cli_parse;
	if (argp_parse(&cli, argc, argv, 0, NULL, o))
		return 2;
	return apply_file_and_env(o, config_path, cfgp, 1);
}

static const char config_usage[] =
    "Usage: spanprof config check FILE...\n"
    "\n"
    "Checks spanprof record configuration files (YAML; the keys are the long options of\n"
    "'spanprof record', docs/configuration.md). For each file, prints 'FILE: ok' and the\n"
    "settings 'spanprof record --config FILE' would run with (file, OTEL_EXPORTER_OTLP_*\n"
    "environment, defaults), or every error with its line and column.\n"
    "Exit status: 0 all files are valid, 2 otherwise.\n";

int cli__config_main(int argc, char **argv)
{
	int rc = 0;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(config_usage, stdout);
		return 0;
	}
	if (argc < 3 || strcmp(argv[1], "check")) {
		if (argc >= 2 && strcmp(argv[1], "check"))
			fprintf(stderr,
				"spanprof config: unknown command '%s' (there is: check)\n\n",
				argv[1]);
		else
			fputs("spanprof config check: give at least one FILE\n\n", stderr);
		fputs(config_usage, stderr);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		struct record_opts *o = malloc(sizeof(*o));
		struct config *cfg = NULL;

		if (!o)
			return 2;
		record_defaults(o);
		memset(&flags_set, 0, sizeof(flags_set));
		if (!*argv[i]) {
			fprintf(stderr, "spanprof: config check: empty file name\n");
			rc = 2;
		} else if (apply_file_and_env(o, argv[i], &cfg, 0)) {
			rc = 2;
		} else {
			printf("%s: ok\n", argv[i]);
			record_config__print(stdout, o, cfg);
		}
		config__free(cfg);
		free(o);
	}
	return rc;
}

static struct record_opts ropts;

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("%s\n", argp_program_version);
		return 0;
	}
	argp_err_exit_status = 2;
	if (!strcmp(argv[1], "record")) {
		struct config *cfg; /* holds the strings of the file's values until exit */
		int rc;

		argv[1] = "spanprof record";
		rc = cli__record_configure(argc - 1, argv + 1, &ropts, &cfg);
		if (!rc)
			rc = record__run(&ropts);
		config__free(cfg);
		return rc;
	}
	if (!strcmp(argv[1], "config"))
		return cli__config_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "view"))
		return view__main(argc - 1, argv + 1);
	fprintf(stderr, "spanprof: unknown command '%s'\n\n%s", argv[1], usage_text);
	return 2;
}
