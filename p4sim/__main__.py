"""Command line of p4sim.

``python -m p4sim stf PROGRAM.p4 TEST.stf [-I DIR] [-v]``: run an STF packet test; exit 0
when every expectation matched, 1 on a mismatch or an STF problem (expected vs received is
printed with the differing nibbles marked), 2 when the program does not compile.
``python -m p4sim check PROGRAM.p4 [-I DIR]``: front end only; exit 2 with the message on
an error.
``python -m p4sim compile PROGRAM.p4 [-I DIR] --p4info OUT.txtpb [--p4info-bin OUT.bin]
--config OUT.json``: write the program's P4Info and p4sim's device config (exit 2 on an error).
``check`` and ``compile`` print p4c-bm2-ss's warnings on stderr (exit status unchanged;
``--Wdisable`` / ``--Wdisable=KIND`` as in p4c; :mod:`p4sim.frontend.p4c_warnings`).
``python -m p4sim switch [PROGRAM.p4 | --no-p4] -i PORT@IFACE ... [options]``: the switch
process, a simple_switch_grpc drop-in (see :mod:`p4sim.switchd.main`).
``python -m p4sim ctl ADDR COMMAND [ARGS...]``: the switch's control API, e.g.
``set_queue_rate RATE_PPS [PORT [PRIORITY]]`` (see :mod:`p4sim.switchd.control`).

Example::

    $ python -m p4sim stf tests/p4sim/stf/tables/exact_hit_miss.p4 tests/p4sim/stf/tables/exact_hit_miss.stf
    PASS
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Optional, Sequence

from p4sim.errors import P4Error

EXIT_OK, EXIT_FAIL, EXIT_COMPILE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m p4sim",
                                 description="p4sim: a pure-Python v1model target")
    sub = ap.add_subparsers(dest="command", required=True)
    stf = sub.add_parser("stf", help="run a p4c-style STF packet test")
    stf.add_argument("program")
    stf.add_argument("stf")
    stf.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                     help="add DIR to the #include search path")
    stf.add_argument("-v", "--verbose", action="store_true",
                     help="print the switch trace log (BMv2 --log-console style)")
    check = sub.add_parser("check", help="parse and type-check a program")
    check.add_argument("program")
    check.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    comp = sub.add_parser("compile", help="write the P4Info and the p4sim device config")
    comp.add_argument("program")
    comp.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    for cmd in (check, comp):
        cmd.add_argument("--Wdisable", action="append", metavar="KIND",
                         help="--Wdisable silences every warning, --Wdisable=KIND one kind "
                              "(unused, unsupported, removed, ...), as in p4c")
    comp.add_argument("--p4info", required=True, help="P4Info output, protobuf text format")
    comp.add_argument("--p4info-bin", default=None, help="P4Info output, binary protobuf")
    comp.add_argument("--config", default=None,
                      help="p4sim device config (p4_device_config): JSON with the preprocessed source, see p4sim/device.py")
    sub.add_parser("switch", help="run the switch process (python -m p4sim switch -h)",
                   add_help=False)
    sub.add_parser("ctl", help="switch control API: ctl ADDR COMMAND [ARGS...]", add_help=False)
    return ap


def _front_end(program: str, include: list[str]) -> Any:
    """Parse and type-check ``program``. Name resolution and type checking currently live
    in the engine's compiler, so without a separate ``frontend.checker`` this loads the
    program (which also generates its code, a fraction of a second)."""
    import importlib

    try:
        checker = importlib.import_module("p4sim.frontend.checker")
    except ModuleNotFoundError:
        checker = None
    fn = getattr(checker, "check_program", None) if checker is not None else None
    if callable(fn):
        return fn(program, include)
    from p4sim import engine

    return engine.load_program(program, include)


def _check(program: str, include: list[str], wdisable: Optional[list[str]] = None) -> int:
    from p4sim.compile_warnings import print_warnings

    try:
        prog = _front_end(program, include)
        if prog is not None:
            print_warnings(prog, wdisable, sys.stderr)
    except P4Error as err:
        print(err.render(), file=sys.stderr)
        return EXIT_COMPILE
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_COMPILE
    print(f"{program}: ok")
    return EXIT_OK


def _stf(program: str, stf: str, include: list[str], verbose: bool) -> int:
    from p4sim.stf import run_stf

    log = (lambda line: print(line, file=sys.stderr)) if verbose else None
    try:
        result = run_stf(program, stf, include, log=log)
    except P4Error as err:
        print(err.render(), file=sys.stderr)
        return EXIT_COMPILE
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAIL
    for note in result.notes:
        print(note)
    print(result.report())
    return EXIT_OK if result.passed else EXIT_FAIL


def _compile(args: argparse.Namespace) -> int:
    import os

    from p4sim import engine
    from p4sim.compile_warnings import print_warnings
    from p4sim.p4info import build_p4info, write_p4info

    try:
        prog = engine.load_program(args.program, args.include)
        print_warnings(prog, args.Wdisable, sys.stderr)
        write_p4info(build_p4info(prog), args.p4info, args.p4info_bin)
        if args.config:
            from p4sim.device import DeviceConfig
            from p4sim.frontend.preprocess import preprocess
            conf = DeviceConfig(os.path.basename(args.program), preprocess(args.program, args.include))
            with open(args.config, "w", encoding="utf-8") as f:
                f.write(conf.to_json() + "\n")
    except P4Error as err:
        print(err.render(), file=sys.stderr)
        return EXIT_COMPILE
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_COMPILE
    return EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "switch":
        from p4sim.switchd.main import main as switch_main

        return switch_main(argv[1:])
    if argv and argv[0] == "ctl":
        from p4sim.switchd.control import ctl_main

        if len(argv) < 3:
            print("usage: python -m p4sim ctl ADDR COMMAND [ARGS...]", file=sys.stderr)
            return EXIT_COMPILE
        return ctl_main(argv[1], argv[2], argv[3:])
    # p4c's optional-argument form: a bare --Wdisable never takes the next word
    args = _parser().parse_args(["--Wdisable=" if a == "--Wdisable" else a for a in argv])
    try:
        if args.command == "check":
            return _check(args.program, args.include, args.Wdisable)
        if args.command == "compile":
            return _compile(args)
        return _stf(args.program, args.stf, args.include, args.verbose)
    except (Exception, RecursionError) as exc:  # noqa: BLE001 — never a traceback
        return internal_error(args.program, exc)


def internal_error(program: str, exc: BaseException) -> int:
    """A failure inside p4sim on ``program``: one located line, exit status 2 (a program
    must never make ``check``/``compile``/``stf`` print a Python traceback).

    >>> internal_error("x.p4", ZeroDivisionError("division by zero"))
    2
    """
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        where = f"{tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
        tb = tb.tb_next
    print(f"{program}:1:1: internal error: {type(exc).__name__}: {exc} (in p4sim {where}; "
          "please report it with the program)", file=sys.stderr)
    return EXIT_COMPILE


if __name__ == "__main__":
    sys.exit(main())
