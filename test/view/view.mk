# spanprof view: the page template embedded in the binary, and the unit tests of the readers and
# the document writer (exporter/view/read*.c, exporter/view/doc.c; no root).
#
# The template is $(BUILD)/view/page.html, built by view/view.mk from view/src. Until view/
# exists, a stub page holding only the data placeholder stands in so that the C side builds.
# The page is embedded with the assembler's .incbin: byte for byte, no generated C text in
# between, and instant to build whatever the page's size. The symbols are spanprof_view_page
# and spanprof_view_page_end (exporter/view/doc.h).

VIEWC_PAGE   := $(BUILD)/view/page.html
VIEWC_PAGE_O := $(OBJ)/view_page.o

ifeq ($(wildcard view/view.mk),)
$(VIEWC_PAGE):
	$(call msg,GEN,$@ (stub: view/ is not there))
	$(Q)mkdir -p $(@D)
	$(Q)printf '%s\n' '<!doctype html>' '<html><head><meta charset="utf-8"><title>spanprof</title></head>' \
		'<body><p>spanprof view: stub page (the view/ template was not built).</p>' \
		'<script id="spanprof-data" type="application/json">"__SPANPROF_DATA__"</script>' \
		'</body></html>' > $@
endif

$(VIEWC_PAGE_O): $(VIEWC_PAGE)
	$(call msg,EMBED,$<)
	$(Q)mkdir -p $(@D)
	$(Q)printf '%s\n' '.section .rodata' '.balign 16' '.globl spanprof_view_page' \
		'spanprof_view_page:' '.incbin "$(abspath $<)"' '.globl spanprof_view_page_end' \
		'spanprof_view_page_end:' '.byte 0' '.section .note.GNU-stack,"",@progbits' | \
		$(CC) -c -x assembler - -o $@

# The agent's archive carries the page (the recipe archives $^).
$(LIBSPANPROF): $(VIEWC_PAGE_O)

VIEW_TEST_PB_O := $(filter $(OBJ)/gen/opentelemetry/%,$(PROTO_O)) $(OBJ)/gen/pprof/profile.pb-c.o

$(BUILD)/test/test_view: test/view/test_view.c exporter/view/doc.h exporter/view/read.h exporter/otlp/otlp_pb.h \
		$(OBJ)/view/doc.o $(OBJ)/view/jsonbuf.o $(OBJ)/view/read.o $(OBJ)/view/read_common.o $(OBJ)/view/read_otlp.o \
		$(OBJ)/view/read_json.o $(OBJ)/view/read_pprof.o $(OBJ)/view/read_traces.o \
		$(OBJ)/view/view_main.o \
		$(OBJ)/profile/stackend.o $(OBJ)/profile/profile.o $(VIEWC_PAGE_O) $(VIEW_TEST_PB_O) $(PROTO_H)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) -ljson-c -lmicrohttpd -lprotobuf-c -lz -lcmocka \
		-o $@

UNIT_TESTS += $(BUILD)/test/test_view
