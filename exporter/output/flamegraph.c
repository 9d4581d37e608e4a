// SPDX-License-Identifier: Apache-2.0
/*
 * flamegraph: draws the stack_tree of folded.c as SVG (flame orientation).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h> /* only for HASH_VALUE: stable colours per name */

#include "output/flamegraph.h"
#include "output/folded.h"

#define WIDTH 1200
#define XPAD 10
#define FRAME_H 16
#define TOP 56 /* title, subtitle and the zoom reset */
#define BOTTOM 8
#define CHAR_W 7	   /* average glyph width of 12 px Verdana, for truncation */
#define MIN_FRACTION 0.001 /* frames under 0.1% of the samples are not drawn */
#define SEARCH_W 260	   /* width of the search box, top right */

/*
 * Click-to-zoom: the clicked frame fills the width, its ancestors are dimmed. Search: the text
 * of the box is a regular expression (a literal string when it is not a valid one); matching
 * frames turn magenta and the line beside the box gives the share of all samples under them
 * (a match inside a match counts once: covered widths of the unzoomed graph are merged).
 */
static const char zoom_script[] =
    "var F, U, S, R, W = 1200, P = 10;\n"
    "function init() {\n"
    "  F = document.querySelectorAll('#frames > g');\n"
    "  U = document.getElementById('unzoom');\n"
    "  S = document.getElementById('search');\n"
    "  R = document.getElementById('matched');\n"
    "  for (var i = 0; i < F.length; i++) {\n"
    "    var g = F[i], r = g.querySelector('rect');\n"
    "    g.x = +r.getAttribute('x'); g.w = +r.getAttribute('width');\n"
    "    g.y = +r.getAttribute('y'); g.fill = r.getAttribute('fill');\n"
    "    g.n = g.querySelector('title').textContent.replace(/ \\([^(]*\\)$/, '');\n"
    "    g.onclick = function () { zoom(this); };\n"
    "  }\n"
    "  U.onclick = function () { zoom(null); };\n"
    "  if (S) S.oninput = function () { search(S.value); };\n"
    "}\n"
    "function place(g, x, w, show, dim) {\n"
    "  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
    "  var n = Math.floor((w - 6) / 7);\n"
    "  g.style.display = show ? '' : 'none';\n"
    "  g.style.opacity = dim ? 0.5 : 1;\n"
    "  r.setAttribute('x', x); r.setAttribute('width', w); t.setAttribute('x', x + 3);\n"
    "  t.textContent = n < 3 ? '' : g.n.length > n ? g.n.slice(0, n - 2) + '..' : g.n;\n"
    "}\n"
    "function zoom(z) {\n"
    "  U.style.display = z ? '' : 'none';\n"
    "  for (var i = 0; i < F.length; i++) {\n"
    "    var g = F[i], e = 0.01;\n"
    "    if (!z) { place(g, g.x, g.w, 1, 0); continue; }\n"
    "    var k = (W - 2 * P) / z.w;\n"
    "    var inside = g.x >= z.x - e && g.x + g.w <= z.x + z.w + e;\n"
    "    var around = g.x <= z.x + e && g.x + g.w >= z.x + z.w - e;\n"
    "    if (g.y <= z.y && inside) place(g, P + (g.x - z.x) * k, g.w * k, 1, 0);\n"
    "    else if (g.y > z.y && around) place(g, P, W - 2 * P, 1, 1);\n"
    "    else place(g, g.x, g.w, 0, 0);\n"
    "  }\n"
    "}\n"
    "function search(text) {\n"
    "  var re = null, hit = [], share = 0, end = -1;\n"
    "  if (text) {\n"
    "    try { re = new RegExp(text); }\n"
    "    catch (e) { re = new RegExp(text.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')); }\n"
    "  }\n"
    "  for (var i = 1; i < F.length; i++) {\n"
    "    var g = F[i], on = !!re && re.test(g.n);\n"
    "    g.querySelector('rect').setAttribute('fill', on ? 'rgb(230,0,230)' : g.fill);\n"
    "    g.classList.toggle('hit', on);\n"
    "    if (on) hit.push([g.x, g.x + g.w]);\n"
    "  }\n"
    "  hit.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
    "  for (var j = 0; j < hit.length; j++) {\n"
    "    var a = Math.max(hit[j][0], end);\n"
    "    if (hit[j][1] > a) share += hit[j][1] - a;\n"
    "    end = Math.max(end, hit[j][1]);\n"
    "  }\n"
    "  share = share / F[0].w;\n"
    "  R.textContent = re ? 'Matched: ' + (100 * share).toFixed(1) + '%' : '';\n"
    "  return share;\n"
    "}\n";

_Static_assert(WIDTH == 1200 && XPAD == 10, "update zoom_script's W and P");

