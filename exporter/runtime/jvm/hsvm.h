/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hsvm: the field layouts a HotSpot JVM exports about itself for the Serviceability Agent, read
 * out of a running JVM's memory once per libjvm.so file.
 *
 * libjvm.so exports (dynamic symbols, src/hotspot/share/runtime/vmStructs.cpp):
 *   gHotSpotVMStructs          -> array of VMStructEntry {typeName, fieldName, typeString,
 *                                 isStatic, offset, address}, ended by a NULL typeName;
 *   gHotSpotVMTypes            -> array of VMTypeEntry {typeName, superclassName, isOopType,
 *                                 isIntegerType, isUnsigned, size};
 *   gHotSpotVMIntConstants     -> array of {name, int value};
 *   gHotSpotVMLongConstants    -> array of {name, uint64_t value};
 * and, for each array, the offsets of those members and the entry's stride
 * (gHotSpotVMStructEntryTypeNameOffset, ..., gHotSpotVMStructEntryArrayStride, and the same for
 * types and constants). The pointers are relocated at load, so the tables are read from the
 * process's memory (procmaps__read_mem()), not from the file. Their strings are C strings in
 * libjvm's .rodata.
 *
 * What is kept: every field (type, field) -> offset (instance field) or address (static field,
 * an address in the process), every type -> size, every constant -> value. Lookups are by
 * exact names as vmStructs.cpp spells them ("CodeBlob", "_frame_size"; "nmethod", "_method";
 * "Symbol", "_body"; constants "frame::interpreter_frame_sender_sp_offset").
 *
 * Ownership: hsvm__read()/hsvm__new() return a table the caller frees with hsvm__free(); the
 * table is not tied to the process (its values are plain numbers and addresses) and serves
 * every process mapping the same libjvm.so file only for offsets and sizes: static addresses
 * differ per process (load address), see hsvm__static_bias().
 *
 * Errors: -errno; the tables are bounded (HSVM_MAX_ENTRIES entries, names of HSVM_MAX_NAME
 * bytes): a table past those limits, or unreadable, is refused (-EINVAL, -EFAULT).
 * Not thread safe.
 */
#ifndef SPANPROF_RUNTIME_JVM_HSVM_H
#define SPANPROF_RUNTIME_JVM_HSVM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Entries read from one table at most (JDK 17 has about 800 fields, 1000 types). */
#define HSVM_MAX_ENTRIES 8192
/* Longest type, field or constant name read (bytes, NUL included). */
#define HSVM_MAX_NAME 128

struct hsvm;

/* The dynamic symbols of libjvm.so the tables are found from, as load-relative addresses
 * (st_value) of one file; 0: the symbol is absent. Filled by the caller from the ELF file. */
struct hsvm_symbols {
	uint64_t structs, structs_stride, structs_type_name, structs_field_name,
	    structs_type_string, structs_is_static, structs_offset, structs_address;
	uint64_t types, types_stride, types_type_name, types_superclass, types_size;
	uint64_t int_consts, int_stride, int_name, int_value;
	uint64_t long_consts, long_stride, long_name, long_value;
};

/*
 * Reads the tables of the JVM in process @pid whose libjvm.so is loaded at @load_bias (symbol
 * st_value + @load_bias = address in the process) with symbols @sym. NULL + *@err (-errno:
 * -ENOENT a symbol missing, -EFAULT unreadable memory, -EINVAL a table past the limits,
 * -ENOMEM).
 */
struct hsvm *hsvm__read(pid_t pid, uint64_t load_bias, const struct hsvm_symbols *sym, int *err);

/* An empty table, to be filled with hsvm__add_*() (tests, replay). NULL on ENOMEM. */
struct hsvm *hsvm__new(void);
/* Adds one entry (names copied); 0 or -ENOMEM. */
int hsvm__add_field(struct hsvm *vm, const char *type, const char *field, bool is_static,
		    uint64_t offset_or_address);
int hsvm__add_type(struct hsvm *vm, const char *type, uint64_t size);
int hsvm__add_const(struct hsvm *vm, const char *name, int64_t value);

/* NULL is a no-op. */
void hsvm__free(struct hsvm *vm);

/*
 * The instance field @type::@field: 0 and its offset (bytes from the object's start) in
 * *@offset, or -ENOENT (absent, or a static field).
 */
int hsvm__field(const struct hsvm *vm, const char *type, const char *field, uint64_t *offset);
/* The static field @type::@field: 0 and its address in the process, or -ENOENT. */
int hsvm__static(const struct hsvm *vm, const char *type, const char *field, uint64_t *addr);
/* sizeof(@type): 0 and *@size, or -ENOENT. */
int hsvm__type_size(const struct hsvm *vm, const char *type, uint64_t *size);
/* An int or long constant: 0 and *@value, or -ENOENT. */
int hsvm__const(const struct hsvm *vm, const char *name, int64_t *value);

#endif /* SPANPROF_RUNTIME_JVM_HSVM_H */
