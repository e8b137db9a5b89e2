"""p4runtime-shell (the shell API and its client) against an in-process P4Runtime server
with the real entity store: pipeline push from files, table write/read, a write error
decoded by the shell, PacketOut → PacketIn, and a digest."""
from __future__ import annotations

import p4runtime_sh.shell as sh
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from p4sim.engine.program import load_program_text
from p4sim.p4info import build_p4info
from p4sim.p4runtime.server import P4RuntimeServer
from test_server_support import PROGRAM, FakeDevice, device_config


@pytest.fixture
def shell(tmp_path):
    p4info_path = tmp_path / "prog.p4info.txtpb"
    p4info_path.write_text(text_format.MessageToString(build_p4info(load_program_text(PROGRAM, "t.p4"))))
    config_path = tmp_path / "prog.json"
    config_path.write_bytes(device_config())
    dev = FakeDevice()
    srv = P4RuntimeServer(dev, "127.0.0.1:0", None)
    port = srv.start()
    sh.setup(device_id=1, grpc_addr=f"127.0.0.1:{port}", election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info_path), str(config_path)), verbose=False)
    yield dev
    sh.teardown()
    srv.stop()


def test_shell_table_packet_digest(shell):
    dev = shell
    te = sh.TableEntry("I.dmac")(action="I.fwd")
    te.match["hdr.eth.dst"] = "00:00:00:00:00:02"
    te.action["port"] = "3"
    te.insert()
    got = list(sh.TableEntry("I.dmac").read())
    assert len(got) == 1 and got[0].action["port"].value == b"\x03"
    with pytest.raises(P4RuntimeWriteException) as ei:
        te.insert()
    assert ei.value.errors[0][1].canonical_code == code_pb2.ALREADY_EXISTS
    frame = bytes.fromhex("000000000002" "0000000000aa" "0800")
    dev.receive(1, frame)
    assert dev.sent == [(3, frame)]

    out = sh.PacketOut(frame)
    out.metadata["egress_port"] = "255"
    out.metadata["_pad"] = "0"
    out.send()
    msg = sh.client.get_stream_packet("packet", timeout=5)
    assert msg is not None and msg.packet.payload == frame
    assert [(m.metadata_id, m.value) for m in msg.packet.metadata] == [(1, b"\xff"), (2, b"\x00")]

    d = sh.DigestEntry("learn_t")
    d.max_list_size = 1
    d.max_timeout_ns = 0
    d.ack_timeout_ns = 0
    d.insert()
    dev.receive(7, frame)
    msg = sh.client.get_stream_packet("digest", timeout=5)
    assert msg is not None
    assert [m.bitstring for m in msg.digest.data[0].struct.members] == [b"\xaa", b"\x07"]