/*
 * Length in bytes of the valid UTF-8 character at @s, or 0 if it is not one
 * that XML 1.0 allows (malformed, overlong, surrogate, U+FFFE/U+FFFF).
 */
static int utf8_char(const unsigned char *s)
{
	uint32_t cp;
	int n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* also stops at the NUL */
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return n;
}

/*
 * Writes @s escaped for XML text and attribute values, at most @max
 * characters of it (then ".." instead of the rest, within @max). Bytes that
 * are not valid UTF-8 become '?'.
 */
static void put_xml(FILE *f, const char *s, size_t max)
{
	const unsigned char *c = (const unsigned char *)s;
	size_t nchars = 0;

	for (const unsigned char *d = c; *d; nchars++) {
		int n = utf8_char(d);

		d += n ? n : 1;
	}
	if (nchars > max)
		max = max >= 2 ? max - 2 : 0;
	for (size_t i = 0; *c && i < max; i++) {
		int n = utf8_char(c);

		switch (n ? *c : '?') {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			if (!n)
				fputc('?', f);
			else if (n == 1 && (*c < 0x20 || *c == 0x7f))
				fputc(' ', f); /* not allowed in XML 1.0 */
			else
				fwrite(c, 1, n, f);
		}
		c += n ? n : 1;
	}
	if (*c)
		fputs("..", f);
}

static void frame_colour(const struct stack_tree_frame *fr, int rgb[3])
{
	unsigned h;
	double v1, v2, v3;

	HASH_VALUE(fr->name, strlen(fr->name), h);
	v1 = (h & 0xff) / 255.0;
	v2 = (h >> 8 & 0xff) / 255.0;
	v3 = (h >> 16 & 0xff) / 255.0;
	if (fr->unknown) { /* grey, blue-grey for the kernel */
		rgb[0] = rgb[1] = 190 + 30 * v1;
		rgb[2] = fr->kind == FRAME_KERNEL ? 235 : rgb[0];
	} else if (fr->kind == FRAME_UNSET) { /* process */
		rgb[0] = 170 + 40 * v1;
		rgb[1] = 150 + 30 * v2;
		rgb[2] = 215 + 40 * v3;
	} else if (fr->kind == FRAME_ABORT) { /* marker of a cut stack: pale red, one colour */
		rgb[0] = 240;
		rgb[1] = rgb[2] = 170;
	} else if (frame_kind__is_jit(fr->kind)) { /* green, as flamegraph.pl's JIT frames */
		rgb[0] = 50 + 60 * v1;
		rgb[1] = 170 + 60 * v2;
		rgb[2] = 50 + 60 * v3;
	} else if (fr->kind == FRAME_KERNEL) {
		rgb[0] = 80 + 60 * v1;
		rgb[1] = 160 + 50 * v2;
		rgb[2] = 215 + 40 * v3;
	} else if (fr->kind == FRAME_CPYTHON) { /* Python's yellow */
		rgb[0] = 225 + 30 * v1;
		rgb[1] = 190 + 40 * v2;
		rgb[2] = 40 + 60 * v3;
	} else if (fr->kind == FRAME_PHP) { /* PHP's lavender */
		rgb[0] = 100 + 40 * v1;
		rgb[1] = 110 + 40 * v2;
		rgb[2] = 195 + 50 * v3;
	} else if (fr->kind == FRAME_GO) { /* teal */
		rgb[0] = 30 + 50 * v1;
		rgb[1] = 170 + 50 * v2;
		rgb[2] = 150 + 40 * v3;
	} else {
		rgb[0] = 205 + 50 * v1;
		rgb[1] = 70 + 160 * v2;
		rgb[2] = 40 * v3;
	}
}

struct svg_ctx {
	FILE *f;
	uint64_t all;	 /* samples in the profile */
	double min;	 /* samples a frame needs to be drawn */
	double scale;	 /* px per sample */
	uint32_t levels; /* drawn levels, "all" included */
	int height;
	const char *unit; /* of a frame's weight: "samples", "bytes", "ns" */
};

/* First pass: how many levels are drawn. */
static int svg__measure(const struct stack_tree_frame *fr, void *arg)
{
	struct svg_ctx *c = arg;

	if (fr->total < c->min)
		return STACK_TREE_SKIP;
	if (fr->depth + 2 > c->levels)
		c->levels = fr->depth + 2;
	return STACK_TREE_DESCEND;
}

