// SPDX-License-Identifier: Apache-2.0
// C++ with exceptions: CIEs with personality and LSDA ("zPLR"), landing pads, cleanups.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Guard {
	std::string name;
	explicit Guard(std::string n) : name(std::move(n)) {}
	~Guard() { std::puts(name.c_str()); }
};

template <typename T> __attribute__((noinline)) T thrower(T v)
{
	Guard g("thrower");
	if (v > T(2))
		throw std::runtime_error("too big");
	return v * T(2);
}

__attribute__((noinline)) int catcher(int n)
{
	std::vector<std::unique_ptr<int>> v;
	try {
		for (int i = 0; i < n; i++)
			v.push_back(std::make_unique<int>(thrower(i)));
	} catch (const std::exception &e) {
		std::printf("caught %s\n", e.what());
		return -1;
	}
	return (int)v.size() + (int)thrower(1.5);
}

int main(int argc, char **)
{
	return catcher(argc + 4) == -1 ? 0 : 1;
}
