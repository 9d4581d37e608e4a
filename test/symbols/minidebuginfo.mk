# Unit tests of MiniDebugInfo (exporter/symbols/minidebuginfo.c through the symbolizer): binaries
# built the way Fedora's find-debuginfo (add_minidebug) packages them. From the unstripped file:
# the debug file (objcopy --only-keep-debug), the stripped binary, the keep list (function
# symbols of the debug file that .dynsym lacks, nm + comm), a copy of the debug file with only
# those symbols and no .debug_* sections (objcopy -S --keep-symbols -R), xz, and
# objcopy --add-section .gnu_debugdata. Corrupt variants: a truncated xz stream, and an xz
# stream that does not hold an ELF file.

MDI_PROGS := $(BUILD)/test/mdi-progs
MDI_FILES := $(addprefix $(MDI_PROGS)/,libmini.so cprog-mdi libmini-truncxz.so libmini-notelf.so)

# $(call mdi_build,UNSTRIPPED,OUT): Fedora-style stripped OUT with .gnu_debugdata.
define mdi_build
	$(Q)$(SYM_OBJCOPY) --only-keep-debug $(1) $(2).debug
	$(Q)$(SYM_STRIP) --strip-all $(1) -o $(2)
	$(Q)nm -D $(2) --format=posix --defined-only | awk '{ print $$1 }' | sort > $(2).dynsyms
	$(Q)nm $(2).debug --format=sysv --defined-only | \
		awk -F '|' '$$4 ~ "FUNC" { gsub(/ +$$/, "", $$1); print $$1 }' | sort > $(2).funcsyms
	$(Q)comm -13 $(2).dynsyms $(2).funcsyms > $(2).keep
	$(Q)test -s $(2).keep || { echo "$(2): empty keep list" >&2; exit 1; }
	$(Q)$(SYM_OBJCOPY) -S --remove-section '.debug_*' --remove-section .gdb_index \
		--remove-section .comment --keep-symbols=$(2).keep $(2).debug $(2).mini
	$(Q)rm -f $(2).mini.xz && xz $(2).mini
endef

$(MDI_PROGS)/libmini.so: test/symbols/progs/libmini.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIC -shared $< -o $@.full
	$(call mdi_build,$@.full,$@)
	$(Q)$(SYM_OBJCOPY) --add-section .gnu_debugdata=$@.mini.xz $@

$(MDI_PROGS)/cprog-mdi: test/symbols/progs/cprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(SYM_CC) -g -fPIE -pie $< -o $@.full
	$(call mdi_build,$@.full,$@)
	$(Q)$(SYM_OBJCOPY) --add-section .gnu_debugdata=$@.mini.xz $@

$(MDI_PROGS)/libmini-truncxz.so: $(MDI_PROGS)/libmini.so
	$(call msg,GEN,$@)
	$(Q)head -c $$(( $$(stat -c %s $<.mini.xz) / 2 )) $<.mini.xz > $@.xz
	$(Q)$(SYM_STRIP) --strip-all $<.full -o $@
	$(Q)$(SYM_OBJCOPY) --add-section .gnu_debugdata=$@.xz $@

$(MDI_PROGS)/libmini-notelf.so: $(MDI_PROGS)/libmini.so test/symbols/progs/libmini.c
	$(call msg,GEN,$@)
	$(Q)xz -c test/symbols/progs/libmini.c > $@.xz
	$(Q)$(SYM_STRIP) --strip-all $<.full -o $@
	$(Q)$(SYM_OBJCOPY) --add-section .gnu_debugdata=$@.xz $@

.PHONY: mdi-progs
mdi-progs: $(MDI_FILES)

$(BUILD)/test/test_minidebuginfo: test/symbols/test_minidebuginfo.c $(LIBSPANPROF) | mdi-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DMDI_DIR='"$(abspath $(MDI_PROGS))"' $< $(LIBSPANPROF) $(LDLIBS) \
		-lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_minidebuginfo
