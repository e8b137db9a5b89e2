"""The localiser's rules about whole nodes: the controller, a hung switch, a slow
receiver (the origin of a pause storm), a port with a wrong ECN threshold and a dead
agent. The rules about links (gray link, corruption, flapping cable, blackholed route)
are in :mod:`monitor.linkrules`, the thresholds and the view of the probe paths they all
read in :mod:`monitor.pathview`; the :class:`~monitor.localiser.Localiser` runs them
all, in order of specificity, and keeps the state across evaluations.

>>> from monitor.evidence import Evidence
>>> ev = Evidence(3.0, controller_up=False)
>>> [c.component for c in controller_rule(ev, LocaliserConfig())]
['controller']
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Optional

from monitor.evidence import Evidence, component
from monitor.pathview import Candidate, LocaliserConfig, PathView, names, nic_host, pct


def controller_rule(ev: Evidence, cfg: LocaliserConfig) -> list[Candidate]:
    """``controller_down`` while GOR's metrics endpoint does not answer (held
    ``controller_evals`` evaluations)."""
    if ev.controller_up is not False:
        return []
    return [Candidate("controller_down", component("controller"), 0.9,
                      ("GOR's metrics endpoint does not answer",),
                      cfg.controller_evals, cfg.controller_hold_s)]


def through_excess_loss(view: PathView, sw: str) -> Optional[float]:
    """How much more the paths through ``sw`` lose than the others: the least loss among
    the measured paths through it minus the median loss of the paths that avoid it
    (``None`` with no measured path through it). A stall of the whole testbed costs every
    path alike and gives ~0; a switch that stops forwarding gives up to 1."""
    through = view.through(sw)
    if not through:
        return None
    others = [f.drop_loss for n, f in view.paths.items() if view.measured(n) and n not in through]
    base = statistics.median(others) if others else 0.0
    return max(0.0, min(view.paths[n].drop_loss for n in through) - base)


@dataclass(slots=True)
class SwitchLossMemory:
    """Per switch, the peak of :func:`through_excess_loss` over the last ``memory_s``,
    kept for as long as its P4Runtime stays silent: GOR may route around a hung switch
    within a second, after which the planned paths "through" it arrive again — the loss
    they saw as it hung is the data-plane half of the evidence.

    >>> m = SwitchLossMemory(6.0)
    >>> m.note("s0", 0.9, True, 1.0); m.note("s0", 0.0, False, 20.0); m.peak("s0")
    0.9
    """

    memory_s: float = 6.0
    _seen: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def note(self, sw: str, excess: Optional[float], up: bool, t_s: float) -> None:
        """Record the switch's excess loss now; ``up`` False keeps everything seen."""
        seen = self._seen.setdefault(sw, [])
        if excess is not None:
            seen.append((t_s, excess))
        if up:
            seen[:] = [(t, x) for t, x in seen if t >= t_s - self.memory_s]

    def peak(self, sw: str) -> float:
        """The highest excess loss remembered (0 with none)."""
        return max((x for _, x in self._seen.get(sw, ())), default=0.0)

    def update(self, ev: Evidence, view: PathView, t_s: float) -> None:
        """Note every switch crossed by a path or reported by the exporter."""
        for sw in sorted({s for f in view.paths.values() for s in f.switches} | set(ev.switch_up)):
            self.note(sw, through_excess_loss(view, sw), ev.switch_up.get(sw) is not False, t_s)


