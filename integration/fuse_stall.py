"""A FUSE file system that stops answering: the server for test_hostile_files.py, speaking the
kernel's /dev/fuse protocol itself (include/uapi/linux/fuse.h, protocol 7.31; no libfuse).

    python3 fuse_stall.py MOUNTPOINT NAME FILE

mounts at MOUNTPOINT a read-only directory holding one file, NAME, with FILE's bytes (mode
0755: it can be run), prints "ready" once the kernel's INIT is answered, then reads commands on
its stdin, one a line:
    allow PID   READs from process PID (a thread group) are always answered
    stall       from now on, READs from any other process are never answered
Every other request (LOOKUP, GETATTR, OPEN, STATFS, FLUSH, RELEASE...) is always answered, so an
agent finds, stats and opens the file as usual, and only its read hangs. After "stall", an OPEN
from a process not allowed gets FOPEN_DIRECT_IO (its reads reach the server, never the page
cache) with FOPEN_KEEP_CACHE (the allowed process's mapped pages stay). Each READ left unanswered
is said on stdout: "stalled PID". Root only (mount(2)); ends when the file system is unmounted
or the connection aborted (the server killed)."""
import ctypes
import errno
import os
import stat
import struct
import sys
import threading

# Opcodes (enum fuse_opcode).
LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE = 1, 2, 3, 14, 15, 17, 18
FLUSH, INIT, OPENDIR, READDIR, RELEASEDIR, INTERRUPT, BATCH_FORGET = 25, 26, 27, 28, 29, 36, 42
FOPEN_DIRECT_IO, FOPEN_KEEP_CACHE = 1, 2
IN_HEADER = struct.Struct("<IIQQIIIHH")  # len opcode unique nodeid uid gid pid extlen pad
OUT_HEADER = struct.Struct("<IiQ")  # len error unique
ROOT, FILE_INO = 1, 2
TTL = 3600  # seconds the kernel may keep names and attributes


class Server:
    def __init__(self, name, data):
        self.name, self.data = name.encode(), data
        self.allowed, self.stalled = set(), False
        self.lock = threading.Lock()

    def attr(self, ino):
        """struct fuse_attr: ino size blocks atime mtime ctime (ns x3) mode nlink uid gid rdev
        blksize flags."""
        if ino == ROOT:
            mode, size, nlink = stat.S_IFDIR | 0o755, 0, 2
        else:
            mode, size, nlink = stat.S_IFREG | 0o755, len(self.data), 1
        return struct.pack("<QQQQQQIIIIIIIIII", ino, size, (size + 511) // 512, 0, 0, 0, 0, 0,
                           0, mode, nlink, 0, 0, 0, 4096, 0)

    def allowed_pid(self, pid):
        """@pid (a thread, as FUSE names the requester) belongs to an allowed process."""
        try:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("Tgid:"):
                    pid = int(line.split()[1])
                    break
        except OSError:
            pass
        with self.lock:
            return pid in self.allowed

    def answer(self, op, nodeid, pid, body):
        """(error, payload), or None for no answer at all."""
        if op == INIT:
            _major, _minor, readahead, _flags = struct.unpack_from("<IIII", body)
            # fuse_init_out: 7.31, no flags, 128 KiB writes, 1 ns times, then reserved zeros.
            return 0, struct.pack("<IIIIHHIIHHII24x", 7, 31, readahead, 0, 16, 12, 1 << 17, 1,
                                  32, 0, 0, 0)
        if op == LOOKUP:
            if nodeid != ROOT or body.rstrip(b"\0") != self.name:
                return -errno.ENOENT, b""
            # fuse_entry_out: nodeid generation entry_valid attr_valid (ns x2) attr.
            return 0, struct.pack("<QQQQII", FILE_INO, 1, TTL, TTL, 0, 0) + self.attr(FILE_INO)
        if op == GETATTR:
            return 0, struct.pack("<QII", TTL, 0, 0) + self.attr(nodeid)
        if op in (OPEN, OPENDIR):
            flags = FOPEN_KEEP_CACHE
            if op == OPEN and self.stalled and not self.allowed_pid(pid):
                flags |= FOPEN_DIRECT_IO
            return 0, struct.pack("<QIi", 1, flags, 0)
        if op == READ:
            _fh, offset, size = struct.unpack_from("<QQI", body)
            if self.stalled and not self.allowed_pid(pid):
                print(f"stalled {pid}", flush=True)
                return None
            return 0, self.data[offset:offset + size]
        if op == READDIR:
            return 0, b""
        if op == STATFS:
            # fuse_kstatfs: blocks bfree bavail files ffree bsize namelen frsize, spare.
            return 0, struct.pack("<QQQQQIII28x", 1, 0, 0, 2, 0, 4096, 255, 4096)
        if op in (FLUSH, RELEASE, RELEASEDIR):
            return 0, b""
        if op in (FORGET, BATCH_FORGET, INTERRUPT):
            return None
        return -errno.ENOSYS, b""

    def serve(self, fd):
        while True:
            try:
                req = os.read(fd, (1 << 20) + 4096)
            except OSError as e:
                if e.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                    continue  # ENOENT: a request interrupted before it was read
                return  # ENODEV: unmounted
            _len, op, unique, nodeid, _uid, _gid, pid, _ext, _pad = IN_HEADER.unpack_from(req)
            out = self.answer(op, nodeid, pid, req[IN_HEADER.size:])
            if out is None:
                continue
            err, payload = out
            if err:
                payload = b""
            try:
                os.write(fd, OUT_HEADER.pack(OUT_HEADER.size + len(payload), err, unique) +
                         payload)
            except OSError:
                pass  # the requester was interrupted meanwhile
            if op == INIT:
                print("ready", flush=True)

    def commands(self):
        for line in sys.stdin:
            word, *arg = line.split()
            with self.lock:
                if word == "allow":
                    self.allowed.add(int(arg[0]))
                elif word == "stall":
                    self.stalled = True
            print(f"ok {line.strip()}", flush=True)


def main():
    mountpoint, name, path = sys.argv[1:4]
    server = Server(name, open(path, "rb").read())
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    libc = ctypes.CDLL(None, use_errno=True)
    ms_nosuid, ms_nodev, ms_rdonly = 2, 4, 1
    opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
    if libc.mount(b"spanprof-stall", mountpoint.encode(), b"fuse",
                  ms_nosuid | ms_nodev | ms_rdonly, opts):
        e = ctypes.get_errno()
        sys.exit(f"mount {mountpoint}: {os.strerror(e)}")
    threading.Thread(target=server.commands, daemon=True).start()
    server.serve(fd)


if __name__ == "__main__":
    main()
