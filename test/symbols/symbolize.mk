# Unit tests of the symbolizer (exporter/symbols/symbolize.h, ksyms.c, procmaps.c) and the small programs
# they symbolize. The programs are built here, in every variant a real host meets: with and
# without DWARF, PIE and not, stripped to .dynsym, split debug info (.gnu_debuglink, the build-id
# tree), no build ID, a shared library, C++, and broken files.

SYM_PROGS   := $(BUILD)/test/progs
SYM_CC      = $(CC) -O2 -Wall -DVARIANT='"$(notdir $@)"'
SYM_CXX     = $(CXX) -O2 -Wall -DVARIANT='"$(notdir $@)"'
SYM_OBJCOPY ?= objcopy
SYM_STRIP   ?= strip

SYM_PROG_FILES := $(addprefix $(SYM_PROGS)/, \
	cprog-pie cprog-zdebug cprog-nopie cprog-nodebug cprog-dynsym cprog-nobuildid \
	cprog-split cprog-split.debug cprog-splitnb cprog-splitnb.debug cprog-subdir .debug/cprog-subdir.debug cprog-bid \
	cprog-trunc cprog-short cprog-garbled not-elf \
	cxxprog libsym.so)

$(SYM_PROGS)/cprog-pie: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie $< -o $@

# DWARF in SHF_COMPRESSED (zlib) sections, as in Debian's -dbg packages.
$(SYM_PROGS)/cprog-zdebug: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie $< -o $@.full
	$(Q)$(SYM_OBJCOPY) --compress-debug-sections=zlib $@.full $@

$(SYM_PROGS)/cprog-nopie: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fno-pie -no-pie $< -o $@

$(SYM_PROGS)/cprog-nodebug: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g0 -fPIE -pie $< -o $@

# Only .dynsym left: -rdynamic exports the functions, strip drops .symtab.
$(SYM_PROGS)/cprog-dynsym: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie -rdynamic $< -o $@.full
	$(Q)$(SYM_STRIP) --strip-all $@.full -o $@

$(SYM_PROGS)/cprog-nobuildid: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie -Wl,--build-id=none $< -o $@

# Split debug info found through .gnu_debuglink next to the binary.
$(SYM_PROGS)/cprog-split $(SYM_PROGS)/cprog-split.debug &: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie $< -o $(SYM_PROGS)/cprog-split.full
	$(Q)$(SYM_OBJCOPY) --only-keep-debug $(SYM_PROGS)/cprog-split.full $(SYM_PROGS)/cprog-split.debug
	$(Q)$(SYM_STRIP) --strip-all $(SYM_PROGS)/cprog-split.full -o $(SYM_PROGS)/cprog-split
	$(Q)cd $(SYM_PROGS) && $(SYM_OBJCOPY) --add-gnu-debuglink=cprog-split.debug cprog-split

# Without a build ID, only the debuglink CRC tells the right debug file from a stale one.
$(SYM_PROGS)/cprog-splitnb $(SYM_PROGS)/cprog-splitnb.debug &: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie -Wl,--build-id=none $< -o $(SYM_PROGS)/cprog-splitnb.full
	$(Q)$(SYM_OBJCOPY) --only-keep-debug $(SYM_PROGS)/cprog-splitnb.full \
		$(SYM_PROGS)/cprog-splitnb.debug
	$(Q)$(SYM_STRIP) --strip-all $(SYM_PROGS)/cprog-splitnb.full -o $(SYM_PROGS)/cprog-splitnb
	$(Q)cd $(SYM_PROGS) && $(SYM_OBJCOPY) --add-gnu-debuglink=cprog-splitnb.debug cprog-splitnb

