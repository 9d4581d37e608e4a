# The golden replay test (issue 13): a recorded sample stream replayed through the agent's
# sample path (proctab -> profile model) and every writer, compared with golden outputs
# (test/record/fixtures/replay/golden/). Runs without root. SPANPROF_UPDATE_GOLDEN=1 rewrites them.

REPLAY_DIR := test/record/fixtures/replay

$(BUILD)/test/test_replay: test/record/test_replay.c bpf/sampler.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DREPLAY_DIR='"$(abspath $(REPLAY_DIR))"' $< \
		$(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_replay

# The fixture ELF files the recording names, checked in: run only when replay.c or the
# toolchain's output is meant to change (then re-record the offsets and the goldens). DWARF
# paths are mapped to /replay so the files do not depend on the checkout's location.
REPLAY_FIX_CFLAGS := -g -O2 -fno-omit-frame-pointer \
	-ffile-prefix-map=$(abspath $(REPLAY_DIR))=/replay -Wl,--build-id=sha1
.PHONY: replay-fixtures
replay-fixtures:
	$(call msg,CC,$(REPLAY_DIR)/libreplay.so)
	$(Q)cd $(REPLAY_DIR) && $(CC) $(REPLAY_FIX_CFLAGS) -shared -fPIC -DREPLAY_LIB replay.c \
		-o libreplay.so
	$(call msg,CC,$(REPLAY_DIR)/libhidden.so)
	$(Q)cd $(REPLAY_DIR) && $(CC) $(REPLAY_FIX_CFLAGS) -shared -fPIC -DREPLAY_HIDDEN replay.c \
		-o libhidden.so && strip --strip-all libhidden.so
	$(call msg,CC,$(REPLAY_DIR)/replay-app)
	$(Q)cd $(REPLAY_DIR) && $(CC) $(REPLAY_FIX_CFLAGS) -DREPLAY_APP replay.c -L. -lreplay \
		-lhidden -Wl,-rpath,'$$ORIGIN' -o replay-app
