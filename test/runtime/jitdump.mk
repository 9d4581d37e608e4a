# Unit tests of exporter/runtime/jit (jitdump files: code loads, moves, debug info, growing,
# truncated and corrupt files, caps). Runs without root.

$(BUILD)/test/runtime/test_jitdump: test/runtime/test_jitdump.c exporter/runtime/jit/jitdump.h test/runtime/jitdump_writer.h \
		exporter/runtime/jit/jittab.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_jitdump
