# Unit tests of the profile model and of the local writers (pprof, folded, SVG).
# Each binary links only the objects it tests.

OUTPUTS_TEST_DIR := $(BUILD)/test
PPROF_PB_O       := $(OBJ)/gen/pprof/profile.pb-c.o

$(OUTPUTS_TEST_DIR)/test_profile: test/profile/test_profile.c exporter/profile/profile.h $(OBJ)/profile/profile.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -lcmocka -o $@

$(OUTPUTS_TEST_DIR)/test_outputs: test/output/test_outputs.c $(EXP_HDRS) $(OBJ)/profile/profile.o \
		$(OBJ)/output/pprof.o $(OBJ)/output/folded.o $(OBJ)/output/flamegraph.o $(PPROF_PB_O) \
		$(OBJ)/output/otlpfile.o $(OBJ)/otlp/otlp_encode.o $(OBJ)/otlp/htlhash.o $(OBJ)/util/regfile.o $(OBJ)/process/procmeta.o \
		$(filter $(OBJ)/gen/opentelemetry/%,$(PROTO_O))
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(OUTPUTS_TEST_DIR)/test_profile $(OUTPUTS_TEST_DIR)/test_outputs
