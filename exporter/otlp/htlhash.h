/* SPDX-License-Identifier: Apache-2.0 */
/*
 * htlhash: a mapped file's identity as the OpenTelemetry eBPF profiler computes it (the mapping
 * attribute process.executable.build_id.htlhash): hex of the first 16 bytes of
 * SHA-256(first 4 KiB || last 4 KiB || size as big-endian u64).
 */
#ifndef SPANPROF_OTLP_HTLHASH_H
#define SPANPROF_OTLP_HTLHASH_H

/*
 * The htlhash of the file at @path as 32 lower-case hex digits + NUL in @hex. Only a regular
 * file is read (util/regfile.h: one on FUSE or a network file system within a deadline);
 * results are cached by (device, inode, size, mtime) across calls (encoding thread only).
 * Returns 0, or a negative errno from open/read, -EINVAL for what is not a regular file, -EIO
 * on a short read or a hash failure.
 */
int otlp__htlhash_file(const char *path, char hex[33]);

#endif /* SPANPROF_OTLP_HTLHASH_H */
