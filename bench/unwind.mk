# CFI table build benchmark (bench/unwind_tables.c): the largest shared library under /usr/lib
# (libLLVM on a machine with clang) and libc, timed against readelf on the same files.

UNWIND_BENCH_FILES ?= $(shell find /usr/lib -name '*.so*' -type f -size +1M -printf '%s %p\n' \
	2>/dev/null | sort -rn | head -1 | cut -d' ' -f2) /lib/x86_64-linux-gnu/libc.so.6

$(BUILD)/bench/unwind_tables: bench/unwind_tables.c $(OBJ)/cfi.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(OBJ)/cfi.o $(LDLIBS) -o $@

.PHONY: bench-unwind
bench-unwind: $(BUILD)/bench/unwind_tables
	$(Q)$(BUILD)/bench/unwind_tables $(UNWIND_BENCH_FILES)

bench: bench-unwind
