"""Launching a TCCL agent inside a Mininet host, next to the NIC emulator's senders.

Design (the smallest correct one on the testbed): the agent runs **in the same process**
as ``python -m host.nic send`` (``--agent-creds/--agent-registry/--agent-bind``), over a
:class:`~host.agent.mover.QPMover` of that process's sender QPs, whose lock is the
``NicPort``'s ``step_lock``; a move therefore lands exactly at a message boundary.
The control plane does not use the fabric: GOR's registry and every agent listen on
**Unix domain sockets** under ``build/gor/`` (``unix:/abs/path``). A path socket belongs to
the file system, not to a network namespace, so a sender inside a Mininet host's netns
and GOR in the root netns reach each other without a management veth, routes or
addresses, and nothing of it shows up in the data plane's counters. The testbed writes
each host's credentials (``astral_proto.auth.HostCredentials``, derived from a random
per-run fabric secret) to ``build/gor/creds-<host>.json`` with mode 0600.

::

    python -m host.agent serve --creds build/gor/creds-b0s0.json \\
        --registry unix:/work/main/build/gor/registry.sock \\
        --bind unix:/work/main/build/gor/agent-b0s0.sock -- \\
        --iface b0s0-eth0 --dst-mac 02:.. --src-ip 10.0.0.1 --dst-ip 10.1.0.1 --sport 50000

is the same as ``python -m host.nic send ... --agent-creds ... --agent-registry ...
--agent-bind ...``.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Iterable, Optional, Sequence

from astral_proto.auth import HostCredentials
from host.agent.mover import QPMover
from host.agent.registry_client import RegistryClient
from host.agent.service import Agent
from host.nic.qp import SenderQP


def _unlink_stale(bind: str) -> None:
    if bind.startswith("unix:"):
        path = Path(bind[len("unix:"):])
        if path.is_socket():
            path.unlink()


def start_agent(creds_path: Path, registry: Optional[str], bind: str, mover: QPMover,
                senders: Iterable[SenderQP], *, bytes_total: int = 0,
                register_every_s: Optional[float] = 1.0) -> Agent:
    """Register ``senders`` with ``mover``, serve the agent on ``bind`` and register the
    flows with the registry at ``registry`` (None: no controller), again every
    ``register_every_s`` (a restarted controller re-learns them); returns the agent (call
    :meth:`Agent.stop` at the end)."""
    creds = HostCredentials.load(creds_path)
    flows = [mover.add(qp, bytes_total=bytes_total) for qp in senders]
    _unlink_stale(bind)
    agent = Agent(creds, mover, flows, registry=None, bind=bind, register_every_s=register_every_s)
    agent.start()
    if registry:
        agent.registry = RegistryClient(registry, creds)
        agent.register()
    return agent


def build_parser() -> argparse.ArgumentParser:
    """``serve --creds FILE --registry ADDR --bind ADDR -- <host.nic send options>``."""
    ap = argparse.ArgumentParser(prog="python -m host.agent",
                                 description="run a TCCL agent with the NIC senders it owns")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="host.nic send with an agent in the same process")
    s.add_argument("--creds", type=Path, required=True, help="HostCredentials JSON (0600)")
    s.add_argument("--registry", default="", help="GOR's FlowRegistry address")
    s.add_argument("--bind", required=True, help="agent address (unix:/path or ip:port)")
    s.add_argument("send_args", nargs=argparse.REMAINDER, help="-- then host.nic send options")
    return ap


def send_argv(argv: Optional[Sequence[str]] = None) -> list[str]:
    """The ``host.nic`` argument list a ``serve`` command line stands for.

    >>> send_argv(["serve", "--creds", "c.json", "--bind", "unix:/a", "--", "--iface", "e0"])
    ['send', '--iface', 'e0', '--agent-creds', 'c.json', '--agent-bind', 'unix:/a']
    """
    args = build_parser().parse_args(argv)
    rest = list(args.send_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    extra = ["--agent-creds", str(args.creds), "--agent-bind", args.bind]
    if args.registry:
        extra += ["--agent-registry", args.registry]
    return ["send", *rest, *extra]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m host.agent``."""
    from host.nic.cli import main as nic_main  # noqa: PLC0415
    return nic_main(send_argv(argv))


__all__ = ["build_parser", "main", "send_argv", "start_agent"]
