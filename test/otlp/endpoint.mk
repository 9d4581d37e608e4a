# Unit tests of exporter/otlp/endpoint.c (the OTLP endpoint forms --endpoint accepts). No root.

$(BUILD)/test/test_endpoint: test/otlp/test_endpoint.c exporter/otlp/endpoint.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_endpoint
