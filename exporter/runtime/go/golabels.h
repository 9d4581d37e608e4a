/* SPDX-License-Identifier: Apache-2.0 */
/*
 * golabels: goroutine labels (runtime/pprof.Do, pprof.SetGoroutineLabels) of a Go program, read
 * by the BPF sampler from the running goroutine (bpf/golabels.bpf.h) and turned into sample
 * attributes and a span link here. Go programs mark their spans this way (Grafana's
 * otel-profiling-go sets `span_id` and `span_name`): the OpenTelemetry Go SDK has no
 * thread-local context, goroutines move between threads.
 *
 * What BPF follows, amd64 (facts from the Go runtime's sources, src/runtime/runtime2.go,
 * src/runtime/pprof/label.go, src/internal/runtime/pprof/label/labelset.go, and the runtime's
 * assembly, src/runtime/asm_amd64.s, runtime·stackcheck):
 *   g      = *(fsbase + tls_g)       the goroutine running on the thread (TLS slot runtime.tlsg)
 *   m      = *(g + g_m)              its OS thread
 *   curg   = *(m + m_curg)           the user goroutine of that thread (g may be g0 or gsignal)
 *   labels = *(curg + g_labels)      a *labelMap, NULL when the goroutine has none
 * Since Go 1.24 a labelMap starts with a slice of labels sorted by key: {ptr, len, cap}, each
 * label {key string, value string} (strings {ptr, len}): 32 bytes. Before 1.24 it is a
 * map[string]string (a pointer to the map's header, src/runtime/map.go), whose buckets BPF
 * walks (labels_map below).
 *
 * Offsets come from the binary's DWARF where present (struct runtime.g members m and labels,
 * struct runtime.m member curg), else from a table per Go version (see golabels.c, each figure
 * with its source). The TLS offset of g is decoded from runtime.stackcheck's first
 * instructions (named by .gopclntab, so stripped binaries too).
 */
#ifndef SPANPROF_RUNTIME_GO_GOLABELS_H
#define SPANPROF_RUNTIME_GO_GOLABELS_H

#include <gelf.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* Where a Go program keeps its goroutine labels (handed to BPF as struct sp_go_loc). */
struct golabels_layout {
	int go_minor;	  /* 26 for go1.26.x */
	char version[32]; /* as the build info says it, e.g. "go1.26.8" */
	int64_t tls_g;	  /* g's address is at fsbase + tls_g (negative) */
	/*
	 * Nonzero when the code loads g's TLS offset from a GOT slot (a -buildmode=c-shared
	 * library, whose TLS block the dynamic loader places): the ELF virtual address of that
	 * slot, which the loader fills through an R_X86_64_TPOFF64 relocation. tls_g is then 0
	 * until the caller reads the slot from the process (golabels__tls_from_slot()).
	 */
	uint64_t tls_got_vaddr;
	int64_t text_delta; /* p_vaddr - p_offset of the segment of runtime.stackcheck */
	uint64_t dev, ino;  /* the file's identity (golabels__resolve_*() fill them) */
	uint32_t g_m, m_curg, g_labels; /* byte offsets */
	int from_dwarf;			/* 1: offsets read from DWARF; 0: the version table */
	/*
	 * 1: labels in a map[string]string (Go 1.18-1.23, walked by BPF in the layout of
	 * src/runtime/map.go: bpf/sampler.h SP_GO_HMAP_*, SP_GO_BMAP_*); 0: a sorted slice
	 * (Go 1.24 and later). From the kind of runtime/pprof.labelMap in the DWARF where it is
	 * there, else from the version.
	 */
	int labels_map;
	const char *unsupported; /* with -ENOTSUP: why, a static string */
};

/*
 * Everything BPF needs to read the labels of a Go program's running goroutine, from the file
 * alone. Returns 0, -ENOENT (not a Go program), -ENOTSUP (a version the table does not know
 * and no DWARF, a DWARF map layout other than Go 1.18-1.23's, a runtime.stackcheck whose TLS
 * access is not one of the known encodings, or not amd64), -EINVAL (corrupt file), -ENOMEM.
 */
int golabels__inspect(Elf *elf, const void *image, size_t size, struct golabels_layout *out);

/*
 * The version table's offsets for Go 1.@go_minor into @out (g_m, m_curg, g_labels, and
 * labels_map: 1 before 1.24; nothing else touched). Returns 0, or -ENOENT (a version the
 * table does not know: 1.18-1.27 are listed). golabels__inspect() uses a row only for a
 * binary whose runtime.newproc1 confirms it (golabels__code_confirms(): a pre-release build
 * may have another layout than its release).
 */
int golabels__table_row(int go_minor, struct golabels_layout *out);

