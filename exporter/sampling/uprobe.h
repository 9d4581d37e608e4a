/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uprobe: attaching a uprobe beside other tools' uprobes at the same place.
 *
 * The kernel keeps one uprobe per (inode, file offset), shared by every tool that probes that
 * instruction, with one reference counter (the USDT semaphore: a 16-bit counter in the probed
 * file's data that the kernel increments while the probe is in place). A second registration
 * whose reference counter offset differs from the first's is refused with EINVAL and the kernel
 * logs "ref_ctr_offset mismatch. inode: 0x.. offset: 0x.. ref_ctr_offset(old): 0x..
 * ref_ctr_offset(new): 0x.." (kernel/events/uprobes.c, since Linux 4.20). spanprof's probes use
 * no counter, so a USDT tracer (or any tool that gave one) that probed the same instruction
 * first made them fail. uprobe__attach() reads that log line and registers again with the
 * first tool's counter: the counter is only touched when the instruction is first patched in a
 * process, so sharing it changes nothing for the other tool.
 */
#ifndef SPANPROF_UPROBE_H
#define SPANPROF_UPROBE_H

#include <stdint.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

/*
 * bpf_program__attach_uprobe_opts(@prog, @pid, @path, @offset, @opts) (libbpf 1.1; @pid -1:
 * every process; @offset a file offset, or 0 with opts->func_name), and when the kernel
 * refuses with EINVAL, once more with the reference counter offset the kernel log names for
 * the uprobe already at that place (read from /dev/kmsg: CAP_SYSLOG, or dmesg_restrict 0). The
 * conflict is reported on stderr, naming @what (e.g. "alloc: malloc in /usr/lib/libc.so.6"), the
 * other counter and whether the retry worked. @opts is not modified.
 * Returns the link (owned by the caller: bpf_link__destroy()), or NULL with errno set (the
 * first attempt's errno when no conflict was found).
 */
struct bpf_link *uprobe__attach(struct bpf_program *prog, pid_t pid, const char *path,
				size_t offset, const struct bpf_uprobe_opts *opts,
				const char *what);

/*
 * Parses one /dev/kmsg record (Documentation/ABI/testing/dev-kmsg: "prio,seq,usec,flags;text")
 * or one bare message text. When it is the kernel's "ref_ctr_offset mismatch" line for inode
 * @ino and (unless @offset is UINT64_MAX) file offset @offset, stores the first registration's
 * counter offset in *@old and returns 1; 0 for any other line.
 */
int uprobe__parse_mismatch(const char *record, uint64_t ino, uint64_t offset, uint64_t *old);

#endif /* SPANPROF_UPROBE_H */