# Same, with the debug file in the .debug/ subdirectory.
$(SYM_PROGS)/cprog-subdir $(SYM_PROGS)/.debug/cprog-subdir.debug &: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(SYM_PROGS)/.debug
	$(Q)$(SYM_CC) -g -fPIE -pie $< -o $(SYM_PROGS)/cprog-subdir.full
	$(Q)$(SYM_OBJCOPY) --only-keep-debug $(SYM_PROGS)/cprog-subdir.full \
		$(SYM_PROGS)/.debug/cprog-subdir.debug
	$(Q)$(SYM_STRIP) --strip-all $(SYM_PROGS)/cprog-subdir.full -o $(SYM_PROGS)/cprog-subdir
	$(Q)cd $(SYM_PROGS) && $(SYM_OBJCOPY) --add-gnu-debuglink=.debug/cprog-subdir.debug cprog-subdir

# Split debug info found only through <debug_dir>/.build-id/xx/rest.debug (no debuglink).
$(SYM_PROGS)/cprog-bid: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie $< -o $@.full
	$(Q)id=$$(readelf -n $@.full | sed -n 's/.*Build ID: *//p'); \
	    test -n "$$id" || { echo "$@: no build ID" >&2; exit 1; }; \
	    dir=$(SYM_PROGS)/debugroot/.build-id/$$(echo $$id | cut -c1-2); \
	    mkdir -p $$dir && \
	    $(SYM_OBJCOPY) --only-keep-debug $@.full $$dir/$$(echo $$id | cut -c3-).debug
	$(Q)$(SYM_STRIP) --strip-all $@.full -o $@

# Broken files: cut in half, cut inside the program headers, and overwritten in the middle.
$(SYM_PROGS)/cprog-trunc: $(SYM_PROGS)/cprog-pie
	$(call msg,GEN,$@)
	$(Q)head -c $$(( $$(stat -c %s $<) / 2 )) $< > $@

$(SYM_PROGS)/cprog-short: $(SYM_PROGS)/cprog-pie
	$(call msg,GEN,$@)
	$(Q)head -c 100 $< > $@

$(SYM_PROGS)/cprog-garbled: $(SYM_PROGS)/cprog-pie
	$(call msg,GEN,$@)
	$(Q)cp $< $@
	$(Q)size=$$(stat -c %s $<); \
	    head -c $$(( size / 2 )) /dev/zero | tr '\0' '\377' | \
	    dd of=$@ bs=1 seek=$$(( size / 4 )) conv=notrunc status=none

$(SYM_PROGS)/not-elf: test/symbols/progs/cprog.c
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cp $< $@

$(SYM_PROGS)/cxxprog: test/symbols/progs/cxxprog.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CXX) -g -fPIE -pie $< -o $@

$(SYM_PROGS)/libsym.so: test/symbols/progs/libsym.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIC -shared $< -o $@

SYM_TEST_CFLAGS := -DPROGS_DIR='"$(abspath $(SYM_PROGS))"' -DSRC_DIR='"$(abspath test/symbols/progs)"'
SYM_TEST_LIBS   := $(LDLIBS) -lcmocka

# The Makefile's bare .SECONDARY: makes every target intermediate, and make 4.3 does not rebuild
# a missing intermediate for an up-to-date target: a phony target always looks at them.
.PHONY: sym-progs
sym-progs: $(SYM_PROG_FILES)

$(BUILD)/test/test_symbolize: test/symbols/test_symbolize.c $(LIBSPANPROF) | sym-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(SYM_TEST_CFLAGS) $< $(LIBSPANPROF) $(SYM_TEST_LIBS) -o $@

$(BUILD)/test/test_procmaps: test/process/test_procmaps.c $(OBJ)/process/procmaps.o \
			     $(OBJ)/util/regfile.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(OBJ)/process/procmaps.o $(OBJ)/util/regfile.o $(LDLIBS) -lcmocka \
		-o $@

$(BUILD)/test/test_ksyms: test/symbols/test_ksyms.c $(OBJ)/symbols/ksyms.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(OBJ)/symbols/ksyms.o $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_symbolize $(BUILD)/test/test_procmaps $(BUILD)/test/test_ksyms
