"""Command line of the labs (what each lab's ``make`` targets call).

    python -m labs.labkit list
    python -m labs.labkit run   LAB [--solution] [--target p4sim|bmv2] [--tls]
    python -m labs.labkit check LAB [--solution] [--target p4sim|bmv2] [--tls]

``LAB`` is a lab folder or its name/number (``01``). ``--solution`` uses ``LAB/solution``.
``--tls`` (or ``LAB_TLS=1`` in the environment, e.g. ``make check LAB_TLS=1``) runs the
lab's switch and its P4Runtime client over TLS with client certificates
(:mod:`labs.labkit.switch`); plaintext by default.
Exit status: ``check`` 0 when every check passed, 1 otherwise (a P4 compile error in the
student's file is a failed check, shown as ``file:line:col: error: …``, and so is a
student's Python file that does not load, shown as ``file:line: SyntaxError: …``); 2 when
the lab could not be set up (not root, a tool missing). ``run`` exits 1 on either, and
on a program without a table the lab programs (the compiler removed it: never applied).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from controller.p4rt.errors import P4InfoLookupError
from labs.labkit.build import LabCompileError, LabError
from labs.labkit.plugin import find_labs, load_lab, resolve_lab
from labs.labkit.report import Report
from labs.labkit.student import LOAD_HINT, StudentCodeError
from labs.labkit.switch import TLS_ENV, tls_by_default

COMPILE_HINT = ("your P4 program does not compile: the compiler names the file, line and "
                "column above. Look at the TODO near that line, fix it, then run "
                "`make check` again.")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m labs.labkit", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the labs")
    for name in ("run", "check"):
        p = sub.add_parser(name, help=f"{name} a lab")
        p.add_argument("lab", help="lab folder or number (01)")
        p.add_argument("--solution", action="store_true", help="use the lab's solution/")
        p.add_argument("--target", choices=("p4sim", "bmv2"), default="p4sim")
        p.add_argument("--tls", action="store_true",
                       help="P4Runtime over TLS with client certificates (default: plaintext; "
                            f"${TLS_ENV}=1)")
    return ap


def compile_failure_report(title: str, exc: LabCompileError) -> Report:
    """The report of a check whose P4 program did not compile."""
    r = Report(title)
    r.fail(f"{exc.program.name} compiles", f"{exc.diagnostics}\n{COMPILE_HINT}")
    return r


def load_failure_report(title: str, exc: StudentCodeError) -> Report:
    """The report of a check whose student Python file did not load."""
    r = Report(title)
    r.fail(f"{exc.path.name} loads", f"{exc.message}\n{LOAD_HINT}")
    return r


MISSING_NAME_HINT = ("A table that is never applied is removed by the compiler (p4c-bm2-ss "
                     "does the same): apply it where the lab's TODO says, and check the name.")


def missing_name_report(title: str, exc: Exception) -> Report:
    """The report of a check that needs a table, action or counter the compiled program's
    P4Info does not have (p4c, and p4sim like it, leave out a table that is never applied
    and the actions only it uses: a skeleton's unfinished TODO often shows so)."""
    r = Report(title)
    r.fail("the program has what the check programs", f"{exc}. {MISSING_NAME_HINT}")
    return r


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for lab_dir in find_labs():
                print(f"{lab_dir.name:28s} {load_lab(lab_dir).TITLE}")
            return 0
        if args.tls:
            os.environ[TLS_ENV] = "1"      # every LabSwitch of this lab (labkit.switch)
        lab_dir = resolve_lab(args.lab)
        plugin = load_lab(lab_dir)
        files_dir = lab_dir / "solution" if args.solution else lab_dir
        which = "solution" if args.solution else "your files"
        print(f"lab {lab_dir.name}: {plugin.TITLE} ({which}: "
              f"{', '.join(str(Path(files_dir.name) / f) for f in plugin.FILES)}; "
              f"{f'target {args.target}' if getattr(plugin, 'SWITCH', True) else 'no switch: --target is ignored'}"
              f"{', P4Runtime over TLS' if tls_by_default() else ''})", flush=True)
        if args.command == "run":
            try:
                return int(plugin.run(files_dir, args.target))
            except LabCompileError as exc:
                print(f"{exc.diagnostics}\n{COMPILE_HINT}", file=sys.stderr)
                return 1
            except StudentCodeError as exc:
                print(f"{exc.message}\n{LOAD_HINT}", file=sys.stderr)
                return 1
            except P4InfoLookupError as exc:
                print(f"{exc}. {MISSING_NAME_HINT}", file=sys.stderr)
                return 1
        try:
            report = plugin.check(files_dir, args.target)
        except LabCompileError as exc:
            report = compile_failure_report(plugin.TITLE, exc)
        except StudentCodeError as exc:
            report = load_failure_report(plugin.TITLE, exc)
        except P4InfoLookupError as exc:
            report = missing_name_report(plugin.TITLE, exc)
        report.print()
        return report.exit_code
    except LabError as exc:
        print(f"labkit: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
