"""The source layout keeps the rule docs/architecture.md states (no root, no kernel needed):
every `#include "folder/..."` of exporter/ goes to a lower layer of the table there, every
folder of exporter/ is in the table, and the paths the docs and the headers name exist."""
import re
from pathlib import Path

from conftest import ROOT

EXPORTER = ROOT / "exporter"
DOC = ROOT / "docs" / "architecture.md"


def unit_of(rel):
    """The layering unit of a path under exporter/: its folder, runtime/NAME for a runtime
    (runtime for the files of runtime/ itself: the interface every runtime implements)."""
    parts = Path(rel).parts
    return "/".join(parts[:2]) if parts[0] == "runtime" and len(parts) > 2 else parts[0]


def layers():
    """{folder: layer} from the table after the '<!-- layers' comment of architecture.md."""
    text = DOC.read_text()
    start = text.index("<!-- layers")
    out = {}
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if out:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0].isdigit():
            for folder in cells[1].split():
                assert folder not in out, f"{folder} twice in the table"
                out[folder] = int(cells[0])
    return out


def includes():
    """(file, line number, from unit, to unit, include) of every exporter include of a folder."""
    for path in sorted(EXPORTER.rglob("*.[ch]")):
        src = unit_of(path.relative_to(EXPORTER))
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+/[^"]+)"', line)
            if m and (EXPORTER / m.group(1)).exists():
                yield path.relative_to(ROOT), n, src, unit_of(m.group(1)), m.group(1)


def test_every_folder_has_a_layer():
    table = layers()
    folders = {unit_of(p.relative_to(EXPORTER)) for p in EXPORTER.rglob("*.[ch]")}
    assert folders - set(table) == set(), f"folders missing from {DOC.name}'s layer table"
    assert set(table) - folders == set(), f"layers name folders that do not exist"


def test_includes_go_down_the_layers():
    table = layers()
    wrong = [f"{f}:{n}: {src} (layer {table[src]}) includes {inc} ({dst}, layer {table[dst]})"
             for f, n, src, dst, inc in includes()
             if src != dst and dst != "util" and table[dst] >= table[src]]
    assert not wrong, "includes against the layers of docs/architecture.md:\n" + "\n".join(wrong)


PATH_RE = re.compile(r"\b(?:exporter|bench|test|bpf|integration|docs|scripts)/[A-Za-z0-9_./-]*")


def test_paths_named_in_docs_exist():
    """A path the docs or the exporter's comments name (exporter/..., bench/..., test/...) exists:
    a file moved without its mentions is a stale pointer for the next reader. Paths with a
    placeholder (NAME, *) or a build product's stem are skipped."""
    sources = list((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
    sources += list(EXPORTER.rglob("*.[ch]"))
    stale = []
    for src in sources:
        fenced = False
        for n, line in enumerate(src.read_text(errors="replace").splitlines(), 1):
            if src.suffix == ".md" and line.startswith("```"):
                fenced = not fenced  # a program's output or a shell session: not a pointer
            if fenced:
                continue
            for m in PATH_RE.finditer(line):
                p = m.group(0).rstrip(".,:;")
                # Placeholders and globs; "bpf/bpf.h" & co. are libbpf's <bpf/...> headers.
                if re.search(r"[A-Z*]", p) or p.endswith(("_", "-")) or line[m.start() - 1] == "<":
                    continue
                if line[m.start() - 1:m.start()] in ("/", "$"):
                    continue  # a part of a longer path (build/bench/view, $(BUILD)/test/...)
                base = p.rstrip("/")
                cands = [ROOT / base]
                # "features.[ch]", a program built from base.c, a module named by its stem
                cands += [ROOT / (base + ext) for ext in (".c", ".h", ".py", ".sh", ".mk")]
                if any(c.exists() for c in cands) or "[" in p:
                    continue
                stale.append(f"{src.relative_to(ROOT)}:{n}: {p}")
    assert not stale, "paths named that do not exist:\n" + "\n".join(stale)


def test_bench_mirrors_the_folders():
    """bench/ holds benchmarks by the folder of what they measure (bench/<folder>/, as test/):
    at its top only what they share (benchproc.py, workloads/)."""
    shared = {"benchproc.py", "workloads", "__pycache__"}
    top = {p.name for p in (ROOT / "bench").iterdir()} - shared
    table = {f.split("/")[0] for f in layers()}
    stray = sorted(n for n in top if not (ROOT / "bench" / n).is_dir() or n not in table)
    assert not stray, f"bench/ entries outside a folder of exporter/'s: {stray}"


LONG_FILE_LINES = 1500


def long_file_notes():
    """{path: reason} from the paragraph after the '<!-- long files' comment of
    architecture.md: one line "- `exporter/PATH`: why" per file (or a sentence saying none)."""
    text = DOC.read_text()
    start = text.index("<!-- long files")
    out = {}
    for line in text[start:].splitlines()[1:]:
        if not line.strip():
            break
        m = re.match(r"- `(exporter/[^`]+)`: (.+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_no_long_source_file_without_a_reason():
    """A source file of exporter/ past 1,500 lines is a module that grew sections of its own:
    split it, or say in docs/architecture.md why it stays whole."""
    notes = long_file_notes()
    long = {str(p.relative_to(ROOT)): len(p.read_text(errors="replace").splitlines())
            for p in EXPORTER.rglob("*.[ch]")}
    long = {p: n for p, n in long.items() if n > LONG_FILE_LINES}
    missing = [f"{p}: {n} lines" for p, n in sorted(long.items()) if p not in notes]
    assert not missing, (f"files over {LONG_FILE_LINES} lines with no note in {DOC.name}:\n"
                         + "\n".join(missing))
    stale = [p for p in notes if p not in long]
    assert not stale, f"{DOC.name} explains the length of files that are no longer long: {stale}"


def module_includes():
    """{(folder, module): {module, ...}}: the modules of the same folder whose header a module's
    .c or .h includes. A module is a stem: foo.c and foo.h are one module."""
    graph = {}
    for path in sorted(EXPORTER.rglob("*.[ch]")):
        folder = path.parent.relative_to(EXPORTER)
        me = (str(folder), path.stem)
        deps = graph.setdefault(me, set())
        for line in path.read_text(errors="replace").splitlines():
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = Path(m.group(1))
            if str(inc.parent) == str(folder) and inc.stem != path.stem:
                deps.add((str(folder), inc.stem))
    return graph


def test_no_module_cycle_inside_a_folder():
    """Modules of one folder depend on each other one way: a cycle (a.h includes b.h, and b's
    files include a.h) means neither can be read, tested or moved without the other."""
    graph = module_includes()
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                cycles.append(" -> ".join(f"{f}/{m}" for f, m in cycle))
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not cycles, "module cycles inside a folder:\n" + "\n".join(cycles)
