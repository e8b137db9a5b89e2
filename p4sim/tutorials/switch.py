"""``p4sim-simple-switch-grpc``: BMv2's ``simple_switch_grpc`` command line on p4sim's
switch process (:mod:`p4sim.switchd.main`).

The P4 tutorials start the switch as (``utils/p4runtime_switch.py``, ``runptf.sh``)::

    simple_switch_grpc -i 1@s1-eth1 -i 2@s1-eth2 --pcap pcaps --nanolog ipc:///tmp/bm-0-log.ipc
        --device-id 0 build/basic.json --log-console --thrift-port 9090
        -- --grpc-server-addr 0.0.0.0:50051 [--cpu-port N] [--priority-queues N]
    simple_switch_grpc --log-file ss-log --log-flush --dump-packet-data 10000 -i 0@veth0 ... --no-p4

``p4sim switch`` already takes most of that; this command maps the rest of BMv2's
general options (those before ``--``; the target options after it pass unchanged):

* ``--log-file F`` writes ``F.txt``, as BMv2 does (its spdlog file sink appends ``.txt``);
* ``-L LEVEL`` is ``--log-level LEVEL``;
* accepted and without effect: ``--log-flush`` (p4sim flushes every log line),
  ``--log-file-max-size N`` / ``--log-file-max-files N`` (p4sim does not rotate its log),
  ``--dump-packet-data N`` (p4sim's trace shows the parsed headers, not raw bytes),
  ``--max-port-count N``, ``--notifications-addr A`` (no nanomsg: digests and idle
  timeouts reach the controller over P4Runtime), as ``--thrift-port`` and ``--nanolog``;
* refused, exit 1 with a message: ``--use-files``, ``--packet-in``, ``--debugger``,
  ``--debugger-addr``, ``--restore-state``, ``--json-version``; and a BMv2 JSON (p4c-bm2-ss
  output) as the program, naming the command that writes p4sim's compiled JSON.

The program is p4sim's compiled JSON (``p4sim-p4c-bm2-ss``/``p4sim-p4c`` output, the same
file the controller later sends as ``P4DeviceConfig.device_data``), a P4 source, or
``--no-p4``.

Example::

    >>> translate(["-i", "0@veth0", "--log-file", "ss-log", "--log-flush",
    ...            "--dump-packet-data", "10000", "--no-p4", "--", "--cpu-port", "255"])
    ['-i', '0@veth0', '--log-file', 'ss-log.txt', '--no-p4', '--', '--cpu-port', '255']
"""
from __future__ import annotations

import json
import sys
from typing import Optional, Sequence

from p4sim.tutorials import VERSION_LINE

PROG = "p4sim-simple-switch-grpc"
EXIT_OK, EXIT_REFUSED = 0, 1

#: BMv2 general options with a value that p4sim's switch takes as they are
_PASS_WITH_VALUE = {"-i", "--interface", "--thrift-port", "--device-id", "--nanolog",
                    "--log-level", "-I", "--queue-depth", "--queue-rate", "--line-rate-gbps",
                    "--control-port", "--request-log"}
#: BMv2 general options accepted without effect on p4sim (value or not)
_IGNORED_WITH_VALUE = {"--log-file-max-size", "--log-file-max-files", "--dump-packet-data",
                       "--max-port-count", "--notifications-addr"}
_IGNORED_FLAGS = {"--log-flush"}
#: BMv2 general options p4sim cannot honour
_REFUSED = {
    "--use-files": "p4sim reads and writes packets on interfaces only (no pcap-file ports)",
    "--packet-in": "p4sim has no nanomsg packet socket; use -i PORT@IFACE",
    "--debugger": "p4sim has no BMv2 debugger; use --log-console for the per-packet trace",
    "--debugger-addr": "p4sim has no BMv2 debugger; use --log-console for the per-packet trace",
    "--restore-state": "p4sim cannot restore BMv2 state files",
    "--json-version": "p4sim runs its own compiled JSON (p4sim-p4c-bm2-ss), not BMv2's JSON",
}


class Refused(Exception):
    """A command line this stand-in refuses (the message says why)."""


def translate(argv: Sequence[str]) -> list[str]:
    """BMv2's command line → ``python -m p4sim switch``'s. Raises :class:`Refused`."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    general, target = argv[:cut], argv[cut:]
    out: list[str] = []
    i = 0
    while i < len(general):
        arg = general[i]
        name, eq, inline = arg.partition("=")
        takes_value = name in _PASS_WITH_VALUE | _IGNORED_WITH_VALUE | {"--log-file", "-L"}
        value: Optional[str] = inline if eq else None
        if takes_value and value is None:
            if i + 1 >= len(general):
                raise Refused(f"{name} needs a value")
            value = general[i + 1]
            i += 1
        i += 1
        if name in _REFUSED:
            raise Refused(f"{name} is not supported: {_REFUSED[name]}")
        if name in _IGNORED_FLAGS or name in _IGNORED_WITH_VALUE:
            continue
        if name == "--log-file":
            out += ["--log-file", f"{value}.txt"]
        elif name == "-L":
            out += ["--log-level", str(value)]
        elif value is not None:
            out += [name, value]
        else:
            out.append(arg)
    return out + target


def _bmv2_json_program(argv: Sequence[str]) -> Optional[str]:
    """The program argument when it is a BMv2 JSON (p4c-bm2-ss output), else None."""
    from p4sim.p4runtime.devconfig import is_bmv2_json

    for arg in argv:
        if arg == "--":
            return None
        if arg.endswith(".json") and not arg.startswith("-"):
            try:
                with open(arg, encoding="utf-8") as f:
                    if is_bmv2_json(json.load(f)):
                        return arg
            except (OSError, ValueError):
                return None
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run p4sim's switch with BMv2's command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if {"-v", "--version"} & set(argv[:argv.index("--")] if "--" in argv else argv):
        print(f"{PROG}: {VERSION_LINE}")
        return EXIT_OK
    try:
        args = translate(argv)
    except Refused as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return EXIT_REFUSED
    bmv2 = _bmv2_json_program(args)
    if bmv2 is not None:
        print(f"{PROG}: error: {bmv2} is a BMv2 JSON (p4c-bm2-ss output), which p4sim cannot "
              "run; compile the program with p4sim-p4c-bm2-ss (or p4sim-p4c), which writes "
              "p4sim's compiled JSON, or give the .p4 source", file=sys.stderr)
        return EXIT_REFUSED
    from p4sim.switchd.main import main as switch_main

    return switch_main(args)


__all__ = ["Refused", "main", "translate"]
