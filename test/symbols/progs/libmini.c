// SPDX-License-Identifier: Apache-2.0
/*
 * Shared library for test_minidebuginfo, built as Fedora ships libraries: stripped, with the
 * local function symbols (mini_hidden) in .gnu_debugdata and the exported one (mini_visible)
 * in .dynsym only.
 */
volatile int mini_sink;

static __attribute__((noinline)) int mini_hidden(int x)
{
	return x * mini_sink + 3;
}

__attribute__((noinline)) int mini_visible(int x)
{
	return mini_hidden(x) - 1;
}
