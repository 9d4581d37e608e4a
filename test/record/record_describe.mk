# Unit tests of exporter/record/record_describe.c (start line and summary per profile type). No root.

$(BUILD)/test/test_record_describe: test/record/test_record_describe.c exporter/record/record_describe.h \
		$(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_record_describe
