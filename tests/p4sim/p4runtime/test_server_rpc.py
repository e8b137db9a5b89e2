"""P4Runtime server RPCs over a real gRPC channel: pipeline config, Capabilities,
Write (checks, atomicity, batch error details), Read, and the request log. The codes are
BMv2's (the full comparison is pinned in test_bmv2_table.py); ``extras`` servers show
what ``--p4runtime-extras`` adds."""
from __future__ import annotations

import os
from typing import Iterator

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.server import P4RuntimeServer
from test_server_support import PROGRAM, Client, FakeDevice, FakeStore, device_config

Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
U = p4runtime_pb2.Update


@pytest.fixture(scope="module")
def p4info():
    return build_p4info(load_program_text(PROGRAM, "server_test.p4"))


def _env(tmp_path, extras: bool) -> Iterator[tuple[P4RuntimeServer, Client, FakeDevice]]:
    dev = FakeDevice()
    srv = P4RuntimeServer(dev, "127.0.0.1:0", str(tmp_path / "s1-p4runtime-requests.txt"), store_factory=FakeStore,
                          extras=extras)
    port = srv.start()
    client = Client(port)
    client.arbitrate(1)
    assert client.next("arbitration").arbitration.status.code == code_pb2.OK
    yield srv, client, dev
    client.close()
    srv.stop()


@pytest.fixture
def env(tmp_path) -> Iterator[tuple[P4RuntimeServer, Client, FakeDevice]]:
    yield from _env(tmp_path, extras=False)


@pytest.fixture
def env_extras(tmp_path) -> Iterator[tuple[P4RuntimeServer, Client, FakeDevice]]:
    yield from _env(tmp_path, extras=True)


def push(client: Client, p4info, action=Req.VERIFY_AND_COMMIT, cookie=None, election_id=1, config=None):
    req = Req(device_id=1, action=action)
    req.election_id.low = election_id
    req.config.p4info.CopyFrom(p4info)
    req.config.p4_device_config = device_config() if config is None else config
    if cookie is not None:
        req.config.cookie.cookie = cookie
    return client.stub.SetForwardingPipelineConfig(req)


def entry_update(p4info, mac: int, port: int, utype=U.INSERT) -> p4runtime_pb2.Update:
    table = p4info.tables[0]
    fwd = next(a for a in p4info.actions if a.preamble.name == "I.fwd")
    upd = U(type=utype)
    te = upd.entity.table_entry
    te.table_id = table.preamble.id
    te.match.add(field_id=1).exact.value = mac.to_bytes(6, "big")
    te.action.action.action_id = fwd.preamble.id
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return upd


def write(client: Client, updates, atomicity=0, election_id=1, device_id=1):
    req = p4runtime_pb2.WriteRequest(device_id=device_id, atomicity=atomicity)
    req.election_id.low = election_id
    req.updates.extend(updates)
    return client.stub.Write(req)


def read_entries(client: Client) -> list:
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().table_entry.SetInParent()
    return [e for resp in client.stub.Read(req) for e in resp.entities]


