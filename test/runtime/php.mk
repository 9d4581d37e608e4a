# Unit tests of exporter/runtime/php/ (the layouts of PHP's structures per version, the naming of
# PHP frame records against a synthetic memory image, the version a PHP file says): no process,
# no root.

$(BUILD)/test/runtime/test_phpname: test/runtime/test_phpname.c \
		$(wildcard exporter/runtime/php/*.h) bpf/php.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_phpname
