"""GOR around one scenario run on the live testbed. GOR itself — flow registry, metrics
endpoint, :class:`controller.gor.loop.GorLoop` on the telemetry poller's ticks, digest
readers, reactor, switch recovery — is one :class:`controller.gor.runtime.GorRuntime`
(:attr:`GorSession.runtime`, as ``python -m controller run`` runs it); the session adds the
testbed around it: uplink queue rates, the agents' credentials and the NIC-emulator fleet,
the per-uplink tick records — started together, stopped together.

Used by the story (:mod:`scenarios.story`) and the link-failure scenario
(:mod:`scenarios.link_failure`)::

    with GorSession(fabric, programmer, state, save_state, flows, rate, opts, run_dir) as s:
        s.start_flows(opts.duration_s)
        s.fleet.wait_senders(opts.duration_s + 15)
    s.events, s.ticks, s.errors                     # after the run

At start the new :class:`~controller.gor.loop.GorLoop` reconciles (``GorLoop.reconcile``:
override and sampling entries a previous GOR left in the switches are adopted or
deleted). The telemetry poller runs every ``opts.period_s``, every ``opts.fast_period_s``
while ``GorLoop.busy()`` (an alarm, a move in flight).

**Controller restart** (:meth:`GorSession.restart_gor`, the issue's restart test on the
testbed, :meth:`GorRuntime.stop_gor` then ``start_gor``): GOR stops — its loop, its
registry server — and a new one starts on the same
switches and agents: a new ``FlowRegistry`` at the same address, a new ``GorLoop`` that
reconciles before its first tick; the agents re-register their flows (every second) with
the ports in use. :class:`RestartRecord` says what came back and when.

**Switch restart** (:meth:`GorSession.restart_switch`): a
:class:`~controller.gor.recovery.SwitchRecovery` runs with the poller from the start; a
switch process restarted under it (``FabricNet.restart_switch``) is found lost,
re-programmed and handed back to the loop, which re-installs its own entries there.
:class:`SwitchRestartRecord` says when it was lost and back.

**Logs** in the run directory: ``gor.jsonl`` (GOR's decision log) and ``gor-debug.log``
(the full text behind what the decision log and the terminal give in one line, e.g. a
failed agent call's whole gRPC error; logger ``controller.gor.orders``).

The registry and every agent listen on Unix sockets under ``build/gor/``, so the control
plane never touches the data plane's counters. They speak **mutual TLS** (the agent
protocol's default): GOR as ``controller``, each agent as its host, with the testbed's
PKI when it made one with those certificates (``state.pki``, ``build/pki/``), else a
throw-away CA made in the run directory (:func:`agent_pki`, keys mode 0600). With
``opts.insecure`` they fall back to HMAC tokens (a per-run secret; each host's
credentials in ``build/gor/creds-<host>.json``, mode 0600).
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from astral_proto.auth import HostCredentials
from astral_proto.security import CONTROLLER
from astral_proto.tls import MutualTls
from controller.fabric.monitoring import DEFAULT_ELEPHANTS, elephant_entry, elephants_for_rate
from controller.gor.log import read_log
from controller.gor.runtime import GorOptions, GorRuntime
from controller.gor.shared import LoopSettings
from controller.gor.tables import SwitchTables
from p4src.alarmmodel import ELEPHANT_TABLE
from scenarios.common import live_line
from testbed.control import open_control
from testbed.pki import FabricPki
from testbed.queues import clear_rates, set_uplink_rates
from testbed.traffic import NicFleet, NicOptions

GOR_DIR = Path(__file__).resolve().parents[1] / "build" / "gor"
ORDERS_LOGGER = "controller.gor.orders"
"""The logger of GOR's orders; its DEBUG records (the full text of a failed agent call)
go to the run's ``gor-debug.log``."""
SAMPLE_ONE_IN_N = 1
"""Sampling ratio on alarmed ports at the old testbed rates (uplinks of ~350 pps): every
packet. At higher rates :func:`sample_one_in_n` keeps GOR's samples near that many per
second per uplink."""
SAMPLES_PER_S = 350.0


def sample_one_in_n(uplink_rate_pps: float) -> int:
    """One packet in N sampled on an alarmed uplink draining ``uplink_rate_pps``, so that
    GOR gets about :data:`SAMPLES_PER_S` samples a second whatever the flow rates.

    >>> sample_one_in_n(343), sample_one_in_n(45716)
    (1, 131)
    """
    return max(SAMPLE_ONE_IN_N, round(uplink_rate_pps / SAMPLES_PER_S))


