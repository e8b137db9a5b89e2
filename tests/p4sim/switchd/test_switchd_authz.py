"""P4Runtime authorization on a real ``python -m p4sim switch --p4rt-policy FILE`` process
(no root): who may hold which role, by client certificate, and the stream bounds.

The switch trusts ONE CA that signed every party here, so the policy is the only guard
(the testbed adds a CA split on top: tests/security/test_threat_model.py). Checked:
bad policy files refused at start with ``FILE:LINE: FIELD: message``; an identity the
policy does not name gets ``PERMISSION_DENIED`` naming it, for every RPC; a second
identity holding the controller's role cannot Write with the primary's election id from
outside the primary's stream; ``role.config`` is Stratum's ``P4RoleConfig`` or
``INVALID_ARGUMENT``, may narrow a role (a narrowed primary cannot push a pipeline; its
config is echoed in the arbitration answer) and never widen it; a role's exclusive P4 ids
are refused to other roles update by update; streams beyond the bounds end with
``RESOURCE_EXHAUSTED`` while the controller's Read is answered.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.p4rt import SwitchConnection
from controller.p4rt import entities as ent
from controller.p4rt.p4info import load_p4info
from controller.p4rt.tls import ClientTls
from p4sim.p4runtime import roleconfig
from p4sim.p4runtime.authz import PolicyError, parse_policy
from procs import REPO, SwitchProcess
from testbed.attacks import AttackStream, open_streams
from testbed.pki import FabricPki

DEVICE_ID = 3
RPC_S = 10.0
ACL_TABLE_NAME = "FabricIngress.forwarding.routes"

POLICY = """\
version: 1
roles:
  "":
    can_push_pipeline: true
    receives_packet_ins: true
  acl:
    exclusive_p4_ids: [{acl}]
  monitor: {{read_only: true}}
identities:
  controller: [""]
  controller2: [""]
  aclapp: [acl]
  monitor: [monitor]
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("fabric")
    p4info, config = out / "fabric.p4info.txtpb", out / "fabric.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", "p4src/fabric.p4", "-I",
                    "p4src/include", "--p4info", str(p4info), "--config", str(config)],
                   cwd=REPO, check=True, timeout=300, capture_output=True)
    return p4info, config


@pytest.fixture(scope="module")
def acl_table(compiled: tuple[Path, Path]) -> int:
    info = load_p4info(compiled[0])
    return next(t.preamble.id for t in info.tables if t.preamble.name == ACL_TABLE_NAME)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> FabricPki:
    return FabricPki.create(tmp_path_factory.mktemp("pki"),
                            ["sw", "controller", "controller2", "aclapp", "monitor", "b0s0"])


def tls_args(pki: FabricPki) -> list[str]:
    f = pki.files("sw")
    return ["--grpc-server-ssl", "--grpc-server-cacert", str(f.ca_cert), "--grpc-server-cert",
            str(f.cert), "--grpc-server-key", str(f.key), "--grpc-server-with-client-auth"]


def start(pki: FabricPki, policy: Path, *extra: str) -> SwitchProcess:
    return SwitchProcess(["--no-p4", "--device-id", str(DEVICE_ID), "--control-port", "0",
                          "--p4rt-policy", str(policy), *extra, "--",
                          "--grpc-server-addr", "127.0.0.1:0", *tls_args(pki)])


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory: pytest.TempPathFactory, acl_table: int) -> Path:
    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text(POLICY.format(acl=acl_table))
    return path


@pytest.fixture(scope="module")
def switch(pki: FabricPki, policy_file: Path) -> Iterator[SwitchProcess]:
    sw = start(pki, policy_file)
    try:
        yield sw
    finally:
        sw.stop()


def tls(pki: FabricPki, who: str) -> ClientTls:
    f = pki.files(who)
    return ClientTls(f.ca_cert, f.cert, f.key).for_server("sw")


@pytest.fixture(scope="module")
def controller(switch: SwitchProcess, pki: FabricPki,
               compiled: tuple[Path, Path]) -> Iterator[SwitchConnection]:
    with SwitchConnection(switch.grpc_addr, device_id=DEVICE_ID, election_id=5, timeout_s=30,
                          tls=tls(pki, "controller")) as conn:
        conn.push_pipeline(*compiled, cookie=1)
        conn.insert(ent.clone_session(9, [1]))
        yield conn


