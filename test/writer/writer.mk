# Unit tests of the thread-context writer (writer/spanprof_ctx.c), one binary per TLS model a
# reader meets: the source compiled into the executable (static TLS), linked against the TLSDESC
# .so (-mtls-dialect=gnu2), linked against a general-dynamic .so (-mtls-dialect=gnu), and the
# TLSDESC .so loaded with dlopen (dynamic TLS). The process context payload is decoded with the
# protobuf-c code generated from otlp-proto/.

WRITER_TEST_DIR  := $(BUILD)/test
WRITER_GD_DIR    := $(WRITER_TEST_DIR)/writer-gd
WRITER_PB_O      := $(filter $(OBJ)/gen/opentelemetry/proto/processcontext/% \
		    $(OBJ)/gen/opentelemetry/proto/common/% \
		    $(OBJ)/gen/opentelemetry/proto/resource/%,$(PROTO_O))
WRITER_TEST_DEPS := test/writer/test_writer.c $(WRITER_HDR) $(WRITER_PB_O) $(PROTO_H)
WRITER_TEST_CC    = $(CC) $(CFLAGS) -I$(WRITER_INC) -DVARIANT='"$(patsubst test_writer_%,%,$(notdir $@))"'
WRITER_TEST_LIBS := -lprotobuf-c -lpthread -ldl -lcmocka

# The legacy dialect: general dynamic (__tls_get_addr) instead of TLSDESC.
$(WRITER_GD_DIR)/libspanprof_ctx.so: $(WRITER_SRC) $(WRITER_HDR)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(filter-out -mtls-dialect=%,$(WRITER_CFLAGS)) -mtls-dialect=gnu -shared \
		-Wl,-soname,libspanprof_ctx.so $< -o $@

$(WRITER_TEST_DIR)/test_writer_static: $(WRITER_TEST_DEPS) $(WRITER_SRC)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WRITER_TEST_CC) test/writer/test_writer.c $(WRITER_SRC) $(WRITER_PB_O) $(WRITER_EXE_LDFLAGS) \
		$(WRITER_TEST_LIBS) -o $@

$(WRITER_TEST_DIR)/test_writer_tlsdesc: $(WRITER_TEST_DEPS) $(WRITER_DIR)/libspanprof_ctx.so
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WRITER_TEST_CC) test/writer/test_writer.c $(WRITER_PB_O) -L$(WRITER_DIR) \
		-Wl,-rpath,$(abspath $(WRITER_DIR)) -lspanprof_ctx $(WRITER_TEST_LIBS) -o $@

$(WRITER_TEST_DIR)/test_writer_gd: $(WRITER_TEST_DEPS) $(WRITER_GD_DIR)/libspanprof_ctx.so
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WRITER_TEST_CC) test/writer/test_writer.c $(WRITER_PB_O) -L$(WRITER_GD_DIR) \
		-Wl,-rpath,$(abspath $(WRITER_GD_DIR)) -lspanprof_ctx $(WRITER_TEST_LIBS) -o $@

$(WRITER_TEST_DIR)/test_writer_dlopen: $(WRITER_TEST_DEPS) | $(WRITER_DIR)/libspanprof_ctx.so
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WRITER_TEST_CC) -DWRITER_DLOPEN \
		-DWRITER_SO='"$(abspath $(WRITER_DIR)/libspanprof_ctx.so)"' test/writer/test_writer.c \
		$(WRITER_PB_O) $(WRITER_TEST_LIBS) -o $@

UNIT_TESTS += $(addprefix $(WRITER_TEST_DIR)/test_writer_,static tlsdesc gd dlopen)
