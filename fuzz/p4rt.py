"""The P4Runtime campaign: mutated Write, Read, SetForwardingPipelineConfig and
StreamChannel messages (:mod:`fuzz.p4rt_gen`) against a live ``python -m p4sim switch``
running ``p4src/fabric.p4``, as BMv2 does by default (no ``--p4runtime-extras``).

Checked for every message (a :class:`~fuzz.report.Finding` otherwise):

* ``crash`` — the switch process is alive after it;
* ``traceback`` — the switch wrote no Python traceback on its stderr;
* ``hang`` — the RPC ended within :data:`RPC_TIMEOUT_S`;
* ``status`` — no ``INTERNAL`` status, and ``UNKNOWN`` only where the specification puts
  it (a Write batch with one ``p4.v1.Error`` per update, each of which obeys the same rule)
  or where BMv2 answers ``UNKNOWN`` itself (its messages "Error when …", "Error in …",
  "Incorrect entity type": p4sim answers as BMv2 does, p4sim/README.md);
* ``state`` — the snapshot (:mod:`fuzz.p4rt_state`) read after a Write changed only the
  entities of the updates the switch accepted (nothing at all when it refused them all),
  and after a refused SetForwardingPipelineConfig, a Read or stream messages nothing;
* ``primary_lost`` — the campaign's own stream is still primary (stream messages come
  from another client whose election ids are always lower).

Every :data:`RESET_EVERY` messages the pipeline is pushed again (fresh, bounded state).

With ``identities=True`` (``python -m fuzz p4rt-mtls``) the switch runs as the testbed
runs it: the testbed's split PKI (:func:`testbed.tls.create_fabric_pki`), simple_switch_grpc's
TLS options with client authentication and p4sim's ``--p4rt-policy``. The campaign is the
controller over mutual TLS, and one message in two is sent instead by another identity
the testbed issues — the monitor, a host, another switch (:data:`CALLERS`) — checked as
well for:

* ``authz`` — a host's or a switch's certificate never gets past the handshake
  (``UNAVAILABLE`` for every RPC); the monitor's Write and SetForwardingPipelineConfig are
  ``PERMISSION_DENIED``, whatever the message;
* ``state`` — whatever another identity sent, the snapshot read by the controller
  before and after is the same (a refused identity never changes state).

>>> is_bmv2_unknown("Error when adding match entry to target: table t")
True
"""
from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any, Optional

import grpc
from google.rpc import code_pb2, status_pb2
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from controller.p4rt import load_p4info
from controller.p4rt.tls import ClientTls
from fuzz.p4rt_gen import Msg, Schema, message
from fuzz.p4rt_state import (Snapshot, changed_keys, digest_requests, entity_key, snapshot_request,
                             to_snapshot)
from fuzz.report import CampaignResult, Progress
from fuzz.switch import SwitchProcess, compile_fabric, scratch_dir
from testbed.attacks import default_attackers
from testbed.tls import MONITOR, create_fabric_pki, policy_path, switch_tls_options
from topo.model import build_fabric

RPC_TIMEOUT_S = 20.0
RESET_EVERY = 1000
BATCH = 8
ELECTION_ID = (1, 0)
"""The campaign's election id: above every id its stream messages draw (high word 0)."""
VICTIM = "b0r0l0"
"""The switch's name in the testbed PKI (``identities`` mode)."""
CALLERS = ("controller", "controller", "controller", "monitor", "host", "switch")
"""Who sends a message in ``identities`` mode (the controller half the time)."""
BMV2_UNKNOWN_PREFIXES = ("Error when ", "Error in ", "Incorrect entity type")
SIZES = {"small": 600, "full": 100_000}


class SwitchDied(Exception):
    """The switch process exited during the campaign."""


def is_bmv2_unknown(message: str) -> bool:
    """True for an ``UNKNOWN`` message that BMv2 itself answers (p4sim copies it)."""
    return message.startswith(BMV2_UNKNOWN_PREFIXES)


