# Unit tests of exporter/runtime/jvm/hsname.c (naming HotSpot frames) over synthetic process
# images with the JDK 17 and JDK 25 layouts. hsvm_fake.c stands in for hsvm.c's hand-built
# tables until that module is in the tree. No root.

$(BUILD)/test/runtime/test_hsname: test/runtime/test_hsname.c test/runtime/hsvm_fake.c \
		$(wildcard exporter/runtime/jvm/*.h) $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< test/runtime/hsvm_fake.c $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_hsname
