/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names as the profile holds them: the symbolizer's frames (an inline chain) become a
 * location's lines; and locations made without a name are named again when the debug file of
 * their file arrives (resolve__name_again()).
 */
#include <stdlib.h>
#include <string.h>

#include "resolve/objtally.h"
#include "resolve/resolve.h"
#include "resolve/resolve_impl.h"
#include "symbols/shortname.h"
#include "symbols/symbolize.h"

/* The lines of @n symbolizer frames (at most MAX_INLINE), innermost first. Returns their number. */
static int frames_to_lines(struct profile *p, const struct sym_frame *frames, int n,
			   struct profile_line *lines, int short_names)
{
	struct profile_function f;
	char shortened[1024];
	const char *prev = NULL; /* full name of lines[out - 1] */
	int out = 0;

	for (int i = 0; i < n; i++) {
		const char *name = frames[i].function ? frames[i].function : frames[i].system_name;
		const char *full = name;

		/*
		 * A function "inlined into itself" (glibc's debug info says so of aliases such
		 * as __libc_write) is one frame: keep the innermost line, drop its repeat. Full
		 * names compared: two overloads that --short-names shows alike stay two frames.
		 */
		if (out && full && prev && !strcmp(full, prev))
			continue;

		f.name = 0;
		/* Go names keep their "(*T)": only C++ and Rust forms are trimmed. */
		if (short_names && name && !frames[i].go) {
			size_t len = strlen(name) + 1;
			char *buf = len <= sizeof(shortened) ? shortened : malloc(len);

			/* out of memory: the full name, which is never wrong */
			if (buf && shortname__trim(name, buf, len) >= 0)
				f.name = profile__intern_string(p, buf);
			if (buf != shortened)
				free(buf);
		}
		if (!f.name)
			f.name = profile__intern_string(p, name);
		f.system_name =
		    profile__intern_string(p, frames[i].system_name ? frames[i].system_name : full);
		f.filename = profile__intern_string(p, frames[i].file);
		lines[out].function = profile__intern_function(p, &f);
		lines[out].line = frames[i].line;
		prev = full;
		out++;
	}
	return out;
}

uint32_t resolve_names__intern_frames(struct profile *p, uint32_t mapping, uint64_t address,
				      enum frame_kind kind, enum profile_pc at,
				      const struct sym_frame *frames, int n, int short_names)
{
	struct profile_line lines[MAX_INLINE];
	int out = frames_to_lines(p, frames, n, lines, short_names);

	return profile__intern_code_location(p, mapping, address, kind, at, lines, out);
}

/*
 * The lines naming the code of @obj at file offset @off (@at: a return address is named at the
 * call before it) into @lines (MAX_INLINE); their number, 0 when unnamed or unreadable.
 */
static int name_code(struct resolve *r, struct profile *p, struct elf_object *obj, uint64_t off,
		     enum profile_pc at, struct profile_line *lines)
{
	struct sym_frame frames[MAX_INLINE];
	uint64_t vaddr;
	int n;

	if (elf_object__file_offset_to_vaddr(obj, off - (at == PC_RETURN), &vaddr))
		return 0;
	n = symcache__lookup(r->syms, obj, vaddr, frames, MAX_INLINE);
	return n > 0 ? frames_to_lines(p, frames, n, lines, r->short_names) : 0;
}

int resolve__name_again(struct resolve *r, struct profile *p)
{
	uint32_t nloc = profile__nlocations(p), i;
	struct profile_line lines[MAX_INLINE], other[MAX_INLINE];
	int named = 0, n;

	for (i = 1; i < nloc; i++) {
		const struct profile_location *loc = profile__location(p, i);
		const struct profile_mapping *m;
		struct elf_object *obj;
		const char *id;
		uint64_t off;

		if (loc->kind != FRAME_NATIVE || loc->nlines || !loc->mapping)
			continue;
		m = profile__mapping(p, loc->mapping);
		id = m->build_id ? profile__string(p, m->build_id) : NULL;
		obj = id && *id ? symcache__find_build_id(r->syms, id) : NULL;
		if (!obj || loc->address < m->memory_start)
			continue;
		off = loc->address - m->memory_start + m->file_offset;
		n = name_code(r, p, obj, off,
			      loc->roles & PROFILE_ROLE(PC_RETURN) ? PC_RETURN : PC_EXACT, lines);
		/* One location met both as a leaf and as a return address: only if both agree. */
		if (n > 0 && loc->roles == (PROFILE_ROLE(PC_RETURN) | PROFILE_ROLE(PC_EXACT)) &&
		    !profile_lines_equal(lines, (uint32_t)n, other,
					 (uint32_t)name_code(r, p, obj, off, PC_EXACT, other)))
			continue;
		if (n > 0 && !profile__set_location_lines(p, i, lines, (uint32_t)n)) {
			named++;
			objtally__mark_named(r->objs, obj);
			if (r->stats.frames_unsymbolized)
				r->stats.frames_unsymbolized--;
		}
	}
	return named;
}