def update_errors(err: grpc.RpcError) -> list[pb.Error]:
    """The ``p4.v1.Error`` details of a failed Write (empty when it has none)."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            st_ = status_pb2.Status.FromString(value)
            out = []
            for any_ in st_.details:
                e = pb.Error()
                if any_.Unpack(e):
                    out.append(e)
            return out
    return []


class _PrimaryStream:
    """The campaign's own StreamChannel: arbitrates with :data:`ELECTION_ID` and keeps
    every response (``responses``); ``alive()`` until the server ends it."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._out: "queue.Queue[Optional[pb.StreamMessageRequest]]" = queue.Queue()
        self.responses: "queue.Queue[pb.StreamMessageResponse]" = queue.Queue()
        self._call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(self._out.get, None))
        self._done = threading.Event()
        self.errors: list[pb.StreamError] = []
        threading.Thread(target=self._read, daemon=True, name="fuzz-primary").start()
        arb = pb.StreamMessageRequest()
        arb.arbitration.device_id = 0
        arb.arbitration.election_id.high, arb.arbitration.election_id.low = ELECTION_ID
        self._out.put(arb)
        got = self.responses.get(timeout=RPC_TIMEOUT_S)
        if got.arbitration.status.code != code_pb2.OK:
            raise RuntimeError(f"the campaign is not primary: {got}")

    def _read(self) -> None:
        try:
            for resp in self._call:
                self.responses.put(resp)
        except grpc.RpcError:
            pass
        finally:
            self._done.set()

    def alive(self) -> bool:
        """True while the server keeps the stream open."""
        return not self._done.is_set()

    def send(self, msg: pb.StreamMessageRequest) -> None:
        """Send a message on this (primary) stream."""
        self._out.put(msg)

    def is_primary(self) -> bool:
        """No arbitration update since that took primary away from this stream; stream
        errors seen meanwhile are kept in ``errors``."""
        primary = True
        while not self.responses.empty():
            r = self.responses.get_nowait()
            if r.HasField("arbitration"):
                primary = r.arbitration.status.code == code_pb2.OK
            elif r.HasField("error"):
                self.errors.append(r.error)
        return primary

    def close(self) -> None:
        """Half-close the stream and wait (bounded) for the server to end it."""
        self._out.put(None)
        self._call.cancel()
        self._done.wait(5)


