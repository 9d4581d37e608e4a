# Unit tests of the CFI table builder (exporter/unwind/cfi.c) and the shared row lookup (bpf/unwind.h),
# checked row by row against `readelf --debug-dump=frames-interp`. The programs are built here in
# the variants whose CFI differs: -O0 (RBP based CFA), -O2 -fomit-frame-pointer, PIE and not,
# -static-pie, C++ with exceptions, a shared library, .debug_frame only, and .debug_frame only in
# a separate (compressed) debug file.

CFI_PROGS   := $(BUILD)/test/cfi-progs
CFI_CC      = $(CC) -Wall -DVARIANT='"$(notdir $@)"'
CFI_CXX     = $(CXX) -Wall
CFI_OBJCOPY ?= objcopy

CFI_PROG_FILES := $(addprefix $(CFI_PROGS)/, \
	cprog-O0 cprog-O2-nofp cprog-nopie cprog-static-pie cxxprog libcfi.so \
	cprog-debugframe cprog-mixed cprog-split cprog-split.debug)

$(CFI_PROGS)/cprog-O0: test/unwind/cfi-progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CC) -O0 -g -fPIE -pie $< -o $@

$(CFI_PROGS)/cprog-O2-nofp: test/unwind/cfi-progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CC) -O2 -fomit-frame-pointer -fPIE -pie $< -o $@

$(CFI_PROGS)/cprog-nopie: test/unwind/cfi-progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CC) -O2 -fomit-frame-pointer -fno-pie -no-pie $< -o $@

$(CFI_PROGS)/cprog-static-pie: test/unwind/cfi-progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CC) -O2 -fomit-frame-pointer -static-pie $< -o $@

$(CFI_PROGS)/cxxprog: test/unwind/cfi-progs/cxxprog.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CXX) -O2 -fomit-frame-pointer -fPIE -pie $< -o $@

$(CFI_PROGS)/libcfi.so: test/unwind/cfi-progs/libcfi.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CC) -O2 -fomit-frame-pointer -fPIC -shared $< -o $@

# Only .debug_frame: no unwind tables from the compiler, and the crt files' .eh_frame removed.
$(CFI_PROGS)/cprog-debugframe: test/unwind/cfi-progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CC) -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables $< -o $@.full
	$(Q)$(CFI_OBJCOPY) --remove-section .eh_frame --remove-section .eh_frame_hdr $@.full $@

# Both: the crt files' .eh_frame (_start...), the program's functions only in .debug_frame (as
# in a cgo program: gcc's code in .eh_frame, Go's in .debug_frame).
$(CFI_PROGS)/cprog-mixed: test/unwind/cfi-progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CFI_CC) -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables $< -o $@

# .debug_frame only in a separate debug file, with compressed sections (SHF_COMPRESSED).
$(CFI_PROGS)/cprog-split $(CFI_PROGS)/cprog-split.debug &: $(CFI_PROGS)/cprog-debugframe
	$(call msg,GEN,$@)
	$(Q)$(CFI_OBJCOPY) --only-keep-debug --compress-debug-sections=zlib $< $(CFI_PROGS)/cprog-split.debug
	$(Q)$(CFI_OBJCOPY) --strip-debug $< $(CFI_PROGS)/cprog-split

CFI_TEST_CFLAGS := -DCFI_PROGS_DIR='"$(abspath $(CFI_PROGS))"'

# A phony target looks at the programs on every run (see test/symbols/symbolize.mk).
.PHONY: cfi-progs
cfi-progs: $(CFI_PROG_FILES)

$(BUILD)/test/test_cfi: test/unwind/test_cfi.c $(OBJ)/unwind/cfi.o $(OBJ)/util/regfile.o | cfi-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(CFI_TEST_CFLAGS) $< $(OBJ)/unwind/cfi.o $(OBJ)/util/regfile.o $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_cfi
