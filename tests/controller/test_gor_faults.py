"""GOR faults with fake switches: the pause-storm alarm (raised, logged, exported, no
re-route, hysteresis), dead links from the counters (sent-not-received and
forwarded-not-sent, an idle link never declared dead, back up when traffic crosses again)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Optional

from controller.telemetry.exposition import parse_metrics
from controller.gor.pause import PauseStormMonitor, PauseStormThresholds
from controller.telemetry.poller import LinkId, LinkSample
from test_gor_loop import L0, L1, digest_rows, events, flows_through, make, port_to, samples
from topo.model import Fabric


def gauges(metrics: Any, name: str) -> dict[str, float]:
    return {s.labels["link"]: s.value for s in parse_metrics(metrics.render()) if s.name == name}


def traffic(fab: Fabric, tx: Optional[dict[tuple[str, str], int]] = None, *, rx_lost: tuple[str, str] = ("", ""),
            pfc_rx: Optional[dict[tuple[str, str], int]] = None, dt_s: float = 0.1) -> dict[LinkId, LinkSample]:
    """Every fabric link direction sends 1000 packets (``tx[(switch, peer)]`` overrides) and
    its peer receives what was sent, except on direction ``rx_lost`` (nothing arrives)."""
    tx, pfc_rx = tx or {}, pfc_rx or {}
    sent = {(sw.name, i.peer_node): tx.get((sw.name, i.peer_node), 1000)
            for sw in fab.switches for i in sw.ports.values() if i.kind in ("uplink", "downlink")}
    out = {}
    for sw in fab.switches:
        for p, i in sorted(sw.ports.items()):
            if i.kind not in ("uplink", "downlink"):
                continue
            n = sent[(sw.name, i.peer_node)]
            back = 0 if (i.peer_node, sw.name) == rx_lost else sent[(i.peer_node, sw.name)]
            out[LinkId(sw.name, p, i.peer_node, i.kind)] = LinkSample(
                0.0, dt_s, n, n * 1000, 0, 0, 0.1 if n else 0.0, rx_pkts=back,
                pfc_rx=pfc_rx.get((sw.name, i.peer_node), 0))
    return out


# ---------------------------------------------------------------------- pause storms
def test_pause_storm_needs_rate_and_duration_and_clears_with_hysteresis() -> None:
    m = PauseStormMonitor(PauseStormThresholds(raise_fps=200, raise_after_s=0.5,
                                               clear_fps=50, clear_after_s=1.0))
    link = ("b0r0l0", 3)
    # bursts of pauses, as PFC is meant to work, never raise
    for i in range(20):
        assert m.observe(link, 0.1 * (i + 1), 100 if i % 3 == 0 else 0, 0.1) is None
    ev = [m.observe(link, 3.0 + 0.1 * i, 30, 0.1) for i in range(6)]   # 300 /s for 0.6 s
    assert ev[:4] == [None] * 4 and ev[4] is not None and ev[4].raised
    assert m.active() == [link]
    assert m.observe(link, 3.7, 10, 0.1) is None                         # 100 /s: between
    assert all(m.observe(link, 3.8 + 0.1 * i, 2, 0.1) is None for i in range(9))
    cleared = m.observe(link, 4.7, 2, 0.1)                               # 20 /s for 1.0 s
    assert cleared is not None and not cleared.raised and m.active() == []


def test_pause_storm_alarm_is_logged_and_exported_without_a_reroute() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    hot = (L0, "s0")
    for i in range(12):                                                  # 400 /s for 1.2 s
        loop.tick(0.1 * (i + 1), traffic(fab, pfc_rx={hot: 40}))
    raised = [e for e in events(buf) if e["event"] == "pause_storm_raised"]
    assert len(raised) == 1 and raised[0]["link"] == f"{L0}->s0"
    assert raised[0]["frames_per_s"] == 400.0 and "not re-routed" in raised[0]["action"]
    assert gauges(metrics, "gor_pause_storm") == {f"{L0}->s0": 1}
    ev = {e["event"] for e in events(buf)}
    assert not ev & {"round", "order_sent", "link_down", "alarm_raised"}
    assert all(not c.entries for c in prog.connections.values())       # nothing written
    for i in range(12):
        loop.tick(1.3 + 0.1 * i, traffic(fab))
    assert [e["event"] for e in events(buf)].count("pause_storm_cleared") == 1
    assert gauges(metrics, "gor_pause_storm") == {f"{L0}->s0": 0}


# ---------------------------------------------------------------------- dead links
def test_link_whose_traffic_never_arrives_is_taken_down_after_the_hysteresis() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    loop.tick(0.1, traffic(fab))                                         # rx counters move
    for i in range(3):                                                   # 0.2 s of evidence
        loop.tick(0.2 + 0.1 * i, traffic(fab, rx_lost=(L0, "s0")))
        assert loop.links.is_up((L0, up0)), i
    loop.tick(0.5, traffic(fab, rx_lost=(L0, "s0")))
    assert not loop.links.is_up((L0, up0))
    (down,) = [e for e in events(buf) if e["event"] == "link_down"]
    assert down["link"] == f"{L0}->s0" and down["reason"].startswith("counters: sent but not received")
    assert down["groups"] == [f"{L0}/1: s1,s2"]
    assert loop.engine.hash_model.switch(L0).group(1).members == ("s1", "s2")
    assert gauges(metrics, "gor_link_down")[f"{L0}->s0"] == 1
    # the leaf stops sending there: no evidence, it stays down; traffic crossing again brings it back
    for i in range(5):
        loop.tick(0.6 + 0.1 * i, traffic(fab, tx={(L0, "s0"): 0}))
    assert not loop.links.is_up((L0, up0))
    for i in range(4):
        loop.tick(1.1 + 0.1 * i, traffic(fab))
    assert loop.links.is_up((L0, up0))
    up = [e for e in events(buf) if e["event"] == "link_up"]
    assert len(up) == 1 and up[0]["reason"].startswith("counters: traffic received")
    assert gauges(metrics, "gor_link_down")[f"{L0}->s0"] == 0


def test_a_break_in_the_evidence_restarts_the_clock() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    loop.tick(0.1, traffic(fab))
    for i in range(10):                                                  # lost, lost, healthy, …
        lost = (L0, "s0") if i % 3 != 2 else ("", "")
        loop.tick(0.2 + 0.1 * i, traffic(fab, rx_lost=lost))
    assert "link_down" not in {e["event"] for e in events(buf)}


def test_rx_counter_that_never_moved_proves_nothing() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    for i in range(20):                                                  # the old helper: rx = 0 everywhere
        loop.tick(0.1 * (i + 1), samples(fab, marks=0))
    assert "link_down" not in {e["event"] for e in events(buf)} and not loop.links.down


def test_idle_link_is_probed_but_never_declared_dead() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    idle = {(L0, "s0"): 0}
    for i in range(30):                                                  # 3 s idle, siblings busy
        loop.tick(0.1 * (i + 1), traffic(fab, tx=idle))
    assert loop.links.is_up((L0, up0)) and "link_down" not in {e["event"] for e in events(buf)}
    assert (L0, up0) in loop.faults.probes                                      # sampling is on there …
    assert prog.connections[L0].table("FabricIngress.sampling.config")
    loop.tick(3.1, traffic(fab))                                         # … until it sends again
    assert (L0, up0) not in loop.faults.probes and not prog.connections[L0].table("FabricIngress.sampling.config")


def test_port_that_forwards_but_never_sends_is_taken_down() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    f = flows_through(loop, "s0")[0]
    silent = {(L0, "s0"): 0}
    loop.tick(0.1, traffic(fab, tx=silent))                              # probe turned on
    assert (L0, up0) in loop.faults.probes
    for i in range(4):                                                   # the probe's digests
        loop.submit_digests(L0, digest_rows(fab, f, up0, 2))
        loop.tick(0.2 + 0.1 * i, traffic(fab, tx=silent))
    (down,) = [e for e in events(buf) if e["event"] == "link_down"]
    assert down["reason"].startswith("counters: forwarded to the port but nothing sent")
    assert not loop.links.is_up((L0, up0)) and (L0, up0) not in loop.faults.probes


def test_paused_port_that_sends_nothing_is_not_dead() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    f = flows_through(loop, "s0")[0]
    silent = {(L0, "s0"): 0}
    for i in range(8):
        loop.submit_digests(L0, digest_rows(fab, f, up0, 2))
        loop.tick(0.1 * (i + 1), traffic(fab, tx=silent, pfc_rx={(L0, "s0"): 5}))
    assert loop.links.is_up((L0, up0)) and "link_down" not in {e["event"] for e in events(buf)}


def test_dead_link_detection_can_be_turned_off() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    loop.detect_dead_links = False
    for i in range(8):
        loop.tick(0.1 * (i + 1), traffic(fab, rx_lost=(L0, "s0")))
    assert not loop.links.down and L1 not in loop.faults.counter_down


def test_status_shows_pause_storms_and_links_down() -> None:
    from controller.gor.status import snapshot_from_log, snapshot_from_metrics
    fab, loop, prog, reg, buf, metrics = make()
    loop.tick(0.1, traffic(fab))
    for i in range(8):
        loop.tick(0.2 + 0.1 * i, traffic(fab, rx_lost=(L0, "s0"), pfc_rx={(L1, "s1"): 40}))
    for snap in (snapshot_from_metrics(metrics.render()), snapshot_from_log(events(buf))):
        assert snap.pause_storms == [f"{L1}->s1"]
        assert f"{L0}->s0" in snap.down
        text = snap.render()
        assert f"PAUSE STORMS (not re-routed): {L1}->s1" in text and "LINKS DOWN: " in text


# ---------------------------------------------------------------------- re-tests of dead links
def _declare_dead(fab: Fabric, loop: Any) -> float:
    """Take L0 -> s0 down from the counters (as in the first dead-link test); the time."""
    loop.tick(0.1, traffic(fab))
    for i in range(4):
        loop.tick(0.2 + 0.1 * i, traffic(fab, rx_lost=(L0, "s0")))
    assert L0 in {k[0] for k in loop.faults.counter_down}
    return 0.5


def _probes_on(conn: Any, port: int, since: int) -> int:
    return sum(1 for _, md in conn.packets_out[since:] if md.get("egress_port") == port)


def test_a_false_declaration_heals_from_probes_within_the_bound() -> None:
    """The link works again but nothing is offered to it (it is out of every group): only
    the re-test probes cross it, and three re-tests in a row bring it back."""
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    t_dead = _declare_dead(fab, loop)
    conn, seen, t, back_at = prog.connections[L0], 0, t_dead, None
    bound = loop.faults.dead_links.thresholds.heal_bound_s
    while t < t_dead + 10.0 and back_at is None:
        t = round(t + 0.1, 3)
        n = _probes_on(conn, up0, seen)                   # sent since the last reading:
        seen = len(conn.packets_out)                      # counted out of L0 and into s0
        loop.tick(t, traffic(fab, tx={(L0, "s0"): n}))
        if loop.links.is_up((L0, up0)):
            back_at = t
    assert back_at is not None and back_at - t_dead <= bound + 0.3, back_at
    (up,) = [e for e in events(buf) if e["event"] == "link_up"]
    assert up["reason"].startswith("probes: 3 re-tests in a row arrived")
    assert loop.engine.hash_model.switch(L0).group(1).members == ("s0", "s1", "s2")
    frames = [p for p, md in conn.packets_out if md == {"egress_port": up0}]
    assert len(frames) == 9 and all(f[12:14] == b"\x88\xb5" and len(f) == 60 for f in frames)
    assert not loop.faults.retests.tests


def test_an_operators_drain_of_a_counter_dead_link_is_never_undone_by_probes() -> None:
    """The counters took L0 -> s0 out; the operator then drains it: its re-tests stop and
    probes that arrive do not bring it back (only link_up does)."""
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    t_dead = _declare_dead(fab, loop)
    loop.faults.link_down(L0, up0, reason="operator: drained for maintenance")
    assert not loop.faults.retests.tests and not loop.faults.counter_down
    conn, seen = prog.connections[L0], len(prog.connections[L0].packets_out)
    for i in range(1, 101):                                   # 10 s of a healthy cable
        t = round(t_dead + 0.1 * i, 3)
        loop.tick(t, traffic(fab, tx={(L0, "s0"): 3 if i % 10 == 0 else 0}))
        assert not loop.links.is_up((L0, up0)), i
    assert _probes_on(conn, up0, seen) == 0
    loop.faults.link_up(L0, up0, reason="operator: back")
    assert loop.links.is_up((L0, up0))


def test_a_dead_link_stays_out_while_its_probes_are_lost() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    t_dead = _declare_dead(fab, loop)
    conn, seen = prog.connections[L0], 0
    for i in range(1, 201):                                               # 20 s
        n = _probes_on(conn, up0, seen)
        seen = len(conn.packets_out)
        loop.tick(round(t_dead + 0.1 * i, 3), traffic(fab, tx={(L0, "s0"): n}, rx_lost=(L0, "s0")))
        assert not loop.links.is_up((L0, up0)), i
    assert "link_up" not in {e["event"] for e in events(buf)}
    assert loop.engine.hash_model.switch(L0).group(1).members == ("s1", "s2")   # no traffic re-admitted
    bursts = _probes_on(conn, up0, 0) // 3
    assert 18 <= bursts <= 20                                             # one re-test a second
    assert loop.faults.retests.tests[(L0, up0)].failures >= 18


def test_a_stale_peer_gives_no_lost_evidence() -> None:
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    stale = SimpleNamespace(stale=True, last_error="s0: TimeoutError: no answer within 2 s")
    fine = SimpleNamespace(stale=False, last_error="")
    loop.tick(0.1, traffic(fab))
    for i in range(10):                                                   # 1 s: s0 marked stale
        t = round(0.2 + 0.1 * i, 3)
        loop.observe_health({"s0": stale}, t)
        loop.tick(t, traffic(fab, rx_lost=(L0, "s0")))
    for i in range(10):                                                   # answers: 1 s of grace
        t = round(1.2 + 0.1 * i, 3)
        loop.observe_health({"s0": fine}, t)
        loop.tick(t, traffic(fab, rx_lost=(L0, "s0")))
    assert loop.links.is_up((L0, up0)) and "link_down" not in {e["event"] for e in events(buf)}
    for i in range(5):                                                    # then it counts again
        t = round(2.2 + 0.1 * i, 3)
        loop.observe_health({"s0": fine}, t)
        loop.tick(t, traffic(fab, rx_lost=(L0, "s0")))
    assert not loop.links.is_up((L0, up0))
