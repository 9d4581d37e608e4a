// SPDX-License-Identifier: Apache-2.0
// Seed program of the ELF fuzz targets: C++ with exceptions (CIE augmentation "zPLR": personality,
// LSDA), a template and a namespace (mangled names for the demangler).
#include <stdexcept>

namespace seed {
template <typename T> __attribute__((noinline)) T twice(T v)
{
	if (v > 1000)
		throw std::runtime_error("too big");
	return v * 2;
}
} // namespace seed

int main(int argc, char **)
{
	try {
		return seed::twice<int>(argc * 2000);
	} catch (const std::exception &) {
		return 1;
	}
}
