/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shortname: a demangled C++ or Rust function name trimmed for display (--short-names).
 */
#ifndef SPANPROF_SHORTNAME_H
#define SPANPROF_SHORTNAME_H

#include <stddef.h>

/*
 * Writes into @out (@size bytes, NUL-terminated) @name without what a reader of a flame graph
 * rarely needs, keeping every scope: parameter lists and the qualifiers after them (`const`,
 * `&`, `&&`, `volatile`, `noexcept`), template and generic arguments (`<...>`, Rust's `::<...>`),
 * ABI tags (`[abi:cxx11]`), the return type of a function template and Rust's legacy hash
 * suffix (`::h` + 16 hex digits). Kept: `(anonymous namespace)`, operator names (`operator()`,
 * `operator<<`, `operator new`), lambda and closure names (`{lambda#1}` from
 * `{lambda(int)#1}`, `{{closure}}`), Rust's qualified paths with their own arguments trimmed
 * (`<alloc::vec::Vec as core::ops::drop::Drop>::drop`) and suffixes such as
 * ` [clone .cold]`. Forms are those c++filt and rustc-demangle print (Itanium C++ ABI
 * demangler output, Rust legacy and v0 manglings). A name with unbalanced brackets is copied
 * unchanged, so nothing is ever made up. Returns the length written, or -ENAMETOOLONG when
 * @size is smaller than strlen(@name) + 1 (the result is never longer than @name).
 */
int shortname__trim(const char *name, char *out, size_t size);

#endif /* SPANPROF_SHORTNAME_H */
