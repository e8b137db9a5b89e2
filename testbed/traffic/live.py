"""A fabric (p4sim by default, or BMv2) brought up, programmed and pinged by this process for a run or a test
(:func:`testbed_up`), torn down after, and whether this process may start one at all.

>>> testbed_unavailable() is None or isinstance(testbed_unavailable(), str)
True
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

from controller.fabric_setup import FabricProgrammer
from testbed.cli import (STATE_PATH, choose_target, compile_fabric, ping_all,
                         testbed_unavailable as why)
from testbed.net import FabricNet, NetOptions, TestbedError
from testbed.tls import controller_tls
from topo import FabricSpec, build_fabric

REPO = Path(__file__).resolve().parents[2]


@dataclass(slots=True)
class LiveTestbed:
    """A fabric this process brought up (:func:`testbed_up`): fabric, programmer, net."""

    fabric: Any
    programmer: Any
    fnet: Any

    @property
    def state(self) -> Any:
        """The testbed state (PIDs, namespaces) recorded in the state file."""
        return self.fnet.state

    def save_state(self) -> None:
        """Write the state file."""
        self.fnet.save_state()


def testbed_unavailable() -> Optional[str]:
    """None when this process may start a Mininet testbed here, else why not (one line:
    :func:`testbed.cli.testbed_unavailable` for the default fabric)."""
    return why()


@contextmanager
def testbed_up(spec: Any = None, log_dir: Optional[Path] = None,
               state_path: Optional[Path] = None, pfc: Any = "default",
               pcap_dir: Optional[Path] = None, insecure: bool = False,
               target: str = "p4sim") -> Iterator[LiveTestbed]:
    """Bring a fabric up (default ``FabricSpec()``) on ``target`` (``p4sim``, ``bmv2``:
    ``simple_switch_grpc`` and ``p4c-bm2-ss`` from PATH, or ``auto``: BMv2 when
    ``simple_switch_grpc`` is on PATH, as ``testbed up`` picks), program it, yield it, tear down
    exactly what it made. ``pfc`` is a ``controller.fabric_setup.PfcConfig`` (``"default"``:
    the programmer's default; ``None``: no PFC); ``pcap_dir``: where the switches write
    ``<switch>-eth<N>_in|out.pcap`` (None: no captures). P4Runtime runs over TLS with
    client certificates as on ``testbed up`` (a PKI in ``pki/`` beside the state file:
    testbed/README.md, "TLS"); ``insecure``: plaintext. Raises ``testbed.net.TestbedError``.

    >>> with testbed_up() as tb:                       # doctest: +SKIP
    ...     run_traffic(tb.fabric, tb.programmer, tb.state, tb.save_state, TrafficOptions())
    """
    target = choose_target(target)
    fabric = build_fabric(spec if spec is not None else FabricSpec())
    p4info, config = compile_fabric(target)
    state_path = state_path or STATE_PATH
    opts = NetOptions(target=target, log_dir=log_dir or REPO / "build" / "host-traffic-logs",
                      pcap_dir=pcap_dir, state_path=state_path,
                      pki_dir=None if insecure else state_path.parent / "pki")
    fnet = FabricNet(fabric, opts)
    programmer = None
    try:
        fnet.start()
        kw: dict[str, Any] = {} if pfc == "default" else {"pfc": pfc}
        if opts.pki_dir is not None:
            kw["tls"] = controller_tls(opts.pki_dir)
        programmer = FabricProgrammer(fabric, str(p4info), str(config), **kw)
        programmer.connect_all()
        programmer.push_pipelines()
        programmer.install_all()
        # one ping per rail pair warms ARP and proves the routes before traffic starts
        bad = [r for r in ping_all(fabric, fnet.state, count=1) if not r.ok]
        if bad:
            raise TestbedError(f"{len(bad)} same-rail pairs do not answer ping "
                               f"(first {bad[0].src} -> {bad[0].dst_ip}); {fnet.crashed()}")
        yield LiveTestbed(fabric, programmer, fnet)
    finally:
        if programmer is not None:
            programmer.close()
        fnet.stop()


__all__ = ["LiveTestbed", "testbed_unavailable", "testbed_up"]
