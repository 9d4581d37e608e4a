// SPDX-License-Identifier: Apache-2.0
/*
 * Not CPython, but named like it (built as python3.12) and defining two of its names,
 * _PyRuntime and PyCode_Type, as plain data, without the interpreter loop
 * (_PyEval_EvalFrameDefault): test_python.c checks that it is not taken for CPython.
 */
#include <unistd.h>

char _PyRuntime[4096] = {1};
char PyCode_Type[512] = {2};

int main(void)
{
	pause();
	return _PyRuntime[0] + PyCode_Type[0];
}