def hung_switch_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig,
                     memory: Optional[SwitchLossMemory] = None) -> list[Candidate]:
    """``hung_switch``: P4Runtime liveness lost (``switch_up`` False, held ``hung_evals``
    evaluations) *and* the probe paths through the switch lost: every one of them at
    least ``hung_path_loss`` more than the paths that avoid it now (confidence 0.95), or
    ``hung_peak_loss`` more at some point since it went silent (``memory``; confidence
    0.85: GOR has routed around it, the window saw only the first second). A
    switch whose paths kept getting through has only a slow control plane, and a stall
    of the whole testbed costs every path alike: no verdict. With no probe path through
    it the verdict rests on P4Runtime alone (confidence 0.6, held twice as long). Every
    path through a silent switch is explained by it at once, so no link verdict is given
    for its links while the liveness verdict is pending.

    A switch whose every measured path (three or more) loses ``hung_path_loss`` more than
    the others explains them too, silent or not: no link, cable or route fault kills
    every path through one switch. Without any liveness report for it, that alone names
    it (confidence 0.7, held twice as long); while P4Runtime still answers, nothing is
    named (yet)."""
    out: list[Candidate] = []
    switches = sorted({s for f in view.paths.values() for s in f.switches})
    for sw in switches:
        if ev.switch_up.get(sw) is False:
            continue
        through = view.through(sw)
        excess = through_excess_loss(view, sw)
        if len(through) < 3 or excess is None or excess < cfg.hung_path_loss:
            continue
        view.explain(through, f"every path through {sw} lost")
        if sw not in ev.switch_up:
            out.append(Candidate(
                "hung_switch", component("switch", sw), 0.7,
                ("no P4Runtime liveness reported",
                 f"all {len(through)} probe paths through it lose {pct(excess)} more than "
                 f"the others ({names(through)})"), 2 * cfg.hung_evals, 2 * cfg.hung_hold_s))
    for sw in sorted(s for s, up in ev.switch_up.items() if up is False):
        through = view.through(sw)
        view.explain(through, f"switch {sw} silent")
        excess = through_excess_loss(view, sw)
        if excess is None:
            out.append(Candidate("hung_switch", component("switch", sw), 0.6,
                                 ("P4Runtime liveness lost", "no probe path crosses it"),
                                 2 * cfg.hung_evals, 2 * cfg.hung_hold_s))
            continue
        peak = memory.peak(sw) if memory is not None else excess
        if excess < cfg.hung_path_loss and peak < cfg.hung_peak_loss:
            continue
        losses = [view.paths[n].drop_loss for n in through]
        words = ["P4Runtime liveness lost"]
        if excess >= cfg.hung_path_loss:
            words.append(f"all {len(through)} probe paths through it lose "
                         f"{pct(min(losses))}–{pct(max(losses))} ({names(through)})")
        else:
            words.append(f"all {len(through)} probe paths through it lost {pct(peak)} more than "
                         f"the others as it went silent, and get through now "
                         f"(routed around it?) ({names(through)})")
        out.append(Candidate("hung_switch", component("switch", sw),
                             0.95 if excess >= cfg.hung_path_loss else 0.85, tuple(words),
                             cfg.hung_evals, cfg.hung_hold_s))
    return out


def _leaves(view: PathView) -> list[str]:
    """The switches NICs are cabled to, as the probe paths show them (first and last hop)."""
    out = set()
    for f in view.paths.values():
        out.add(f.links[0].dst)
        out.add(f.links[-1].src)
    return sorted(s for s in out if nic_host(s) is None)


def _others_get_through(view: PathView, cfg: LocaliserConfig, avoid: set[str]) -> Optional[float]:
    """The median drop loss of the measured paths not in ``avoid`` when it is at most
    ``ok_loss`` (the rest of the fabric gets through), else ``None``."""
    others = [f.drop_loss for n, f in view.paths.items() if view.measured(n) and n not in avoid]
    if not others:
        return None
    base = statistics.median(others)
    return base if base <= cfg.ok_loss else None


def dead_tor_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig) -> list[Candidate]:
    """``dead_tor``: a leaf whose P4Runtime answers (``switch_up`` True: a silent one is
    :func:`hung_switch_rule`'s) but every measured probe path through it — three or more,
    NIC ports on it and every pair of its uplinks — loses ``dead_loss`` or more while the
    paths that avoid it get through: the ToR forwards nothing, as when it loses every
    link at once (the tor-failure scenario sets all its interfaces down). No single link
    or cable fault kills every path through one switch. Confidence 0.9, held like a dead
    link (``dead_hold_s``: a leaf whose links flap comes back within it). Explains the
    paths (no link or NIC-port verdict for them)."""
    out: list[Candidate] = []
    for leaf in _leaves(view):
        if ev.switch_up.get(leaf) is not True:
            continue
        through = view.through(leaf)
        if len(through) < 3 or min(view.paths[n].drop_loss for n in through) < cfg.dead_loss:
            continue
        base = _others_get_through(view, cfg, set(through))
        if base is None:
            continue
        view.explain(through, f"every path through {leaf} lost")
        nics = sorted({view.paths[n].src_nic for n in through if view.paths[n].links[0].dst == leaf}
                      | {view.paths[n].dst_nic for n in through if view.paths[n].links[-1].src == leaf})
        out.append(Candidate(
            "dead_tor", component("switch", leaf), 0.9,
            ("P4Runtime answers", f"all {len(through)} probe paths through it lose "
                                  f"{pct(cfg.dead_loss)} or more ({names(through)})",
             f"the paths that avoid it lose {pct(base)} (median)",
             f"NIC ports on it: {names(nics)}"), cfg.hung_evals, cfg.dead_hold_s))
    return out


