"""Launching a TCCL agent inside a Mininet host, next to the NIC emulator's senders.

Design (the smallest correct one on the testbed): the agent runs **in the same process**
as ``python -m host.nic send`` (its ``--agent-*`` options), over a
:class:`~host.agent.mover.QPMover` of that process's sender QPs, whose lock is the
``NicPort``'s ``step_lock``; a move therefore lands exactly at a message boundary.
The control plane does not use the fabric: GOR's registry and every agent listen on
**Unix domain sockets** under ``build/gor/`` (``unix:/abs/path``). A path socket belongs to
the file system, not to a network namespace, so a sender inside a Mininet host's netns
and GOR in the root netns reach each other without a management veth, routes or
addresses, and nothing of it shows up in the data plane's counters.

Credentials (:func:`agent_security`): by default **mutual TLS** — ``--tls-dir DIR --host
NAME`` reads ``DIR/ca.pem``, ``DIR/NAME.pem`` and ``DIR/NAME.key`` (the layout of the
testbed's PKI, ``build/pki/``; the scenarios make one in their run directory when the
testbed has none). The fallback for ``--insecure`` runs is ``--creds FILE``: the host's
HMAC tokens (``astral_proto.auth.HostCredentials``, mode 0600).

::

    python -m host.agent serve --tls-dir build/pki --host b0s0 \\
        --registry unix:/work/main/build/gor/registry.sock \\
        --bind unix:/work/main/build/gor/agent-b0s0.sock -- \\
        --iface b0s0-eth0 --dst-mac 02:.. --src-ip 10.0.0.1 --dst-ip 10.1.0.1 --sport 50000

is the same as ``python -m host.nic send ... --agent-tls-dir ... --agent-host ...
--agent-registry ... --agent-bind ...`` (``host/agent/__main__.py`` runs that command with
:func:`send_argv`'s arguments; this module imports nothing of the NIC's command line, which
imports it).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from astral_proto.auth import HostCredentials
from astral_proto.security import Security
from astral_proto.tls import MutualTls
from host.agent.mover import QPMover
from host.agent.registry_client import RegistryClient
from host.agent.service import Agent
from host.nic.qp import SenderQP


def _unlink_stale(bind: str) -> None:
    if bind.startswith("unix:"):
        path = Path(bind[len("unix:"):])
        if path.is_socket():
            path.unlink()


def agent_security(*, tls_dir: Optional[Path] = None, host: str = "",
                   creds: Optional[Path] = None) -> Security:
    """The host's :class:`~astral_proto.security.Security` from the command line: mutual
    TLS from ``tls_dir`` as ``host``, else the token fallback from the ``creds`` file.
    ``ValueError`` saying what is missing.

    >>> agent_security()
    Traceback (most recent call last):
    ...
    ValueError: an agent needs --agent-tls-dir DIR with --agent-host NAME (mutual TLS), or --agent-creds FILE (--insecure)
    """
    if tls_dir is not None:
        if not host:
            raise ValueError("--agent-tls-dir needs --agent-host NAME (whose certificate)")
        return MutualTls.from_dir(tls_dir, host)
    if creds is not None:
        return HostCredentials.load(creds).security()
    raise ValueError("an agent needs --agent-tls-dir DIR with --agent-host NAME (mutual TLS), "
                     "or --agent-creds FILE (--insecure)")


def start_agent(security: Union[Security, Path], registry: Optional[str], bind: str,
                mover: QPMover, senders: Iterable[SenderQP], *, bytes_total: int = 0,
                register_every_s: Optional[float] = 1.0) -> Agent:
    """Register ``senders`` with ``mover``, serve the agent on ``bind`` and register the
    flows with the registry at ``registry`` (None: no controller), again every
    ``register_every_s`` (a restarted controller re-learns them); returns the agent (call
    :meth:`Agent.stop` at the end). ``security``: see :func:`agent_security` (a path is a
    ``HostCredentials`` file: the token fallback)."""
    if isinstance(security, Path):
        security = agent_security(creds=security)
    flows = [mover.add(qp, bytes_total=bytes_total) for qp in senders]
    _unlink_stale(bind)
    agent = Agent(security, mover, flows, registry=None, bind=bind,
                  register_every_s=register_every_s)
    agent.start()
    if registry:
        agent.registry = RegistryClient(registry, security)
        agent.register()
    return agent


def build_parser() -> argparse.ArgumentParser:
    """``serve (--tls-dir DIR --host NAME | --creds FILE) --registry ADDR --bind ADDR --
    <host.nic send options>``."""
    ap = argparse.ArgumentParser(prog="python -m host.agent",
                                 description="run a TCCL agent with the NIC senders it owns")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="host.nic send with an agent in the same process")
    s.add_argument("--tls-dir", type=Path, default=None,
                   help="PKI directory: ca.pem, HOST.pem, HOST.key (mutual TLS, the default)")
    s.add_argument("--host", default="", help="this host's name (its certificate's)")
    s.add_argument("--creds", type=Path, default=None,
                   help="HostCredentials JSON (0600): HMAC tokens, for --insecure runs")
    s.add_argument("--registry", default="", help="GOR's FlowRegistry address")
    s.add_argument("--bind", required=True, help="agent address (unix:/path or ip:port)")
    s.add_argument("send_args", nargs=argparse.REMAINDER, help="-- then host.nic send options")
    return ap


def send_argv(argv: Optional[Sequence[str]] = None) -> list[str]:
    """The ``host.nic`` argument list a ``serve`` command line stands for.

    >>> send_argv(["serve", "--creds", "c.json", "--bind", "unix:/a", "--", "--iface", "e0"])
    ['send', '--iface', 'e0', '--agent-creds', 'c.json', '--agent-bind', 'unix:/a']
    >>> send_argv(["serve", "--tls-dir", "pki", "--host", "b0s0", "--bind", "unix:/a"])[1:]
    ['--agent-tls-dir', 'pki', '--agent-host', 'b0s0', '--agent-bind', 'unix:/a']
    """
    args = build_parser().parse_args(argv)
    rest = list(args.send_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    extra: list[str] = []
    if args.tls_dir is not None:
        extra += ["--agent-tls-dir", str(args.tls_dir), "--agent-host", args.host]
    if args.creds is not None:
        extra += ["--agent-creds", str(args.creds)]
    extra += ["--agent-bind", args.bind]
    if args.registry:
        extra += ["--agent-registry", args.registry]
    return ["send", *rest, *extra]


__all__ = ["agent_security", "build_parser", "send_argv", "start_agent"]
