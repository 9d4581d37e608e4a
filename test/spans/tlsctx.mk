# Unit tests of the span-link readers: exporter/spans/tlsctx.c (where otel_thread_ctx_v1 lives in each
# thread, OTEP 4947), exporter/spans/threadctx.c (the thread-context record) and exporter/spans/procctx.c (the
# process context mapping, OTEP 4719). test_tlsctx runs the programs built here, one per TLS
# model the loader meets, and checks every thread's address against the one the code really used.

TLS_PROGS := $(BUILD)/test/tls-progs
TLS_SRC   := test/spans/tls-progs
TLS_CC    = $(CC) -O2 -Wall -g
# Programs find their libraries beside them.
TLS_RPATH = -Wl,-rpath,'$$ORIGIN'

TLS_PROG_FILES := $(addprefix $(TLS_PROGS)/, \
	exe-pie exe-nopie exe-big exe-nopie-big exe-symtab exe-static-pie \
	libdef.so exe-ie libie.so exe-libie \
	libgnu2.so exe-gnu2 libgnu.so exe-gnu libprot.so exe-prot \
	libhid-gnu.so exe-hid-gnu libhid-gnu2.so exe-hid-gnu2 exe-dlopen)

# (a), (b), (h): the executable defines the variable (local-exec), -rdynamic puts it in .dynsym.
$(TLS_PROGS)/exe-pie: $(TLS_SRC)/tlsmain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -fPIE -pie -rdynamic -DDEF_IN_EXE $< -o $@ -lpthread

$(TLS_PROGS)/exe-nopie: $(TLS_SRC)/tlsmain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -fno-pie -no-pie -rdynamic -DDEF_IN_EXE $< -o $@ -lpthread

$(TLS_PROGS)/exe-big: $(TLS_SRC)/tlsmain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -fPIE -pie -rdynamic -DDEF_IN_EXE -DBIG_ALIGN $< -o $@ -lpthread

$(TLS_PROGS)/exe-nopie-big: $(TLS_SRC)/tlsmain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -fno-pie -no-pie -rdynamic -DDEF_IN_EXE -DBIG_ALIGN $< -o $@ -lpthread

# Only in .symtab (no -rdynamic): found with allow_symtab only.
$(TLS_PROGS)/exe-symtab: $(TLS_SRC)/tlsmain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -fPIE -pie -DDEF_IN_EXE -DBIG_ALIGN $< -o $@ -lpthread

# Static glibc places the executable's block itself (csu/libc-tls.c).
$(TLS_PROGS)/exe-static-pie: $(TLS_SRC)/tlsmain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -static-pie -DDEF_IN_EXE -DBIG_ALIGN $< -o $@ -lpthread

# (c) initial-exec: a library only defines the variable; the executable, or another library
# built with -ftls-model=initial-exec, accesses it.
$(TLS_PROGS)/libdef.so: $(TLS_SRC)/tlsdef.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -fPIC -shared $< -o $@

$(TLS_PROGS)/exe-ie: $(TLS_SRC)/tlsmain.c $(TLS_PROGS)/libdef.so
	$(call msg,CC,$@)
	$(Q)$(TLS_CC) -fPIE -pie -DEXTERN_IN_EXE $< -o $@ -L$(@D) -l:libdef.so $(TLS_RPATH) -lpthread

$(TLS_PROGS)/libie.so: $(TLS_SRC)/tlslib.c $(TLS_PROGS)/libdef.so
	$(call msg,CC,$@)
	$(Q)$(TLS_CC) -fPIC -shared -ftls-model=initial-exec -DEXTERN_VAR $< -o $@ \
		-L$(@D) -l:libdef.so $(TLS_RPATH)

$(TLS_PROGS)/exe-libie: $(TLS_SRC)/tlsmain.c $(TLS_PROGS)/libie.so
	$(call msg,CC,$@)
	$(Q)$(TLS_CC) -fPIE -pie $< -o $@ -L$(@D) -l:libie.so $(TLS_RPATH) -lpthread

