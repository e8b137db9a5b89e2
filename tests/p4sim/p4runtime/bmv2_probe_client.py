"""The probe client of the BMv2 P4Runtime comparison (test_bmv2_table.py,
test_idle_timeout.py): an in-process p4sim P4Runtime server running ``bmv2_probe.p4``, a
client that records each request's :class:`Outcome` (gRPC code, per-update error codes,
what was read or received), and builders for the entities the probes send.

Example::

    >>> ex(5, 2)
    ('exact', b'\\x00\\x05')
"""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from p4sim.p4runtime.p4config_pb2 import P4DeviceConfig
from p4sim.p4runtime.server import P4RuntimeServer
from procs import REPO
from test_server_support import Client, FakeDevice

HERE = Path(__file__).parent
PROGRAM = HERE / "bmv2_probe.p4"
U = pb.Update
Req = pb.SetForwardingPipelineConfigRequest
Get = pb.GetForwardingPipelineConfigRequest
CPU_PORT = 255
VALUE_SET_ID = 62358743          # MyParser.vs in the measured run; refused before any id lookup
PAYLOAD = bytes.fromhex("ffffffffffff" "000000000b0b" "88b5") + bytes(46)   # 60 bytes, no IPv4
BMV2_JSON = json.dumps({"header_types": [], "headers": [], "parsers": [], "deparsers": [],
                        "pipelines": [], "program": "probe.p4",
                        "__meta__": {"version": [2, 23], "compiler": "https://github.com/p4lang/p4c"}}).encode()


# ---------------------------------------------------------------- outcomes
@dataclass
class Outcome:
    """What one probe got: the gRPC code name ("NONE": a stream probe saw nothing), the
    per-update error codes of a failed Write, and what was read back or received."""

    code: str
    updates: tuple[str, ...] = ()
    entities: list[pb.Entity] = field(default_factory=list)
    value: Any = None
    message: str = ""
    update_messages: tuple[str, ...] = ()   # the message of each update's p4.v1.Error


def text(msg: Any) -> str:
    return text_format.MessageToString(msg, as_one_line=True)


def texts(out: Outcome) -> list[str]:
    return [text(e) for e in out.entities]


def _errors(err: grpc.RpcError) -> list[pb.Error]:
    status = status_pb2.Status()
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status.ParseFromString(value)
    out = []
    for d in status.details:
        e = pb.Error()
        d.Unpack(e)
        out.append(e)
    return out


def _details(err: grpc.RpcError) -> tuple[str, ...]:
    return tuple(code_pb2.Code.Name(e.canonical_code) for e in _errors(err))


def call(fn: Callable[[], Any]) -> Outcome:
    """Run an RPC; the Outcome of its status (and result)."""
    try:
        value = fn()
    except grpc.RpcError as e:
        return Outcome(e.code().name, _details(e), message=e.details() or "",
                       update_messages=tuple(x.message for x in _errors(e)))
    return Outcome("OK", value=value)


# ---------------------------------------------------------------- the probe context
class Probe:
    """The probe client's state: the current server, its primary and other clients."""

    def __init__(self, p4info: p4info_pb2.P4Info, config: bytes, wrap: bool, extras: bool = False) -> None:
        self.p4info = p4info
        self.extras = extras
        self.wrap = wrap
        self.raw_config = config
        self.config = P4DeviceConfig(device_data=config).SerializeToString() if wrap else config
        self.ids = {o.preamble.name.split(".")[-1]: o.preamble.id
                    for kind in ("tables", "actions", "action_profiles", "counters", "meters",
                                 "registers", "digests", "direct_counters", "direct_meters")
                    for o in getattr(p4info, kind)}
        self.server: Optional[P4RuntimeServer] = None
        self.device: Optional[FakeDevice] = None
        self.clients: list[Client] = []
        self.primary: Optional[Client] = None
        self.named: dict[str, Client] = {}
        self.eid = 10
        # state the packet I/O rows hand on to the next row
        self.pending_digest: list[Any] = []
        self.last_list = 1
        self.second_at = 0.0

    # ---- servers and clients
    def fresh_server(self) -> None:
        self.close()
        self.device = FakeDevice(device_id=1, cpu_port=CPU_PORT)
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0", None, extras=self.extras)
        self.server.start()

    def client(self, name: str = "") -> Client:
        assert self.server is not None and self.server.port is not None
        c = Client(self.server.port)
        self.clients.append(c)
        if name:
            self.named[name] = c
        return c

    def close(self) -> None:
        for c in self.clients:
            c.close()
        self.clients, self.named, self.primary = [], {}, None
        if self.server is not None:
            self.server.stop(0)
            self.server = None

    @property
    def stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        assert self.primary is not None
        return self.primary.stub

    def arbitrate(self, name: str, eid: int, role: str = "") -> Outcome:
        c = self.client(name)
        c.arbitrate(eid, role)
        msg = c.next("arbitration", timeout=5)
        if msg is None:
            err = c.stream_error
            return Outcome(err.code().name if err is not None else "NONE",
                           message=err.details() if err is not None else "")
        a = msg.arbitration
        return Outcome("OK", value=(code_pb2.Code.Name(a.status.code), a.election_id.high, a.election_id.low),
                       message=a.status.message)

    # ---- pipeline
    def setfpc(self, action: int, config: Optional[bytes] = None, p4info: Optional[p4info_pb2.P4Info] = None,
               cookie: Optional[int] = None, eid: Optional[int] = 10, device_id: int = 1,
               with_config: bool = True, wrap: Optional[bool] = None) -> Outcome:
        req = Req(device_id=device_id, action=action)
        if eid is not None:
            req.election_id.low = eid
        if with_config:
            req.config.p4info.CopyFrom(self.p4info if p4info is None else p4info)
            data = self.raw_config if config is None else config
            if self.wrap if wrap is None else wrap:
                data = P4DeviceConfig(device_data=data).SerializeToString()
            req.config.p4_device_config = data
            if cookie is not None:
                req.config.cookie.cookie = cookie
        return call(lambda: self.stub.SetForwardingPipelineConfig(req))

    def getfpc(self, rtype: int = Get.ALL, device_id: int = 1) -> Outcome:
        out = call(lambda: self.stub.GetForwardingPipelineConfig(Get(device_id=device_id, response_type=rtype)))
        if out.code == "OK":
            cfg = out.value.config
            out.value = (cfg.p4info == self.p4info if cfg.HasField("p4info") else None,
                         cfg.p4_device_config == self.config if cfg.p4_device_config else None,
                         cfg.cookie.cookie if cfg.HasField("cookie") else None)
        return out

    # ---- Write / Read
    def write(self, *updates: pb.Update, atomicity: int = 0, eid: Optional[int] = None, device_id: int = 1,
              stub: Any = None) -> Outcome:
        req = pb.WriteRequest(device_id=device_id, atomicity=atomicity)
        if eid is None:
            eid = self.eid
        if eid:
            req.election_id.low = eid
        req.updates.extend(updates)
        return call(lambda: (stub or self.stub).Write(req))

    def read(self, *entities: pb.Entity, device_id: int = 1, stub: Any = None) -> Outcome:
        req = pb.ReadRequest(device_id=device_id)
        req.entities.extend(entities)
        out = call(lambda: [e for r in (stub or self.stub).Read(req) for e in r.entities])
        if out.code == "OK":
            out.entities, out.value = out.value, None
        return out

    # ---- stream
    def drain(self, client: Client, wait_s: float, idle: bool = False) -> list[Any]:
        """Stream messages ``client`` receives within ``wait_s`` seconds (idle-timeout
        notifications only when ``idle``: section 13's entries may expire again later)."""
        got = []
        end = time.monotonic() + wait_s
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return got
            try:
                msg = client.received.get(timeout=left)
            except queue.Empty:
                return got
            if msg is None:
                return got
            if idle or msg.WhichOneof("update") != "idle_timeout_notification":
                got.append(msg)

    def packet_out(self, metadata: dict[int, bytes], client: Optional[Client] = None) -> None:
        req = pb.StreamMessageRequest()
        req.packet.payload = PAYLOAD
        for mid, value in metadata.items():
            req.packet.metadata.add(metadata_id=mid, value=value)
        (client or self.primary).send(req)  # type: ignore[union-attr]


