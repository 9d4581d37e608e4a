# Unit tests of exporter/runtime/jit (perf maps), exporter/runtime/jit/jittab.c (JIT code
# ranges, later ones replacing earlier) and jitfile.c (opening files a profiled process wrote).
# Runs without root.

$(BUILD)/test/runtime/test_perfmap: test/runtime/test_perfmap.c exporter/runtime/jit/perfmap.h \
		exporter/runtime/jit/jittab.h exporter/runtime/jit/jitfile.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_perfmap
