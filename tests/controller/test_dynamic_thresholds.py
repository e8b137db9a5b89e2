"""The dynamic-threshold mode of the fabric plan (``thresholds=``, ``--thresholds``): the
entries it plans instead of the static ones, the refusal of a bad alpha naming the field,
and ``python -m controller setup --thresholds dynamic`` on real p4sim switch processes,
read back (the writes are checked by the switch against fabric.p4's P4Info).

The data-plane behaviour of those entries: tests/p4src/test_dataplane_buffer.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from p4.v1 import p4runtime_pb2

from controller import __main__ as cli
from controller.fabric.entries import T_ECN, T_PFC
from controller.fabric.plan import plan_fabric
from controller.fabric.qos import T_BUFFER, T_ECN_ALPHA, T_PFC_ALPHA, thresholds_option
from controller.p4rt import SwitchConnection
from controller.p4rt.codec import decode
from p4src.buffermodel import DEFAULT_DYNAMIC
from procs import SwitchProcess
from testbed import cli as testbed_cli
from topo import model as topo_model


def one_leaf_fabric() -> Any:
    """The smallest fabric topo builds: one block, one rail, one spine."""
    return topo_model.build_fabric(topo_model.FabricSpec(
        blocks=1, servers_per_block=2, rails=1, spines=1, leaves_per_rail=1,
        uplinks_per_spine=1))


def test_dynamic_plan_replaces_the_static_thresholds() -> None:
    fab = one_leaf_fabric()
    static, dynamic = plan_fabric(fab), plan_fabric(fab, thresholds=DEFAULT_DYNAMIC)
    for name, plan in dynamic.items():
        ports = len(fab.switches[[s.name for s in fab.switches].index(name)].ports)
        assert {e.action for e in plan.of(T_PFC)} == {"FabricIngress.pfc.set_dynamic_thresholds"}
        assert {e.action for e in plan.of(T_ECN)} == {"FabricEgress.ecn.set_ecn_dynamic"}
        assert plan.count(T_PFC) == plan.count(T_ECN) == ports
        (buf,) = [e for e in plan.entries if e.table == T_BUFFER]
        assert buf.default and buf.params == {"size_cells": 2048, "cell_bytes_log2": 7}
        assert [e.params for e in plan.of(T_PFC_ALPHA)] == [
            {"alpha_code": 4, "xon_cells": 0, "xon_offset_cells": 128}]
        assert [e.match for e in plan.of(T_ECN_ALPHA)] == [{"meta.priority": 3}]
        # everything else is the static plan's
        rest = [e for e in plan.entries if e.table not in (T_PFC, T_ECN, T_BUFFER, T_PFC_ALPHA,
                                                           T_ECN_ALPHA)]
        assert rest == [e for e in static[name].entries if e.table not in (T_PFC, T_ECN)]
    assert not any(e.table == T_BUFFER for p in static.values() for e in p.entries)


@pytest.mark.parametrize("text,error", [
    ("pfc: {3: {alpha: 16}}", "thresholds.pfc.3.alpha: 16 is outside 1/64..8"),
    ("pfc: {3: {alpha: 1/128}}", "thresholds.pfc.3.alpha: 1/128 is outside 1/64..8"),
    ("ecn: {3: {kmin_alpha: 0.3, kmax_alpha: 1}}", "thresholds.ecn.3.kmin_alpha: 0.3 is not a power of two"),
    ("ecn: {3: {kmin_alpha: 1, kmax_alpha: 1/2}}", "thresholds.ecn.3.kmin_alpha: 1 is above ecn.kmax_alpha"),
    ("pfc: {9: {alpha: 1}}", "thresholds.pfc.9: not a priority (0..7)"),
    ("pfc: {3: {alfa: 1}}", "thresholds.pfc.3.alfa: unknown field"),
    ("buffer_cells: -1", "thresholds.buffer_cells: -1 is outside 1..4294967295"),
    ("pfc: {3: {alpha: two}}", "thresholds.pfc.3.alpha: 'two' is not a number"),
])
def test_a_bad_setting_is_refused_with_the_field(tmp_path: Path, text: str, error: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "dyn.yaml"
    f.write_text(text + "\n")
    with pytest.raises(ValueError) as exc:
        thresholds_option(str(f))
    assert str(exc.value).startswith(f"{f}: {error}"), exc.value
    # the command line refuses it before it touches a switch (exit 2, one line)
    rc = cli.main(["setup", "--fabric", str(f), "--p4info", str(f), "--config", str(f),
                   "--thresholds", str(f)])
    assert rc == 2 and capsys.readouterr().err.startswith(f"controller setup: {f}: {error}")


def test_setup_dynamic_on_p4sim(fabric_compiled: tuple[Path, Path], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    fab = one_leaf_fabric()
    procs = []
    try:
        for sw in fab.switches:
            p = SwitchProcess.no_p4(device_id=sw.device_id, target_extra=["--priority-queues", "8"])
            procs.append(p)
            sw.grpc_addr = p.grpc_addr
        fabric_file = tmp_path / "topology.json"
        fabric_file.write_text(fab.to_json())
        rc = cli.main(["setup", "--fabric", str(fabric_file), "--p4info", str(fabric_compiled[0]),
                       "--config", str(fabric_compiled[1]), "--thresholds", "dynamic"])
        assert rc == 0, capsys.readouterr().err
        sw = fab.switches[0]
        with SwitchConnection(sw.grpc_addr, sw.device_id, election_id=(0, 9),
                              p4info=fabric_compiled[0]) as conn:
            assert conn.p4info is not None
            pfc = conn.read_table(T_PFC)
            assert len(pfc) == len(sw.ports)
            assert {conn.p4info.get_name("action", te.action.action.action_id) for te in pfc} == {
                "FabricIngress.pfc.set_dynamic_thresholds"}
            (alpha,) = conn.read_table(T_PFC_ALPHA)
            assert [decode(p.value) for p in alpha.action.action.params] == [4, 0, 128]
            req = p4runtime_pb2.TableEntry(table_id=conn.p4info.table_id(T_BUFFER),
                                           is_default_action=True)
            (ent,) = list(conn.read(req))
            assert [decode(p.value) for p in ent.table_entry.action.action.params] == [2048, 7]
    finally:
        for p in procs:
            p.stop()


def test_testbed_up_takes_the_knob_and_refuses_before_the_network(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m testbed up`` / ``python -m scenarios up``: static by default (make run
    unchanged), ``$THRESHOLDS`` or ``--thresholds`` selects; a bad file ends ``up`` with
    status 2 before anything is checked or started."""
    monkeypatch.delenv("THRESHOLDS", raising=False)
    assert testbed_cli.build_parser().parse_args(["up"]).thresholds == "static"
    monkeypatch.setenv("THRESHOLDS", "dynamic")
    assert testbed_cli.build_parser().parse_args(["up"]).thresholds == "dynamic"
    bad = tmp_path / "dyn.yaml"
    bad.write_text("pfc: {3: {alpha: 16}}\n")
    args = testbed_cli.build_parser().parse_args(["up", "--thresholds", str(bad),
                                                  "--state", str(tmp_path / "state.json")])
    assert testbed_cli.cmd_up(args) == 2
    assert f"testbed: {bad}: thresholds.pfc.3.alpha: 16 is outside 1/64..8" in capsys.readouterr().out
