# Unit tests of the agent's self-telemetry (exporter/telemetry/selfstats.c): the OTLP metrics request
# decoded with protobuf-c, the agent's resource, the stats log lines.

SELFSTATS_PB_O := $(filter $(OBJ)/gen/opentelemetry/%,$(PROTO_O))

$(BUILD)/test/test_selfstats: test/telemetry/test_selfstats.c exporter/telemetry/selfstats.h $(OBJ)/telemetry/selfstats.o \
		$(OBJ)/process/procmeta.o $(OBJ)/otlp/otlp_export.o $(OBJ)/otlp/export_queue.o $(OBJ)/otlp/grpc_client.o $(OBJ)/otlp/endpoint.o \
		$(SELFSTATS_PB_O) $(PROTO_H) $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_selfstats