def dead_nic_port_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig) -> list[Candidate]:
    """``dead_nic_port``: one port of a NIC (``b0s0-eth0``, ``b0s0-eth0p1``) whose every
    measured probe path — at least one sent from it and one to it — loses ``dead_loss``
    or more, while its leaf gets other paths through (one through the leaf that avoids the
    port loses at most ``ok_loss``): the port's cable passes nothing either way (a port
    down, a pulled cable; with a dual-port NIC the bond moves its QPs to the other port).
    Paths already explained (a dead ToR, a hung switch) are not counted. Confidence 0.9,
    held ``dead_hold_s`` (a flapping cable comes back within it and is
    :func:`~monitor.linkrules.flapping_rule`'s). Explains the paths."""
    out: list[Candidate] = []
    ports: dict[str, tuple[list[str], list[str], str]] = {}
    for n, f in view.paths.items():
        if not view.measured(n) or n in view.explained:
            continue
        ports.setdefault(f.src_nic, ([], [], f.links[0].dst))[0].append(n)
        ports.setdefault(f.dst_nic, ([], [], f.links[-1].src))[1].append(n)
    for port, (sent, received, leaf) in sorted(ports.items()):
        if not sent or not received:
            continue
        mine = sent + received
        if min(view.paths[n].drop_loss for n in mine) < cfg.dead_loss:
            continue
        alive = [n for n in view.through(leaf) if n not in mine
                 and view.paths[n].drop_loss <= cfg.ok_loss]
        if not alive:
            continue
        view.explain(mine, f"NIC port {port} dead")
        out.append(Candidate(
            "dead_nic_port", component("nic", port), 0.9,
            (f"all {len(sent)} probe paths from it and all {len(received)} to it lose "
             f"{pct(cfg.dead_loss)} or more ({names(mine)})",
             f"its leaf {leaf} carries {len(alive)} other path(s) that get through ({names(alive)})"),
            cfg.hung_evals, cfg.dead_hold_s))
    return out


def _leaf_port_of(ev: Evidence, nic: str) -> Optional[tuple[str, int]]:
    """The switch port whose peer is ``nic`` (``port_peer``), if known."""
    for key in sorted(ev.port_peer):
        if ev.port_peer[key] == nic:
            return key
    return None


def slow_receiver_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig,
                       established: Callable[[str, str], bool] = lambda kind, comp: True,
                       ) -> list[Candidate]:
    """``slow_receiver``: a NIC that sends PAUSE frames (its own ``pause_tx_fps``, or the
    ``pfc_rx_fps`` of the leaf port facing it) at ``pause_min_fps`` or more, is not paused
    itself (its ``pause_rx_fps`` and the leaf port's ``pfc_tx_fps`` stay below that) and
    delivers ~nothing (``goodput_mbps`` at most ``slow_max_goodput_mbps`` where known).

    A storm spreads upstream: the leaf pauses the spines, they pause other leaves, those
    pause the senders. Every one of those is *paused* before it pauses, so only the
    origin passes the "not paused itself" test. A busy receiver that pauses now and then
    while delivering is ordinary PFC: no verdict. Once ``established`` (seen in the
    evaluations before this one: a stall of one evaluation explains nothing), the paths to
    the NIC and those over any paused link direction are explained by it."""
    pausing: dict[str, list[str]] = {}
    for nic, r in sorted(ev.nics.items()):
        if r.pause_tx_fps >= cfg.pause_min_fps:
            pausing.setdefault(nic, []).append(f"{nic} sends {r.pause_tx_fps:.0f} PAUSE/s")
    for (sw, port), r in sorted(ev.ports.items()):
        peer = ev.port_peer.get((sw, port))
        if peer is not None and nic_host(peer) is not None and r.pfc_rx_fps >= cfg.pause_min_fps:
            pausing.setdefault(peer, []).append(
                f"{sw}:{port} (facing {peer}) receives {r.pfc_rx_fps:.0f} PFC/s")
    out: list[Candidate] = []
    for nic, words in sorted(pausing.items()):
        r = ev.nics.get(nic)
        lp = _leaf_port_of(ev, nic)
        port_rates = ev.ports.get(lp) if lp else None
        paused_fps = max(r.pause_rx_fps if r else 0.0, port_rates.pfc_tx_fps if port_rates else 0.0)
        if paused_fps >= cfg.pause_min_fps:
            continue                                    # paused itself: a victim, not the origin
        if r is not None and r.goodput_mbps > cfg.slow_max_goodput_mbps:
            continue                                    # delivering: ordinary flow control
        words = list(words)
        if r is not None:
            words.append(f"delivers {r.goodput_mbps:.2f} Mbit/s, paused {r.pause_rx_fps:.0f}/s itself")
        to_nic = [n for n, f in view.paths.items() if f.dst_nic == nic and view.measured(n)]
        if to_nic:
            loss = max(view.paths[n].drop_loss for n in to_nic)
            words.append(f"probes to it ({names(to_nic)}) lose up to {pct(loss)}")
        comp = component("nic", nic)
        if established("slow_receiver", comp):
            view.explain(to_nic, f"slow receiver {nic}")
        paused_links = {(sw, peer) for (sw, port), pr in ev.ports.items()
                        if pr.pfc_rx_fps >= cfg.pause_min_fps
                        for peer in [ev.port_peer.get((sw, port))] if peer is not None}
        victims = [n for n, f in view.paths.items()
                   if any((l.src, l.dst) in paused_links for l in f.links)]
        if len(paused_links) > 1:
            words.append(f"{len(paused_links)} link directions paused in the storm")
        if established("slow_receiver", comp):
            view.explain(victims, f"pause storm from {nic}")
        confidence = 0.9 if (r is not None and port_rates is not None) else 0.75
        out.append(Candidate("slow_receiver", comp, confidence, tuple(words),
                             cfg.min_evals, cfg.slow_hold_s))
    return out


