/* SPDX-License-Identifier: Apache-2.0 */
/*
 * v8meta: V8's postmortem metadata in a node executable (or any file embedding V8): the v8dbg_*
 * data symbols that V8's tools/gen-postmortem-metadata.py generates (node builds them in since
 * 0.x: llnode, the OpenTelemetry profiler and mdb_v8 read them). Each is an int (4 bytes) whose
 * initial value, in .data, is a frame slot offset (v8dbg_off_fp_*), a class field offset
 * (v8dbg_class_<Class>__<field>__<type>), an instance type (v8dbg_type_<Class>__<TYPE>), a
 * frame type (v8dbg_frametype_*) or a constant (v8dbg_HeapObjectTag, v8dbg_SmiShiftSize...).
 * Reads nothing but the file.
 */
#ifndef SPANPROF_RUNTIME_V8_V8META_H
#define SPANPROF_RUNTIME_V8_V8META_H

#include <gelf.h>
#include <stdint.h>

/*
 * What the agent uses: frame slots (relative to the frame pointer), field offsets (relative to
 * the untagged object address), instance types and string tags.
 */
struct v8meta {
	int16_t fp_context, fp_function, fp_bytecode_array, fp_bytecode_offset;
	uint16_t heap_object_map, map_instance_type;
	uint16_t jsfunction_shared;
	uint16_t sfi_name_or_scope_info, sfi_script_or_debug_info;
	uint16_t script_name, script_line_ends;
	uint16_t string_length, seq_one_byte_chars, seq_two_byte_chars;
	uint16_t cons_first, cons_second, thin_actual, sliced_parent, sliced_offset;
	uint16_t fixed_array_length, fixed_array_data;
	uint16_t scope_info_first_vars, scope_info_ncontext_locals; /* slot indexes */
	/* Instance types. JSFunction's subclasses (class constructors, ...) follow it: [first,
	 * last] is JS_FUNCTION_TYPE up to the next type the metadata names (at most 32 more). */
	uint16_t type_jsfunction_first, type_jsfunction_last;
	uint16_t type_sfi, type_script, type_scope_info, type_bytecode_array, type_fixed_array;
	uint16_t first_nonstring_type;
	uint16_t string_representation_mask, string_encoding_mask;
	uint16_t seq_string_tag, cons_string_tag, thin_string_tag, sliced_string_tag;
	uint16_t one_byte_string_tag;
	unsigned int n_symbols; /* v8dbg_* symbols the file defines */
};

/*
 * Reads the metadata of @elf into @out (zeroed first). Returns 0; -ENOENT: no v8dbg_* symbols
 * (not V8: any other file); -ENOTSUP: V8, but a value the agent needs is missing or the layout
 * is one it does not read (pointer compression: TaggedSize 4; Smis not in the upper 32 bits;
 * heap object tag not 1); -EINVAL: damaged ELF. Never crashes on a corrupt file.
 */
int v8meta__read(Elf *elf, struct v8meta *out);

#endif /* SPANPROF_RUNTIME_V8_V8META_H */
