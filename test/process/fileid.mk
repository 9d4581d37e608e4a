# Unit tests of exporter/process/fileid.c and of the process table's naming from the file identities a
# sample carries (processes gone before their maps were read). Runs without root.

$(BUILD)/test/test_fileid: test/process/test_fileid.c exporter/process/fileid.h exporter/process/proctab.h bpf/sampler.h \
		test/testproc.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_fileid