def wrong_ecn_rule(ev: Evidence, cfg: LocaliserConfig) -> list[Candidate]:
    """``wrong_ecn_threshold``: an egress port sending at least ``ecn_min_tx_pps`` marks
    CE on at least ``ecn_high_mark_ratio`` of its packets while its deepest queue stays
    below ``ecn_low_queue_frac`` of the fabric's threshold — a correctly configured port
    cannot mark there. Ports with a similar load (half to twice the rate) that mark
    nothing raise the confidence; if most of those mark the same way, the fabric's
    threshold as reported is what is wrong, not one port: no verdict."""
    threshold = ev.ecn_threshold_pkts
    if not threshold:
        return []
    low_q = cfg.ecn_low_queue_frac * threshold
    out: list[Candidate] = []
    for key, r in sorted(ev.ports.items()):
        if (r.tx_pps < cfg.ecn_min_tx_pps or r.mark_ratio < cfg.ecn_high_mark_ratio
                or r.max_qdepth_pkts >= low_q):
            continue
        peers = [o for k, o in ev.ports.items() if k != key and o.tx_pps >= cfg.ecn_min_tx_pps
                 and r.tx_pps / 2 <= o.tx_pps <= 2 * r.tx_pps]
        quiet = [o for o in peers if o.mark_ratio <= cfg.ecn_quiet_mark_ratio]
        alike = [o for o in peers if o.mark_ratio >= cfg.ecn_high_mark_ratio
                 and o.max_qdepth_pkts < low_q]
        if peers and len(alike) > len(quiet):
            continue
        words = [f"marks CE on {pct(r.mark_ratio)} of {r.tx_pps:.0f} pkt/s",
                 f"deepest queue {r.max_qdepth_pkts} pkts, fabric threshold {threshold} pkts"]
        if quiet:
            words.append(f"{len(quiet)} ports with a similar load mark at most "
                         f"{pct(max(o.mark_ratio for o in quiet))}")
        out.append(Candidate("wrong_ecn_threshold", component("port", key[0], str(key[1])),
                             0.9 if quiet else 0.7, tuple(words), cfg.min_evals, cfg.ecn_hold_s))
    return out


def dead_agent_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig,
                    controller_settled: bool) -> list[Candidate]:
    """``dead_agent``: a host's agent silent for more than ``agent_max_age_s`` while the
    controller is up and settled (a controller that is down or just back explains silent
    agents) and the host's NICs still receive probes (a host no probe reaches is not an
    agent fault). With no probe path to the host the confidence is 0.6."""
    if ev.controller_up is False or not controller_settled:
        return []
    out: list[Candidate] = []
    for host, age in sorted(ev.agent_age_s.items()):
        if age is None or age <= cfg.agent_max_age_s:
            continue
        to_host = [n for n, f in view.paths.items()
                   if nic_host(f.dst_nic) == host and view.measured(n)]
        answering = [n for n in to_host if view.paths[n].received > 0]
        if to_host and not answering:
            continue
        words = [f"agent last reported {age:.1f} s ago (bound {cfg.agent_max_age_s:.0f} s)"]
        if answering:
            words.append(f"its NICs answer probes ({names(answering)})")
        else:
            words.append("no probe path reaches its NICs")
        out.append(Candidate("dead_agent", component("agent", host), 0.9 if answering else 0.6,
                             tuple(words), 2, 0.0))
    return out


__all__ = ["SwitchLossMemory", "controller_rule", "dead_agent_rule", "hung_switch_rule",
           "slow_receiver_rule", "through_excess_loss", "wrong_ecn_rule"]
