"""Run the STF tests that corpus programs ship (a ``NAME.stf`` beside ``NAME.p4``, as in
p4c's testdata) on p4sim and on a real BMv2 ``simple_switch``, and compare the outcomes
(issue 35: p4sim must pass where BMv2 passes, and never pass a test that BMv2 cannot even
compile).

Not part of ``make test`` and never needed by it (GUIDE: nothing may need BMv2/p4c). With no
``p4c-bm2-ss`` or ``simple_switch`` on PATH, or no p4c source tree (``--p4c-src``, for its
``backends/bmv2/run-bmv2-test.py``), the script says so on stderr and exits 77, having
measured nothing.

Each side, per test:

* BMv2: p4c's own STF runner, ``run-bmv2-test.py P4C_SRC -bd BD PROGRAM -tf TEST.stf`` under
  ``--runner-python`` (a Python with ``ply``, ``ptf`` and ``scapy``: the runner imports
  them), in a temporary folder. ``BD`` is a temporary folder holding the one line of
  ``config.h`` the runner reads (``HAVE_SIMPLE_SWITCH``) and a link to the ``p4c-bm2-ss``
  on PATH. The runner compiles with ``p4c-bm2-ss -o X.json PROGRAM`` and drives
  ``simple_switch`` through pcap files (``--use-files``): no root, no interfaces.
  Outcome: ``pass`` (exit 0), ``compile-fail`` ("Error compiling") or ``fail`` (with the
  runner's first ``ERROR:`` line), or ``timeout``.
* p4sim: ``p4sim-p4c-bm2-ss -o X.json PROGRAM`` in this process
  (:func:`p4sim.tutorials.p4c.main_p4c_bm2_ss`, the same command line), then, when it
  compiles, :func:`p4sim.stf.run_stf`. The same outcomes.

The list is a corpus TSV (``third_party_v1model_4.tsv``); each program's set (tune /
held) comes with it. ``--reference-cache`` keeps BMv2's outcomes (keyed by path and
``p4c-bm2-ss --version``), so measuring another p4sim commit does not run BMv2 again.

Usage (the sources fetched as ``ROOT/<owner>+<repo>/<path>``)::

    source /tmp/ref/env.sh
    .venv/bin/python tests/p4sim/corpus/stf_bmv2.py --root /tmp/i35c4/corpus \\
        --tsv tests/p4sim/corpus/third_party_v1model_4.tsv --p4c-src /tmp/refsrc/p4c \\
        --runner-python /tmp/venv-stf/bin/python --reference-cache /tmp/stf_ref.json \\
        --out /tmp/stf.json
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Optional

from p4sim.errors import P4Error
from p4sim.stf import run_stf
from p4sim.tutorials.p4c import main_p4c_bm2_ss

EXIT_SKIPPED = 77          # the autotools convention for "skipped": nothing was measured
TIMEOUT_S = 300
OUTCOMES = ("pass", "fail", "compile-fail", "timeout")


@dataclass
class Case:
    """One STF test of a corpus program and both outcomes."""

    path: str               # owner+repo/path of the program
    stf: str                # owner+repo/path of the STF file
    set: str                # tune / held
    bmv2: str = ""
    bmv2_detail: str = ""
    p4sim: str = ""
    p4sim_detail: str = ""


def cases(tsv: Path, root: Path) -> list[Case]:
    """Every program of the list with a ``NAME.stf`` beside it under ``root``.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / "o+r").mkdir(); _ = (d / "o+r/a.p4").write_text(""); _ = (d / "o+r/a.stf").write_text("")
    >>> _ = (d / "l.tsv").write_text("# c\\nrepository\\tpath\\tset\\no/r\\ta.p4\\theld\\no/r\\tb.p4\\ttune\\n")
    >>> [(c.path, c.stf, c.set) for c in cases(d / "l.tsv", d)]
    [('o+r/a.p4', 'o+r/a.stf', 'held')]
    """
    out = []
    with open(tsv, newline="") as f:
        for r in csv.DictReader((ln for ln in f if not ln.startswith("#")), delimiter="\t"):
            prog = r["repository"].replace("/", "+") + "/" + r["path"]
            stf = prog.rsplit(".", 1)[0] + ".stf"
            if (root / stf).is_file():
                out.append(Case(prog, stf, r["set"]))
    return out


def bmv2_outcome(rc: Optional[int], output: str) -> tuple[str, str]:
    """p4c's runner's exit status and output as (outcome, detail).

    >>> bmv2_outcome(0, "")
    ('pass', '')
    >>> bmv2_outcome(1, "WARNING: x.p4(3): error: e\\nERROR: Error compiling\\nERROR: Test failed")
    ('compile-fail', 'x.p4(3): error: e')
    >>> bmv2_outcome(1, "ERROR: Packet 0 on port 1 differs\\nERROR: Test failed")
    ('fail', 'Packet 0 on port 1 differs')
    """
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    if rc is None:
        return "timeout", ""
    if rc == 0:
        return "pass", ""
    if any(ln == "ERROR: Error compiling" for ln in lines):
        errs = [ln.split(":", 1)[1].strip() for ln in lines
                if ln.startswith("WARNING:") and "error" in ln.lower()]
        return "compile-fail", errs[0] if errs else ""
    errs = [ln[len("ERROR:"):].strip() for ln in lines if ln.startswith("ERROR:")]
    return "fail", errs[0] if errs else (lines[-1] if lines else "")


def run_bmv2(case: Case, root: Path, p4c_src: Path, runner_python: str, p4c: str) -> tuple[str, str]:
    """Run one test with p4c's runner on ``simple_switch`` (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="stf_bmv2_") as tmp:
        bd = Path(tmp) / "bd"
        bd.mkdir()
        (bd / "config.h").write_text("#define HAVE_SIMPLE_SWITCH 1\n")
        os.symlink(p4c, bd / "p4c-bm2-ss")
        cmd = [runner_python, str(p4c_src / "backends/bmv2/run-bmv2-test.py"), str(p4c_src),
               "-bd", str(bd), str(root / case.path), "-tf", str(root / case.stf)]
        try:
            p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, errors="replace",
                               timeout=TIMEOUT_S, start_new_session=True)
        except subprocess.TimeoutExpired:
            return bmv2_outcome(None, "")
        return bmv2_outcome(p.returncode, p.stdout + p.stderr)


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Optional[FrameType]) -> None:
    raise _Timeout()


