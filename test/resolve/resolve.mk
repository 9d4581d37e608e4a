# Unit tests of exporter/resolve/ (resolve__user(), resolve/frame.c) naming this process's own
# frames (a leaf PC and the same address as a return address). Runs without root.

$(BUILD)/test/test_resolve: test/resolve/test_resolve.c exporter/resolve/resolve.h exporter/profile/profile.h \
		test/testproc.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_resolve
