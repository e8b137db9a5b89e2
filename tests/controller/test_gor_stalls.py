"""GOR and a switch whose data plane stalls while it still answers its reads (BMv2 under CPU
load: the monitor bench saw 2-3 s stalls). Driven with recorded counter sequences: every
counter of the stalled switch stands still while its neighbours keep sending to it. Such a
freeze is no dead-link evidence, judges no re-test, and starts no decision round; a dead
link whose peer carries nothing else is still found, ``freeze_max_s + stale_grace_s`` late."""
from __future__ import annotations

import dataclasses
from controller.gor.deadlinks import DeadLinkThresholds, frozen_switches
from controller.telemetry.poller import LinkId, LinkSample
from test_gor_faults import _declare_dead, _probes_on, traffic
from test_gor_loop import L0, events, hot_mix, make, port_to, register, samples


def frozen(got: dict[LinkId, LinkSample], switch: str) -> dict[LinkId, LinkSample]:
    """``got`` with every counter of ``switch`` standing still: its ports count nothing
    either way, and its neighbours receive nothing from it (they still send to it)."""
    out = {}
    for lid, s in got.items():
        if lid.switch == switch:
            s = dataclasses.replace(s, tx_pkts=0, tx_bytes=0, rx_pkts=0, rx_bytes=0, marks=0, util=0.0)
        elif lid.peer == switch:
            s = dataclasses.replace(s, rx_pkts=0, rx_bytes=0)
        out[lid] = s
    return out


def test_frozen_switches_needs_every_port_still_and_traffic_offered() -> None:
    fab, loop, *_ = make()
    th = DeadLinkThresholds()
    by_key = lambda got: {(l.switch, l.port): s for l, s in got.items()}   # noqa: E731
    assert frozen_switches(by_key(frozen(traffic(fab), "s0")), loop.links.peer, th) == {"s0"}
    assert frozen_switches(by_key(traffic(fab, rx_lost=(L0, "s0"))), loop.links.peer, th) == set()
    idle = traffic(fab, tx={k: 0 for k in [(sw.name, p.peer_node) for sw in fab.switches
                                           for p in sw.ports.values()]})
    assert frozen_switches(by_key(idle), loop.links.peer, th) == set()     # idle, not frozen


def test_a_peer_frozen_for_2_5_s_takes_no_link_down() -> None:
    """s0 answers its reads but counts nothing for 2.5 s, then catches up: every leaf's
    uplink to it sends without s0 receiving (sent but not received, 25 intervals)."""
    fab, loop, prog, reg, buf, metrics = make()
    loop.tick(0.1, traffic(fab))
    for i in range(25):
        loop.tick(round(0.2 + 0.1 * i, 3), frozen(traffic(fab), "s0"))
    for i in range(20):                                                   # it works again
        loop.tick(round(2.7 + 0.1 * i, 3), traffic(fab))
    assert "link_down" not in {e["event"] for e in events(buf)} and not loop.links.down
    assert any("s0: frozen" in e for e in loop.errors)


def test_a_dead_link_whose_peer_carries_nothing_else_is_found_after_the_freeze_bound() -> None:
    """L0 -> s0 is dead and s0 carries nothing but L0's traffic: s0 looks frozen, which is
    a stall for at most ``freeze_max_s``; then the link is declared dead."""
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    th = loop.faults.dead_links.thresholds
    only_l0 = {(sw.name, p.peer_node): 0 for sw in fab.switches for p in sw.ports.values()
               if "s0" in (sw.name, p.peer_node) and (sw.name, p.peer_node) != (L0, "s0")}
    loop.tick(0.1, traffic(fab))
    t, down_at = 0.1, None
    while t < 10.0 and down_at is None:
        t = round(t + 0.1, 3)
        loop.tick(t, frozen(traffic(fab, tx=only_l0), "s0"))
        if not loop.links.is_up((L0, up0)):
            down_at = t
    assert down_at is not None, "never declared dead"
    assert th.freeze_max_s < down_at - 0.2 <= th.freeze_max_s + th.stale_grace_s + th.dead_after_s + 0.35
    (down,) = [e for e in events(buf) if e["event"] == "link_down"]
    assert down["reason"].startswith("counters: sent but not received")


