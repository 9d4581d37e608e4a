/* SPDX-License-Identifier: Apache-2.0 */
/*
 * view/doc: the document of `spanprof view` (one self-contained HTML page from profiles).
 *
 * The readers (view/read.c) decode OTLP profiles (binary, length-prefixed stream, OTLP/JSON
 * lines) and pprof, and merge every sample into one view_doc: deduplicated strings, frames,
 * stacks, processes, threads and spans, and samples aggregated by (profile type, stack,
 * thread, span, time bucket). view_doc__json() writes it as the document of
 * docs/view-format.md ("spanprof-view/1"), view__page() puts that document into the page
 * template built from view/ and embedded in the binary.
 *
 * Indices returned by the view_doc__* interning calls are the document's own (the ones the
 * JSON uses); a negative value is -errno (-ENOMEM). Not thread-safe.
 */
#ifndef SPANPROF_VIEW_DOC_H
#define SPANPROF_VIEW_DOC_H

#include <stddef.h>
#include <stdint.h>

struct view_doc;

/* frames.kind of the document. */
enum view_frame_kind {
	VIEW_FRAME_NATIVE = 0,
	VIEW_FRAME_KERNEL = 1,
	VIEW_FRAME_OTHER = 2,	/* interpreted, JIT, anything else */
	VIEW_FRAME_ABORT = 3,	/* the marker of a cut stack (exporter/profile/stackend.h) */
	VIEW_FRAME_GO = 4,	/* Go code (profile.frame.type go) */
	VIEW_FRAME_CPYTHON = 5, /* a CPython frame (profile.frame.type cpython, docs/python.md) */
};

/* One input file as the document's "inputs" lists it. Owned by the document. */
struct view_input {
	char *path;
	const char *format; /* "otlp-proto", "otlp-proto-stream", "otlp-json", "pprof",
			     * "otlp-traces-proto", "otlp-traces-proto-stream", "otlp-traces-json";
			     * NULL */
	uint64_t samples;   /* samples loaded from it (timestamps, or counts) */
	char *error;	    /* NULL, or what went wrong: the samples before it are kept */
	/* A traces file (view_doc__trace_span): the spans read from it, and how many of those
	 * are spans of the profiles (counted by view_doc__finish). Both 0 for a profile. */
	uint64_t spans, spans_matched;
};

/* Placeholder of the page template that the document replaces (quotes included). */
#define VIEW_PAGE_TOKEN "\"__SPANPROF_DATA__\""

/* Bounds of the time axis (docs/view-format.md, "time"). */
#define VIEW_MAX_BUCKETS 200
#define VIEW_MIN_BUCKET_NS 1000000ull

/* An empty document. NULL + errno on ENOMEM. */
struct view_doc *view_doc__new(void);
/* Frees the document and everything in it; NULL is a no-op. */
void view_doc__free(struct view_doc *d);

/* --- inputs -------------------------------------------------------------------------------- */

/* Starts input @path: the samples added until view_doc__input_end() count for it. 0 or -ENOMEM. */
int view_doc__input_begin(struct view_doc *d, const char *path);
/* Ends the current input: its format (a static string or NULL) and error (copied, or NULL). */
int view_doc__input_end(struct view_doc *d, const char *format, const char *error);
uint32_t view_doc__ninputs(const struct view_doc *d);
const struct view_input *view_doc__input(const struct view_doc *d, uint32_t i);
/* Samples of every input together. */
uint64_t view_doc__nsamples(const struct view_doc *d);

/* --- interning (the readers) --------------------------------------------------------------- */

/* String @s (@len bytes, need not be NUL-terminated; "" is index 0). */
int32_t view_doc__string(struct view_doc *d, const char *s, size_t len);
/* The NUL-terminated text of string @i (valid until the next view_doc__string call). */
const char *view_doc__string_text(const struct view_doc *d, int32_t i);
/*
 * A frame: string indices of name, source file (0 unknown), module (0 none) and frame type
 * (@type: the OTLP profile.frame.type value, "native", "kernel", "go", "v8js", "cpython"...;
 * 0 unknown, the page then goes by @kind).
 */
int32_t view_doc__frame(struct view_doc *d, int32_t name, int32_t file, int64_t line,
			int32_t module, enum view_frame_kind kind, int32_t type);
