"""GOR around one scenario run on the live testbed: uplink queue rates, the flow registry
and its agents, :class:`controller.gor.loop.GorLoop` on the telemetry poller's ticks,
digest readers, and the NIC-emulator fleet — started together, stopped together.

Used by the story (:mod:`topo.story`) and the link-failure scenario
(:mod:`topo.link_failure`)::

    with GorSession(fabric, programmer, state, save_state, flows, rate, opts, run_dir) as s:
        s.start_flows(opts.duration_s)
        s.fleet.wait_senders(opts.duration_s + 15)
    s.events, s.ticks, s.errors                     # after the run

The registry and every agent listen on Unix sockets under ``build/gor/`` (a per-run
secret; each host's credentials in ``build/gor/creds-<host>.json``, mode 0600), so the
control plane never touches the data plane's counters.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

GOR_DIR = Path(__file__).resolve().parents[1] / "build" / "gor"
Tick = tuple[float, dict[str, float], int]
"""(monotonic time, packets/s per source-leaf uplink, drops on every polled link)."""


def write_credentials(hosts: Sequence[str], secret: bytes, root: Path = GOR_DIR) -> dict[str, Path]:
    """``root/creds-<host>.json`` (mode 0600, directory 0700) for every host."""
    from astral_proto.auth import HostCredentials  # noqa: PLC0415
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    return {h: HostCredentials.derive(secret, h).save(root / f"creds-{h}.json") for h in hosts}


def source_uplinks(fabric: Any, flows: Sequence[Any]) -> dict[str, tuple[str, int]]:
    """``"b0r0l0->s0"`` → (leaf, port) for every uplink of the flows' source leaves."""
    leaves = {f.leaf for f in flows}
    return {f"{sw.name}->{info.peer_node}": (sw.name, p) for sw in fabric.switches
            if sw.name in leaves for p, info in sorted(sw.ports.items()) if info.kind == "uplink"}


class GorSession:
    """See the module docstring. ``opts`` is a ``topo.scenario.ScenarioOptions``."""

    def __init__(self, fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                 flows: Sequence[Any], rate_pps: float, opts: Any, run_dir: Path,
                 say: Callable[[str], None] = print) -> None:
        self.fabric, self.programmer, self.state, self.save_state = fabric, programmer, state, save_state
        self.flows, self.rate_pps, self.opts, self.run_dir, self.say = list(flows), rate_pps, opts, run_dir, say
        self.uplinks = source_uplinks(fabric, flows)
        self.ticks: list[Tick] = []
        self.events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.dlog_path = run_dir / "gor.jsonl"
        self.t0 = time.monotonic()
        self.rates: dict[tuple[str, int], float] = {}
        self.registry_address = ""
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._shown = 0.0
        self.loop: Any = None
        self.poller: Any = None
        self.fleet: Any = None
        self._server: Any = None
        self._dlog: Any = None
        self._creds: dict[str, Path] = {}

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> "GorSession":
        from controller.gor.log import DecisionLog  # noqa: PLC0415
        from controller.gor.loop import GorLoop, digest_reader, enable_digests  # noqa: PLC0415
        from controller.gor.telemetry import TelemetryPoller, fabric_links, p4rt_reader  # noqa: PLC0415
        from controller.registry import FlowRegistry, serve_registry  # noqa: PLC0415
        from host.traffic import NicFleet  # noqa: PLC0415
        from topo.scenario import live_line, set_uplink_rates  # noqa: PLC0415

        secret = os.urandom(32).hex().encode()
        self._creds = write_credentials(sorted({f.src_host for f in self.flows}), secret)
        reg_sock = GOR_DIR / "registry.sock"
        reg_sock.unlink(missing_ok=True)
        registry = FlowRegistry.from_fabric(self.fabric, secret)
        self._server, self.registry_address = serve_registry(registry, f"unix:{reg_sock}")
        self._dlog = DecisionLog(self.dlog_path)
        o = self.opts
        self.loop = GorLoop(self.fabric, self.programmer, registry, period_s=o.period_s,
                            log=self._dlog, one_in_n=2, window_s=2.0, min_samples=100,
                            cooldown_s=o.duration_s + 10, confirm_timeout_s=3.0)
        self.rates = set_uplink_rates(self.fabric, self.state, self.rate_pps, self.say)
        live = live_line(list(self.uplinks))

        def on_tick(t_s: float, samples: Any) -> None:
            self.loop.tick(t_s, samples)
            pps = {str(l): s.pps for l, s in samples.items() if str(l) in self.uplinks}
            drops = sum(int(getattr(s, "drops", 0) or 0) for s in samples.values())
            self.ticks.append((time.monotonic(), pps, drops))
            if t_s - self._shown >= 1.0 - 1e-6:
                self._shown = t_s
                live(t_s, samples)

        nominal = {(sw.name, p): self.rate_pps for sw in self.fabric.switches for p in sw.ports}
        conns = self.programmer.connections
        self.poller = TelemetryPoller({n: p4rt_reader(c) for n, c in conns.items()},
                                      fabric_links(self.fabric, nominal), o.period_s, on_tick=on_tick)
        self.fleet = NicFleet(self.state, self.save_state, self.run_dir / "nic")
        failed = enable_digests(conns, conns)
        if failed:
            self.say(f"gor: digests not enabled on {', '.join(failed)}")
        for name, conn in conns.items():
            t = threading.Thread(target=digest_reader, args=(self.loop, name, conn, self._stop),
                                 name=f"digests-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self.t0 = time.monotonic()
        self.poller.start()
        return self

    def start_flows(self, duration_s: float) -> None:
        """Start the NIC fleet, each sender with its TCCL agent."""
        from host.traffic import NicOptions  # noqa: PLC0415

        def agent_args(fl: Sequence[Any]) -> list[str]:
            h = fl[0].src_host
            return ["--agent-creds", str(self._creds[h]), "--agent-registry", self.registry_address,
                    "--agent-bind", f"unix:{GOR_DIR / f'agent-{h}-{fl[0].dst_ip}.sock'}"]

        self.fleet.start(self.flows, duration_s, NicOptions(line_rate_pps=self.opts.flow_rate_pps),
                         sender_args=agent_args)

    def __exit__(self, *exc: object) -> None:
        from controller.gor.log import read_log  # noqa: PLC0415
        from topo.scenario import clear_rates  # noqa: PLC0415
        if self.poller is not None:
            self.poller.stop()
        self._stop.set()
        for t in self._threads:
            t.join(timeout=2)
        if self.fleet is not None:
            self.errors = self.fleet.stop()
        if self.loop is not None:
            self.loop.close()
        if self._server is not None:
            self._server.stop(0)
        if self._dlog is not None:
            self._dlog.close()
            self.events = list(read_log(self.dlog_path))
        if self.rates:
            clear_rates(self.state, self.rates)

    def since_start(self, t_mono: Optional[float] = None) -> float:
        """Seconds since the poller started (now, or at ``t_mono``)."""
        return (time.monotonic() if t_mono is None else t_mono) - self.t0


__all__ = ["GOR_DIR", "GorSession", "Tick", "source_uplinks", "write_credentials"]