def test_a_frozen_peer_fails_no_re_test_and_the_link_still_heals() -> None:
    """L0 -> s0 was declared dead while it worked; s0 then freezes for 2 s: the bursts sent
    meanwhile are neither passes nor failures, and the link is back once s0 counts again."""
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    t_dead = _declare_dead(fab, loop)
    conn, seen, t = prog.connections[L0], 0, t_dead
    for _ in range(20):                                                   # 2 s frozen
        t = round(t + 0.1, 3)
        seen = len(conn.packets_out)
        loop.tick(t, frozen(traffic(fab, tx={(L0, "s0"): 0}), "s0"))
    assert _probes_on(conn, up0, 0) >= 3                                   # bursts went out
    assert loop.faults.retests.tests[(L0, up0)].failures == 0
    back_at = None
    while t < t_dead + 15.0 and back_at is None:
        t = round(t + 0.1, 3)
        n = _probes_on(conn, up0, seen)
        seen = len(conn.packets_out)
        loop.tick(t, traffic(fab, tx={(L0, "s0"): n}))
        if loop.links.is_up((L0, up0)):
            back_at = t
    th = loop.faults.dead_links.thresholds
    assert back_at is not None and back_at - (t_dead + 2.0) <= th.heal_bound_s + th.stale_grace_s + 0.3, back_at
    (up,) = [e for e in events(buf) if e["event"] == "link_up"]
    assert up["reason"].startswith("probes:")


def test_no_round_on_the_links_of_a_frozen_switch_or_for_its_symptom() -> None:
    """The hot link L0 -> s0 marks while s0 is frozen (reads answer, counters still): no
    round for it then, in the grace, nor for that alarm until it clears; a new alarm once
    s0 counts again gets its round."""
    fab, loop, prog, reg, buf, metrics = make()
    up = port_to(fab, L0, "s0")
    assert loop.tick(1.0, frozen(samples(fab), "s0")) == []              # alarm: sampling only
    f, g = hot_mix(fab, loop, up)
    register(fab, reg, f)
    assert loop.tick(1.05, frozen(samples(fab), "s0")) == []             # s0 frozen: no round
    assert loop.faults.stalled("s0", 1.05)
    hot_mix(fab, loop, up)
    assert loop.tick(1.6, samples(fab)) == []                            # in the grace: none
    hot_mix(fab, loop, up)
    assert loop.tick(2.2, samples(fab)) == []                            # its symptom: none
    assert loop.tick(2.3, samples(fab, marks=0)) == [] and loop.alarms.alarm_since((L0, up)) is None
    loop.tick(2.35, samples(fab))                                         # a new alarm
    hot_mix(fab, loop, up)
    rounds = loop.tick(2.4, samples(fab))
    assert len(rounds) == 1 and rounds[0].trigger == (L0, up)


def test_probes_that_arrive_while_the_sender_is_stale_still_count() -> None:
    """L0's reads time out for 5 s (stale) but its data plane sends the re-test bursts and
    s0 counts them: the passes count, and the link is back within the heal bound."""
    from types import SimpleNamespace
    fab, loop, prog, reg, buf, metrics = make()
    up0 = port_to(fab, L0, "s0")
    t_dead = _declare_dead(fab, loop)
    conn, seen, t, back_at = prog.connections[L0], 0, t_dead, None
    stale = SimpleNamespace(stale=True, last_error="b0r0l0: TimeoutError: no answer within 2 s")
    while t < t_dead + 5.0 and back_at is None:
        t = round(t + 0.1, 3)
        n = _probes_on(conn, up0, seen)
        seen = len(conn.packets_out)
        loop.observe_health({L0: stale}, t)
        got = {lid: s for lid, s in traffic(fab, tx={(L0, "s0"): n}).items() if lid.switch != L0}
        loop.tick(t, got)
        if loop.links.is_up((L0, up0)):
            back_at = t
    bound = loop.faults.dead_links.thresholds.heal_bound_s
    assert back_at is not None and back_at - t_dead <= bound + 0.3, back_at
