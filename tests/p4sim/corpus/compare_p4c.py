"""Measure p4sim's ``p4sim-p4c-bm2-ss`` against a reference ``p4c-bm2-ss`` on the
third-party corpus (``third_party_v1model.tsv``, issue 35): verdict (accept/refuse), the
first error line of each, and for programs both accept the P4Info text.

Not part of ``make test`` and never needed by it: the reference compiler is not part of the
project (GUIDE: nothing may need p4c). When ``p4c-bm2-ss`` is not on PATH (or ``--p4c``
names nothing runnable) the script says so on stderr and exits 77, having measured nothing.

Each program is compiled as a user of P4Runtime compiles it, with its own folder as include
path: ``p4c-bm2-ss --p4v 16 -I DIR --p4runtime-files X.p4info.txtpb -o X.json FILE``; a
program refused that way is compiled again without ``--p4runtime-files`` (the plain
verdict: p4c checks some things only when it writes P4Info, e.g. anonymous table
implementations). p4sim runs the same command line in this process
(:func:`p4sim.tutorials.p4c.main_p4c_bm2_ss`), so the p4sim measured is the one on
``sys.path`` (run it with ``PYTHONPATH=<an older checkout>`` to measure a base commit).
P4Info is compared as text, the reference's comment lines (``# proto-file: ...``) left out.

Usage (the sources fetched as ``ROOT/<owner>+<repo>/<path>``)::

    source /tmp/ref/env.sh     # puts the reference p4c-bm2-ss on PATH
    .venv/bin/python tests/p4sim/corpus/compare_p4c.py --root /tmp/i35/corpus \\
        --reference-cache /tmp/p4c_ref.json --out /tmp/compare.json

``--reference-cache`` keeps the reference's answers (keyed by path and the compiler's
``--version`` line), so measuring another p4sim commit does not run p4c again. Prints a
table per set (tune, held) and every disagreement, one line each.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import difflib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

TSV = Path(__file__).with_name("third_party_v1model.tsv")
EXIT_SKIPPED = 77          # the autotools convention for "skipped": nothing was measured
TIMEOUT_S = 300


@dataclass
class Verdict:
    """One compiler's answer on one program."""

    p4rt: str                       # "accept" / "refuse" / "timeout" / "crash", with --p4runtime-files
    plain: str                      # the same without --p4runtime-files
    first_error: str = ""           # first "error" line of the refused run (p4rt first, else plain)
    p4info: Optional[str] = None    # P4Info text (comment lines left out), when accepted


@dataclass
class Row:
    """A corpus program and both answers."""

    path: str
    set: str
    ref: Verdict
    sim: Verdict
    diffs: list[str] = field(default_factory=list)

    @property
    def verdict_agrees(self) -> bool:
        return self.ref.p4rt == self.sim.p4rt

    @property
    def plain_agrees(self) -> bool:
        return self.ref.plain == self.sim.plain

    @property
    def message_agrees(self) -> Optional[bool]:
        """Both refuse: the same first message (:func:`message_key`); else None."""
        if self.ref.p4rt != "refuse" or self.sim.p4rt != "refuse":
            return None
        return message_key(self.ref.first_error) == message_key(self.sim.first_error)

    @property
    def p4info_agrees(self) -> Optional[bool]:
        if self.ref.p4info is None or self.sim.p4info is None:
            return None
        return self.ref.p4info == self.sim.p4info


def corpus(tsv: Path = TSV) -> list[tuple[str, str]]:
    """(``owner+repo/path``, set) of every program of the list, in its order.

    >>> progs = corpus()
    >>> len(progs), progs[0][0].split("/")[0]
    (295, 'jafingerhut+p4-guide')
    """
    with open(tsv, newline="") as f:
        rows = csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t")
        return [(r["repository"].replace("/", "+") + "/" + r["path"], r["set"]) for r in rows]


