# Unit tests of exporter/runtime/jvm/hsname.c (naming HotSpot frames) over synthetic process
# images with the JDK 17 and JDK 25 layouts, their tables built by hand with hsvm__add_*().
# No root.

$(BUILD)/test/runtime/test_hsname: test/runtime/test_hsname.c \
		$(wildcard exporter/runtime/jvm/*.h) $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_hsname
