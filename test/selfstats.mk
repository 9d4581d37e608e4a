# Unit tests of the agent's self-telemetry (exporter/selfstats.c): the OTLP metrics request
# decoded with protobuf-c, the agent's resource, the stats log lines.

SELFSTATS_PB_O := $(filter $(OBJ)/gen/opentelemetry/%,$(PROTO_O))

$(BUILD)/test/test_selfstats: test/test_selfstats.c exporter/selfstats.h $(OBJ)/selfstats.o \
		$(OBJ)/procmeta.o $(OBJ)/otlp_export.o $(OBJ)/export_queue.o $(OBJ)/grpc_client.o $(OBJ)/endpoint.o \
		$(SELFSTATS_PB_O) $(PROTO_H)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_selfstats
