"""A binary packaged the way Fedora ships them (stripped, its function symbols in an xz-compressed
ELF in .gnu_debugdata, as find-debuginfo's add_minidebug makes it) profiled by the real agent:
its frames are named from the MiniDebugInfo. Root (BPF)."""
import subprocess

from conftest import WORKLOADS, compile_c, read_folded, record


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
    p = procs.start(binary, "12")
    out = tmp_path / "out"
    record(spanprof, out, "--pid", p.pid, "--duration", 4, "--frequency", 99,
           "--debuginfod", "")
    folded = read_folded(out / "profile.folded")
    total = sum(c for _, c in folded)
    named = sum(c for f, c in folded if all(x in f for x in ("main", "a", "b", "c")))
    assert total >= 20, f"only {total} samples"
    assert named / total >= 0.9, folded[:5]