/*
 * Whether the amd64 code @code (@len bytes of runtime.newproc1) copies the creating goroutine's
 * labels the way the offsets @m_curg and @g_labels say: newproc1's `newg.labels =
 * mp.curg.labels` (src/runtime/proc.go) compiles to a load from @m_curg(m), a load from
 * @g_labels(curg) and a store to @g_labels(newg), each a 64-bit MOV with a base register and a
 * displacement (REX.W 8B /r load, REX.W 89 /r store; ModRM mod 01 disp8 or 10 disp32, with a
 * SIB byte when r/m is 100; Intel SDM vol. 2, 2.1-2.2). The bytes are searched, not decoded
 * instruction by instruction: a confirmation of known offsets, never a derivation of them.
 * Returns true when all three are found.
 */
bool golabels__code_confirms(const uint8_t *code, size_t len, uint32_t m_curg, uint32_t g_labels);

/*
 * The TLS offset of g from the first instructions of runtime.stackcheck (@code, @len bytes):
 *   64 48 8b 04 25 d32          MOVQ %fs:d32, %rax (internal and external linking)
 *   48 c7 c1 i32, 64 48 8b 01   MOVQ $i32, %rcx; MOVQ %fs:(%rcx), %rax (-buildmode=pie)
 * (the destination register may be any; these are what the Go linker and gcc's ld emit).
 * Returns 0 with *@off, or -ENOTSUP (another encoding: e.g. the offset loaded from a GOT slot).
 */
int golabels__decode_tls(const uint8_t *code, size_t len, int64_t *off);

/*
 * The GOT slot form of runtime.stackcheck's TLS access, which the Go linker emits in shared
 * objects (-buildmode=c-shared) for the initial-exec TLS model:
 *   48 8b ModRM(mod 00, reg r, rm 101) disp32   MOVQ disp32(%rip), %r
 *   64 48 8b ModRM(mod 00, rm r)                MOVQ %fs:(%r), %rax
 * @vaddr is the ELF virtual address of @code. Returns 0 with *@slot_vaddr (the slot's virtual
 * address: the end of the first instruction plus disp32), or -ENOTSUP.
 */
int golabels__decode_tls_got(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *slot_vaddr);

/*
 * g's TLS offset from the 8 bytes the loader wrote into the GOT slot of @l (read from the
 * process at load bias + l->tls_got_vaddr) into l->tls_g. Returns 0, -EAGAIN (still 0: not
 * relocated yet, look again later) or -ENOTSUP (not a thread-pointer offset: garbage).
 */
int golabels__tls_from_slot(struct golabels_layout *l, uint64_t slot_value);

/*
 * Labels as BPF copies them into a sample (sp_sample.ctx with SP_SAMPLE_GO_LABELS): packed
 * entries {key_len u8, value_len u8, key[key_len], value[value_len]}. Calls @fn once per
 * complete entry, in order (sorted by key, as the runtime keeps them); stops at the first entry
 * that does not fit in @len. Returns the number of entries, or -EINVAL when bytes are left that
 * no entry explains (a corrupt copy: the caller drops it).
 */
int golabels__parse(const uint8_t *buf, size_t len,
		    void (*fn)(void *ctx, const char *key, size_t klen, const char *value,
			       size_t vlen),
		    void *ctx);

/*
 * Lower- or upper-case hex of exactly 2 * @n characters at @s into @n bytes at @out (a span
 * id: n = 8, a trace id: n = 16, as W3C trace context and otel-profiling-go write them).
 * Returns 0, or -EINVAL (wrong length, a non-hex character, or all zero: no span).
 */
int golabels__hex_id(const char *s, size_t slen, uint8_t *out, size_t n);

/*
 * golabels__inspect() for the executable of process @pid (/proc/PID/exe: the file the process
 * runs, also in another mount namespace). Results, failures included, are cached by file
 * identity (device, inode, size, mtime; at most 64 files, the oldest dropped first), so a
 * process's maps read again costs a stat. The first time a Go file's labels can't be read (an
 * unsupported version) a line on stderr says why, once per file.
 * Returns the errors of golabels__inspect(), -ESRCH (process gone) or -EACCES.
 * Not thread-safe.
 */
int golabels__resolve_pid(int pid, struct golabels_layout *out);

/*
 * golabels__inspect() for an open file @fd (a file a process maps, opened by the caller, e.g.
 * through /proc/PID/map_files), with the cache and the stderr line of golabels__resolve_pid().
 * @pid only names the process in that line. Returns as golabels__resolve_pid().
 */
int golabels__resolve_fd(int fd, int pid, struct golabels_layout *out);

/* Empties the cache of golabels__resolve_pid() (tests, shutdown). */
void golabels__cache_clear(void);

#endif /* SPANPROF_RUNTIME_GO_GOLABELS_H */