def set_elephant_thresholds(fabric: Any, programmer: Any, link_rate_pps: float,
                            say: Callable[[str], None] = print) -> int:
    """Rewrite every switch-to-switch port's ``FabricIngress.elephants.config`` for links
    draining ``link_rate_pps`` (:func:`controller.fabric.monitoring.elephants_for_rate`:
    the elephant threshold scaled with the rate, so that the switches' reported rates span
    a tenth of a second or more); nothing at the rates where the plan's default holds.
    Returns the entries written. A write that fails raises: GOR would act on rates
    measured over a few milliseconds.

    The programmer's plans follow (``programmer.plans``, as
    ``FabricProgrammer.apply_thresholds`` does): a switch that restarts empty is
    re-programmed from its plan by GOR's recovery
    (:func:`controller.switch_restore.reprogram_switch`), and so gets the scaled threshold
    back, not the plan's default (which would report rates measured over milliseconds
    again, on that switch only), from its first entry on, whoever restarted it: nothing
    writes them again after a restart (``tests/controller/test_switch_restart.py`` reads
    them from a restarted p4sim switch).

    >>> set_elephant_thresholds(None, None, 343)
    0
    """
    cfg = elephants_for_rate(link_rate_pps)
    if cfg == DEFAULT_ELEPHANTS:
        return 0
    tables = SwitchTables(programmer)
    names = {sw.name for sw in fabric.switches}
    n = 0
    for sw in fabric.switches:
        scaled: dict[Any, Any] = {}
        for port, info in sorted(sw.ports.items()):
            if info.peer_node in names:
                e = elephant_entry(port, cfg)
                tables.write(sw.name, e.table, e.match, e.action, e.params)
                scaled[_match_key(e.match)] = e
                n += 1
        plan = programmer.plans[sw.name]
        plan.entries = [scaled.get(_match_key(e.match), e) if e.table == ELEPHANT_TABLE and not e.default
                        else e for e in plan.entries]
    say(f"testbed: {n} switch ports report elephants of {cfg.threshold_pkts} packets in "
        f"{cfg.window_us / 1e6:g} s ({100 * cfg.threshold_pkts * 1e6 / cfg.window_us / link_rate_pps:.0f}% "
        f"of a {link_rate_pps:g}-packet/s link)")
    return n


def _match_key(match: Any) -> tuple[tuple[str, Any], ...]:
    """A table entry's match as a hashable key."""
    return tuple(sorted(match.items()))


MIN_SAMPLES = 100
SAMPLES_PER_FLOW = 16
"""Samples per flow on a link before its elephants are ranked (capped by ``MIN_SAMPLES``):
each flow's share to about ±25 %."""
Tick = tuple[float, dict[str, float], int]
"""(monotonic time, packets/s per source-leaf uplink, drops on every polled link)."""


@dataclass(slots=True)
class RestartRecord:
    """One controller restart: when (seconds since the poller started), the flows the old
    registry had (flow id → source port), what the new loop's reconciliation did, and how
    long until the new registry had every one of them back (``reregistered_s``, None if
    not within the wait) with the same ports (``flows_after`` at that moment).
    ``moved_after``: flows the new GOR ordered to move before that moment — a round of its
    own, on the registrations already in (its order names the flow by the port it was
    registered with, so the flow was back; its port now is the new one).

    >>> r = RestartRecord(1.0, {"f": 5, "g": 6}, {"f": 5, "g": 9}, moved_after=["g"])
    >>> r.complete, RestartRecord(1.0).complete
    (True, False)
    """

    at_s: float
    flows_before: dict[str, int] = field(default_factory=dict)
    flows_after: dict[str, int] = field(default_factory=dict)
    reconciled: dict[str, Any] = field(default_factory=dict)
    reregistered_s: Optional[float] = None
    moved_after: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every flow is back, on the port it had before (a move the old GOR made is kept),
        except the flows the new GOR has moved since (``moved_after``)."""
        kept = {f: p for f, p in self.flows_after.items() if f not in self.moved_after}
        return (bool(self.flows_before) and set(self.flows_after) == set(self.flows_before)
                and kept == {f: p for f, p in self.flows_before.items() if f not in self.moved_after})


@dataclass(slots=True)
class SwitchRestartRecord:
    """One switch process restarted under GOR (:meth:`GorSession.restart_switch`); times in
    seconds since the process was stopped (``at_s``: since the poller started):
    ``ready_s`` its new process listens, ``lost_s`` GOR logged ``switch_lost``, ``back_s``
    GOR logged ``switch_back`` (re-programmed, its own entries re-installed; None if not
    within the wait). ``reconcile_s`` = ``back_s − ready_s``: the time to reconcile.

    >>> r = SwitchRestartRecord("b0r0l0", 5.0, ready_s=1.5, back_s=2.0); r.reconcile_s
    0.5
    """

    switch: str
    at_s: float
    ready_s: Optional[float] = None
    lost_s: Optional[float] = None
    back_s: Optional[float] = None
    back: dict[str, Any] = field(default_factory=dict)
    pid: Optional[int] = None

    @property
    def reconcile_s(self) -> Optional[float]:
        """Seconds from the new process listening to GOR's ``switch_back``."""
        if self.back_s is None or self.ready_s is None:
            return None
        return round(max(0.0, self.back_s - self.ready_s), 3)


