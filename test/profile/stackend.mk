# Unit test of the truncation markers (exporter/profile/stackend.c) and of how every output shows them:
# folded, pprof, OTLP and the view document. Linked against the agent's archive.

$(BUILD)/test/test_stackend: test/profile/test_stackend.c $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_stackend
