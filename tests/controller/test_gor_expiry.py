"""Override entries expire (controller/gor/expiry.py), with the fake switches of
``test_gor_loop``: an override whose flow is no longer sampled gets a liveness probe
(sampling at its pinned path's first link) and, not seen there, is deleted; a flow seen
during the probe keeps its entry; a move in flight is never expired."""
from __future__ import annotations

from typing import Any

from controller.gor.decisions import FlowKey
from controller.gor.loop import OVERRIDE_TABLE, SAMPLING_TABLE, GorLoop
from test_gor_loop import L0, digest_rows, events, hot_mix, make, port_to, samples

IDLE_S, PROBE_S = 2.0, 0.5


def quiet(fab: Any) -> Any:
    """Every link at 10 %, no marks."""
    return samples(fab, hot_spine="none", marks=0)


def pinned() -> tuple[Any, GorLoop, Any, Any, FlowKey, int]:
    """A flow without an agent moved by an override entry, confirmed and settled at 1.3 s."""
    fab, loop, prog, reg, buf, _ = make(override_idle_s=IDLE_S, override_probe_s=PROBE_S)
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, _ = hot_mix(fab, loop, up)
    (order,) = loop.tick(1.05, samples(fab))[0].orders
    new_port = order.path.links[0][1]
    loop.submit_digests(L0, digest_rows(fab, f, new_port, 3))
    loop.tick(1.10, quiet(fab))
    loop.tick(1.30, quiet(fab))
    assert loop.pending == {} and f in loop.overrides and prog.connections[L0].table(OVERRIDE_TABLE)
    return fab, loop, prog, buf, f, new_port


def sampled_ports(prog: Any) -> set[int]:
    return {dict(k)["standard_metadata.egress_spec"] for k in prog.connections[L0].table(SAMPLING_TABLE)}


def test_idle_override_is_probed_then_expired() -> None:
    fab, loop, prog, buf, f, new_port = pinned()
    loop.tick(1.10 + IDLE_S - 0.1, quiet(fab))
    assert f in loop.overrides and f not in loop.expiry.liveness                # not idle long enough
    loop.tick(1.10 + IDLE_S + 0.05, quiet(fab))
    assert loop.expiry.liveness[f][0] == (L0, new_port) and new_port in sampled_ports(prog)  # probing
    loop.tick(1.10 + IDLE_S + 0.05 + PROBE_S - 0.1, quiet(fab))
    assert f in loop.overrides                                            # probe still running
    loop.tick(1.10 + IDLE_S + 0.05 + PROBE_S, quiet(fab))
    assert f not in loop.overrides and prog.connections[L0].table(OVERRIDE_TABLE) == {}
    assert new_port not in sampled_ports(prog) and loop.expiry.liveness == {}    # probe sampling released
    (rec,) = [e for e in events(buf) if e["event"] == "override_expired"]
    assert rec["flow"] == str(f) and L0 in rec["switches"] and rec["idle_s"] >= IDLE_S


def test_flow_seen_during_the_probe_keeps_its_entry() -> None:
    fab, loop, prog, buf, f, new_port = pinned()
    t = 1.10 + IDLE_S + 0.05
    loop.tick(t, quiet(fab))
    assert f in loop.expiry.liveness
    loop.submit_digests(L0, digest_rows(fab, f, new_port, 1))
    loop.tick(t + 0.1, quiet(fab))
    assert f not in loop.expiry.liveness and new_port not in sampled_ports(prog)   # alive: probe ends
    loop.tick(t + PROBE_S + 0.2, quiet(fab))
    assert f in loop.overrides and prog.connections[L0].table(OVERRIDE_TABLE)
    assert not [e for e in events(buf) if e["event"] == "override_expired"]


def test_a_flow_sampled_regularly_never_expires() -> None:
    fab, loop, prog, buf, f, new_port = pinned()
    for k in range(1, 12):
        t = 1.30 + 0.5 * k
        loop.submit_digests(L0, digest_rows(fab, f, new_port, 1))
        loop.tick(t, quiet(fab))
        assert f in loop.overrides and f not in loop.expiry.liveness, t


def test_override_in_flight_is_not_expired() -> None:
    fab, loop, prog, reg, buf, _ = make(override_idle_s=0.01, override_probe_s=0.01,
                                        confirm_timeout_s=100.0)
    up = port_to(fab, L0, "s0")
    loop.tick(1.0, samples(fab))
    f, _ = hot_mix(fab, loop, up)
    loop.tick(1.05, samples(fab))
    for t in (1.10, 1.20, 1.30):
        loop.tick(t, quiet(fab))
    assert f in loop.overrides and loop.pending and f not in loop.expiry.liveness