def write_credentials(hosts: Sequence[str], secret: bytes, root: Path = GOR_DIR) -> dict[str, Path]:
    """``root/creds-<host>.json`` (mode 0600, directory 0700) for every host."""
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    return {h: HostCredentials.derive(secret, h).save(root / f"creds-{h}.json") for h in hosts}


def agent_pki(state: Any, hosts: Sequence[str], run_dir: Path,
              say: Callable[[str], None] = print) -> Path:
    """The PKI directory GOR and the agents use: the testbed's (``state.pki``) when it
    holds a certificate for ``controller`` and each of ``hosts``, else a new throw-away CA
    with those certificates in ``run_dir/pki``.

    >>> import tempfile
    >>> root = agent_pki(None, ["b0s0"], Path(tempfile.mkdtemp()), say=lambda _: None)
    >>> sorted(p.name for p in root.iterdir())
    ['b0s0.key', 'b0s0.pem', 'ca.pem', 'controller.key', 'controller.pem']
    """
    names = [CONTROLLER, *hosts]
    testbed_root = getattr(state, "pki", "") or ""
    if testbed_root:
        try:
            pki = FabricPki.load(Path(testbed_root))
            for name in names:
                pki.files(name)
            return Path(testbed_root)
        except (FileNotFoundError, KeyError) as exc:
            say(f"gor: the testbed's PKI will not do ({exc}); a new CA for this run")
    root = run_dir / "pki"
    FabricPki.create(root, names, ca_name="astral-p4 scenario CA")
    root.chmod(0o700)
    return root


def source_uplinks(fabric: Any, flows: Sequence[Any]) -> dict[str, tuple[str, int]]:
    """``"b0r0l0->s0"`` → (leaf, port) for every uplink of the flows' source leaves: the
    leaves of every port of their source NICs (a dual-port NIC's QP may be moved by GOR to
    its other port, hence leaf). A fabric without hosts: the flows' own leaves.

    >>> from topo.model import build_fabric
    >>> from topo.spec import FabricSpec
    >>> from testbed.traffic.flows import build_flows
    >>> fab = build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2, leaves_per_rail=2))
    >>> sorted(source_uplinks(fab, build_flows(fab, [("10.0.0.1", "10.0.2.1")], [50000])))
    ['b0r0l0->s0', 'b0r0l0->s1', 'b0r0l1->s0', 'b0r0l1->s1']
    """
    port_leaves = {n.ip: {p.leaf for p in getattr(n, "ports", ())}
                   for h in getattr(fabric, "hosts", ()) for n in h.nics}
    leaves = {f.leaf for f in flows} | {lf for f in flows for lf in port_leaves.get(f.src_ip, ())}
    return {f"{sw.name}->{info.peer_node}": (sw.name, p) for sw in fabric.switches
            if sw.name in leaves for p, info in sorted(sw.ports.items()) if info.kind == "uplink"}