class P4rtCampaign:
    """Runs messages against one switch and checks them (see the module docstring)."""

    def __init__(self, sw: SwitchProcess, p4info_path: Path, config_path: Path,
                 result: CampaignResult, stderr_path: Path,
                 identities: Optional[dict[str, Any]] = None) -> None:
        self.sw, self.result, self.stderr_path = sw, result, stderr_path
        self.p4info = load_p4info(p4info_path)
        self.config = config_path.read_bytes()
        self.schema = Schema(self.p4info)
        self.identities = identities           # caller → ClientTls (None: plaintext, controller only)
        self.channel = self._open("controller")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.stubs = {"controller": self.stub}
        self._others: list[grpc.Channel] = []
        for caller in (identities or {}):
            if caller != "controller":
                ch = self._open(caller)
                self._others.append(ch)
                self.stubs[caller] = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        self._outcomes: list[str] = []
        self.primary = _PrimaryStream(self.channel)
        self.index = 0
        self.debug: list = []
        self._stderr_seen = 0
        self.push_pipeline()
        self.state = self.read_state()

    # ------------------------------------------------------------ set-up
    def _open(self, caller: str) -> grpc.Channel:
        options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
        if self.identities is None:
            return grpc.insecure_channel(self.sw.grpc_addr, options=options)
        tls = self.identities[caller]
        return grpc.secure_channel(self.sw.grpc_addr, tls.credentials(),
                                   options=[*options, ("grpc.ssl_target_name_override", tls.server_name)])

    def push_pipeline(self) -> None:
        """VERIFY_AND_COMMIT the fabric (an empty state)."""
        req = pb.SetForwardingPipelineConfigRequest(device_id=0, action=pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high, req.election_id.low = ELECTION_ID
        req.config.p4info.CopyFrom(self.p4info)
        req.config.p4_device_config = self.config
        self.stub.SetForwardingPipelineConfig(req, timeout=120)

    def read_state(self, digests: bool = True) -> Snapshot:
        """The snapshot (``state`` finding when the Read itself fails); ``digests=False``
        keeps the digest part of the last one (only a digest write or a pipeline push
        changes it: one Read instead of one per digest)."""
        try:
            entities = [e for r in self.stub.Read(snapshot_request(self.schema), timeout=RPC_TIMEOUT_S)
                        for e in r.entities]
            if not digests:
                return {**to_snapshot(entities),
                        **{k: v for k, v in self.state.items() if k[0] == "digest"}}
            for req in digest_requests(self.schema):
                try:
                    entities += [e for r in self.stub.Read(req, timeout=RPC_TIMEOUT_S) for e in r.entities]
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.NOT_FOUND:
                        raise
        except grpc.RpcError as e:
            self.result.add_finding("state", "the snapshot Read failed", index=self.index,
                                    message=f"{e.code().name}: {e.details()}")
            return {}
        return to_snapshot(entities)

    def close(self) -> None:
        """Close the campaign's stream and channels."""
        self.primary.close()
        self.channel.close()
        for ch in self._others:
            ch.close()

    # ------------------------------------------------------------ one message
    def run(self, msg: Msg, reuse: int, caller: str = "controller") -> None:
        """Send one message as ``caller`` (an identity of ``identities``), check it,
        advance the index."""
        self.index += 1
        self.result.count(msg.kind)
        if self.index % RESET_EVERY == 0:
            self.push_pipeline()
            self.state = self.read_state()
        req = self._reuse_state(msg, reuse)
        accepted_keys: Optional[set] = set()
        self._outcomes = []
        self.stub = self.stubs[caller]
        try:
            if msg.kind == "write":
                accepted_keys = self._write(req)
            elif msg.kind == "read":
                self._read(req)
            elif msg.kind == "setfpc":
                accepted_keys = None if self._call("SetForwardingPipelineConfig", req) else set()
            else:
                self._stream(req, on_primary=caller == "controller")
        finally:
            self.stub = self.stubs["controller"]
        if caller != "controller":
            self.result.count(f"as.{caller}.{msg.kind}")
            self._check_authz(msg, req, caller)
            accepted_keys = set()            # a refused identity never changes the state
        self._check_alive(msg)
        if msg.kind != "read":
            after = self.read_state(digests=msg.kind != "write" or any(
                u.entity.HasField("digest_entry") for u in req.updates))
            if accepted_keys is not None:
                changed = [k for k in changed_keys(self.state, after) if k not in accepted_keys]
                if changed:
                    self.result.add_finding("state", f"a refused {msg.kind} changed the state",
                                            index=self.index, message=str(req)[:1500],
                                            detail={"keys": [repr(k) for k in changed[:10]]})
            self.state = after
        primary = self.primary.is_primary()
        for err in self.primary.errors:
            self.result.count(f"StreamError.{code_pb2.Code.Name(err.canonical_code)}")
            if err.canonical_code in (code_pb2.INTERNAL, code_pb2.UNKNOWN) and not is_bmv2_unknown(err.message):
                self.result.add_finding("status", "StreamError UNKNOWN/INTERNAL on the primary stream",
                                        index=self.index, message=f"{err}\n--- request ---\n{req}"[:2000])
        self.primary.errors.clear()
        if not primary or not self.primary.alive():
            self.result.add_finding("primary_lost", "the campaign's stream lost primary",
                                    index=self.index, message=str(req)[:1500])
            raise SwitchDied("primary lost")

    def _check_authz(self, msg: Msg, req: Any, caller: str) -> None:
        """``authz``: what the testbed's policy and CAs let ``caller`` do (module docstring)."""
        outcomes = self._outcomes or ["(none)"]
        if caller in ("host", "switch"):
            bad = [o for o in outcomes if o != "UNAVAILABLE"]
        elif msg.kind in ("write", "setfpc"):
            bad = [o for o in outcomes if o != "PERMISSION_DENIED"]
        else:
            bad = []
        for o in set(outcomes):
            self.result.count(f"as.{caller}.{msg.kind}.{o}")
        if bad:
            self.result.add_finding("authz", f"{msg.kind} as {caller} answered {bad[0]}",
                                    index=self.index, message=str(req)[:1500])

    def _reuse_state(self, msg: Msg, reuse: int) -> Any:
        """A Write whose first update addresses an entry that exists (``reuse`` picks it,
        one time in three): duplicate INSERTs, MODIFYs and DELETEs of real entries."""
        req = msg.request
        if msg.kind != "write" or reuse % 3 or not req.updates:
            return req
        existing = [k for k in self.state if k[0] == "table"]
        if not existing:
            return req
        req2 = pb.WriteRequest()
        req2.CopyFrom(req)
        e = pb.Entity.FromString(self.state[existing[reuse % len(existing)]])
        drawn = req2.updates[0].entity
        if drawn.HasField("table_entry") and drawn.table_entry.HasField("action") and reuse % 2:
            e.table_entry.action.CopyFrom(drawn.table_entry.action)
        drawn.CopyFrom(e)
        return req2

    def _status(self, what: str, code: grpc.StatusCode, message: str, req: Any) -> None:
        if code == grpc.StatusCode.INTERNAL or (code == grpc.StatusCode.UNKNOWN and not is_bmv2_unknown(message)):
            self.result.add_finding("status", f"{what} answered {code.name}", index=self.index,
                                    message=f"{message}\n--- request ---\n{str(req)[:1500]}")
        elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
            self.result.add_finding("hang", f"{what} did not end within {RPC_TIMEOUT_S} s",
                                    index=self.index, message=str(req)[:1500])
        self.result.count(f"{what}.{code.name}")
        self._outcomes.append(code.name)
        if self.debug:
            self.debug.append((what, code.name, message))

    def _call(self, rpc: str, req: Any) -> bool:
        """Unary RPC; True when it returned OK."""
        try:
            getattr(self.stub, rpc)(req, timeout=RPC_TIMEOUT_S)
        except grpc.RpcError as e:
            self._status(rpc, e.code(), e.details() or "", req)
            return False
        self.result.count(f"{rpc}.OK")
        self._outcomes.append("OK")
        return True

    def _write(self, req: pb.WriteRequest) -> set:
        """The keys of the updates the switch accepted."""
        try:
            self.stub.Write(req, timeout=RPC_TIMEOUT_S)
        except grpc.RpcError as e:
            errors = update_errors(e)
            if e.code() != grpc.StatusCode.UNKNOWN or not errors:
                self._status("Write", e.code(), e.details() or "", req)
                return set()
            self.result.count("Write.batch_error")
            keys = set()
            for upd, err in zip(req.updates, errors):
                if err.canonical_code == code_pb2.OK:
                    self.result.count("Write.update.OK")
                    self._outcomes.append("OK")
                    keys.add(entity_key(upd.entity))
                else:
                    self._status("Write.update", grpc.StatusCode[code_pb2.Code.Name(err.canonical_code)]
                                 if err.canonical_code in range(17) else grpc.StatusCode.UNKNOWN,
                                 err.message, upd)
            return keys
        self.result.count("Write.OK")
        self._outcomes.append("OK")
        return {entity_key(u.entity) for u in req.updates}

    def _read(self, req: pb.ReadRequest) -> None:
        try:
            n = sum(len(r.entities) for r in self.stub.Read(req, timeout=RPC_TIMEOUT_S))
        except grpc.RpcError as e:
            self._status("Read", e.code(), e.details() or "", req)
            return
        self.result.count("Read.OK")
        self._outcomes.append("OK")
        self.result.count("read_entities", n)

    def _stream(self, msgs: list[pb.StreamMessageRequest], on_primary: bool = True) -> None:
        """PacketOuts alone go on the campaign's primary stream one time in two (they
        then run through the pipeline; never for another caller, ``on_primary`` False);
        otherwise a second client's stream: send, half-close, read to the end (bounded)."""
        if on_primary and (all(m.HasField("packet") for m in msgs) and msgs[0].packet.payload[:1] in (b"", b"\x00", b"A")
                           or all(m.HasField("packet") for m in msgs) and len(msgs) % 2):
            for m in msgs:
                self.primary.send(m)
            self.result.count("PacketOut.primary", len(msgs))
            return
        call = self.stub.StreamChannel(iter(msgs), timeout=RPC_TIMEOUT_S)
        try:
            for resp in call:
                if resp.HasField("error") and resp.error.canonical_code in (code_pb2.INTERNAL, code_pb2.UNKNOWN) \
                        and not is_bmv2_unknown(resp.error.message):
                    self.result.add_finding("status", "StreamError UNKNOWN/INTERNAL", index=self.index,
                                            message=f"{resp}\n--- requests ---\n{msgs}"[:2000])
        except grpc.RpcError as e:
            self._status("StreamChannel", e.code(), e.details() or "", msgs)
            return
        self.result.count("StreamChannel.OK")
        self._outcomes.append("OK")

    def _check_alive(self, msg: Msg) -> None:
        if not self.sw.alive():
            self.result.add_finding("crash", f"the switch exited (status {self.sw.proc.poll()})",
                                    index=self.index, message=str(msg.request)[:1500])
            raise SwitchDied(str(self.sw.proc.poll()))
        with open(self.stderr_path, "rb") as f:
            f.seek(self._stderr_seen)
            new = f.read()
        self._stderr_seen += len(new)
        if b"Traceback" in new:
            self.result.add_finding("traceback", "the switch logged a Python traceback",
                                    index=self.index, message=new.decode(errors="replace")[-1500:]
                                    + "\n--- request ---\n" + str(msg.request)[:1000])


def identity_setup(work: Path) -> tuple[list[str], dict[str, Any]]:
    """``identities`` mode: the testbed's PKI and policy under ``work``; the switch's
    options (general, then after ``--``) and each caller's client credentials."""
    pki = create_fabric_pki(build_fabric(), work / "pki")
    host, other_switch = default_attackers(pki, VICTIM)
    callers = {"controller": "controller", "monitor": MONITOR, "host": host, "switch": other_switch}
    creds = {}
    for caller, party in callers.items():
        f = pki.files(party)
        creds[caller] = ClientTls(pki.ca_cert("switches"), f.cert, f.key).for_server(VICTIM)
    return ["--p4rt-policy", str(policy_path(pki.root)), "--", *switch_tls_options(pki.files(VICTIM))], creds


def run_p4rt(seed_value: int, messages: int, *, work_dir: Optional[Path] = None,
             size: str = "custom", identities: bool = False) -> CampaignResult:
    """``messages`` messages from ``seed_value`` against a new switch; the result.
    ``identities``: the testbed's TLS, policy and callers (module docstring)."""
    work = work_dir or scratch_dir("fuzz-p4rt-")
    build = compile_fabric(work)
    result = CampaignResult("p4rt-mtls" if identities else "p4rt", seed=seed_value, size=size)
    stderr = work / "switch.stderr"
    general, target, creds = [], [], None
    if identities:
        opts, creds = identity_setup(work)
        cut = opts.index("--")
        general, target = opts[:cut], opts[cut + 1:]
    args = ["--no-p4", "--device-id", "0", "--control-port", "0", "--log-level", "off", *general,
            "--", "--cpu-port", "255", "--grpc-server-addr", "127.0.0.1:0", *target]
    t0 = time.monotonic()
    with SwitchProcess(args, log_path=stderr) as sw:
        campaign = P4rtCampaign(sw, build.p4info, build.config, result, stderr, identities=creds)
        examples = max(1, -(-messages // BATCH))
        progress = Progress(result.campaign, messages)
        callers = st.sampled_from(CALLERS) if identities else st.just("controller")
        strategy = st.lists(st.tuples(message(campaign.schema, ELECTION_ID), st.integers(0, 1 << 16),
                                      callers), min_size=BATCH, max_size=BATCH)

        @seed(seed_value)
        @settings(max_examples=examples, phases=[Phase.generate], database=None, deadline=None,
                  suppress_health_check=list(HealthCheck), derandomize=False)
        @given(strategy)
        def drive(batch: list[tuple[Msg, int, str]]) -> None:
            for msg, reuse, caller in batch:
                if campaign.index >= messages:
                    return
                campaign.run(msg, reuse, caller)
                progress.update(campaign.index)

        t0 = time.monotonic()
        try:
            drive()
        except SwitchDied:
            pass
        finally:
            elapsed = time.monotonic() - t0
            campaign.close()
        result.count("switch_alive_at_end", int(sw.alive()))
    result.notes.append(f"switch stderr: {stderr}")
    return result.finish(campaign.index, elapsed, "msgs")