def stub(switch: SwitchProcess, pki: FabricPki, who: str) -> tuple[Any, grpc.Channel]:
    ch = tls(pki, who).channel(switch.grpc_addr)
    return p4runtime_pb2_grpc.P4RuntimeStub(ch), ch


def rpc_error(fn: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        fn()
    return err.value


def update_codes(exc: grpc.RpcError) -> list[str]:
    """The per-update codes of a failed Write (``grpc-status-details-bin``)."""
    st = status_pb2.Status()
    for k, v in exc.trailing_metadata() or ():
        if k == "grpc-status-details-bin":
            st.ParseFromString(v)
    out = []
    for d in st.details:
        e = p4runtime_pb2.Error()
        d.Unpack(e)
        out.append(code_pb2.Code.Name(e.canonical_code))
    return out


# ---------------------------------------------------------------------- the policy file
BAD = [
    ("roles:\n  monitor: {read_only: true}\nidentities:\n  mon: [monitr]\n",
     ":4: identities.mon[0]: unknown role 'monitr'"),
    ("roles:\n  '':\n    can_push: true\nidentities:\n  c: ['']\n",
     ':3: roles."".can_push: unknown field'),
    ("roles:\n  m:\n    read_only: true\n    can_push_pipeline: true\nidentities:\n  c: [m]\n",
     ":3: roles.m: a read_only role cannot also push"),
    ("roles:\n  m: {}\nidentities:\n  'bad name': [m]\n", ":4: identities.bad name: not a certificate common name"),
    ("roles:\n  m: {}\n  m: {}\nidentities:\n  c: [m]\n", ":3: roles.m: given twice"),
    ("roles: [\n", ":2: (file): not YAML"),
    ("roles:\n  m: {}\n", ":1: identities: is required"),
    ("version: 2\nroles:\n  m: {}\nidentities:\n  c: [m]\n", ":1: version: this p4sim reads version 1"),
    ("roles:\n  a: {exclusive_p4_ids: [5]}\n  b: {shared_p4_ids: [5]}\nidentities:\n  c: [a]\n",
     "roles.a.exclusive_p4_ids: p4 id 5 is also listed by role 'b'"),
    ("roles:\n  a: {shared_p4_ids: [0]}\nidentities:\n  c: [a]\n", ":2: roles.a.shared_p4_ids[0]: expected a P4Info id"),
    ("roles:\n  a: {can_push_pipeline: yes please}\nidentities:\n  c: [a]\n",
     ":2: roles.a.can_push_pipeline: expected true or false"),
    ("roles:\n  a: {}\nidentities:\n  c: []\n", ":4: identities.c: expected a non-empty list"),
]


@pytest.mark.parametrize("text,message", BAD, ids=[m for _, m in BAD])
def test_bad_policy_files_name_line_and_field(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as err:
        parse_policy(text, "p.yaml")
    assert str(err.value).startswith("p.yaml:") and message in str(err.value), err.value


def test_the_switch_refuses_to_start_with_a_bad_policy(pki: FabricPki, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD[0][0])
    cmd = [sys.executable, "-m", "p4sim", "switch", "--no-p4", "--control-port", "0",
           "--p4rt-policy", str(bad), "--", "--grpc-server-addr", "127.0.0.1:0"]
    res = subprocess.run([*cmd, *tls_args(pki)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and f"{bad}:4: identities.mon[0]: unknown role" in res.stderr, res.stderr
    good = tmp_path / "good.yaml"
    good.write_text(POLICY.format(acl=7))
    cmd[cmd.index(str(bad))] = str(good)
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)   # no TLS
    assert res.returncode == 1 and "needs" not in res.stderr and \
        "--grpc-server-with-client-auth" in res.stderr, res.stderr


# ---------------------------------------------------------------------- identities
def test_an_identity_the_policy_does_not_name_gets_nothing(switch, pki, controller) -> None:
    s, ch = stub(switch, pki, "b0s0")
    with ch:
        for call in (lambda: s.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=RPC_S),
                     lambda: list(s.Read(p4runtime_pb2.ReadRequest(device_id=DEVICE_ID, entities=[
                         p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]), timeout=RPC_S)),
                     lambda: s.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(
                         device_id=DEVICE_ID), timeout=RPC_S),
                     lambda: next(s.StreamChannel(iter([]), timeout=RPC_S))):
            err = rpc_error(call)
            assert err.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "identity 'b0s0' holds no role on this switch" in err.details()


def test_the_monitor_reads_and_nothing_more(switch, pki, controller) -> None:
    s, ch = stub(switch, pki, "monitor")
    with ch:
        got = s.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=DEVICE_ID, response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY),
            timeout=RPC_S)
        assert got.config.cookie.cookie == 1
        read = p4runtime_pb2.ReadRequest(device_id=DEVICE_ID, entities=[ent.entity(ent.clone_session(9, []))])
        assert len([e for r in s.Read(read, timeout=RPC_S) for e in r.entities]) == 1
        read.role = "acl"                              # a Read in a role it does not hold
        err = rpc_error(lambda: list(s.Read(read, timeout=RPC_S)))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "role 'acl'" in err.details()


