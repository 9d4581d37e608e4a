// SPDX-License-Identifier: Apache-2.0
/*
 * shortname__trim(): demangled names in the forms c++filt (binutils) and rustc-demangle print
 * them, each with its display form.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "symbols/shortname.h"

static void check(const char *in, const char *want)
{
	char out[512];
	int n = shortname__trim(in, out, sizeof(out));

	if (n < 0 || strcmp(out, want))
		fail_msg("shortname__trim(\"%s\") = \"%s\" (%d), want \"%s\"", in, out, n, want);
	assert_int_equal(n, strlen(want));
}

static void test_c_and_plain_names(void **state)
{
	(void)state;
	check("main", "main");
	check("__libc_start_main", "__libc_start_main");
	check("[libfoo.so+0x2234]", "[libfoo.so+0x2234]");
	check("compute [clone .cold]", "compute [clone .cold]");
	check("ns::Foo::bar", "ns::Foo::bar");
}

static void test_cpp_parameters_and_qualifiers(void **state)
{
	(void)state;
	check("app::sort_words(std::vector<std::__cxx11::basic_string<char, "
	      "std::char_traits<char>, std::allocator<char> >, std::allocator<std::__cxx11::"
	      "basic_string<char, std::char_traits<char>, std::allocator<char> > > >&)",
	      "app::sort_words");
	check("ns::Foo::bar(int, char const*) const", "ns::Foo::bar");
	check("ns::Foo::get() const &&", "ns::Foo::get");
	check("ns::Foo::set(int) volatile noexcept", "ns::Foo::set");
	check("f(void (*)(int))", "f");
	check("hot_loop(int) [clone .cold]", "hot_loop [clone .cold]");
	check("foo(int) [clone .constprop.0] [clone .isra.0]",
	      "foo [clone .constprop.0] [clone .isra.0]");
}

static void test_cpp_templates_and_return_types(void **state)
{
	(void)state;
	check("std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>("
	      "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, "
	      "int const&)",
	      "std::vector::_M_realloc_insert");
	check("void std::__introsort_loop<int*, long, __gnu_cxx::__ops::_Iter_less_iter>(int*, "
	      "int*, long, __gnu_cxx::__ops::_Iter_less_iter)",
	      "std::__introsort_loop");
	check("unsigned long ns::count<char>(char const*)", "ns::count");
	check("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
	      "::_M_create[abi:cxx11](unsigned long&, unsigned long)",
	      "std::__cxx11::basic_string::_M_create");
	check("Foo<(anonymous namespace)::Bar>::baz()", "Foo::baz");
	check("std::function<void (int)>::operator()(int) const", "std::function::operator()");
}

static void test_cpp_scopes_lambdas_operators(void **state)
{
	(void)state;
	/* A lambda inside app::sort_words keeps its scope (issue 18). */
	check("app::sort_words(std::vector<int, std::allocator<int> >&)::{lambda(int const&, "
	      "int const&)#1}::operator()(int const&, int const&) const",
	      "app::sort_words::{lambda#1}::operator()");
	check("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper");
	check("std::basic_ostream<char, std::char_traits<char> >& std::operator<< "
	      "<std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, "
	      "char const*)",
	      "std::operator<<");
	check("Vec::operator[](unsigned long)", "Vec::operator[]");
	check("ns::Cmp::operator<(ns::Cmp const&) const", "ns::Cmp::operator<");
	check("ns::It::operator->() const", "ns::It::operator->");
	check("operator new(unsigned long)", "operator new");
	check("operator delete[](void*)", "operator delete[]");
	check("ns::Foo::operator bool() const", "ns::Foo::operator bool");
	check("my_operator_table(int)", "my_operator_table");
}

static void test_rust(void **state)
{
	(void)state;
	check("core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place");
	check("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",
	      "<alloc::vec::Vec as core::ops::drop::Drop>::drop");
	check("<<std::fs::File as std::io::Read>::Adapter<T> as core::fmt::Write>::write_str",
	      "<<std::fs::File as std::io::Read>::Adapter as core::fmt::Write>::write_str");
	check("std::rt::lang_start::{{closure}}", "std::rt::lang_start::{{closure}}");
	check("myapp::parse::<u32>", "myapp::parse");
	check("std::rt::lang_start_internal::h5e2fd2bc4fd23c8e", "std::rt::lang_start_internal");
	check("myapp::h::hello", "myapp::h::hello"); /* not a hash */
}

/* Names past 1 KiB are common in the STL (an iterator of strings, a comparator lambda). */
static void test_long_name(void **state)
{
	static const char str[] = "std::__cxx11::basic_string<char, std::char_traits<char>, "
				  "std::allocator<char> >";
	char in[4096], out[4096];
	int n = 0;

	(void)state;
	n += snprintf(in + n, sizeof(in) - n, "void std::__unguarded_linear_insert<");
	for (int i = 0; i < 12; i++)
		n += snprintf(in + n, sizeof(in) - n, "std::vector<%s, std::allocator<%s > >, ",
			      str, str);
	n += snprintf(in + n, sizeof(in) - n,
		      "__gnu_cxx::__ops::_Val_comp_iter<app::sort_words(std::vector<%s>&)::"
		      "{lambda(%s const&, %s const&)#1}> >(int)",
		      str, str, str);
	assert_true(n > 2048 && n < (int)sizeof(in));
	assert_int_equal(shortname__trim(in, out, sizeof(out)),
			 strlen("std::__unguarded_linear_insert"));
	assert_string_equal(out, "std::__unguarded_linear_insert");
}

static void test_bad_input_is_copied(void **state)
{
	char out[64];

	(void)state;
	check("broken<int(", "broken<int(");
	check("a)b", "a)b");
	check("x>y", "x>y");
	check("(int)", "(int)"); /* nothing would be left */
	assert_int_equal(shortname__trim("abcdef", out, 6), -ENAMETOOLONG);
	assert_int_equal(shortname__trim("", out, 1), 0);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_c_and_plain_names),
	    cmocka_unit_test(test_cpp_parameters_and_qualifiers),
	    cmocka_unit_test(test_cpp_templates_and_return_types),
	    cmocka_unit_test(test_cpp_scopes_lambdas_operators),
	    cmocka_unit_test(test_rust),
	    cmocka_unit_test(test_long_name),
	    cmocka_unit_test(test_bad_input_is_copied),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
