# Unit tests of the OTLP encoder (exporter/otlp/otlp_encode.c) and of the process resource reader
# (exporter/process/procmeta.c). test_otlp_encode checks every request twice: unpacked with protobuf-c
# field by field, and decoded by integration/otlpcheck (the Collector's own pdata decoder).

OTLP_TEST_DIR  := $(BUILD)/test
OTLP_PB_O      := $(filter $(OBJ)/gen/opentelemetry/%,$(PROTO_O))
OTLPCHECK      := $(OTLP_TEST_DIR)/otlpcheck
OTLPCHECK_SRCS := $(wildcard integration/otlpcheck/*.go integration/otlpcheck/go.*)

# A failed Go build must not stop make: the test then fails and points at the log.
$(OTLPCHECK): $(OTLPCHECK_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && (cd integration/otlpcheck && go build -o $(abspath $@) .) \
		> $@.log 2>&1 || { echo "  otlpcheck build failed: see $@.log" >&2; true; }

OTLP_TEST_CFLAGS := -DOTLPCHECK='"$(abspath $(OTLPCHECK))"' \
		    -DOTLP_FIXTURES='"$(abspath test/otlp/fixtures/otlp)"'

$(OTLP_TEST_DIR)/test_otlp_encode: test/otlp/test_otlp_encode.c exporter/otlp/otlp_encode.h \
		exporter/process/procmeta.h exporter/profile/profile.h $(OBJ)/otlp/otlp_encode.o $(OBJ)/otlp/htlhash.o $(OBJ)/util/regfile.o $(OBJ)/process/procmeta.o \
		$(OBJ)/profile/profile.o $(OTLP_PB_O) $(PROTO_H) | $(OTLPCHECK)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(OTLP_TEST_CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -lcrypto -lcmocka \
		-o $@

$(OTLP_TEST_DIR)/test_procmeta: test/process/test_procmeta.c exporter/process/procmeta.h $(OBJ)/process/procmeta.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(OTLP_TEST_CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(OTLP_TEST_DIR)/test_otlp_encode $(OTLP_TEST_DIR)/test_procmeta
