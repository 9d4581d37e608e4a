"""Reads the RESULTS directories of integration/kernels/run.sh and prints, per kernel, the
package, the guest's uname, each test's outcome and the loading times, then one closing line
'all: N passed, N failed' (a kernel whose guest ran no test counts as one failure).
Usage: summary.py RESULTS...; exit status 0 when nothing failed."""
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def read(results):
    """{'package', 'uname', 'cases': [(id, outcome)], 'load': [lines]} of one RESULTS dir."""
    d = Path(results)
    info = {"package": "?", "uname": "?", "cases": [], "load": []}
    for key in ("package", "uname"):
        if (d / key).exists():
            info[key] = (d / key).read_text().strip()
    if (d / "load-times.txt").exists():
        info["load"] = (d / "load-times.txt").read_text().splitlines()
    if (d / "junit.xml").exists():
        for case in ET.parse(d / "junit.xml").getroot().iter("testcase"):
            outcome = "passed"
            for tag in ("failure", "error", "skipped"):
                if case.find(tag) is not None:
                    outcome = {"failure": "failed", "error": "error"}.get(tag, tag)
            cid = case.get("classname", "").replace(".", "/") + ".py::" + case.get("name", "")
            info["cases"].append((cid, outcome))
    return info


def main(dirs):
    passed = failed = 0
    for d in dirs:
        info = read(d)
        print(f"== {info['package']} (guest uname {info['uname']})")
        for line in info["load"]:
            print(f"   load: {line}")
        for cid, outcome in info["cases"]:
            print(f"   {outcome:7} {cid}")
        ok = sum(1 for _, o in info["cases"] if o == "passed")
        bad = len(info["cases"]) - ok
        if not info["cases"]:
            bad = 1
            print("   no test ran in the guest")
        passed += ok
        failed += bad
    print(f"\nall: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
