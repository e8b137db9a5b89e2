"""The egress queue limit in the fabric plan (``controller.fabric.admission``): every
switch gets ``FabricIngress.admission.config``'s default ``set_queue_limit(64)``, a
restarted switch gets it back with the rest of the plan, ``queue_limit_pkts=None`` writes
none, and a bad limit is refused naming its field. The data plane's side:
``tests/p4src/test_dataplane_admission.py``; the live attack:
``tests/security/test_pfc_storm_testbed.py``."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from p4.v1 import p4runtime_pb2

from controller.fabric.admission import (ADMISSION_ACTION, QUEUE_LIMIT_PKTS, T_ADMISSION,
                                         admission_entry)
from controller.fabric.plan import plan_fabric
from controller.switch_restore import plan_updates
from topo.model import build_fabric


def test_every_switch_gets_the_default_queue_limit() -> None:
    fab = build_fabric()
    plans = plan_fabric(fab)
    for sw in fab.switches:
        (e,) = [e for e in plans[sw.name].entries if e.table == T_ADMISSION]
        assert (e.action, e.params, e.default) == (ADMISSION_ACTION, {"queue_pkts": 64}, True)
    assert QUEUE_LIMIT_PKTS == 64


def test_the_limit_can_be_set_or_left_out() -> None:
    fab = build_fabric()
    assert {e.params["queue_pkts"] for p in plan_fabric(fab, queue_limit_pkts=16).values()
            for e in p.entries if e.table == T_ADMISSION} == {16}
    assert not [e for p in plan_fabric(fab, queue_limit_pkts=None).values()
                for e in p.entries if e.table == T_ADMISSION]


@pytest.mark.parametrize("bad", [0, -1, 2 ** 32, 1.5, True, "64"])
def test_a_bad_limit_names_its_field(bad: Any) -> None:
    with pytest.raises(ValueError, match="queue_limit_pkts"):
        admission_entry(bad)
    with pytest.raises(ValueError, match="queue_limit_pkts"):
        plan_fabric(build_fabric(), queue_limit_pkts=bad)


def test_a_restarted_switch_gets_the_limit_back() -> None:
    plan = plan_fabric(build_fabric())["b0r0l0"]
    asked: list[tuple[str, str, dict[str, Any], bool]] = []

    def table_entry(table: str, match: Any, action: str, params: Any,
                    is_default: bool = False) -> p4runtime_pb2.TableEntry:
        asked.append((table, action, dict(params), is_default))
        return p4runtime_pb2.TableEntry()

    def meter_entry(meter: str, index: Any = None, config: Any = None) -> p4runtime_pb2.MeterEntry:
        return p4runtime_pb2.MeterEntry(meter_id=1)

    plan_updates(SimpleNamespace(table_entry=table_entry, meter_entry=meter_entry), plan)
    assert (T_ADMISSION, ADMISSION_ACTION, {"queue_pkts": 64}, True) in asked