class GorSession:
    """See the module docstring. ``opts`` is a ``scenarios.common.ScenarioOptions``;
    ``live=False`` prints no per-uplink line (a scenario that prints its own). GOR itself is
    :attr:`runtime` (a :class:`~controller.gor.runtime.GorRuntime`, from :meth:`__enter__`
    on); the session adds the testbed around it: credentials, queue rates, the NIC fleet,
    the per-uplink tick records and the restart records."""

    def __init__(self, fabric: Any, programmer: Any, state: Any, save_state: Callable[[], None],
                 flows: Sequence[Any], rate_pps: float, opts: Any, run_dir: Path,
                 say: Callable[[str], None] = print, live: bool = True) -> None:
        self.fabric, self.programmer, self.state, self.save_state = fabric, programmer, state, save_state
        self.flows, self.rate_pps, self.opts, self.run_dir, self.say = list(flows), rate_pps, opts, run_dir, say
        self.uplinks = source_uplinks(fabric, flows)
        self.live = live
        self.runtime: Optional[GorRuntime] = None
        self.ticks: list[Tick] = []
        # per poll, each uplink's (packets, seconds): rates over a stretch of polls are
        # their sums' ratio (a p4sim switch forwards in bursts, and short polls then show
        # rates far above or below the mean)
        self.tick_counts: list[tuple[float, dict[str, tuple[int, float]]]] = []
        self.events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.dlog_path = run_dir / "gor.jsonl"
        self.debug_log_path = run_dir / "gor-debug.log"
        self._debug_log: Optional[logging.Handler] = None
        self.rates: dict[tuple[str, int], float] = {}
        self.left_alone: set[Any] = set()
        self.fleet: Any = None
        self._creds: dict[str, Path] = {}
        self._secret = b""
        self.pki: Optional[Path] = None          # mutual TLS (None: --insecure, tokens)
        self._shown = 0.0
        self._live_line: Callable[[float, Any], None] = lambda t_s, samples: None
        self.restarts: list[RestartRecord] = []
        self.switch_restarts: list[SwitchRestartRecord] = []
        self.moves_settled: Optional[bool] = None

    # ------------------------------------------------------------------ GOR's parts
    @property
    def loop(self) -> Any:
        """The running ``GorLoop`` (None before the start)."""
        return None if self.runtime is None else self.runtime.loop

    @property
    def poller(self) -> Any:
        """The telemetry poller (its ``series`` feed the report)."""
        return None if self.runtime is None else self.runtime.poller

    @property
    def registry(self) -> Any:
        """The running ``FlowRegistry``."""
        return None if self.runtime is None else self.runtime.registry

    @property
    def recovery(self) -> Any:
        """The ``SwitchRecovery`` running with the poller."""
        return None if self.runtime is None else self.runtime.recovery

    @property
    def registry_address(self) -> str:
        """Where the agents reach the registry (``unix:build/gor/registry.sock``)."""
        return "" if self.runtime is None else self.runtime.registry_address

    @property
    def metrics_address(self) -> str:
        """``host:port`` of GOR's metrics endpoint (Prometheus scrapes it as job ``gor``)."""
        return "127.0.0.1:0" if self.runtime is None else self.runtime.metrics_address

    def submit_link_event(self, switch: str, port: int, up: bool, reason: str) -> None:
        """Tell the running GOR a link went down or up; it acts at once
        (:meth:`GorRuntime.submit_link_event <controller.gor.runtime.GorRuntime.submit_link_event>`)."""
        if self.runtime is None:
            raise RuntimeError("the GOR session is not started")
        self.runtime.submit_link_event(switch, port, up, reason)

    @property
    def t0(self) -> float:
        """When the poller started (monotonic seconds)."""
        return time.monotonic() if self.runtime is None else self.runtime.t0

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> "GorSession":
        hosts = sorted({f.src_host for f in self.flows})
        if getattr(self.opts, "insecure", False):
            self._secret = os.urandom(32).hex().encode()
            self._creds = write_credentials(hosts, self._secret)
        else:
            self.pki = agent_pki(self.state, hosts, self.run_dir, self.say)
        self._open_debug_log()
        o = self.opts
        settings = LoopSettings(period_s=o.period_s, one_in_n=sample_one_in_n(self.rate_pps), window_s=2.0,
                                min_samples=MIN_SAMPLES, samples_per_flow=SAMPLES_PER_FLOW,
                                cooldown_s=o.duration_s + 10, confirm_timeout_s=3.0)
        nominal = {(sw.name, p): self.rate_pps for sw in self.fabric.switches for p in sw.ports}
        self.runtime = GorRuntime(self.fabric, self.programmer, GorOptions(
            settings, registry_bind=f"unix:{GOR_DIR / 'registry.sock'}", security=self._gor_security(),
            metrics_port=0, decision_log=self.dlog_path, fast_period_s=o.fast_period_s,
            link_rates_pps=nominal), on_tick=self._on_tick, say=lambda msg: self.say(f"gor: {msg}"))
        self.runtime.leave_alone(self.left_alone)
        self.rates = set_uplink_rates(self.fabric, self.state, self.rate_pps, self.say)
        set_elephant_thresholds(self.fabric, self.programmer, self.rate_pps, self.say)
        if self.live:
            self._live_line = live_line(list(self.uplinks))
        self.fleet = NicFleet(self.state, self.save_state, self.run_dir / "nic")
        self.runtime.start()
        return self

    def _open_debug_log(self) -> None:
        """``run_dir/gor-debug.log``: the full text of what GOR's orders report in one line
        (a failed agent call's whole gRPC error: status, details, debug_error_string);
        logger ``controller.gor.orders`` at DEBUG, for this session."""
        self._debug_log = logging.FileHandler(self.debug_log_path, encoding="utf-8")
        self._debug_log.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        orders_log = logging.getLogger(ORDERS_LOGGER)
        orders_log.addHandler(self._debug_log)
        orders_log.setLevel(logging.DEBUG)

    def _close_debug_log(self) -> None:
        if self._debug_log is not None:
            orders_log = logging.getLogger(ORDERS_LOGGER)
            orders_log.removeHandler(self._debug_log)
            if not orders_log.handlers:
                orders_log.setLevel(logging.NOTSET)
            self._debug_log.close()
            self._debug_log = None

    def _on_tick(self, t_s: float, samples: Any, polled_s: float) -> None:
        """After each of GOR's ticks: the source uplinks' rates and the drops of the poll
        (``polled_s``: when the samples came, before the loop acted on them)."""
        pps = {str(l): s.pps for l, s in samples.items() if str(l) in self.uplinks}
        self.tick_counts.append((polled_s, {str(l): (s.tx_pkts, s.dt_s) for l, s in samples.items()
                                            if str(l) in self.uplinks}))
        drops = sum(int(getattr(s, "drops", 0) or 0) for s in samples.values())
        self.ticks.append((polled_s, pps, drops))
        if self.live and t_s - self._shown >= 1.0 - 1e-6:
            self._shown = t_s
            self._live_line(t_s, samples)

    def leave_alone(self, flows: Any) -> None:
        """5-tuples (``controller.gor.decisions.FlowKey``) GOR must never move, now and
        after a restart: the monitor's probes (``scenarios.monitoring`` gives them)."""
        self.left_alone |= set(flows)
        if self.runtime is not None:
            self.runtime.leave_alone(self.left_alone)

    def _gor_security(self) -> Any:
        """GOR's side of the agent protocol: its ``controller`` certificate, or the
        per-run secret (``--insecure``)."""
        if self.pki is None:
            return self._secret
        return MutualTls.from_dir(self.pki, CONTROLLER)

    def agent_credentials(self, host: str) -> list[str]:
        """The sender options that give ``host``'s agent its credentials: its certificate
        (``--agent-tls-dir``/``--agent-host``) or, ``--insecure``, its token file."""
        if self.pki is not None:
            return ["--agent-tls-dir", str(self.pki), "--agent-host", host]
        return ["--agent-creds", str(self._creds[host])]

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds after a telemetry tick (at most ``timeout_s``);
        its last value (:meth:`GorRuntime.wait_for <controller.gor.runtime.GorRuntime.wait_for>`).

        >>> s.wait_for(lambda: s.loop.busy(), timeout_s=5.0)       # doctest: +SKIP
        """
        assert self.runtime is not None, "the session is not started"
        return self.runtime.wait_for(predicate, timeout_s)

    def links_down(self) -> list[str]:
        """The link directions GOR holds down now (its ``LinkState.down``, by the
        telemetry's names, sorted): empty once every cable GOR took out is back in its
        groups; empty while GOR is stopped (``controller_down``).

        >>> s.links_down()                                         # doctest: +SKIP
        ['b0r1l0->s0', 's0->b0r1l0']
        """
        loop = self.loop
        if loop is None or self.runtime is None or self.runtime.down:
            return []
        with self.runtime.lock:
            return sorted(loop.links.name(k) for k in loop.links.down)

    def registered(self) -> dict[str, int]:
        """Flow id → source port in use, as the running registry knows them."""
        return {f.flow_id: f.sport for f in self.registry.flows()} if self.registry is not None else {}

    def stop_gor(self) -> dict[str, int]:
        """Stop GOR — its loop, its registry server and its metrics endpoint — leaving
        the switches, agents and flows running (the monitor's ``controller_down`` fault;
        :meth:`start_gor` brings it back). Returns the flows the registry had."""
        assert self.runtime is not None, "the session is not started"
        with self.runtime.lock:
            if self.runtime.down:
                return {}
            before = self.registered()
            self.runtime.stop_gor()
            return before

    def start_gor(self) -> Any:
        """Start a new GOR after :meth:`stop_gor` (a new registry at the same address, a
        new loop that reconciles first, the metrics endpoint on the same port); returns
        the ``ReconcileReport``."""
        assert self.runtime is not None, "the session is not started"
        return self.runtime.start_gor()

    def restart_gor(self, wait_s: float = 5.0) -> RestartRecord:
        """Stop GOR (loop, registry server) and start a new one on the same switches and
        agents; wait (at most ``wait_s``) until every flow the old registry had is
        registered again. Moves in flight are abandoned with the old loop (their agents
        keep the new port; the new registry learns it)."""
        rec = RestartRecord(round(self.since_start(), 3), self.registered())
        self.stop_gor()
        t_restart = time.monotonic()
        rep = self.start_gor()
        rec.reconciled = {"adopted_overrides": rep.adopted_overrides,
                          "deleted_overrides": rep.deleted_overrides,
                          "adopted_sampling": rep.adopted_sampling,
                          "deleted_sampling": rep.deleted_sampling,
                          "failed_switches": list(rep.failed_switches)}
        back = self.wait_for(lambda: set(self.registered()) >= set(rec.flows_before), wait_s)
        if back:
            rec.reregistered_s = round(time.monotonic() - t_restart, 3)
        with self.runtime.lock:          # the flows and the new loop's orders at one instant
            rec.flows_after = {fid: sp for fid, sp in self.registered().items() if fid in rec.flows_before}
            rec.moved_after = sorted(set(self.loop.book.flow_ids.values()) & set(rec.flows_before))
        self.restarts.append(rec)
        self.say(f"gor: restarted at t={rec.at_s:.1f}s: reconciled {rec.reconciled}; "
                 f"{len(rec.flows_after)}/{len(rec.flows_before)} flows registered again "
                 f"after {rec.reregistered_s} s, ports {'kept' if rec.complete else 'CHANGED'}"
                 + (f" (moved by the new GOR since: {', '.join(rec.moved_after)})" if rec.moved_after else ""))
        return rec

    def restart_switch(self, name: str, restart: Callable[[str], Any],
                       wait_s: float = 30.0) -> SwitchRestartRecord:
        """Restart switch ``name`` under the running GOR: ``restart(name)`` stops its process
        and starts it again, returning once it listens (``FabricNet.restart_switch``: the
        recorded PID is replaced); the uplink queue rates are set on it again, then this
        waits (at most ``wait_s``) until GOR has it back (``switch_back``: reconnected,
        re-programmed, GOR's entries re-installed). Nothing here tells GOR: it finds the
        switch lost from its polls and its stream. The scaled elephant thresholds come
        back with GOR's re-programming, from the plan (:func:`set_elephant_thresholds`
        made the plan follow them), so nothing here writes them again.

        >>> rec = s.restart_switch("b0r0l0", tb.fnet.restart_switch)   # doctest: +SKIP
        >>> rec.reconcile_s                                            # doctest: +SKIP
        0.62
        """
        n0 = len(self.loop.switch_log)
        t_stop = time.monotonic()
        rec = SwitchRestartRecord(name, round(self.since_start(t_stop), 3))
        got = restart(name)
        rec.pid = got if isinstance(got, int) else None
        rec.ready_s = round(time.monotonic() - t_stop, 3)
        self._reapply_rates(name)

        def back() -> bool:
            return any(e[0] == "switch_back" and e[1] == name for e in self.loop.switch_log[n0:])
        if self.wait_for(back, wait_s):
            rec.back_s = round(time.monotonic() - t_stop, 3)
        for ev, sw, t_s, info in self.loop.switch_log[n0:]:
            if sw == name and ev == "switch_lost" and rec.lost_s is None:
                rec.lost_s = round(max(0.0, t_s - rec.at_s), 3)
            if sw == name and ev == "switch_back":
                rec.back = dict(info)
        self.switch_restarts.append(rec)
        self.say(f"gor: switch {name} stopped at t={rec.at_s:.1f}s: listening again after {rec.ready_s} s, "
                 f"lost after {rec.lost_s} s, back after {rec.back_s} s (reconciled "
                 f"{rec.reconcile_s} s after it listened): {rec.back}")
        return rec

    def _reapply_rates(self, name: str) -> None:
        """The queue rates of ``name``'s uplinks again (a new process has none)."""
        mine = {k: r for k, r in self.rates.items() if k[0] == name}
        if not mine:
            return
        try:
            ctl = open_control(self.state.target, self.state.switches.get(name, {}), name)
            try:
                for (_, port), rate in mine.items():
                    ctl.set_queue_rate(round(rate), port=port)
            finally:
                ctl.close()
        except Exception as exc:  # noqa: BLE001 — reported, the run goes on
            self.say(f"gor: queue rates of {name} not set again: {exc}")

    def start_flows(self, duration_s: float, nic_options: Any = None,
                    sender_extra: Sequence[str] = ()) -> None:
        """Start the NIC fleet, each sender with its TCCL agent (``nic_options``: a
        ``NicOptions``, default the scenario's line rate; ``sender_extra``: more sender
        options, e.g. ``["--messages", "16"]`` for a fixed transfer)."""
        def agent_args(fl: Sequence[Any]) -> list[str]:
            h = fl[0].src_host
            return [*sender_extra, *self.agent_credentials(h),
                    "--agent-registry", self.registry_address,
                    "--agent-bind", f"unix:{GOR_DIR / f'agent-{h}-{fl[0].dst_ip}.sock'}"]

        # the elephants start in one instant, once every sender and its agent are set up,
        # as a job's ranks do (GOR acts within ms of a collision: a start spread over the
        # seconds the emulators take to come up would show it a collision half-formed)
        self.fleet.start(self.flows, duration_s,
                         nic_options or NicOptions(line_rate_pps=self.opts.flow_rate_pps),
                         sender_args=agent_args, together=True)

    def __exit__(self, *exc: object) -> None:
        if self.runtime is not None:
            self.runtime.quiesce()            # nothing acts any more; the registry still answers
        if self.fleet is not None:
            self.errors = self.fleet.stop()
        if self.runtime is not None:
            self.runtime.stop()
            self.events = list(read_log(self.dlog_path))
        if self.rates:
            clear_rates(self.state, self.rates)
        self._close_debug_log()

    def since_start(self, t_mono: Optional[float] = None) -> float:
        """Seconds since the poller started (now, or at ``t_mono``)."""
        return (time.monotonic() if t_mono is None else t_mono) - self.t0


def restart_after_moves(switch: str, restart: Callable[[str], Any], sessions: list["GorSession"],
                        wait_s: float = 30.0) -> Callable[["GorSession"], None]:
    """A story ``midway`` hook: once GOR's first moves are seen on their new uplinks and have
    settled, and GOR has nothing left to do (no alarm, move or follow-up round: a second
    round it still owed the collision would otherwise send its order after the restart and
    read as caused by it) — bounded waits — restart ``switch``
    (:meth:`GorSession.restart_switch` with
    ``restart``, e.g. ``FabricNet.restart_switch``); the session is appended to ``sessions``
    (its ``switch_restarts`` say what happened). Used by the live test and the bench.

    >>> run_story(..., midway=restart_after_moves("b0r0l0", tb.fnet.restart_switch, got))  # doctest: +SKIP
    """
    def moves_seen(s: "GorSession") -> bool:
        pending = list(s.loop.pending.values())
        return bool(pending) and all(m.seen_s is not None for m in pending)

    def midway(session: "GorSession") -> None:
        sessions.append(session)
        session.moves_settled = (session.wait_for(lambda: moves_seen(session), timeout_s=15.0)
                                 and session.wait_for(lambda: not session.loop.pending, timeout_s=10.0)
                                 and session.wait_for(lambda: not session.loop.busy(), timeout_s=10.0))
        session.restart_switch(switch, restart, wait_s=wait_s)
    return midway


__all__ = ["GOR_DIR", "GorSession", "MIN_SAMPLES", "RestartRecord", "SAMPLES_PER_FLOW", "SAMPLE_ONE_IN_N",
           "SAMPLES_PER_S", "sample_one_in_n", "set_elephant_thresholds",
           "SwitchRestartRecord", "Tick", "agent_pki", "restart_after_moves", "source_uplinks",
           "write_credentials"]