# (d), (e), (f): the library defines and sets the variable: TLSDESC (gnu2), general dynamic
# (gnu), protected (still named relocations), hidden (module-level relocations, local-dynamic;
# the over-aligned array puts the variable at a non-zero offset in the block).
define TLS_LIB
$(TLS_PROGS)/lib$(1).so: $(TLS_SRC)/tlslib.c
	$$(call msg,CC,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(TLS_CC) -fPIC -shared $(2) $$< -o $$@

$(TLS_PROGS)/exe-$(1): $(TLS_SRC)/tlsmain.c $(TLS_PROGS)/lib$(1).so
	$$(call msg,CC,$$@)
	$$(Q)$$(TLS_CC) -fPIE -pie $$< -o $$@ -L$$(@D) -l:lib$(1).so $$(TLS_RPATH) -lpthread
endef
$(eval $(call TLS_LIB,gnu2,-mtls-dialect=gnu2))
$(eval $(call TLS_LIB,gnu,-mtls-dialect=gnu))
$(eval $(call TLS_LIB,prot,-mtls-dialect=gnu2 -DVIS='"protected"'))
$(eval $(call TLS_LIB,hid-gnu,-mtls-dialect=gnu -DVIS='"hidden"' -DBIG_ALIGN))
$(eval $(call TLS_LIB,hid-gnu2,-mtls-dialect=gnu2 -DVIS='"hidden"' -DBIG_ALIGN))

# (g) dlopen()ed after the threads started (argv[1]: any of the libraries above).
$(TLS_PROGS)/exe-dlopen: $(TLS_SRC)/tlsmain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(TLS_CC) -fPIE -pie -DDLOPEN $< -o $@ -ldl -lpthread

# A phony target looks at the programs on every run (see test/symbols/symbolize.mk).
.PHONY: tls-progs
tls-progs: $(TLS_PROG_FILES)

TLS_TEST_CFLAGS := -DTLS_PROGS_DIR='"$(abspath $(TLS_PROGS))"'

$(BUILD)/test/test_tlsctx: test/spans/test_tlsctx.c test/testproc.h exporter/spans/tlsctx.h $(OBJ)/spans/tlsctx.o \
		$(OBJ)/process/procmaps.o $(OBJ)/util/regfile.o $(OBJ)/symbols/elfcheck.o \
		$(OBJ)/symbols/loadbias.o | tls-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(TLS_TEST_CFLAGS) $< $(OBJ)/spans/tlsctx.o $(OBJ)/process/procmaps.o \
		$(OBJ)/util/regfile.o $(OBJ)/symbols/elfcheck.o $(OBJ)/symbols/loadbias.o -lelf -lpthread -lcmocka -o $@

$(BUILD)/test/test_threadctx: test/spans/test_threadctx.c exporter/spans/threadctx.h $(OBJ)/spans/threadctx.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(OBJ)/spans/threadctx.o -lcmocka -o $@

PROCCTX_PB_O := $(addprefix $(OBJ)/gen/opentelemetry/proto/, \
	processcontext/v1development/process_context.pb-c.o common/v1/common.pb-c.o \
	resource/v1/resource.pb-c.o)

$(BUILD)/test/test_procctx: test/spans/test_procctx.c test/testproc.h exporter/spans/procctx.h \
		$(OBJ)/spans/procctx.o $(OBJ)/process/procmaps.o $(OBJ)/util/regfile.o $(PROCCTX_PB_O) \
		$(PROTO_H)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(OBJ)/spans/procctx.o $(OBJ)/process/procmaps.o $(OBJ)/util/regfile.o \
		$(PROCCTX_PB_O) -lprotobuf-c -lpthread -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_tlsctx $(BUILD)/test/test_threadctx $(BUILD)/test/test_procctx
