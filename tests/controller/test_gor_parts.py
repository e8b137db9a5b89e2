"""GOR loop's collaborators used alone, each built from the shared state bundle
(``LoopState``), its settings and its callbacks (no ``GorLoop``): ``Sampling`` (enable / release rules), ``MoveBook`` (cooldowns), ``MoveOrders``
(an override written, tracked, rolled back when never seen), ``OverrideExpiry`` (probe then
expiry) and ``LinkFaults`` + ``DetourSync`` (a cable cut rewrites the groups and asks for
follow-up rounds). Fake switches of ``test_gor_loop``."""
from __future__ import annotations

import io
from typing import Any

from controller.fabric.detours import fabric_detours
from controller.gor.decisions import FlowKey, LinkKey, OverrideOrder
from controller.gor.detour_sync import DetourSync
from controller.gor.expiry import OverrideExpiry
from controller.gor.faults import LinkFaults
from controller.gor.log import DecisionLog
from controller.gor.moves import MoveBook
from controller.gor.orders import OVERRIDE_TABLE, MoveOrders
from controller.gor.sampling import Sampling
from controller.gor.shared import LoopOutputs, LoopSettings, LoopState
from controller.gor.tables import SAMPLING_TABLE
from test_gor_loop import DST, L0, L1, SRC, FakeProgrammer, events, fabric, port_to

SAMPLING_KEY = "standard_metadata.egress_spec"


class Parts:
    """The shared state a collaborator is given (``LoopState`` over fake switches, with a
    decision log in ``buf``), its parts by name, and a ``Sampling`` on it."""

    def __init__(self, **settings: Any) -> None:
        self.fab = fabric()
        self.prog = FakeProgrammer(self.fab)
        self.buf = io.StringIO()
        self.settings = LoopSettings(**{"one_in_n": 100, **settings})
        self.state = LoopState.for_fabric(self.fab, self.prog, None, self.settings,
                                          LoopOutputs(DecisionLog(self.buf)))
        st = self.state
        self.links, self.engine, self.flows, self.alarms = st.links, st.engine, st.flows, st.alarms
        self.out, self.tables, self.book = st.out, st.tables, st.book
        self.needed: set[LinkKey] = set()
        self.sampling = Sampling(st, one_in_n=100, needed=self.needed.__contains__)

    def sampled(self, switch: str = L0) -> set[int]:
        return {dict(k)[SAMPLING_KEY] for k in self.prog.connections[switch].table(SAMPLING_TABLE)}


def test_sampling_is_released_only_when_clear_and_not_needed() -> None:
    p = Parts()
    up = (L0, port_to(p.fab, L0, "s0"))
    assert p.sampling.enable(up, 1.0) and up in p.sampling and p.sampled() == {up[1]}
    assert p.sampling.get(up) == 100 and p.sampling.since[up] == 1.0
    p.needed.add(up)
    p.sampling.release(up)                                       # a move must still be seen
    assert p.sampled() == {up[1]}
    p.needed.clear()
    p.alarms.observe(up, 0.0, 500, 1000)                         # an alarm holds it too
    p.sampling.release(up)
    assert p.sampled() == {up[1]}
    for i in range(1, 50):                                       # quiet until it clears
        if p.alarms.observe(up, 0.1 * i, 0, 1000) is not None and p.alarms.level(up) == 0:
            break
    assert p.alarms.level(up) == 0
    p.sampling.release(up)
    assert p.sampled() == set() and up not in p.sampling


def test_sampling_write_that_fails_is_reported_not_raised() -> None:
    p = Parts()
    p.prog.connections[L0].fail = ConnectionError("switch gone")
    assert not p.sampling.enable((L0, 3), 1.0)
    assert (L0, 3) not in p.sampling and "sampling on port 3 not enabled" in p.out.errors[0]
    assert not p.sampling.enable(("nosuch", 1), 1.0) and "no connection" in p.out.errors[1]


def test_move_book_forgets_a_flow_once_its_rest_ends() -> None:
    book = MoveBook()
    f = FlowKey(SRC, DST, 17, 49152, 4791)
    book.rest(f, 5.0)
    book.flow_ids[f] = "f1"
    assert book.resting(f, 5.0) and not book.resting(f, 5.1)
    book.age(5.0)
    assert f in book.moved
    book.age(5.1)
    assert book.moved == {} and book.flow_ids == {}