# ---------------------------------------------------------------- entity builders
def ex(value: int, nbytes: int) -> tuple[str, bytes]:
    return ("exact", value.to_bytes(nbytes, "big"))


def te(p: Probe, table: str, *matches: Any, action: Any = None, priority: int = 0, **kw: Any) -> pb.TableEntry:
    """A TableEntry: ``matches`` are (kind, value[, extra]) in field order (None: omitted),
    ``action`` (name, {param id: bytes}) / ("member", id) / ("group", id) / ("set", [...])."""
    t = pb.TableEntry(table_id=p.ids.get(table, table) if isinstance(table, str) else table, priority=priority, **kw)
    for fid, m in enumerate(matches, start=1):
        if m is None:
            continue
        fm = t.match.add(field_id=m[3] if len(m) > 3 else fid)
        kind = m[0]
        if kind == "exact":
            fm.exact.value = m[1]
        elif kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = m[1], m[2]
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = m[1], m[2]
        elif kind == "range":
            fm.range.low, fm.range.high = m[1], m[2]
        elif kind == "optional":
            fm.optional.value = m[1]
    if action is not None:
        if action[0] == "member":
            t.action.action_profile_member_id = action[1]
        elif action[0] == "group":
            t.action.action_profile_group_id = action[1]
        elif action[0] == "set":
            t.action.action_profile_action_set.SetInParent()
            for a, weight in action[1]:
                t.action.action_profile_action_set.action_profile_actions.add(
                    action=act(p, *a), weight=weight)
        else:
            t.action.action.CopyFrom(act(p, *action))
    return t


def act(p: Probe, name: Any, params: Optional[dict[int, bytes]] = None) -> pb.Action:
    a = pb.Action(action_id=p.ids.get(name, name) if isinstance(name, str) else name)
    for pid, value in (params or {}).items():
        a.params.add(param_id=pid, value=value)
    return a


def upd(utype: int, **entity: Any) -> pb.Update:
    u = U(type=utype)
    for kind, msg in entity.items():
        getattr(u.entity, kind).CopyFrom(msg)
    return u


def ent(**entity: Any) -> pb.Entity:
    e = pb.Entity()
    for kind, msg in entity.items():
        getattr(e, kind).CopyFrom(msg)
    return e


def ip(a: int, b: int = 0, c: int = 0, d: int = 0) -> bytes:
    return bytes([a, b, c, d])


def mac(v: int) -> bytes:
    return v.to_bytes(6, "big")


def port(v: int, n: int = 2) -> dict[int, bytes]:
    return {1: v.to_bytes(n, "big")}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[p4info_pb2.P4Info, bytes]:
    out = tmp_path_factory.mktemp("bmv2_probe")
    info_path, config_path = out / "probe.p4info.txtpb", out / "probe.json"
    subprocess.run([sys.executable, "-m", "p4sim", "compile", str(PROGRAM), "--p4info", str(info_path),
                    "--config", str(config_path)], cwd=REPO, check=True, timeout=120)
    info = text_format.Parse(info_path.read_text(), p4info_pb2.P4Info())
    return info, config_path.read_bytes()
