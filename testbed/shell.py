"""``make shell SW=<switch>``: p4runtime-shell connected to one switch of the running testbed.

The switch's P4Runtime address and device id come from the topology file
(``build/topology.json``). No pipeline is pushed: the shell reads the P4Info the switch
already runs, so the controller's entries stay. The shell connects with an election id
one above the controller's, so it is primary and can write; the controller becomes
backup until the shell exits.

p4runtime-shell runs from its own environment, ``.venv-shell`` (``make venv-shell``, from
``requirements-shell.txt``: it pins protobuf 3.20, which .venv left for protobuf 7 on upb);
``make shell`` makes it on first use. It talks to the switch over gRPC like any client.

TLS: when the running testbed has a PKI (``pki`` in ``build/testbed-state.json``: the
default; not with ``up --insecure``), the shell connects over TLS as the controller —
p4runtime-shell 0.0.6's ``--ssl --cacert build/pki/ca-switches.pem --cert build/pki/controller.pem
--private-key build/pki/controller.key``. It checks the switch's certificate against the
address (``127.0.0.1``, which the testbed's certificates carry), not against the switch's
name: p4runtime-shell has no server-name option.

Example::

    $ make shell SW=b0r0l0
    $ python -m testbed.shell b0r0l0 --print        # the command only
    .venv-shell/bin/python -m p4runtime_sh --grpc-addr 127.0.0.1:9559 --device-id 1 --election-id 0,2 \
        --ssl --cacert build/pki/ca-switches.pem --cert build/pki/controller.pem \
        --private-key build/pki/controller.key
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Optional, Sequence

from testbed.tls import shell_tls_args
from topo.model import load_fabric

DEFAULT_TOPOLOGY = Path("build/topology.json")
DEFAULT_STATE = Path("build/testbed-state.json")
#: p4runtime-shell's interpreter (its own venv: ``make venv-shell``)
SHELL_VENV = Path(__file__).resolve().parents[1] / ".venv-shell"
SHELL_PYTHON = SHELL_VENV / "bin" / "python"


def recorded_pki(state_path: Path) -> Optional[Path]:
    """The PKI directory the running testbed recorded, None when plaintext or not up.

    >>> recorded_pki(Path("/nonexistent/testbed-state.json")) is None
    True
    """
    try:
        pki_dir = json.loads(state_path.read_text()).get("pki", "")
    except (OSError, ValueError):
        return None
    return Path(pki_dir) if pki_dir else None


def shell_command(topology: Path, switch: str, pki_dir: Optional[Path] = None) -> list[str]:
    """The p4runtime-shell command line for ``switch`` (over TLS as the controller with
    the PKI at ``pki_dir``); ValueError names a wrong switch, FileNotFoundError /
    KeyError a PKI without the controller's files."""
    fabric = load_fabric(topology)
    names = [s.name for s in fabric.switches]
    if switch not in names:
        raise ValueError(f"no switch {switch!r} in {topology}; switches: {', '.join(names)}")
    sw = fabric.switch(switch)
    tls: list[str] = []
    if pki_dir is not None:
        tls = shell_tls_args(pki_dir)
    return [str(SHELL_PYTHON), "-m", "p4runtime_sh", "--grpc-addr", sw.grpc_addr,
            "--device-id", str(sw.device_id), "--election-id", f"0,{sw.election_id + 1}", *tls]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.shell", description=__doc__.split("\n\n")[0])
    ap.add_argument("switch", nargs="?", default="", help="switch name, e.g. b0r0l0 or s0")
    ap.add_argument("--topology", type=Path, default=DEFAULT_TOPOLOGY)
    ap.add_argument("--state", type=Path, default=DEFAULT_STATE,
                    help="the testbed's state (its PKI directory: TLS unless it ran --insecure)")
    ap.add_argument("--print", action="store_true", help="print the command instead of running it")
    args = ap.parse_args(argv)
    if not args.topology.exists():
        print(f"error: {args.topology} not found: start the testbed first (make run)", file=sys.stderr)
        return 2
    if not args.switch:
        names = ", ".join(s.name for s in load_fabric(args.topology).switches)
        print(f"error: name a switch: make shell SW=<name> ({names})", file=sys.stderr)
        return 2
    pki_dir = recorded_pki(args.state)
    try:
        cmd = shell_command(args.topology, args.switch, pki_dir)
    except (ValueError, OSError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("make shell: P4Runtime " + (f"over TLS as the controller (PKI {pki_dir})" if pki_dir
                                      else "in plaintext (the testbed runs --insecure)"),
          file=sys.stderr)
    if args.print:
        print(shlex.join([os.path.relpath(cmd[0])] + cmd[1:]))
        return 0
    if not SHELL_PYTHON.exists():
        print(f"error: {SHELL_VENV} not found: p4runtime-shell has its own environment, "
              "make it with `make venv-shell` (or run `make shell SW=...`)", file=sys.stderr)
        return 2
    os.execv(cmd[0], cmd)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
