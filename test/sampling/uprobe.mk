# Unit tests of exporter/sampling/uprobe.c (the kernel log line of a uprobe conflict). No root.

$(BUILD)/test/test_uprobe: test/sampling/test_uprobe.c exporter/sampling/uprobe.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_uprobe