def details(err: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    status = status_pb2.Status()
    for key, value in err.trailing_metadata():
        if key == "grpc-status-details-bin":
            status.ParseFromString(value)
    out = []
    for d in status.details:
        e = p4runtime_pb2.Error()
        assert d.Unpack(e)
        out.append(e)
    return out


def test_capabilities(env, env_extras):
    _, client, _ = env
    assert client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version == "1.3.0"  # BMv2's
    _, client, _ = env_extras
    assert client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version == "1.4.1"


def test_pipeline_push_and_get(env, p4info):
    srv, client, dev = env
    G = p4runtime_pb2.GetForwardingPipelineConfigRequest
    with pytest.raises(grpc.RpcError) as ei:    # as BMv2: no config yet
        client.stub.GetForwardingPipelineConfig(G(device_id=1))
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    push(client, p4info, cookie=77)
    assert dev.program is not None
    cfg = client.stub.GetForwardingPipelineConfig(G(device_id=1)).config
    assert cfg.p4info == p4info and cfg.p4_device_config == device_config() and cfg.cookie.cookie == 77
    cfg = client.stub.GetForwardingPipelineConfig(G(device_id=1, response_type=G.COOKIE_ONLY)).config
    assert cfg.cookie.cookie == 77 and not cfg.HasField("p4info") and not cfg.p4_device_config
    cfg = client.stub.GetForwardingPipelineConfig(G(device_id=1, response_type=G.P4INFO_AND_COOKIE)).config
    assert cfg.p4info == p4info and not cfg.p4_device_config
    cfg = client.stub.GetForwardingPipelineConfig(G(device_id=1, response_type=G.DEVICE_CONFIG_AND_COOKIE)).config
    assert cfg.p4_device_config == device_config() and not cfg.HasField("p4info")
    with pytest.raises(grpc.RpcError) as ei:
        client.stub.GetForwardingPipelineConfig(G(device_id=9))
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION   # BMv2's code for another device id


def test_verify_save_commit(env, p4info):
    srv, client, dev = env
    push(client, p4info, action=Req.VERIFY)
    assert dev.program is None and srv.pipeline is None
    with pytest.raises(grpc.RpcError) as ei:
        client.stub.SetForwardingPipelineConfig(Req(device_id=1, action=Req.COMMIT,
                                                    election_id=p4runtime_pb2.Uint128(low=1)))
    assert ei.value.code() == grpc.StatusCode.UNKNOWN     # BMv2: "Error in second phase of device update"
    push(client, p4info, action=Req.VERIFY_AND_SAVE, cookie=5)
    assert dev.program is None
    write(client, [entry_update(p4info, 1, 2)])  # Read/Write address the saved config
    client.stub.SetForwardingPipelineConfig(Req(device_id=1, action=Req.COMMIT,
                                                election_id=p4runtime_pb2.Uint128(low=1)))
    assert dev.program is not None and len(read_entries(client)) == 1
    # RECONCILE_AND_COMMIT with the same program keeps the state, only the cookie changes
    push(client, p4info, action=Req.RECONCILE_AND_COMMIT, cookie=6)
    assert len(read_entries(client)) == 1 and srv.pipeline.cookie == 6
    push(client, p4info)  # VERIFY_AND_COMMIT starts empty
    assert read_entries(client) == []


@pytest.mark.parametrize("what", ["p4info", "config", "action", "device", "backup"])
def test_pipeline_errors(env, p4info, what):
    _, client, _ = env
    info = type(p4info)()
    info.CopyFrom(p4info)
    expected = grpc.StatusCode.INVALID_ARGUMENT
    if what == "p4info":
        info.tables[0].preamble.id += 1
        call = lambda: push(client, info)  # noqa: E731
    elif what == "config":
        call = lambda: push(client, info, config=b'{"format": "p4sim-1", "source": "control x"}')  # noqa: E731
    elif what == "action":
        call = lambda: push(client, info, action=Req.UNSPECIFIED)  # noqa: E731
    elif what == "device":
        expected = grpc.StatusCode.PERMISSION_DENIED      # BMv2: "Not primary"
        call = lambda: client.stub.SetForwardingPipelineConfig(Req(device_id=3, action=Req.VERIFY))  # noqa: E731
    else:
        expected = grpc.StatusCode.PERMISSION_DENIED
        call = lambda: push(client, info, election_id=2)  # noqa: E731
    with pytest.raises(grpc.RpcError) as ei:
        call()
    assert ei.value.code() == expected, ei.value.details()


def test_write_checks(env, p4info):
    _, client, _ = env
    for kwargs, code in (({}, grpc.StatusCode.FAILED_PRECONDITION),
                         ({"election_id": 7}, grpc.StatusCode.PERMISSION_DENIED),
                         ({"device_id": 4}, grpc.StatusCode.PERMISSION_DENIED)):
        with pytest.raises(grpc.RpcError) as ei:
            write(client, [entry_update(p4info, 1, 2)], **kwargs)
        assert ei.value.code() == code
    with pytest.raises(grpc.RpcError) as ei:
        client.stub.Read(p4runtime_pb2.ReadRequest(device_id=1, entities=[p4runtime_pb2.Entity()])).next()
    assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_batch_errors_continue_on_error(env, p4info):
    _, client, _ = env
    push(client, p4info)
    write(client, [entry_update(p4info, 1, 2)])
    with pytest.raises(grpc.RpcError) as ei:
        write(client, [entry_update(p4info, 2, 2), entry_update(p4info, 1, 3), entry_update(p4info, 3, 2)])
    assert ei.value.code() == grpc.StatusCode.UNKNOWN
    assert [e.canonical_code for e in details(ei.value)] == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.OK]
    assert len(read_entries(client)) == 3
    # a single failing update is reported the same way
    with pytest.raises(grpc.RpcError) as ei:
        write(client, [entry_update(p4info, 9, 2, U.DELETE)])
    assert [e.canonical_code for e in details(ei.value)] == [code_pb2.NOT_FOUND]


