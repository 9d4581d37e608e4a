"""A binary packaged the way Fedora ships them (stripped, its function symbols in an xz-compressed
ELF in .gnu_debugdata, as find-debuginfo's add_minidebug makes it) profiled by the real agent:
its frames are named from the MiniDebugInfo. Root (BPF)."""
import os
import subprocess

import time

from conftest import WORKLOADS, compile_c, read_folded, wait_sampling

DURATION = 4


def sh(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw)


def fedora_package(full, out):
    """@out: @full stripped, with .gnu_debugdata holding the function symbols .dynsym lacks."""
    debug = out.with_name(out.name + ".debug")
    sh("objcopy", "--only-keep-debug", full, debug)
    sh("strip", "--strip-all", full, "-o", out)
    dynsyms = {l.split()[0] for l in sh("nm", "-D", "--format=posix", "--defined-only",
                                        out).stdout.splitlines() if l.strip()}
    funcs = {f.split("|")[0].strip() for f in sh("nm", "--format=sysv", "--defined-only",
                                                 debug).stdout.splitlines()
             if f.count("|") >= 3 and "FUNC" in f.split("|")[3]}
    keep = out.with_name(out.name + ".keep")
    keep.write_text("".join(s + "\n" for s in sorted(funcs - dynsyms)))
    mini = out.with_name(out.name + ".mini")
    sh("objcopy", "-S", "--remove-section", ".debug_*", "--remove-section", ".comment",
       f"--keep-symbols={keep}", debug, mini)
    sh("xz", "-f", mini)
    sh("objcopy", "--add-section", f".gnu_debugdata={mini}.xz", out)
    debug.unlink()
    return out


def test_fedora_style_binary_is_named(spanprof, procs, tmp_path):
    full = compile_c(WORKLOADS / "chain.c", tmp_path / "chain.full")
    binary = fedora_package(full, tmp_path / "chain")
    sections = sh("readelf", "-S", binary).stdout
    # What makes the test mean something: no symbol table of its own, no DWARF, no debug file.
    assert ".symtab" not in sections and ".debug_info" not in sections
    assert ".gnu_debugdata" in sections
    p = procs.start(binary, "30")
    out = tmp_path / "out"
    stat = f"/proc/{p.pid}/stat"

    def cpu_seconds():
        fields = open(stat).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    agent = procs.start(spanprof, "record", "--output-dir", out, "--pid", p.pid, "--duration",
                        DURATION, "--frequency", 99, "--debuginfod", "",
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_sampling(agent)
    # The CPU time the workload got inside the sampling window sizes what to expect.
    cpu0 = cpu_seconds()
    time.sleep(DURATION - 0.3)
    cpu = cpu_seconds() - cpu0
    _, err = agent.communicate(timeout=120)
    assert agent.returncode == 0, err
    folded = read_folded(out / "profile.folded")
    total = sum(c for _, c in folded)
    named = sum(c for f, c in folded if all(x in f for x in ("main", "a", "b", "c")))
    # Sized from the CPU time the workload got (a loaded machine gives it less), not the clock.
    assert total >= max(10, 0.5 * cpu * 99), f"{total} samples for {cpu:.2f} s of CPU"
    assert named / total >= 0.9, folded[:5]