def test_a_write_must_come_from_the_primarys_identity(switch, pki, controller) -> None:
    """controller2 holds the default role but is not primary: the primary's election id,
    sent without a stream, does not make it one (P4Runtime alone would accept it)."""
    s, ch = stub(switch, pki, "controller2")
    with ch:
        req = p4runtime_pb2.WriteRequest(device_id=DEVICE_ID, election_id=p4runtime_pb2.Uint128(low=5),
                                         updates=[ent.update(ent.clone_session(9, []), "DELETE")])
        err = rpc_error(lambda: s.Write(req, timeout=RPC_S))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "identity 'controller2' is not the primary of role '<default>'" in err.details()
    assert "'controller'" in err.details()
    assert len(list(controller.read(ent.clone_session(9, [])))) == 1        # untouched


# ---------------------------------------------------------------------- role.config
def test_role_config_of_another_scheme_is_invalid(switch, pki, controller) -> None:
    s, ch = stub(switch, pki, "controller2")
    other = any_pb2.Any()
    other.Pack(p4runtime_pb2.Uint128(low=1))
    with ch:
        stream = AttackStream(s, DEVICE_ID, 1, "", config=other)
        try:
            with pytest.raises(Exception) as err:
                stream.answer()
        finally:
            stream.close()
    assert getattr(err.value, "code", "") == "INVALID_ARGUMENT", err.value
    assert "stratum.P4RoleConfig" in str(err.value)


def test_a_narrowed_primary_cannot_push_and_its_config_is_echoed(switch, pki, controller,
                                                                 compiled) -> None:
    s, ch = stub(switch, pki, "controller2")
    narrow = roleconfig.pack(roleconfig.P4RoleConfig(receives_packet_ins=True))
    with ch:
        stream = AttackStream(s, DEVICE_ID, 6, "", config=narrow)      # above the controller's 5
        try:
            answer = stream.answer()
            assert answer.status.code == code_pb2.OK
            assert roleconfig.unpack(answer.role.config).receives_packet_ins
            assert not roleconfig.unpack(answer.role.config).can_push_pipeline
            from controller.p4rt.pipeline import set_pipeline_request
            req, _ = set_pipeline_request(DEVICE_ID, p4runtime_pb2.Uint128(low=6), *compiled, cookie=2)
            err = rpc_error(lambda: s.SetForwardingPipelineConfig(req, timeout=60))
            assert err.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "may not push a pipeline" in err.details()
        finally:
            stream.close()
    assert controller.pipeline_cookie() == (True, 1)


def test_a_role_config_never_widens_the_role(switch, pki, controller) -> None:
    s, ch = stub(switch, pki, "aclapp")
    wide = roleconfig.pack(roleconfig.P4RoleConfig(can_push_pipeline=True))
    with ch:
        stream = AttackStream(s, DEVICE_ID, 1, "acl", config=wide)
        try:
            with pytest.raises(Exception) as err:
                stream.answer()
        finally:
            stream.close()
    assert getattr(err.value, "code", "") == "PERMISSION_DENIED"
    assert "role.config asks for more than role 'acl' grants: can_push_pipeline" in str(err.value)


