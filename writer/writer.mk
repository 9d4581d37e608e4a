# The thread-context writer library (writer/): what applications link to publish their active
# span (OTEP 4947) and their process context (OTEP 4719) for spanprof. libc only.
#   $(BUILD)/writer/libspanprof_ctx.so   -fPIC -mtls-dialect=gnu2 (TLSDESC, the recommended model)
#   $(BUILD)/writer/libspanprof_ctx.a    the same object, for linking into an executable
# Other fragments compile $(WRITER_SRC) themselves to get other TLS models (see test/writer/writer.mk).
# An executable that contains the writer must export the TLS symbol: $(WRITER_EXE_LDFLAGS).

WRITER_SRC        := writer/spanprof_ctx.c
WRITER_INC        := writer
WRITER_HDR        := writer/spanprof_ctx.h
WRITER_DIR        := $(BUILD)/writer
WRITER_CFLAGS     := -g -O2 -fPIC -mtls-dialect=gnu2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror
WRITER_EXE_LDFLAGS := -Wl,--export-dynamic-symbol=otel_thread_ctx_v1
WRITER_LIBS       := $(WRITER_DIR)/libspanprof_ctx.a $(WRITER_DIR)/libspanprof_ctx.so

$(WRITER_DIR)/spanprof_ctx.o: $(WRITER_SRC) $(WRITER_HDR)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WRITER_CFLAGS) -c $< -o $@

$(WRITER_DIR)/libspanprof_ctx.a: $(WRITER_DIR)/spanprof_ctx.o
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(WRITER_DIR)/libspanprof_ctx.so: $(WRITER_DIR)/spanprof_ctx.o
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -Wl,-soname,libspanprof_ctx.so $^ -o $@

all: $(WRITER_LIBS)

# The Python package (writer/python, import name spanprof_context) as a wheel that bundles its
# own build of the writer library: $(BUILD)/writer/python/spanprof_context-*.whl.
# PYTHON picks the interpreter the wheel is for.
PYTHON ?= python3

.PHONY: python-wheel
python-wheel:
	$(call msg,WHEEL,$(WRITER_DIR)/python)
	$(Q)SPANPROF_PY_BUILD=$(abspath $(WRITER_DIR))/python-build $(PYTHON) -m pip wheel -q \
		--disable-pip-version-check --no-deps -w $(WRITER_DIR)/python writer/python

# The OpenTelemetry Java agent extension (jar with its JNI part): writer/java/java.mk.
include writer/java/java.mk
