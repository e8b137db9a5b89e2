"""Idle-timeout notifications of the P4Runtime server (as BMv2 sends them): an entry with
``idle_timeout_ns`` that no packet hit for that long is reported once on the primary's
stream; a hit re-arms it; entries without a timeout, or still hit, are not reported."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Iterator

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.idle import IdleTimeoutMonitor

from bmv2_probe_client import Probe, Req, U, compiled, te, upd  # noqa: F401 - compiled is a fixture

TIMEOUT_NS = 300_000_000


def ipv4_frame(protocol: int) -> bytes:
    eth = bytes.fromhex("000000000001" "000000000002" "0800")
    ip = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, 64, protocol, 0, 0]) + bytes([10, 0, 0, 1, 10, 0, 0, 2])
    return eth + ip


@pytest.fixture
def probe(compiled) -> Iterator[Probe]:  # noqa: F811 - the fixture imported above
    p = Probe(*compiled, wrap=False)
    p.fresh_server()
    p.primary = p.client()
    p.primary.arbitrate(10)
    p.primary.next("arbitration")
    assert p.setfpc(Req.VERIFY_AND_COMMIT).code == "OK"
    yield p
    p.close()


def notes(p: Probe, wait_s: float) -> list[bytes]:
    """The match values of the entries reported within ``wait_s``."""
    return [e.match[0].exact.value for m in p.drain(p.primary, wait_s, idle=True)
            if m.WhichOneof("update") == "idle_timeout_notification"
            for e in m.idle_timeout_notification.table_entry]


def test_reported_once_then_again_after_a_hit(probe: Probe) -> None:
    p = probe
    for key, timeout in ((7, TIMEOUT_NS), (8, 0)):
        assert p.write(upd(U.INSERT, table_entry=te(p, "t_idle", ("exact", bytes([key])), action=("NoAction",),
                                                     idle_timeout_ns=timeout))).code == "OK"
    assert notes(p, 1.0) == [b"\x07"]          # once, and never the entry without a timeout
    assert notes(p, 0.6) == []
    p.device.receive(1, ipv4_frame(7))         # a hit re-arms it
    assert notes(p, 1.0) == [b"\x07"]


def test_an_entry_still_hit_is_not_reported(probe: Probe) -> None:
    p = probe
    timeout_ns = 1_000_000_000     # far above the hit interval, even on a loaded machine
    assert p.write(upd(U.INSERT, table_entry=te(p, "t_idle", ("exact", b"\x07"), action=("NoAction",),
                                                 idle_timeout_ns=timeout_ns))).code == "OK"
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        p.device.receive(1, ipv4_frame(7))
        assert notes(p, 0.1) == []
    req = pb.Entity(table_entry=te(p, "t_idle", ("exact", b"\x07"), time_since_last_hit=pb.TableEntry.IdleTimeout()))
    [e] = p.read(req).entities
    assert 0 < e.table_entry.time_since_last_hit.elapsed_ns < timeout_ns


def test_an_idle_timeout_where_the_table_has_none_gets_pis_text(probe: Probe) -> None:
    """simple_switch_grpc 1.15.5 (PI's validate_entry_ttl): INVALID_ARGUMENT with PI's text,
    which a third-party repository's test asserts (issue 35, class 16)."""
    p = probe
    out = p.write(upd(U.INSERT, table_entry=te(p, "t_exact", ("exact", bytes(6)), action=("drop",),
                                               idle_timeout_ns=TIMEOUT_NS)))
    assert out.updates == ("INVALID_ARGUMENT",)
    assert out.update_messages == ("idle_timeout_ns must be set to 0 for tables which do not support idle timeout",)
    out = p.write(upd(U.INSERT, table_entry=te(p, "t_idle", ("exact", b"\x07"), action=("NoAction",),
                                               idle_timeout_ns=-1)))
    assert out.update_messages == ("idle_timeout_ns must be a positive value",)


class _RefusingLock:
    """A device lock that fails the test if the sweep takes it."""

    def __enter__(self) -> None:
        raise AssertionError("the sweep took the device lock")

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_pipeline_without_ageing_tables_is_swept_without_the_device_lock() -> None:
    """A program none of whose tables supports a timeout (fabric.p4) is swept without the
    device lock, which on the native path holds the data plane and copies hit times back
    (ten sweeps a second); one with such a table still takes it."""
    def pipeline(*ageing: bool) -> SimpleNamespace:
        tables = {i: SimpleNamespace(table=SimpleNamespace(support_timeout=a, entries=lambda: []))
                  for i, a in enumerate(ageing)}
        store = SimpleNamespace(tables=SimpleNamespace(index=SimpleNamespace(tables=tables),
                                                       encode_key=lambda *a: None))
        return SimpleNamespace(store=store)

    plain = pipeline(False, False)
    mon = IdleTimeoutMonitor(lambda: plain, lambda: 0, lambda msg: True, _RefusingLock())
    assert mon.sweep() == 0
    ageing = pipeline(False, True)
    mon = IdleTimeoutMonitor(lambda: ageing, lambda: 0, lambda msg: True, _RefusingLock())
    with pytest.raises(AssertionError, match="took the device lock"):
        mon.sweep()
