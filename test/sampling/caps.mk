# Unit tests of exporter/sampling/caps.c (the start-up warnings: kernel symbols, ptrace). No root.

$(BUILD)/test/test_caps: test/sampling/test_caps.c exporter/sampling/caps.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_caps