def test_exclusive_p4_ids_are_refused_to_other_roles_update_by_update(switch, pki, controller,
                                                                      acl_table) -> None:
    foreign = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=p4runtime_pb2.Entity(
        table_entry=p4runtime_pb2.TableEntry(table_id=acl_table)))
    with pytest.raises(Exception) as err:                  # the controller, default role
        controller.write([foreign, ent.update(ent.clone_session(9, [2]), "MODIFY")])
    assert err.value.codes() == ["PERMISSION_DENIED"]      # the clone session went through
    assert "belongs to role 'acl' exclusively" in str(err.value)
    s, ch = stub(switch, pki, "aclapp")
    with ch:
        stream = AttackStream(s, DEVICE_ID, 1, "acl")
        try:
            assert stream.answer().status.code == code_pb2.OK
            req = p4runtime_pb2.WriteRequest(device_id=DEVICE_ID, role="acl",
                                             election_id=p4runtime_pb2.Uint128(low=1),
                                             updates=[ent.update(ent.clone_session(9, []), "DELETE")])
            err2 = rpc_error(lambda: s.Write(req, timeout=RPC_S))
            assert update_codes(err2) == ["PERMISSION_DENIED"]
        finally:
            stream.close()
    assert len(list(controller.read(ent.clone_session(9, [])))) == 1


# ---------------------------------------------------------------------- stream bounds
def test_streams_beyond_the_bounds_are_refused_and_the_controller_is_served(
        pki: FabricPki, policy_file: Path, compiled: tuple[Path, Path]) -> None:
    sw = start(pki, policy_file, "--p4rt-max-streams", "4", "--p4rt-max-streams-per-client", "2")
    try:
        with SwitchConnection(sw.grpc_addr, device_id=DEVICE_ID, election_id=5, timeout_s=30,
                              tls=tls(pki, "controller")) as conn:   # 1 stream (controller)

            class V:                                                  # open_streams' victim
                addr, switch = sw.grpc_addr, "sw"

                @staticmethod
                def channel(who: str) -> grpc.Channel:
                    return tls(pki, who).channel(sw.grpc_addr)
            kept, refused, ch = open_streams(V, "monitor", 3)       # type: ignore[arg-type]
            kept2, refused2, ch2 = open_streams(V, "controller2", 3)  # type: ignore[arg-type]
            try:
                assert (len(kept), len(kept2)) == (2, 1)
                assert refused[0].code == "RESOURCE_EXHAUSTED"
                assert "identity 'monitor' already has 2 open StreamChannels" in refused[0].detail
                assert "the switch already has 4 open StreamChannels (at most 4)" in refused2[0].detail
                assert conn.pipeline_cookie() == (False, None)       # unary RPCs still served
            finally:
                for s in kept + kept2:
                    s.close()
                ch.close()
                ch2.close()
    finally:
        sw.stop()


def test_a_pipeline_push_without_the_right_is_refused_unread(switch, pki, controller) -> None:
    """aclapp writes (role acl) but may not push a pipeline: its SetForwardingPipelineConfig
    is refused PERMISSION_DENIED before the request is parsed, so bytes that do not parse
    get the same answer (a parse first would answer INTERNAL, as it does for the
    controller). The monitor's Write of such bytes too."""
    _s, ch = stub(switch, pki, "aclapp")
    garbage = b"\x0a\xff\xff\xff\x0f"                  # a length far past the end
    with ch:
        push = ch.unary_unary("/p4.v1.P4Runtime/SetForwardingPipelineConfig", request_serializer=None,
                              response_deserializer=p4runtime_pb2.SetForwardingPipelineConfigResponse.FromString)
        err = rpc_error(lambda: push(garbage, timeout=RPC_S))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED, (err.code(), err.details())
        assert "identity 'aclapp' may not push a pipeline" in err.details()
        assert "refused before its request was read" in err.details()
    _s, ch = stub(switch, pki, "monitor")
    with ch:
        write = ch.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=None,
                               response_deserializer=p4runtime_pb2.WriteResponse.FromString)
        err = rpc_error(lambda: write(garbage, timeout=RPC_S))
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED, (err.code(), err.details())
    _s, ch = stub(switch, pki, "controller")
    with ch:
        push = ch.unary_unary("/p4.v1.P4Runtime/SetForwardingPipelineConfig", request_serializer=None,
                              response_deserializer=p4runtime_pb2.SetForwardingPipelineConfigResponse.FromString)
        err = rpc_error(lambda: push(garbage, timeout=RPC_S))
        assert (err.code(), err.details()) == (grpc.StatusCode.INTERNAL, "Exception deserializing request!")
    assert controller.pipeline_cookie() == (True, 1)
