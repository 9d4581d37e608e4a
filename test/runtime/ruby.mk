# Unit tests of exporter/runtime/ruby/ (the layout of Ruby 3.1's structures, the succinct line
# index, the naming of Ruby frame records against a synthetic memory image): no process, no root.

$(BUILD)/test/runtime/test_rubyname: test/runtime/test_rubyname.c \
		$(wildcard exporter/runtime/ruby/*.h) bpf/ruby.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_rubyname
