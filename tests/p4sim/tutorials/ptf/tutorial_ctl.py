"""A P4Runtime controller that sends what the P4 tutorials' ``p4runtime_lib`` sends, written
for p4sim's tutorials tests (not a test module: it holds no test classes).

The same calls and messages as a BMv2 controller: a StreamChannel whose first message is a
MasterArbitrationUpdate (election id 0,1), a SetForwardingPipelineConfig VERIFY_AND_COMMIT
whose ``p4_device_config`` is PI's ``p4.tmp.P4DeviceConfig`` (``reassign`` true,
``device_data`` the compiled file's bytes), and table writes: the default action as a
MODIFY, entries as INSERTs, with match values and parameters at full byte width.

Example::

    ctl = TutorialController("127.0.0.1:9559", device_id=0, p4info_path="build/x.p4info.txtpb")
    ctl.master_arbitration_update()
    ctl.set_forwarding_pipeline_config("build/x.json")
    ctl.write_table_entry(ctl.lpm_entry("RouteIngress.routes", "hdr.ipv4.dst_addr",
                                        "10.0.1.1", 32, "RouteIngress.forward",
                                        {"next_hop_mac": "08:00:00:00:01:11", "port": 1}))
    ctl.shutdown()
"""
from __future__ import annotations

import queue
import socket
import threading
from typing import Any, Iterator, Optional

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.tmp import p4config_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

ARBITRATION_TIMEOUT_S = 10.0


def encode_value(value: Any, bitwidth: int) -> bytes:
    """A MAC string, dotted IPv4 string or int at full byte width (as p4runtime_lib)."""
    nbytes = (bitwidth + 7) // 8
    if isinstance(value, str) and value.count(":") == 5:
        return bytes(int(b, 16) for b in value.split(":"))
    if isinstance(value, str):
        return socket.inet_aton(value)
    return int(value).to_bytes(nbytes, "big")


class TutorialController:
    """One switch connection (a gRPC channel and its stream), as p4runtime_lib's."""

    def __init__(self, address: str, device_id: int, p4info_path: str) -> None:
        self.device_id = device_id
        self.p4info = p4info_pb2.P4Info()
        with open(p4info_path, encoding="utf-8") as f:
            text_format.Merge(f.read(), self.p4info)
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._requests: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self._stream = self.stub.StreamChannel(self._request_iter())
        self._replies: "queue.Queue[Any]" = queue.Queue()
        threading.Thread(target=self._read_stream, daemon=True).start()

    def _read_stream(self) -> None:
        try:
            for reply in self._stream:
                self._replies.put(reply)
        except grpc.RpcError as err:
            self._replies.put(err)

    def _request_iter(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            req = self._requests.get()
            if req is None:
                return
            yield req

    def _election(self, msg: Any) -> None:
        msg.device_id = self.device_id
        msg.election_id.high, msg.election_id.low = 0, 1

    def master_arbitration_update(self) -> p4runtime_pb2.MasterArbitrationUpdate:
        """Become primary; returns the switch's answer (bounded wait)."""
        req = p4runtime_pb2.StreamMessageRequest()
        self._election(req.arbitration)
        self._requests.put(req)
        reply = self._replies.get(timeout=ARBITRATION_TIMEOUT_S)
        if isinstance(reply, grpc.RpcError):
            raise reply
        return reply.arbitration

    def set_forwarding_pipeline_config(self, compiled_json_path: str) -> None:
        """VERIFY_AND_COMMIT with the compiled file wrapped in ``P4DeviceConfig``."""
        wrapper = p4config_pb2.P4DeviceConfig()
        wrapper.reassign = True
        with open(compiled_json_path, encoding="utf-8") as f:
            wrapper.device_data = f.read().encode("utf-8")
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest()
        req.device_id = self.device_id
        req.election_id.low = 1
        req.config.p4info.CopyFrom(self.p4info)
        req.config.p4_device_config = wrapper.SerializeToString()
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        self.stub.SetForwardingPipelineConfig(req, timeout=60)

    def _obj(self, kind: str, name: str) -> Any:
        for obj in getattr(self.p4info, kind):
            if obj.preamble.name == name:
                return obj
        raise KeyError(f"no {kind[:-1]} {name!r} in the P4Info")

    def _action(self, entry: p4runtime_pb2.TableEntry, name: str, params: dict[str, Any]) -> None:
        action = self._obj("actions", name)
        entry.action.action.action_id = action.preamble.id
        for p in action.params:
            if p.name in params:
                entry.action.action.params.add(param_id=p.id,
                                               value=encode_value(params[p.name], p.bitwidth))

    def lpm_entry(self, table: str, field: str, address: str, prefix_len: int, action: str,
                  params: dict[str, Any]) -> p4runtime_pb2.TableEntry:
        """An LPM entry, built as p4runtime_lib's ``buildTableEntry``."""
        tbl = self._obj("tables", table)
        entry = p4runtime_pb2.TableEntry(table_id=tbl.preamble.id)
        mf = next(m for m in tbl.match_fields if m.name == field)
        fm = entry.match.add(field_id=mf.id)
        fm.lpm.value = encode_value(address, mf.bitwidth)
        fm.lpm.prefix_len = prefix_len
        self._action(entry, action, params)
        return entry

    def default_entry(self, table: str, action: str,
                      params: dict[str, Any]) -> p4runtime_pb2.TableEntry:
        """The table's default action (written as a MODIFY)."""
        entry = p4runtime_pb2.TableEntry(table_id=self._obj("tables", table).preamble.id,
                                         is_default_action=True)
        self._action(entry, action, params)
        return entry

    def write_table_entry(self, entry: p4runtime_pb2.TableEntry) -> None:
        """INSERT (MODIFY for the default action), as p4runtime_lib's ``WriteTableEntry``."""
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        req.election_id.low = 1
        update = req.updates.add()
        update.type = (p4runtime_pb2.Update.MODIFY if entry.is_default_action
                       else p4runtime_pb2.Update.INSERT)
        update.entity.table_entry.CopyFrom(entry)
        self.stub.Write(req, timeout=30)

    def read_table_entries(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        """Every entry of ``table``."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.add().table_entry.table_id = self._obj("tables", table).preamble.id
        return [e.table_entry for resp in self.stub.Read(req, timeout=30) for e in resp.entities]

    def shutdown(self) -> None:
        """Close the stream and the channel."""
        self._requests.put(None)
        self.channel.close()
