# Unit tests of exporter/sampling/samplequeue.c (the compacted queue of ring records). No root.

$(BUILD)/test/test_samplequeue: test/sampling/test_samplequeue.c exporter/sampling/samplequeue.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_samplequeue
