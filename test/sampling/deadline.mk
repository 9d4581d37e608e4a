# Unit tests of exporter/sampling/deadline.c (record: --duration ends sampling on time). No root.

$(BUILD)/test/test_deadline: test/sampling/test_deadline.c exporter/sampling/deadline.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_deadline