static void svg__frame(struct svg_ctx *c, const char *name, uint32_t level, uint64_t offset,
		       uint64_t total, const int rgb[3])
{
	double x = XPAD + offset * c->scale, w = total * c->scale;
	int y = c->height - BOTTOM - (int)(level + 1) * FRAME_H;
	long fit = (long)((w - 6) / CHAR_W);

	fputs("<g class=\"f\"><title>", c->f);
	put_xml(c->f, name, SIZE_MAX);
	fprintf(c->f, " (%" PRIu64 " %s, %.2f%%)</title>", total, c->unit,
		c->all ? 100.0 * total / c->all : 0.0);
	fprintf(c->f,
		"<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" "
		"fill=\"rgb(%d,%d,%d)\"/>",
		x, y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2]);
	fprintf(c->f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
	if (fit >= 3)
		put_xml(c->f, name, fit);
	fputs("</text></g>\n", c->f);
}

static int svg__draw(const struct stack_tree_frame *fr, void *arg)
{
	struct svg_ctx *c = arg;
	int rgb[3];

	if (fr->total < c->min)
		return STACK_TREE_SKIP;
	frame_colour(fr, rgb);
	svg__frame(c, fr->name, fr->depth + 1, fr->offset, fr->total, rgb);
	return ferror(c->f) ? -EIO : STACK_TREE_DESCEND;
}

static void svg__header(struct svg_ctx *c, const struct profile *p, const char *title)
{
	const struct profile_meta *m = profile__meta(p);
	FILE *f = c->f;

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" onload=\"init()\">\n",
		WIDTH, c->height, WIDTH, c->height);
	fputs("<style type=\"text/css\">text { font: 12px Verdana, sans-serif; fill: #000 } "
	      ".f { cursor: pointer } .f:hover rect { stroke: #000; stroke-width: 0.5 } "
	      "#title { font-size: 17px } #sub { fill: #555 }</style>\n",
	      f);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", zoom_script);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f7f7f2\"/>\n", WIDTH,
		c->height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", WIDTH / 2);
	put_xml(f, title ? title : "CPU flame graph", SIZE_MAX);
	fprintf(f,
		"</text>\n<text id=\"sub\" x=\"%d\" y=\"42\" text-anchor=\"middle\">%" PRIu64 " %s",
		WIDTH / 2, c->all, c->unit);
	if (m->frequency_hz && !strcmp(c->unit, "samples"))
		fprintf(f, " at %" PRIu32 " Hz", m->frequency_hz);
	if (m->duration_nano)
		fprintf(f, " over %.1f s", m->duration_nano / 1e9);
	fputs("</text>\n", f);
	fprintf(f,
		"<text id=\"unzoom\" x=\"%d\" y=\"24\" style=\"display: none; cursor: pointer\">"
		"Reset zoom</text>\n",
		XPAD);
	/* The search box: an XHTML input, as SVG has no text field of its own. */
	fprintf(f,
		"<foreignObject x=\"%d\" y=\"8\" width=\"%d\" height=\"24\">"
		"<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
		"placeholder=\"Search (regex)\" title=\"frames whose name matches turn magenta\" "
		"style=\"width: 100%%; box-sizing: border-box; font: 12px Verdana, sans-serif\"/>"
		"</foreignObject>\n"
		"<text id=\"matched\" x=\"%d\" y=\"46\" text-anchor=\"end\"></text>\n"
		"<g id=\"frames\">\n",
		WIDTH - XPAD - SEARCH_W, SEARCH_W, WIDTH - XPAD);
}

int flamegraph__write_svg(const struct profile *p, const char *path, const char *title)
{
	return flamegraph__write_svg_type(p, path, title, PROFILE_CPU);
}

int flamegraph__write_svg_type(const struct profile *p, const char *path, const char *title,
			       uint32_t type)
{
	static const int all_rgb[3] = {200, 200, 200};
	const struct profile_type_info *ti = profile__type_info(type);
	struct out_file of = {0};
	struct stack_tree *t = NULL;
	struct svg_ctx c = {0};
	int err = 0;

	if (!ti)
		return -EINVAL;
	c.unit = type == PROFILE_CPU			? "samples"
		 : !strcmp(ti->values[1].unit, "bytes") ? "bytes"
							: "ns";
	t = stack_tree__new_type(p, type);
	if (!t) {
		err = -errno;
		goto cleanup;
	}
	c.all = stack_tree__total(t);
	c.min = c.all * MIN_FRACTION;
	c.scale = c.all ? (double)(WIDTH - 2 * XPAD) / c.all : 0;
	c.levels = 1;
	err = stack_tree__walk(t, svg__measure, &c);
	if (err)
		goto cleanup;
	c.height = TOP + c.levels * FRAME_H + BOTTOM;

	err = out_file__open(&of, path);
	if (err)
		goto cleanup;
	c.f = of.f;
	svg__header(&c, p, title);
	svg__frame(&c, "all", 0, 0, c.all, all_rgb);
	err = stack_tree__walk(t, svg__draw, &c);
	if (err)
		goto cleanup;
	fputs("</g>\n</svg>\n", c.f);
	err = out_file__commit(&of);

cleanup:
	out_file__abort(&of);
	stack_tree__free(t);
	return err;
}
