"""Local TCP ports for switch daemons, on a machine shared with other programs.

A switch's gRPC (or BMv2 thrift) port must be free when the switch binds it. Two things
take ports away: another program listening there, and — inside Linux's ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768–60999 by default) — any client
connection whose source port the kernel drew there, for as long as it lives and for
60 s in TIME_WAIT afterwards. So the fabric's default addresses start at P4Runtime's
IANA port 9559, below the ephemeral range, and a free port this module hands out is
drawn below it too.

Before the testbed starts its switches, :func:`claim_switch_ports` probes every local
gRPC address: a busy port that came from ``grpc_base_port`` moves to a free one (said in
the returned notices, and the fabric object is updated so ``build/topology.json`` and the
controller use the new address); a busy address the spec names explicitly is an error.

    >>> port = free_port()
    >>> 1024 <= port < ephemeral_range()[0] and port_free("127.0.0.1", port)
    True
"""
from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Any, Iterable

EPHEMERAL_RANGE_PATH = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: where :func:`free_port` looks (below the default ephemeral range)
SCAN_RANGE = (20000, 32767)
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "0.0.0.0", "::1", "[::1]", "::", "[::]", ""})


class PortBusyError(OSError):
    """A port the user asked for explicitly is taken; the message names switch and fix."""


def ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (``(32768, 60999)`` when it cannot be read)."""
    try:
        low, high = EPHEMERAL_RANGE_PATH.read_text().split()[:2]
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def split_addr(addr: str) -> tuple[str, int]:
    """``"127.0.0.1:9559"`` → ``("127.0.0.1", 9559)``."""
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def is_local(host: str) -> bool:
    """True for a loopback or wildcard host (a port this machine must have free)."""
    return host in LOCAL_HOSTS


def port_free(host: str, port: int) -> bool:
    """True when a listening socket could bind ``host:port`` now. The probe sets
    SO_REUSEADDR as gRPC and thrift servers do, so a port in TIME_WAIT after a *server*
    closed counts as free, one held by a listener or a client socket does not."""
    bind_host = {"localhost": "127.0.0.1", "": "0.0.0.0", "[::1]": "::1", "[::]": "::"}.get(
        host, host)
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bind_host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1", avoid: Iterable[int] = ()) -> int:
    """A port free on ``host`` now, below the ephemeral range (no client connection can
    take it before the switch binds it) and not in ``avoid``. The scan starts at a random
    point of :data:`SCAN_RANGE` so two test runs on one machine rarely probe the same
    ports. Raises :class:`OSError` when the range is exhausted."""
    low, high = SCAN_RANGE
    high = min(high, ephemeral_range()[0] - 1)
    skip = set(avoid)
    span = high - low + 1
    start = random.randrange(span)
    for i in range(span):
        port = low + (start + i) % span
        if port not in skip and port_free(host, port):
            return port
    raise OSError(f"no free TCP port on {host} in {low}-{high}")


def _explicit_addrs(fabric: Any) -> dict[str, str]:
    spec = getattr(fabric, "spec", None)
    overrides = getattr(spec, "switches", None) or {}
    return {name: o.grpc_addr for name, o in overrides.items()
            if getattr(o, "grpc_addr", None) is not None}


def claim_switch_ports(fabric: Any) -> list[str]:
    """Make every local switch gRPC address of ``fabric`` bindable; the notices to print.

    A busy port derived from ``grpc_base_port`` is replaced by :func:`free_port` in the
    switch's ``grpc_addr``; a busy address set per switch in the spec raises
    :class:`PortBusyError` (nothing is changed then). Remote addresses are not probed.
    """
    explicit = _explicit_addrs(fabric)
    in_use = {split_addr(sw.grpc_addr)[1] for sw in fabric.switches}
    busy = []
    for sw in fabric.switches:
        host, port = split_addr(sw.grpc_addr)
        if is_local(host) and not port_free(host, port):
            if sw.name in explicit:
                raise PortBusyError(
                    f"switch {sw.name}: {sw.grpc_addr} (set in the spec) is in use by another "
                    f"program (`ss -ltnp 'sport = :{port}'` shows which); choose a free "
                    f"address in the spec's switches.{sw.name}.grpc_addr")
            busy.append(sw)
    notices = []
    for sw in busy:
        host, port = split_addr(sw.grpc_addr)
        new = free_port(host, avoid=in_use)
        in_use.add(new)
        sw.grpc_addr = f"{host}:{new}"
        notices.append(f"switch {sw.name}: port {port} is in use by another program; "
                       f"using {sw.grpc_addr}")
    return notices


__all__ = ["EPHEMERAL_RANGE_PATH", "PortBusyError", "SCAN_RANGE", "claim_switch_ports",
           "ephemeral_range", "free_port", "is_local", "port_free", "split_addr"]
