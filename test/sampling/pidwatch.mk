# Unit tests of exporter/sampling/pidwatch.c (record stops when every --pid process has exited). No root.

$(BUILD)/test/test_pidwatch: test/sampling/test_pidwatch.c exporter/sampling/pidwatch.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_pidwatch
