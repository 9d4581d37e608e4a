#!/usr/bin/env python3
"""labelmap_kind.py IN OUT KIND: copies the Go binary IN to OUT with the DW_AT_go_kind of its
runtime/pprof.labelMap structure changed from 25 (struct: Go 1.24 and later) to KIND, e.g. 21
(map: what Go 1.18-1.23 write for their map[string]string labelMap). IN must have uncompressed
DWARF (go build -ldflags=-compressdwarf=false) and use runtime/pprof's labels (else the type is
not in it). The one byte is found through readelf's dump of .debug_info, which prints each
attribute's offset in the section; the attribute's form is DW_FORM_data1 (cmd/internal/dwarf:
DW_ABRV_STRUCTTYPE). Tests of spanprof's goroutine-label reader use it to make a newer Go's
build look like an older one's (integration/test_go.py, test/runtime/golabels.mk)."""
import os
import re
import subprocess
import sys


def patch(src, dst, kind):
    data = bytearray(open(src, "rb").read())
    sections = subprocess.run(["readelf", "-SW", src], capture_output=True, text=True,
                              check=True).stdout
    info = re.search(r"\.debug_info\s+PROGBITS\s+[0-9a-f]+ ([0-9a-f]+)", sections)
    dump = subprocess.run(["readelf", "--debug-dump=info", src], capture_output=True,
                          text=True, check=True).stdout
    # (DW_TAG_structure_type) / DW_AT_name : runtime/pprof.labelMap / DW_AT_byte_size /
    # <offset> Unknown AT value: 2900: 25
    found = re.search(r"\(DW_TAG_structure_type\)\n\s+<[0-9a-f]+>\s+DW_AT_name\s+: "
                      r"runtime/pprof\.labelMap\n(?:\s+<[0-9a-f]+>\s+DW_AT_byte_size.*\n)?"
                      r"\s+<([0-9a-f]+)>\s+Unknown AT value: 2900: 25\n", dump)
    if not info or not found:
        sys.exit(f"{src}: no uncompressed .debug_info with a runtime/pprof.labelMap struct")
    at = int(info.group(1), 16) + int(found.group(1), 16)
    if data[at] != 25:
        sys.exit(f"{src}: byte {at:#x} is {data[at]}, not the kind 25")
    data[at] = kind
    with open(dst, "wb") as f:
        f.write(data)
    os.chmod(dst, 0o755)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: labelmap_kind.py IN OUT KIND")
    patch(sys.argv[1], sys.argv[2], int(sys.argv[3]))
