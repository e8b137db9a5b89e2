"""Compile commands shaped like BMv2's compilers, writing p4sim's compiled JSON:
``p4sim-p4c-bm2-ss`` (like ``p4c-bm2-ss``) and ``p4sim-p4c`` (like the ``p4c`` driver with
``--target bmv2 --arch v1model``).

Both take the options the P4 tutorials pass (``utils/Makefile``: ``--p4v 16
--p4runtime-files build/x.p4.p4info.txtpb -o build/x.json x.p4``; ``runptf.sh``: ``p4c
--target bmv2 --arch v1model --p4runtime-files build/x.p4info.txtpb -o build x.p4``) and
the common ones of p4c: ``-I``, ``-D``, ``--std p4-16`` (``-x``), ``--p4v 16``, ``-b/--target
bmv2``, ``-a/--arch v1model``, ``--p4runtime-file F --p4runtime-format text|json|binary``,
``--Wdisable[=KIND]`` (p4c's warnings are printed on stderr as ``python -m p4sim compile``
prints them, :mod:`p4sim.compile_warnings`; ``--Wdisable`` silences them, ``=KIND`` one
kind), ``--Wwarn``/``--Winfo``/``--Werror`` (accepted, no effect). Anything else is refused
(exit 1), as p4c refuses an unknown option.

What they write:

* the **compiled JSON**: p4sim's device config ``{"format": "p4sim-1", "name": "x.p4",
  "source": <preprocessed P4>}`` (:class:`p4sim.device.DeviceConfig`, the same file as
  ``python -m p4sim compile --config``). It is what ``p4sim-simple-switch-grpc x.json``
  loads and what a controller sends as ``p4_device_config`` (raw or as PI's
  ``P4DeviceConfig.device_data``): the file plays the part of BMv2's JSON. ``p4sim-p4c-bm2-ss``
  writes it to ``-o FILE`` (no ``-o``: no JSON, as p4c-bm2-ss); ``p4sim-p4c`` to
  ``DIR/<name>.json`` for ``-o DIR`` (default ``.``), with the preprocessed source in
  ``DIR/<name>.p4i``, as the p4c driver does;
* the **P4Info** to each ``--p4runtime-files`` entry (comma-separated), the format by
  suffix as p4c: ``.txtpb`` text, ``.txt`` text (with p4c's deprecation warning),
  ``.json`` JSON, ``.bin`` binary.

The preprocessor defines ``__TARGET_BMV2__`` (p4c-bm2-ss does). Exit status: 0, 1 on a
program error or a bad command line (the message on stderr, never a traceback).

Example::

    >>> import pathlib, tempfile
    >>> tmp = tempfile.TemporaryDirectory(); d = pathlib.Path(tmp.name)
    >>> _ = (d / "x.p4").write_text('#include <v1model.p4>\\n'
    ...     'header h_t { bit<8> f; } struct hs { h_t h; } struct m_t { }\\n'
    ...     'parser P(packet_in p, out hs h, inout m_t m, inout standard_metadata_t s) {\\n'
    ...     '  state start { p.extract(h.h); transition accept; } }\\n'
    ...     'control C(inout hs h, inout m_t m) { apply { } }\\n'
    ...     'control I(inout hs h, inout m_t m, inout standard_metadata_t s) { apply { } }\\n'
    ...     'control E(inout hs h, inout m_t m, inout standard_metadata_t s) { apply { } }\\n'
    ...     'control D(packet_out p, in hs h) { apply { p.emit(h.h); } }\\n'
    ...     'V1Switch(P(), C(), I(), E(), C(), D()) main;\\n')
    >>> main_p4c_bm2_ss(["--p4v", "16", "--p4runtime-files", str(d / "x.p4info.txtpb"),
    ...                  "-o", str(d / "x.json"), str(d / "x.p4")])
    0
    >>> sorted(p.name for p in d.iterdir())
    ['x.json', 'x.p4', 'x.p4info.txtpb']
    >>> tmp.cleanup()
    >>> parse_command_line(["--arch", "psa", "x.p4"], driver=True)
    Traceback (most recent call last):
    p4sim.tutorials.p4c.UsageError: architecture 'psa' is not supported: p4sim is a v1model target (--arch v1model)
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from typing import NoReturn, Optional, Sequence

from p4sim.errors import P4Error
from p4sim.tutorials.p4c_shell import cpp_failure


EXIT_OK, EXIT_ERROR = 0, 1

#: P4Info file suffixes p4c knows, and the format each selects
P4INFO_SUFFIXES = {".txtpb": "text", ".txt": "text", ".json": "json", ".bin": "binary"}


class UsageError(Exception):
    """A command line the compiler refuses (printed as ``PROG: error: MESSAGE``)."""


class _ArgParser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of exiting with status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass
class CompileRequest:
    """One compilation: the program, its preprocessor inputs and the files to write."""

    program: str
    include_dirs: list[str] = field(default_factory=list)
    defines: dict[str, str] = field(default_factory=dict)
    config_path: Optional[str] = None
    p4i_path: Optional[str] = None
    p4info_files: list[tuple[str, str]] = field(default_factory=list)   # (path, format)
    wdisable: Optional[list[str]] = None       # --Wdisable ("" silences every warning)


def _parser(prog: str, driver: bool) -> _ArgParser:
    ap = _ArgParser(prog=prog, description=(
        "p4sim's compiler shaped like " + ("the p4c driver (-o DIR)" if driver
                                           else "p4c-bm2-ss (-o FILE)")
        + ": writes p4sim's compiled JSON and the P4Info"))
    ap.add_argument("program", nargs="?", help="P4_16 v1model source")
    ap.add_argument(*(("-o", "--output") if driver else ("-o",)), dest="output",
                    metavar="DIR" if driver else "FILE",
                    help="output directory (DIR/<name>.json, DIR/<name>.p4i)" if driver
                    else "compiled JSON (p4sim's device config)")
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    ap.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]")
    ap.add_argument("--p4runtime-files", default=None, metavar="FILE[,FILE...]",
                    help="P4Info files; format by suffix (.txtpb, .txt, .json, .bin)")
    ap.add_argument("--p4runtime-file", default=None, metavar="FILE",
                    help="[deprecated in p4c] P4Info file, format from --p4runtime-format")
    ap.add_argument("--p4runtime-format", default="binary", choices=("binary", "json", "text"))
    ap.add_argument("--p4v", default=None, metavar="{14|16}")
    ap.add_argument("--std", "-x", dest="std", default=None, metavar="{p4-14|p4-16}")
    ap.add_argument(*(("-b", "--target") if driver else ("--target",)), dest="target",
                    default="bmv2")
    ap.add_argument(*(("-a", "--arch") if driver else ("--arch",)), dest="arch",
                    default="v1model")
    ap.add_argument("--Wdisable", nargs="?", const="", default=None, metavar="DIAGNOSTIC",
                    help="no warnings (bare), or none of kind DIAGNOSTIC")
    for flag in ("--Wwarn", "--Winfo", "--Werror"):
        ap.add_argument(flag, nargs="?", const="", default=None, metavar="DIAGNOSTIC",
                        help="accepted (no effect in p4sim)")
    if driver:
        ap.add_argument("-c", "--compile", action="store_true",
                        help="accepted (compiling is all the driver does here)")
    ap.add_argument(*(("-V", "--version") if driver else ("--version",)), action="store_true",
                    dest="version")
    ap.add_argument("-v", dest="verbose", action="count", default=0,
                    help="accepted (p4sim's compiler prints nothing more)")
    return ap


def _language(args: argparse.Namespace) -> None:
    for flag, value, ok in (("--p4v", args.p4v, ("16", "1.2")),
                            ("--std", args.std, ("p4-16", "16"))):
        if value is not None and value not in ok:
            raise UsageError(f"{flag} {value}: p4sim compiles P4_16 only "
                             f"(Illegal language version {value})")
    if args.target != "bmv2":
        raise UsageError(f"target '{args.target}' is not supported: p4sim stands in for "
                         "BMv2's simple_switch (--target bmv2)")
    if args.arch != "v1model":
        raise UsageError(f"architecture '{args.arch}' is not supported: p4sim is a v1model "
                         "target (--arch v1model)")


def _p4info_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    files: list[tuple[str, str]] = []
    for name in filter(None, (args.p4runtime_files or "").split(",")):
        fmt = P4INFO_SUFFIXES.get(os.path.splitext(name)[1])
        if fmt is None:
            raise UsageError(f"{name}: unknown file kind; known suffixes are .bin, .txt, "
                             ".json, and .txtpb")
        if name.endswith(".txt"):
            print("[--Wwarn=deprecated] warning: .txt format is being deprecated; use .txtpb "
                  "instead", file=sys.stderr)
        files.append((name, fmt))
    if args.p4runtime_file:
        files.append((args.p4runtime_file, args.p4runtime_format))
    return files


def parse_command_line(argv: Sequence[str], driver: bool) -> Optional[CompileRequest]:
    """The :class:`CompileRequest` of a command line, or None for ``--version``.

    Raises :class:`UsageError` for a command line p4sim's compiler refuses.

    >>> parse_command_line(["-o", "build", "-D", "X=2", "a/x.p4"], driver=True).config_path
    'build/x.json'
    """
    prog = "p4sim-p4c" if driver else "p4sim-p4c-bm2-ss"
    args = _parser(prog, driver).parse_args(list(argv))
    if args.version:
        return None
    if args.program is None:
        raise UsageError("no P4 program given")
    _language(args)
    defines = {"__TARGET_BMV2__": "1"}
    for d in args.define:
        name, _, value = d.partition("=")
        defines[name] = value or "1"
    req = CompileRequest(args.program, list(args.include), defines,
                         p4info_files=_p4info_files(args),
                         wdisable=None if args.Wdisable is None else [args.Wdisable])
    if driver:
        stem = os.path.splitext(os.path.basename(args.program))[0]
        out_dir = args.output or "."
        req.config_path = os.path.join(out_dir, stem + ".json")
        req.p4i_path = os.path.join(out_dir, stem + ".p4i")
    else:
        req.config_path = args.output
    return req


def run(req: CompileRequest) -> None:
    """Compile ``req.program`` and write its files. Raises
    :class:`p4sim.errors.P4Error` (the program) or :class:`OSError` (a file)."""
    from google.protobuf import json_format, text_format

    from p4sim.device import DeviceConfig
    from p4sim.engine.program import load_preprocessed
    from p4sim.frontend.preprocess import preprocess
    from p4sim.p4info import build_p4info

    from p4sim.compile_warnings import print_warnings

    source = preprocess(req.program, req.include_dirs, req.defines)
    # the switch and the P4Runtime server compile exactly this text (DeviceConfig.source)
    # diagnostics quote the file's own lines, and find names in them (frontend.text.at_name)
    # p4c-bm2-ss writes (and checks) P4Info only when asked (--p4runtime-files), after
    # its front and mid end and before its back end: a P4Info error comes first
    program = load_preprocessed(source, req.program, defer_backend_checks=bool(req.p4info_files))
    print_warnings(program, req.wdisable, sys.stderr)
    p4info = None
    if req.p4info_files:
        try:
            p4info = build_p4info(program)
        except P4Error:
            raise
        except Exception:      # P4Info of a program its back end refuses: that error
            program.check_backend()
            raise
        program.check_backend()
    outputs: list[tuple[str, bytes]] = []
    for path, fmt in req.p4info_files:
        assert p4info is not None
        if fmt == "binary":
            data = p4info.SerializeToString()
        elif fmt == "json":
            data = json_format.MessageToJson(p4info).encode() + b"\n"
        else:
            data = text_format.MessageToString(p4info).encode()
        outputs.append((path, data))
    if req.config_path:
        conf = DeviceConfig(os.path.basename(req.program), source)
        outputs.append((req.config_path, (conf.to_json() + "\n").encode()))
    if req.p4i_path:
        outputs.append((req.p4i_path, source.encode()))
    for path, data in outputs:
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def _main(argv: Optional[Sequence[str]], driver: bool) -> int:
    from p4sim import __main__ as cli
    from p4sim.errors import P4Error

    prog = "p4sim-p4c" if driver else "p4sim-p4c-bm2-ss"
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        req = parse_command_line(argv, driver)
    except UsageError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    if req is None:
        from p4sim.tutorials import VERSION_LINE
        print(f"{prog}: {VERSION_LINE}")
        return EXIT_OK
    failure = cpp_failure(req.program, req.include_dirs)
    if failure is not None:
        # a path p4c's preprocessor command line (sh) cannot carry: refused as p4c does
        print("\n".join(failure), file=sys.stderr)
        return EXIT_ERROR
    try:
        run(req)
    except P4Error as err:
        print(err.render(), file=sys.stderr)
        return EXIT_ERROR
    except OSError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except (Exception, RecursionError) as exc:  # noqa: BLE001 — never a traceback
        cli.internal_error(req.program, exc)
        return EXIT_ERROR
    return EXIT_OK


def main_p4c(argv: Optional[Sequence[str]] = None) -> int:
    """``p4sim-p4c``: shaped like ``p4c --target bmv2 --arch v1model`` (``-o DIR``)."""
    return _main(argv, driver=True)


def main_p4c_bm2_ss(argv: Optional[Sequence[str]] = None) -> int:
    """``p4sim-p4c-bm2-ss``: shaped like ``p4c-bm2-ss`` (``-o FILE``)."""
    return _main(argv, driver=False)


__all__ = ["CompileRequest", "UsageError", "main_p4c", "main_p4c_bm2_ss",
           "parse_command_line", "run"]
