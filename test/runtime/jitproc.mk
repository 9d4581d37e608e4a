# Unit tests of the naming of JIT code in the process table (exporter/runtime/jit/jitproc.c,
# proctab.c): a child's anonymous executable memory named from its perf map, rewritten maps,
# the hint without a map, frame types. Runs without root.

$(BUILD)/test/runtime/test_jitproc: test/runtime/test_jitproc.c exporter/runtime/jit/jitproc.h test/runtime/jitdump_writer.h exporter/process/proctab.h \
		exporter/profile/profile.h test/testproc.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_jitproc
