"""The tutorials' toolchain over gRPC, no root needed: ``p4sim-p4c-bm2-ss`` compiles as the
tutorials' Makefile calls it, ``p4sim-simple-switch-grpc`` starts as ``runptf.sh`` starts
simple_switch_grpc (``--log-file ss-log --log-flush --dump-packet-data 10000 --no-p4``), and
a controller sending what ``p4runtime_lib`` sends (PI's ``P4DeviceConfig`` wrapper with the
compiled file's bytes, default-action MODIFY, LPM INSERTs) programs it; device configs
p4sim cannot run get INVALID_ARGUMENT naming the accepted forms."""
from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import grpc
import pytest
from p4.tmp import p4config_pb2
from p4.v1 import p4runtime_pb2

from tutorials_support import PROGRAM, PTF_DIR, TutorialSwitch, run, script

sys.path.insert(0, str(PTF_DIR))
from tutorial_ctl import TutorialController  # noqa: E402

ROUTES, DST, FORWARD, DROP = ("RouteIngress.routes", "hdr.ipv4.dst_addr",
                              "RouteIngress.forward", "RouteIngress.drop")
BMV2_LIKE_JSON = json.dumps({"header_types": [], "headers": [], "parsers": [], "deparsers": [],
                             "pipelines": [], "__meta__": {"version": [2, 23]}}).encode()


@pytest.fixture(scope="module")
def exercise(tmp_path_factory: pytest.TempPathFactory):
    """An exercise folder: build/ compiled the tutorials' way, the switch running."""
    work = tmp_path_factory.mktemp("exercise")
    (work / "build").mkdir()
    res = run([script("p4sim-p4c-bm2-ss"), "--p4v", "16", "--p4runtime-files",
               "build/ipv4_routes.p4.p4info.txtpb", "-o", "build/ipv4_routes.json", PROGRAM], work)
    assert res.returncode == 0, res.stderr
    switch = TutorialSwitch([script("p4sim-simple-switch-grpc"), "--log-file", "ss-log",
                             "--log-flush", "--dump-packet-data", "10000", "--no-p4", "--",
                             "--grpc-server-addr", "127.0.0.1:0"], work)
    yield work, switch
    switch.stop()


def _controller(work: Path, switch: TutorialSwitch) -> TutorialController:
    ctl = TutorialController(switch.grpc_addr, 0, str(work / "build/ipv4_routes.p4.p4info.txtpb"))
    ctl.master_arbitration_update()
    return ctl


def test_program_pushed_in_the_wrapper_and_routes_written(exercise) -> None:
    work, switch = exercise
    ctl = _controller(work, switch)
    try:
        ctl.set_forwarding_pipeline_config(str(work / "build/ipv4_routes.json"))
        ctl.write_table_entry(ctl.default_entry(ROUTES, DROP, {}))
        ctl.write_table_entry(ctl.lpm_entry(ROUTES, DST, "10.0.1.1", 32, FORWARD,
                                            {"next_hop_mac": "08:00:00:00:01:11", "port": 1}))
        ctl.write_table_entry(ctl.lpm_entry(ROUTES, DST, "10.0.2.0", 24, FORWARD,
                                            {"next_hop_mac": "08:00:00:00:02:22", "port": 2}))
        entries = ctl.read_table_entries(ROUTES)
    finally:
        ctl.shutdown()
    got = sorted((e.match[0].lpm.value, e.match[0].lpm.prefix_len) for e in entries)
    assert got == [(socket.inet_aton("10.0.1.1"), 32), (socket.inet_aton("10.0.2.0"), 24)]
    # BMv2's --log-file F writes F.txt; the switch's log is there
    assert (work / "ss-log.txt").exists()


@pytest.mark.parametrize("device_data, wrapped, words", [
    (BMV2_LIKE_JSON, True, ["BMv2 JSON", "p4sim-1", "p4.tmp.P4DeviceConfig"]),
    (BMV2_LIKE_JSON, False, ["BMv2 JSON", "p4sim-1"]),
    (b"\x00\xffnot a config", False, ["not a config p4sim can run", "p4sim-1"]),
    (b'{"some": "json"}', True, ["p4sim-1", "accepted"]),
    (b"", True, ["is empty", "accepted"]),
])
def test_config_p4sim_cannot_run_is_invalid_argument(exercise, device_data: bytes, wrapped: bool,
                                                      words: list[str]) -> None:
    work, switch = exercise
    ctl = _controller(work, switch)
    try:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=0)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(ctl.p4info)
        req.config.p4_device_config = (p4config_pb2.P4DeviceConfig(
            reassign=True, device_data=device_data).SerializeToString() if wrapped else device_data)
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        with pytest.raises(grpc.RpcError) as err:
            ctl.stub.SetForwardingPipelineConfig(req, timeout=30)
    finally:
        ctl.shutdown()
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    for word in words:
        assert word in err.value.details(), err.value.details()