def run_p4sim(case: Case, root: Path) -> tuple[str, str]:
    """Compile as ``p4c-bm2-ss -o X.json`` does, then run the STF file on p4sim."""
    prog, stf = root / case.path, root / case.stf
    err = io.StringIO()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        with tempfile.TemporaryDirectory(prefix="stf_p4sim_") as tmp:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = main_p4c_bm2_ss(["-o", os.path.join(tmp, "x.json"), str(prog)])
        if rc != 0:
            lines = [ln for ln in err.getvalue().splitlines() if "error" in ln.lower()]
            return "compile-fail", lines[0].strip() if lines else ""
        result = run_stf(str(prog), str(stf), [str(prog.parent)])
    except _Timeout:
        return "timeout", ""
    except P4Error as e:  # compiled as p4c-bm2-ss, refused by the STF loader: report it
        return "compile-fail", e.render().splitlines()[0]
    finally:
        signal.alarm(0)
    if result.passed:
        return "pass", ""
    report = [ln.strip() for ln in result.report().splitlines() if ln.strip()]
    return "fail", report[0] if report else ""


def summary(rows: list[Case], which: str) -> str:
    """One set's figures: tests, each side's outcomes, agreement, p4sim more permissive."""
    sel = [c for c in rows if which == "all" or c.set == which]
    if not sel:
        return f"{which}: no tests"

    def count(side: str) -> str:
        return ", ".join(f"{o} {sum(1 for c in sel if getattr(c, side) == o)}" for o in OUTCOMES
                         if any(getattr(c, side) == o for c in sel))
    agree = sum(1 for c in sel if c.bmv2 == c.p4sim)
    looser = sum(1 for c in sel if c.p4sim == "pass" and c.bmv2 != "pass")
    return (f"{which}: {len(sel)} tests; BMv2: {count('bmv2')}; p4sim: {count('p4sim')}; "
            f"same outcome {agree}/{len(sel)}; p4sim passes where BMv2 does not: {looser}")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="fetched sources, ROOT/<owner>+<repo>/<path>")
    ap.add_argument("--tsv", type=Path, required=True, help="corpus list (third_party_v1model_N.tsv)")
    ap.add_argument("--p4c-src", type=Path, required=True, help="a p4c source tree (backends/bmv2/run-bmv2-test.py)")
    ap.add_argument("--runner-python", default=sys.executable,
                    help="Python for p4c's runner (needs ply, ptf, scapy)")
    ap.add_argument("--reference-cache", type=Path, help="JSON file keeping BMv2's outcomes")
    ap.add_argument("--out", type=Path, help="write every case as JSON here")
    ap.add_argument("--only", help="only programs whose path contains this")
    args = ap.parse_args(argv)

    p4c = shutil.which("p4c-bm2-ss")
    runner = args.p4c_src / "backends/bmv2/run-bmv2-test.py"
    if p4c is None or shutil.which("simple_switch") is None or not runner.is_file():
        print("stf_bmv2: needs p4c-bm2-ss and simple_switch on PATH and --p4c-src with "
              "backends/bmv2/run-bmv2-test.py; nothing measured", file=sys.stderr)
        return EXIT_SKIPPED
    version = subprocess.run([p4c, "--version"], capture_output=True, text=True).stdout.strip()
    cache: dict[str, list[str]] = {}
    if args.reference_cache and args.reference_cache.is_file():
        cache = json.loads(args.reference_cache.read_text())
    rows = [c for c in cases(args.tsv, args.root) if not args.only or args.only in c.path]
    for c in rows:
        key = f"{version}|{c.path}"
        if key not in cache:
            cache[key] = list(run_bmv2(c, args.root, args.p4c_src, args.runner_python, p4c))
            if args.reference_cache:
                args.reference_cache.write_text(json.dumps(cache, indent=0))
        c.bmv2, c.bmv2_detail = cache[key]
        c.p4sim, c.p4sim_detail = run_p4sim(c, args.root)
        if c.bmv2 != c.p4sim:
            print(f"DIFF [{c.set}] {c.path}: BMv2 {c.bmv2} ({c.bmv2_detail[:150]}) / "
                  f"p4sim {c.p4sim} ({c.p4sim_detail[:150]})", flush=True)
    for which in ("tune", "held", "all"):
        print(summary(rows, which))
    if args.out:
        args.out.write_text(json.dumps([asdict(c) for c in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