/* A stack of @n frame indices, ROOT FIRST. */
int32_t view_doc__stack(struct view_doc *d, const int32_t *frames, uint32_t n);
/* A profile type; its name as docs/view-format.md defines it ("cpu", else @sample_type). */
int32_t view_doc__profile_type(struct view_doc *d, const char *sample_type, const char *unit,
			       const char *period_type, const char *period_unit, int64_t period);
/* A process: service name, pid and executable name (string indices). */
int32_t view_doc__process(struct view_doc *d, int32_t service, int64_t pid, int32_t name);
/* A thread of process @process (an index from view_doc__process), name a string index. */
int32_t view_doc__thread(struct view_doc *d, int32_t process, int64_t tid, int32_t name);
/*
 * A span seen in process @process (-1 unknown): its "process" becomes -1 when it is seen in
 * two processes.
 */
int32_t view_doc__span(struct view_doc *d, const uint8_t trace_id[16], const uint8_t span_id[8],
		       int32_t process);
/* Adds thread-context attribute key = value (string indices) to span @span; the first wins. */
int view_doc__span_attr(struct view_doc *d, int32_t span, int32_t key, int32_t value);
/* What a traces file says of one span (OTLP trace/v1 Span); 0 / NULL: not said. */
struct view_trace_span {
	const uint8_t *parent_span_id; /* 8 bytes, or NULL: a root span */
	int32_t name;		       /* string index: Span.name */
	int32_t service;	       /* string index: the resource's service.name */
	uint64_t start_unix_ns, end_unix_ns;
};

/*
 * Records span (@trace_id, @span_id) of a traces file, counted for the current input. The
 * document keeps these apart from the spans of the samples (view_doc__span); a span of the
 * samples takes its name, service and times from here when the ids match, whichever was read
 * first. A span read twice keeps the first value of each field that is set. 0 or -ENOMEM.
 */
int view_doc__trace_span(struct view_doc *d, const uint8_t trace_id[16], const uint8_t span_id[8],
			 const struct view_trace_span *t);
/*
 * A series: the samples of one (profile type, stack, thread, span); thread and span may be
 * -1. The rows of the document are the series cut by time bucket.
 */
int32_t view_doc__series(struct view_doc *d, int32_t type, int32_t stack, int32_t thread,
			 int32_t span);
/*
 * Adds @value to series @series at wall-clock time @ts_unix_nano (0: no timestamp), and
 * @samples to the current input's sample count. 0 or -ENOMEM.
 */
int view_doc__add(struct view_doc *d, int32_t series, int64_t value, uint64_t ts_unix_nano,
		  uint64_t samples);

/* --- the document -------------------------------------------------------------------------- */

/*
 * Cuts the time range of every timestamp into at most VIEW_MAX_BUCKETS buckets of whole
 * milliseconds (at least 1 ms), builds the rows and matches the spans of the samples with
 * those of the traces files (view_input.spans_matched). Call once, after the last sample.
 * 0 or -ENOMEM.
 */
int view_doc__finish(struct view_doc *d);
/* "initial" of the document: lower-case hex ids or NULL (copied). 0 or -ENOMEM. */
int view_doc__set_initial(struct view_doc *d, const char *span_id, const char *trace_id);
/* Counts of the finished document (tests, messages). */
uint32_t view_doc__nrows(const struct view_doc *d);
uint32_t view_doc__nservices(const struct view_doc *d);

/*
 * The document as JSON (docs/view-format.md), safe inside a <script> element: "</" in a
 * string is written "<\/" and "<!--" "\u003c!--"; invalid UTF-8 becomes U+FFFD. On success
 * *out is a malloc'd buffer of *len bytes (NUL-terminated) the caller frees. 0 or -ENOMEM.
 */
int view_doc__json(const struct view_doc *d, char **out, size_t *len);
/*
 * The page: @tmpl (@tlen bytes) with its first VIEW_PAGE_TOKEN replaced by the document.
 * *out is malloc'd, *len bytes. 0, -ENOMEM, or -EINVAL when @tmpl has no placeholder.
 */
int view__page(const struct view_doc *d, const char *tmpl, size_t tlen, char **out, size_t *len);

/* The page template embedded at build time ($(BUILD)/view/page.html). */
extern const char spanprof_view_page[];
extern const char spanprof_view_page_end[];

#endif /* SPANPROF_VIEW_DOC_H */