@pytest.mark.parametrize("atomicity", [p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                                       p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC])
def test_batch_rollback(env, env_extras, p4info, atomicity):
    _, client, _ = env
    push(client, p4info)
    with pytest.raises(grpc.RpcError) as ei:      # BMv2 has no atomic write modes
        write(client, [entry_update(p4info, 2, 2)], atomicity=atomicity)
    assert ei.value.code() == grpc.StatusCode.UNIMPLEMENTED and read_entries(client) == []
    _, client, _ = env_extras
    push(client, p4info)
    write(client, [entry_update(p4info, 1, 2)])
    with pytest.raises(grpc.RpcError) as ei:
        write(client, [entry_update(p4info, 2, 2), entry_update(p4info, 1, 5, U.MODIFY),
                       entry_update(p4info, 1, 3), entry_update(p4info, 4, 2)], atomicity=atomicity)
    codes = [e.canonical_code for e in details(ei.value)]
    assert codes == [code_pb2.ABORTED, code_pb2.ABORTED, code_pb2.ALREADY_EXISTS, code_pb2.ABORTED]
    entries = read_entries(client)
    assert len(entries) == 1
    assert entries[0].table_entry.action.action.params[0].value == b"\x00\x02"  # the MODIFY was undone


def test_read_error_is_the_status(env, p4info):
    _, client, _ = env
    push(client, p4info)
    write(client, [entry_update(p4info, 1, 2)])
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().table_entry.table_id = 12345
    req.entities.add().table_entry.SetInParent()
    got = []
    with pytest.raises(grpc.RpcError) as ei:
        for resp in client.stub.Read(req):
            got.extend(resp.entities)
    # as BMv2: the failed entity's code is the RPC status, nothing is returned
    assert got == [] and ei.value.code() == grpc.StatusCode.NOT_FOUND and details(ei.value) == []


def test_request_log(env, p4info, tmp_path):
    srv, client, _ = env
    push(client, p4info, cookie=3)
    write(client, [entry_update(p4info, 0x0A0B, 2)])
    text = open(srv.reqlog.path).read()
    assert "/p4.v1.P4Runtime/SetForwardingPipelineConfig" in text and "action: VERIFY_AND_COMMIT" in text
    assert "cookie: 3" in text and "1 tables" in text
    assert "/p4.v1.P4Runtime/Write" in text and "table_id: %d" % p4info.tables[0].preamble.id in text
    assert 'value: "\\000\\000\\000\\000\\n\\013"' in text
    assert os.path.basename(srv.reqlog.path) == "s1-p4runtime-requests.txt"