def override_order(p: Parts) -> OverrideOrder:
    f = FlowKey(SRC, DST, 17, 49152, 4791)
    path = next(c for c in p.engine.candidate_paths(L0, L1) if c.spine == "s1")
    return OverrideOrder(f, tuple(p.engine.override_entries(path)), path, {}, None, 1e9)


def test_move_orders_alone_write_track_and_roll_back_an_override() -> None:
    p = Parts(cooldown_s=10.0, confirm_timeout_s=1.0, order_timeout_s=1.0, settle_s=0.5,
              max_retries=0, order_workers=1)
    orders = MoveOrders(p.state, p.sampling, p.settings)
    try:
        order = override_order(p)
        orders.act(order, 7, 2.0, {}, p.links)
        (oid, m), = p.book.pending.items()
        assert oid == "override-1" and p.book.overrides[order.flow] == order.path
        # the sampling that confirms it is requested; the loop writes it after the round
        assert p.book.resting(order.flow, 11.9) and p.sampling.wanted(m.new_link)
        assert m.new_link not in p.sampling and p.sampling.flush() == [m.new_link]
        assert m.new_link in p.sampling
        assert all(p.prog.connections[e.switch].table(OVERRIDE_TABLE) for e in order.entries)
        orders.check(2.5)                                        # not seen yet, not late
        assert oid in p.book.pending
        orders.check(3.0)                                        # never seen: rolled back
        assert p.book.pending == {} and order.flow not in p.book.overrides
        assert not any(p.prog.connections[e.switch].table(OVERRIDE_TABLE) for e in order.entries)
        assert m.new_link not in p.sampling                      # nothing else needs it
        ev = [e["event"] for e in events(p.buf)]
        assert ev == ["path_chosen", "order_sent", "order_rolled_back"]
    finally:
        orders.close()


def test_override_expiry_alone_probes_then_expires() -> None:
    p = Parts(override_idle_s=2.0, override_probe_s=0.5)
    order = override_order(p)
    p.book.overrides[order.flow] = order.path
    deleted: list[tuple[FlowKey, list[str]]] = []
    expiry = OverrideExpiry(p.state, p.sampling, lambda f, sws: deleted.append((f, list(sws))),
                            p.settings)
    p.sampling.needed = expiry.probing                           # as the loop wires it
    expiry.check(0.0)
    expiry.check(1.0)
    assert expiry.liveness == {} and expiry.seen[order.flow] == 0.0
    expiry.check(2.0)                                            # idle: probe on
    assert expiry.probing(order.path.links[0]) and order.path.links[0][1] in p.sampled()
    expiry.check(2.4)
    assert order.flow in p.book.overrides and order.path.links[0][1] in p.sampled()
    expiry.check(2.5)                                            # not seen during the probe
    assert order.flow not in p.book.overrides and expiry.liveness == {}
    assert deleted == [(order.flow, [e.switch for e in order.entries])]
    assert order.path.links[0][1] not in p.sampled()
    (rec,) = [e for e in events(p.buf) if e["event"] == "override_expired"]
    assert rec["idle_s"] == 2.5 and rec["probe_link"] == p.links.name(order.path.links[0])


def test_link_faults_alone_rewrite_groups_and_ask_for_follow_up_rounds() -> None:
    p = Parts()
    followed: set[LinkKey] = set()
    detours = DetourSync(p.state, installed=fabric_detours(p.fab))
    faults = LinkFaults(p.state, p.sampling, detours, p.settings, follow=followed.update)
    assert faults.programmed_groups == {n: dict(m.groups) for n, m in p.prog.hash_model().switches.items()}
    up = port_to(p.fab, L0, "s0")
    done = faults.link_down(L0, up, "test")
    assert done and done[0].startswith(f"{L0}/") and not p.links.is_up((L0, up))
    assert "s0" not in p.engine.hash_model.switches[L0].groups[1].members
    assert (L0, port_to(p.fab, L0, "s1")) in followed and (L0, up) not in followed
    assert faults.link_down(L0, up) == []                       # already down: nothing
    faults.submit_link_event(L0, up, up=True)
    faults.drain_link_events()
    assert p.links.is_up((L0, up)) and "s0" in p.engine.hash_model.switches[L0].groups[1].members
    assert [e["event"] for e in events(p.buf)] == ["link_down", "link_up"]
