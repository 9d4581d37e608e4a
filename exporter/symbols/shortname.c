// SPDX-License-Identifier: Apache-2.0
/*
 * shortname: one pass over the demangled name at bracket depth 0, recursing into the brackets
 * whose content stays (qualified paths, lambda names).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "symbols/shortname.h"

struct buf {
	char *p;
	size_t n;
};

static void put(struct buf *b, const char *s, size_t n)
{
	memcpy(b->p + b->n, s, n); /* the output never outgrows the input: checked up front */
	b->n += n;
}

/* Index of the bracket closing the one at @s[@i], or -1. Other brackets nest inside. */
static long closing(const char *s, size_t len, size_t i)
{
	char stack[256];
	int depth = 0;

	for (size_t k = i; k < len; k++) {
		char c = s[k], want;

		if (c == '<' || c == '(' || c == '[' || c == '{') {
			/* "->" inside template arguments is not a bracket */
			if (depth == (int)sizeof(stack))
				return -1;
			stack[depth++] = c;
			continue;
		}
		if (c != '>' && c != ')' && c != ']' && c != '}')
			continue;
		if (c == '>' && k > 0 && s[k - 1] == '-')
			continue;
		want = c == '>' ? '<' : c == ')' ? '(' : c == ']' ? '[' : '{';
		if (!depth || stack[depth - 1] != want)
			return -1;
		if (--depth == 0)
			return (long)k;
	}
	return -1;
}

static bool starts(const char *s, size_t len, size_t i, const char *word)
{
	size_t n = strlen(word);

	return i + n <= len && !memcmp(s + i, word, n);
}

/* Whether @s[@i] starts a name component: the start, or right after "::" or a space. */
static bool component_start(const char *s, size_t i)
{
	return i == 0 || (i >= 2 && s[i - 1] == ':' && s[i - 2] == ':') || s[i - 1] == ' ' ||
	       s[i - 1] == '<';
}

/* Skips the qualifiers after a parameter list: returns the index after them. */
static size_t skip_qualifiers(const char *s, size_t len, size_t i)
{
	static const char *const quals[] = {" const", " volatile", " &&",      " &",
					    "&&",     "&",	   " noexcept"};

	for (bool again = true; again;) {
		again = false;
		for (size_t q = 0; q < sizeof(quals) / sizeof(*quals); q++) {
			size_t n = strlen(quals[q]);

			if (starts(s, len, i, quals[q]) &&
			    (i + n == len || !isalnum((unsigned char)s[i + n]))) {
				i += n;
				again = true;
				break;
			}
		}
	}
	return i;
}

/* Copies the operator name at @s[@i] ("operator" already matched); returns the index after. */
static size_t copy_operator(struct buf *b, const char *s, size_t len, size_t i)
{
	static const char *const ops[] = {
	    "()", "[]", "<<=", ">>=", "->*", "<=>", "<<", ">>", "<=", ">=", "->", "<",	">",
	    "==", "!=", "&&",  "||",  "++",  "--",  "+=", "-=", "*=", "/=", "%=", "&=", "|=",
	    "^=", "+",	"-",   "*",   "/",   "%",   "^",  "&",	"|",  "~",  "!",  "=",	","};
	size_t at = i + 8;

	put(b, s + i, 8);
	for (size_t k = 0; k < sizeof(ops) / sizeof(*ops); k++)
		if (starts(s, len, at, ops[k])) {
			put(b, ops[k], strlen(ops[k]));
			return at + strlen(ops[k]);
		}
	return at; /* "operator new", a conversion "operator int": the rest is copied as names */
}

/*
 * Trims @s[0..@len) into @b. @top: the whole name (its return type may go). Returns 0, or -1
 * on unbalanced brackets.
 */
static int trim(struct buf *b, const char *s, size_t len, bool top)
{
	size_t start = b->n;

	for (size_t i = 0; i < len;) {
		char c = s[i];
		long end;

		if (starts(s, len, i, "operator") && component_start(s, i) &&
		    (i + 8 == len || (!isalnum((unsigned char)s[i + 8]) && s[i + 8] != '_'))) {
			i = copy_operator(b, s, len, i);
			continue;
		}
		if (c == '(' && starts(s, len, i, "(anonymous namespace)")) {
			put(b, s + i, 21);
			i += 21;
			continue;
		}
		if (c != '<' && c != '(' && c != '[' && c != '{') {
			put(b, s + i, 1);
			i++;
			continue;
		}
		end = closing(s, len, i);
		if (end < 0)
			return -1;
		if (c == '<' && (i == 0 || s[i - 1] == '<')) {
			/* a qualified path <T as Trait>: kept, its own arguments trimmed */
			put(b, "<", 1);
			if (trim(b, s + i + 1, (size_t)end - i - 1, false))
				return -1;
			put(b, ">", 1);
		} else if (c == '{') { /* {lambda(int)#1}, {{closure}} */
			put(b, "{", 1);
			if (trim(b, s + i + 1, (size_t)end - i - 1, false))
				return -1;
			put(b, "}", 1);
		} else if (c == '[' && !starts(s, len, i, "[abi:")) {
			put(b, s + i, (size_t)end - i + 1); /* [clone .cold] */
		} else if (c == '<' && b->n >= start + 2 && b->p[b->n - 1] == ':' &&
			   b->p[b->n - 2] == ':') {
			b->n -= 2; /* Rust's turbofish ::<...> goes with its "::" */
		} else if (c == '(') {
			i = skip_qualifiers(s, len, (size_t)end + 1);
			continue;
		}
		i = (size_t)end + 1;
	}
	while (b->n > start && b->p[b->n - 1] == ' ')
		b->n--;
	if (top && b->n > start && b->p[start] != '<') {
		/* "void ns::f<int>(int)" became "void ns::f": the return type goes */
		for (size_t k = b->n; k-- > start;) {
			int depth = 0;
			bool ok = true;

			if (b->p[k] != ' ')
				continue;
			for (size_t j = start; j < k; j++) {
				char c = b->p[j];

				depth += c == '(' || c == '{' || c == '<' || c == '[';
				depth -= c == ')' || c == '}' || c == '>' || c == ']';
			}
			/* keep "operator new", "[clone .cold]" and spaces inside brackets */
			ok = depth == 0 &&
			     !(k >= start + 8 && !memcmp(b->p + k - 8, "operator", 8)) &&
			     b->p[k + 1] != '[';
			for (size_t j = start; ok && j + 8 <= k; j++)
				if (!memcmp(b->p + j, "operator", 8))
					ok = false;
			if (ok) {
				memmove(b->p + start, b->p + k + 1, b->n - k - 1);
				b->n -= k + 1 - start;
				break;
			}
		}
	}
	return 0;
}

/* Whether @s ends in Rust's legacy hash "::h" + 16 hex digits; returns the length without it. */
static size_t strip_rust_hash(const char *s, size_t len)
{
	if (len < 19 || memcmp(s + len - 19, "::h", 3))
		return len;
	for (size_t i = len - 16; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return len;
	return len - 19;
}

int shortname__trim(const char *name, char *out, size_t size)
{
	size_t len = strlen(name);
	struct buf b = {.p = out};

	if (size < len + 1)
		return -ENAMETOOLONG;
	len = strip_rust_hash(name, len);
	if (trim(&b, name, len, true) || !b.n) {
		memcpy(out, name, len); /* unbalanced, or nothing left: as it is */
		b.n = len;
	}
	out[b.n] = '\0';
	return (int)b.n;
}
