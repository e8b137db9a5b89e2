"""``FabricProgrammer.apply_thresholds``: a programmed fabric switched from static to dynamic
thresholds and back in place on real p4sim switch processes (what ``SCENARIO=incast`` does
between its runs), read back over P4Runtime: only the PFC, ECN, buffer and alpha entries
change, every route and group stays."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from p4.v1 import p4runtime_pb2

from controller.fabric.entries import T_ECN, T_PFC, T_ROUTES
from controller.fabric.qos import T_BUFFER, T_PFC_ALPHA
from controller.fabric_setup import FabricProgrammer
from controller.p4rt.codec import decode
from p4sim.control_api import ControlClient
from p4src.buffermodel import DEFAULT_DYNAMIC
from procs import SwitchProcess
from scenarios.incast import COUNT_REGISTERS, _Switches
from topo import model as topo_model


def _actions(conn: Any, table: str) -> set[str]:
    return {conn.p4info.get_name("action", te.action.action.action_id)
            for te in conn.read_table(table)}


def _buffer_default(conn: Any) -> tuple[str, list[int]]:
    req = p4runtime_pb2.TableEntry(table_id=conn.p4info.table_id(T_BUFFER), is_default_action=True)
    (ent,) = list(conn.read(req))
    act = ent.table_entry.action.action
    return conn.p4info.get_name("action", act.action_id), [decode(p.value) for p in act.params]


def test_static_to_dynamic_and_back_on_p4sim(fabric_compiled: tuple[Path, Path]) -> None:
    fab = topo_model.build_fabric(topo_model.FabricSpec(
        blocks=1, servers_per_block=2, rails=1, spines=1, leaves_per_rail=1, uplinks_per_spine=1))
    procs = []
    try:
        for sw in fab.switches:
            p = SwitchProcess.no_p4(device_id=sw.device_id, target_extra=["--priority-queues", "8"])
            procs.append(p)
            sw.grpc_addr = p.grpc_addr
        with FabricProgrammer(fab, *fabric_compiled) as fp:
            fp.setup()
            conn = fp.connections[fab.switches[0].name]
            routes = conn.read_table(T_ROUTES)
            assert _actions(conn, T_PFC) == {"FabricIngress.pfc.set_thresholds"}
            written = fp.apply_thresholds(DEFAULT_DYNAMIC)
            assert set(written) == {sw.name for sw in fab.switches} and min(written.values()) > 0
            assert _actions(conn, T_PFC) == {"FabricIngress.pfc.set_dynamic_thresholds"}
            assert _actions(conn, T_ECN) == {"FabricEgress.ecn.set_ecn_dynamic"}
            assert len(conn.read_table(T_PFC_ALPHA)) == 1
            assert _buffer_default(conn) == ("FabricIngress.buffer.set_shared_buffer", [2048, 7])
            assert fp.thresholds is DEFAULT_DYNAMIC
            # what SCENARIO=incast then does through the target's runtime (p4sim's control API)
            state = SimpleNamespace(target="p4sim", switches={
                sw.name: {"control_addr": p.control_addr} for sw, p in zip(fab.switches, procs)})
            with ControlClient(procs[0].control_addr) as c:
                for reg in COUNT_REGISTERS:
                    c.register_write(reg, 0, 1)
                ctl = _Switches(fab, state)
                ctl.clear_counts()
                ctl.line_rate(0.1)
                ctl.queue_rate(fab.switches[0].name, 1, 125)
                assert [c.register_read(reg, 0) for reg in COUNT_REGISTERS] == [0] * 5
                stats = c.queue_stats(1)[1]
                assert stats["line_rate_gbps"] == 0.1, stats
            fp.apply_thresholds(None)
            assert _actions(conn, T_PFC) == {"FabricIngress.pfc.set_thresholds"}
            assert _actions(conn, T_ECN) == {"FabricEgress.ecn.set_ecn_red"}
            assert conn.read_table(T_PFC_ALPHA) == []
            assert _buffer_default(conn) == ("NoAction", [])
            assert conn.read_table(T_ROUTES) == routes                  # nothing else touched
            assert fp.apply_thresholds(None) == {sw.name: 0 for sw in fab.switches}
    finally:
        for p in procs:
            p.stop()


class _Conn:
    """A switch connection that records what it is sent; ``stalled`` refuses every write."""

    def __init__(self, stalled: bool) -> None:
        self.p4info, self.stalled, self.updates = object(), stalled, 0

    def table_entry(self, *args: Any, **kwargs: Any) -> p4runtime_pb2.TableEntry:
        return p4runtime_pb2.TableEntry()

    def write(self, batch: list) -> None:
        if self.stalled:
            raise TimeoutError("stalled")
        self.updates += len(batch)


def test_a_switch_that_failed_keeps_its_old_plan_so_the_way_back_rewrites_the_others() -> None:
    fab = topo_model.build_fabric(topo_model.FabricSpec(
        blocks=1, servers_per_block=2, rails=1, spines=1, leaves_per_rail=1, uplinks_per_spine=1))
    fp = FabricProgrammer(fab, "unused.p4info", "unused.json")
    conns = {sw.name: _Conn(stalled=(sw.name == "s0")) for sw in fab.switches}
    fp.connections = conns  # type: ignore[assignment]
    try:
        fp.apply_thresholds(DEFAULT_DYNAMIC)
    except Exception:  # noqa: BLE001 — s0 refused: the others are dynamic now
        pass
    leaf = next(n for n in conns if n != "s0")
    assert conns[leaf].updates > 0
    conns["s0"].stalled = False
    back = fp.apply_thresholds(None)
    assert back[leaf] == conns[leaf].updates / 2 > 0      # the leaf is switched back
    assert back["s0"] == 0                                 # s0 never left static