def p4info_text(path: str) -> Optional[str]:
    """The P4Info file's text without comment and blank lines (None if it is missing)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    return "\n".join(ln for ln in lines if ln.strip() and not ln.startswith("#"))


_ERROR_WORD = re.compile(r"\berror\b\s*[:,]|\bbug\b", re.IGNORECASE)


def first_error(stderr: str) -> str:
    """The first line that says ``error:`` (or ``syntax error,``, or ``bug``; p4c's or
    p4sim's), else the first line. A file name with "error" in it is not a diagnostic.

    >>> first_error("x_errors.p4(3): [--Wwarn=deprecated] warning: w\\nx_errors.p4(9): [--Werror=unknown] error: e")
    'x_errors.p4(9): [--Werror=unknown] error: e'
    """
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if _ERROR_WORD.search(ln):
            return ln.strip()
    return lines[0].strip() if lines else ""


_P4C_DIAG = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\):\s*(?:\[--W\w+=[\w -]+\]\s*)?"
                       r"(?:(?P<sev>error|warning):\s*)?(?P<msg>.*)$")
_NOWHERE_DIAG = re.compile(r"^(?:\[--W\w+=[\w -]+\]\s*)?(?P<sev>error|warning):\s*(?P<msg>.*)$")
_GCC_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?:\d+:)?\s*(?:\[--W\w+=[\w -]+\]\s*)?"
                       r"(?P<sev>fatal error|error|warning):\s*(?P<msg>.*)$")


def message_key(line: str) -> tuple[str, int, str, str]:
    """A first error line as (file, line, severity, text), whichever way it is written:
    p4c's ``FILE(LINE): [--Werror=KIND] error: TEXT`` and ``FILE(LINE):syntax error, ...``,
    or the ``FILE:LINE[:COL]: error: TEXT`` of p4sim and of cpp (p4c passes cpp's through).
    Two compilers give the same first message when these agree (the column, which p4c does
    not print, and the diagnostic's kind in brackets are left out).

    >>> message_key("a.p4(57): [--Werror=type-error] error: i: slice bit index values must be constants")
    ('a.p4', 57, 'error', 'i: slice bit index values must be constants')
    >>> message_key("a.p4:57:15: error: i: slice bit index values must be constants")
    ('a.p4', 57, 'error', 'i: slice bit index values must be constants')
    >>> message_key("a.p4(19):syntax error, unexpected }")
    ('a.p4', 19, 'error', 'syntax error, unexpected }')
    >>> message_key("a.p4(3): [--Wwarn=unused] warning: 'x' is unused")
    ('a.p4', 3, 'warning', "'x' is unused")
    >>> message_key("a.p4:3:5: [--Wwarn=unused] warning: 'x' is unused")
    ('a.p4', 3, 'warning', "'x' is unused")
    >>> message_key("a.p4(7): [--Werror=Target model error] error: Expected 1 argument for f()")
    ('a.p4', 7, 'error', 'Expected 1 argument for f()')
    >>> message_key("a.p4:20:10: fatal error: x.p4: No such file or directory")
    ('a.p4', 20, 'fatal error', 'x.p4: No such file or directory')

    A message with no place (p4c's P4Runtime serializer's), with or without its kind:

    >>> message_key("[--Werror=unsupported] error: Table 't' has an anonymous table property")
    ('', 0, 'error', "Table 't' has an anonymous table property")
    >>> message_key("error: Table 't' has an anonymous table property")
    ('', 0, 'error', "Table 't' has an anonymous table property")
    """
    m = _GCC_DIAG.match(line) or _P4C_DIAG.match(line)
    if m is None:
        m = _NOWHERE_DIAG.match(line)
        if m is not None:
            return ("", 0, m["sev"], m["msg"].strip())
        return ("", 0, "", line)
    return (m["file"], int(m["line"]), m["sev"] or "error", m["msg"].strip())


def _command(program: str, tmp: str, p4rt: bool) -> list[str]:
    args = ["--p4v", "16", "-I", os.path.dirname(program)]
    if p4rt:
        args += ["--p4runtime-files", os.path.join(tmp, "x.p4info.txtpb")]
    return args + ["-o", os.path.join(tmp, "x.json"), program]


def _verdict(run) -> Verdict:
    """Both runs of one compiler: ``run(p4rt: bool, tmp) -> (status, stderr)``."""
    with tempfile.TemporaryDirectory() as tmp:
        status, err = run(True, tmp)
        if status == "accept":
            return Verdict("accept", "accept", "", p4info_text(os.path.join(tmp, "x.p4info.txtpb")))
    with tempfile.TemporaryDirectory() as tmp:
        plain, err2 = run(False, tmp)
    return Verdict(status, plain, first_error(err) or first_error(err2))


def reference_verdict(p4c: str, program: str) -> Verdict:
    """The reference compiler's answer (a subprocess each run)."""
    def run(p4rt: bool, tmp: str) -> tuple[str, str]:
        try:
            proc = subprocess.run([p4c, *_command(program, tmp, p4rt)], capture_output=True,
                                  text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return "timeout", ""
        if proc.returncode == 0:
            return "accept", proc.stderr
        # p4c exits 1 on a program error; a signal or another status is a crash
        return ("refuse" if proc.returncode == 1 else "crash"), proc.stderr
    return _verdict(run)


class _Timeout(Exception):
    pass


def _alarm(*_: object) -> None:
    raise _Timeout()


def p4sim_verdict(program: str) -> Verdict:
    """p4sim's drop-in on the same command lines, in this process."""
    from p4sim.tutorials.p4c import main_p4c_bm2_ss

    def run(p4rt: bool, tmp: str) -> tuple[str, str]:
        err = io.StringIO()
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(TIMEOUT_S)
        try:
            with contextlib.redirect_stderr(err):
                rc = main_p4c_bm2_ss(_command(program, tmp, p4rt))
        except _Timeout:
            return "timeout", err.getvalue()
        except BaseException as exc:  # noqa: BLE001 — a raise is a finding, not a stop
            return "crash", f"{type(exc).__name__}: {exc}"
        finally:
            signal.alarm(0)
        text = err.getvalue()
        if rc == 0:
            return "accept", text
        return ("crash" if "internal error" in text.lower() else "refuse"), text
    return _verdict(run)


def p4info_diff(ref: str, sim: str, n: int = 6) -> list[str]:
    """The first ``n`` changed lines (``-`` reference, ``+`` p4sim)."""
    out = [ln for ln in difflib.unified_diff(ref.splitlines(), sim.splitlines(), lineterm="", n=0)
           if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return out[:n]


def summary(rows: list[Row]) -> dict[str, dict[str, int]]:
    """Counts per set: programs, verdicts agreeing (with and without P4Info), both accept,
    P4Info identical, p4sim accepts what the reference refuses (more permissive)."""
    out: dict[str, dict[str, int]] = {}
    for name in ("tune", "held", "all"):
        rs = [r for r in rows if name == "all" or r.set == name]
        both = [r for r in rs if r.p4info_agrees is not None]
        out[name] = {
            "programs": len(rs),
            "ref_accepts": sum(r.ref.p4rt == "accept" for r in rs),
            "sim_accepts": sum(r.sim.p4rt == "accept" for r in rs),
            "verdict_agrees": sum(r.verdict_agrees for r in rs),
            "plain_verdict_agrees": sum(r.plain_agrees for r in rs),
            "both_accept": len(both),
            "p4info_identical": sum(bool(r.p4info_agrees) for r in both),
            "sim_more_permissive": sum(r.sim.p4rt == "accept" and r.ref.p4rt != "accept" for r in rs),
            "sim_crash_or_timeout": sum(r.sim.p4rt in ("crash", "timeout") for r in rs),
            "both_refuse": sum(r.message_agrees is not None for r in rs),
            "first_message_same": sum(bool(r.message_agrees) for r in rs),
        }
    return out


HEADER = """\
# Third-party v1model programs of issue 35's own corpus (p4sim/README.md, 'Third-party programs').
# Not stored here: each is named by repository, commit and path. set: tune (fixes were made looking at these)
# or held (a third, chosen by sha1(repository/path) % 3 == 0 before any fix, only measured).
# p4sim / p4c_bm2_ss: each compiler's verdict with --p4runtime-files and the first line of its error, as
# written by tests/p4sim/corpus/compare_p4c.py --update-list (p4sim at the commit that wrote this file;
# the reference: {version}).
"""
COLUMNS = ("repository", "commit", "path", "licence", "set", "p4sim", "p4sim_first_error",
           "p4c_bm2_ss", "p4c_first_error")


def update_list(tsv: Path, rows: list[Row], root: str, version: str) -> None:
    """Rewrite ``tsv`` with this run's verdicts (paths in messages relative to the program's
    repository, as the list names them)."""
    by_path = {r.path: r for r in rows}
    with open(tsv, newline="") as f:
        old = list(csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t"))
    with open(tsv) as f:
        comments = [ln for ln in f if ln.startswith("#")]
    header = HEADER.format(version=f"p4c-bm2-ss {version}")
    if tsv.resolve() != TSV.resolve() and comments:
        # another list (``--tsv``) keeps its own comment lines, the reference's version last
        kept = [ln for ln in comments if not ln.startswith("# the reference: ")]
        header = "".join(kept) + f"# the reference: p4c-bm2-ss {version}.\n"

    def short(message: str, rel: str) -> str:
        message = message.replace(os.path.join(root, rel.split("/", 1)[0]) + "/", "")
        return re.sub(r"\S*/p4include/", "", message).replace("\t", " ")

    out = [header, "\t".join(COLUMNS) + "\n"]
    for r in old:
        rel = r["repository"].replace("/", "+") + "/" + r["path"]
        row = by_path[rel]
        r.update(p4sim=row.sim.p4rt, p4sim_first_error=short(row.sim.first_error, rel),
                 p4c_bm2_ss=row.ref.p4rt, p4c_first_error=short(row.ref.first_error, rel))
        out.append("\t".join(r.get(c, "") or "" for c in COLUMNS) + "\n")
    tsv.write_text("".join(out))


def _version(p4c: str) -> str:
    proc = subprocess.run([p4c, "--version"], capture_output=True, text=True, timeout=60)
    text = " ".join((proc.stdout + proc.stderr).split())   # p4c prints it on stderr, after argv[0]
    return text[text.find("Version"):] if "Version" in text else text


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="folder holding <owner>+<repo>/<path> sources")
    ap.add_argument("--tsv", type=Path, default=TSV, help="corpus list (default: the repository's)")
    ap.add_argument("--p4c", default="p4c-bm2-ss", help="the reference compiler (default: on PATH)")
    ap.add_argument("--only", default=None, help="measure only paths containing this text")
    ap.add_argument("--reference-cache", default=None,
                    help="JSON file keeping the reference's answers (read, then updated)")
    ap.add_argument("--out", default=None, help="write every row as JSON here")
    ap.add_argument("--show-messages", action="store_true",
                    help="print every differing first message (default: the tuning set's only)")
    ap.add_argument("--update-list", action="store_true",
                    help="rewrite the list's verdict columns (p4sim, p4c_bm2_ss) from this run")
    args = ap.parse_args(argv)
    p4c = shutil.which(args.p4c)
    if p4c is None:
        print(f"compare_p4c: {args.p4c} not found on PATH: nothing measured (skipped)", file=sys.stderr)
        return EXIT_SKIPPED
    version = _version(p4c)
    cache: dict = {}
    if args.reference_cache and os.path.exists(args.reference_cache):
        cache = json.loads(Path(args.reference_cache).read_text())
    if cache.get("version") != version:
        cache = {"version": version, "programs": {}}
    sys.setrecursionlimit(10000)
    rows: list[Row] = []
    missing = []
    for rel, part in corpus(args.tsv):
        if args.only and args.only not in rel:
            continue
        program = os.path.join(args.root, rel)
        if not os.path.exists(program):
            missing.append(rel)
            continue
        if rel not in cache["programs"]:
            cache["programs"][rel] = asdict(reference_verdict(p4c, program))
            if args.reference_cache:
                Path(args.reference_cache).write_text(json.dumps(cache))
        row = Row(rel, part, Verdict(**cache["programs"][rel]), p4sim_verdict(program))
        if row.p4info_agrees is False:
            row.diffs = p4info_diff(row.ref.p4info or "", row.sim.p4info or "")
        rows.append(row)
    if missing:
        print(f"compare_p4c: {len(missing)} programs missing under {args.root}: {missing[:5]}",
              file=sys.stderr)
        return 1
    counts = summary(rows)
    print(f"reference: {version}")
    print("set    programs  ref-acc  sim-acc  verdict=  plain=  both-acc  p4info=  sim-more-permissive"
          "  sim-crash  both-refuse  message=")
    for name, c in counts.items():
        print(f"{name:6} {c['programs']:8} {c['ref_accepts']:8} {c['sim_accepts']:8} {c['verdict_agrees']:9}"
              f" {c['plain_verdict_agrees']:7} {c['both_accept']:9} {c['p4info_identical']:8}"
              f" {c['sim_more_permissive']:20} {c['sim_crash_or_timeout']:10}"
              f" {c['both_refuse']:12} {c['first_message_same']:9}")
    for r in rows:
        if r.message_agrees is False and (args.show_messages or r.set == "tune"):
            print(f"MESSAGE {r.set} {r.path}:\n    ref: {r.ref.first_error}\n    sim: {r.sim.first_error}")
    for r in rows:
        if not r.verdict_agrees or not r.plain_agrees:
            print(f"VERDICT {r.set} {r.path}: ref {r.ref.p4rt}/{r.ref.plain} sim {r.sim.p4rt}/{r.sim.plain}\n"
                  f"    ref: {r.ref.first_error}\n    sim: {r.sim.first_error}")
        elif r.p4info_agrees is False:
            print(f"P4INFO {r.set} {r.path}:\n" + "\n".join("    " + d for d in r.diffs))
    if args.update_list and not args.only:
        update_list(args.tsv, rows, args.root, version)
    if args.out:
        Path(args.out).write_text(json.dumps(
            {"reference": version, "summary": counts,
             "rows": [{**asdict(r), "diffs": r.diffs} for r in rows]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
