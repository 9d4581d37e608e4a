# Unit tests of the debuginfod fetcher (exporter/symbols/debuginfod.c): no server needed.
$(BUILD)/test/test_debuginfod: test/symbols/test_debuginfod.c $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_debuginfod
