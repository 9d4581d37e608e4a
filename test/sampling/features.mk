# Unit test of exporter/sampling/features.c (kernel feature probes). Runs without root.

$(BUILD)/test/sampling/test_features: test/sampling/test_features.c exporter/sampling/features.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/sampling/test_features
