"""The threat model's P4Runtime attacks, made with the testbed's own certificates against a
live switch: what a compromised host, a compromised switch or the monitor's key could try.

A :class:`Victim` is the controller's primary connection to one switch (the testbed's
``controller`` certificate, election id :data:`CONTROLLER_ELECTION_ID`), which pushed a
pipeline (cookie :data:`COOKIE`) and wrote one clone session (:data:`SESSION_ID`). Each
attack of :data:`P4RT_ATTACKS` then dials the switch as an attacker would — a plain gRPC
client on the switch's address, presenting another party's certificate and trusting the
switches' CA (CA certificates are public) — and tries to take mastership, write, push a
pipeline, read, or starve the server. An attack is *refused* when every RPC it tried
failed (its code and message are kept) **and** the switch's state is what the
controller left (the pipeline's cookie, the clone session, the controller still primary:
a Read before and after). Any state change is undone before the next attack, so one
success does not hide another.

The same attacks run against p4sim (with the testbed's ``--p4rt-policy``) and against
BMv2's simple_switch_grpc (same TLS flags, no policy: it checks no names), which is how
the README's "what each target enforces" table is measured. Used by
``tests/security/test_threat_model.py`` and ``bench/security_bench.py``
(``security.authz_denied_ok``).

Example::

    >>> with Victim(addr, device_id, "b0r0l0", pki_dir, p4info, config) as v:   # doctest: +SKIP
    ...     results = run_attacks(v)
    >>> [r.attack for r in results if not r.refused]                              # doctest: +SKIP
    []
"""
from __future__ import annotations

import contextlib
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from astral_proto import agent_pb2, agent_pb2_grpc
from astral_proto.flows import HostFlow, flow_id
from astral_proto.net import PEER_TEXT_CHARS
from astral_proto.security import listen
from astral_proto.tls import MutualTls, TlsFiles
from controller.fabric.puntguard import ARP_PUNT_DROPS_COUNTER
from controller.gor.shared import DEFAULT_AGENT_SILENT_S
from controller.p4rt import SwitchConnection
from controller.p4rt import entities as ent
from controller.p4rt.pipeline import set_pipeline_request
from controller.p4rt.tls import ClientTls
from controller.registry import MOVE_REPORT_S, FlowRegistry, serve_registry
from host.nic.rc import AETH_NAK_PSN_SEQ
from process import stop_process
from testbed.arpflood import punt_flood
from testbed.freeaddr import free_address_flood
from testbed.pfcstorm import pause_storm
from testbed.pki import FabricPki
from testbed.ports import free_port
from testbed.spoof import spoof_frames
from testbed.targets import SwitchLaunch
from testbed.tls import CONTROLLER, MONITOR, controller_tls, p4rt_client_tls, policy_path

CONTROLLER_ELECTION_ID = 10
COOKIE = 4242
SESSION_ID = 77
SESSION_PORTS = (1, 2)
RPC_TIMEOUT_S = 5.0
STREAM_ANSWER_S = 5.0
STARVATION_STREAMS = 100
"""Streams one attacker identity tries to open (the issue's probe: 15 sufficed before)."""
STALLED_READS = 60
"""Reads of a large answer one attacker identity sends and never reads."""
STALLED_READ_COPIES = 40
"""Wildcard counter reads in each of them: an answer of about 10 MB on ``fabric.p4``, far
beyond what gRPC's flow control lets the switch send before the client reads."""
AMPLIFIED_COPIES = 200
"""Copies of the wildcard "every counter" in the amplified Read (an 802-byte request; on
``fabric.p4`` about 2 million entities, 52 MB, when answered)."""
HOG_COPIES = 20
"""Wildcard counter reads in each Read of the lock-hogging attack (~5 MB of answer, read)."""
HOG_READERS = 4
"""Threads of the lock-hogging attack, each sending its Reads one after the other: enough
to keep the device lock held nearly all the time whatever the machine's speed (one reader
alone spends part of each Read outside the lock, serialising and sending, so on a fast
machine it can stay under the share and is rightly served), and under the per-identity
bound on Reads in progress (``DEFAULT_MAX_READS_PER_CLIENT``, 6)."""
HOG_ATTACK_S = 30.0
"""How long the lock-hogging attack keeps reading before it counts itself served."""
HOG_RECOVER_S = 30.0
"""How long the lock-hogging attack waits for its identity to be served again."""
READY_TIMEOUT_S = 60.0
PACKET_OUT_ANSWER_S = 1.0
"""How long a packet-out attack waits for the switch's StreamError (none: taken)."""
FLOOD_STREAM_MESSAGES = 20
"""PacketOuts the stream-flood attack sends on one StreamChannel."""
FLOOD_STREAM_MESSAGE_BYTES = 64 * 1024
"""Each one's size: over the bound of an identity that only reads (p4sim's
``READ_ONLY_STREAM_MESSAGE_BYTES``, 16 KiB), under a writer's (1 MiB) and the switch's
receive bound (16 MiB), so the row shows the per-identity bound."""


@contextlib.contextmanager
def started_switch(target: str, pki_dir: Path, name: str, device_id: int, log_dir: Path,
                   p4sim_flags: Sequence[str] = (), binary: Optional[str] = None,
                   policy: Optional[Path] = None) -> Iterator[str]:
    """A switch of ``target`` started with the testbed's command line for switch ``name``
    (:class:`testbed.targets.SwitchLaunch`: its certificate, the TLS options; on p4sim
    also ``--p4rt-policy``: ``policy``, default the PKI's fabric policy) on a free port of
    127.0.0.1, no interfaces; yields its P4Runtime address once it answers the controller,
    and stops it by PID."""
    pki = FabricPki.load(Path(pki_dir))
    flags = list(p4sim_flags)
    if target == "p4sim":
        flags = ["--control-port", "0", "--p4rt-policy",
                 str(policy if policy is not None else policy_path(pki.root)), *flags]
    addr = f"127.0.0.1:{free_port()}"
    launch = SwitchLaunch(target, name, device_id=device_id, grpc_addr=addr, interfaces={},
                          log_dir=log_dir, pcap_dir=None, tls=pki.files(name), p4sim_flags=flags,
                          thrift_port=free_port() if target == "bmv2" else None, binary=binary)
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(launch.stdout_path, "wb") as out:
        proc = subprocess.Popen(launch.command(), stdout=out, stderr=subprocess.STDOUT)
    try:
        channel = controller_tls(pki.root).for_server(name).channel(addr)
        with channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=READY_TIMEOUT_S)
            except grpc.FutureTimeoutError:
                raise RuntimeError(f"{target} switch {name} did not answer on {addr} within "
                                   f"{READY_TIMEOUT_S:g} s (exit status {proc.poll()}; "
                                   f"{launch.stdout_path})") from None
        yield addr
    finally:
        stop_process(proc)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One attack's result: ``refused`` (every RPC failed and the state was kept),
    ``code`` (gRPC code name of the first refusal; ``OK`` when all went through),
    ``detail`` (the switch's message or what changed)."""

    attack: str
    claim: str
    refused: bool
    code: str
    detail: str
    state_kept: bool


class AttackFailed(Exception):
    """An attack RPC was refused: ``code`` (a gRPC code name) and the server's message."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code, self.detail = code, detail


def _refusal(exc: grpc.RpcError) -> AttackFailed:
    return AttackFailed(exc.code().name, exc.details() or "")


class Victim:
    """The controller's primary connection to the switch under attack, with a known state
    (see the module docstring). ``party_tls(name)`` gives an attacker the credentials of
    party ``name`` from the same PKI, or of a party added with :meth:`add_party` (a
    certificate of another PKI). ``identity``: who programs the switch (default the
    controller; on the VPC testbed the NIC's own manager, ``nicB-manager``)."""

    def __init__(self, addr: str, device_id: int, switch: str, pki_dir: Path,
                 p4info: Path, device_config: Path, identity: str = CONTROLLER) -> None:
        self.addr, self.device_id, self.switch = addr, device_id, switch
        self.pki = FabricPki.load(Path(pki_dir))
        self.identity = identity
        self.election_id = CONTROLLER_ELECTION_ID      # what its primary connection holds
        self.others: dict[str, TlsFiles] = {}
        self.p4info, self.device_config = Path(p4info), Path(device_config)
        self.conn = self._connect()
        self.restore()

    def _connect(self) -> SwitchConnection:
        return SwitchConnection(self.addr, device_id=self.device_id,
                                election_id=CONTROLLER_ELECTION_ID, timeout_s=30,
                                tls=p4rt_client_tls(self.pki.root, self.identity)
                                .for_server(self.switch))

    def add_party(self, name: str, files: TlsFiles) -> None:
        """Let attacks use party ``name`` with ``files`` (e.g. another PKI's certificate;
        the attacker still trusts this PKI's switches' CA)."""
        self.others[name] = files

    def __enter__(self) -> "Victim":
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()

    def party_tls(self, name: str) -> ClientTls:
        """Party ``name``'s certificate and key, trusting the switches' CA."""
        files = self.others.get(name) or self.pki.files(name)
        return ClientTls(self.pki.ca_cert("switches"), files.cert, files.key).for_server(self.switch)

    def _session(self) -> p4runtime_pb2.CloneSessionEntry:
        return ent.clone_session(SESSION_ID, list(SESSION_PORTS))

    def restore(self) -> None:
        """The known state: the controller primary, pipeline with :data:`COOKIE`, the
        clone session written."""
        if not self.conn.stream_alive or not self._still_primary():
            self.conn.close()
            self.conn = self._connect()
        if self.conn.pipeline_cookie() != (True, COOKIE):
            self.conn.push_pipeline(self.p4info, self.device_config, COOKIE)
        else:
            self.conn.fetch_pipeline()
        if not self._has_session():
            self.conn.insert(self._session())

    def _has_session(self) -> bool:
        want = self._session()
        try:
            got = [e.packet_replication_engine_entry.clone_session_entry for e in self.conn.read(want)]
        except grpc.RpcError as exc:          # BMv2 (PI): NOT_FOUND for a missing session
            if exc.code() != grpc.StatusCode.NOT_FOUND:
                raise
            return False
        return any(g.session_id == SESSION_ID and
                   sorted(r.egress_port for r in g.replicas) == sorted(SESSION_PORTS) for g in got)

    def _still_primary(self) -> bool:
        """Whether the switch takes a Write (of no update) from the controller: the primary
        check alone."""
        try:
            self.conn.write([])
            return True
        except Exception:  # noqa: BLE001 — any refusal means it is not primary any more
            return False

    def snapshot(self) -> tuple[Any, ...]:
        """(pipeline, cookie), whether the clone session is there, and whether the
        controller is still primary — read by the controller."""
        try:
            return (self.conn.pipeline_cookie(), self._has_session(), self._still_primary())
        except grpc.RpcError as exc:
            return ("read failed", exc.code().name)

    # ------------------------------------------------------------------ attackers' tools
    def channel(self, party: str) -> grpc.Channel:
        """A channel to the switch with party ``party``'s certificate."""
        return self.party_tls(party).channel(self.addr)

    def pipeline_request(self, election_id: int, role: str = "") -> p4runtime_pb2.SetForwardingPipelineConfigRequest:
        req, _ = set_pipeline_request(self.device_id, p4runtime_pb2.Uint128(low=election_id),
                                      self.p4info, self.device_config, cookie=666)
        req.role = role
        return req

    def delete_request(self, election_id: int, role: str = "") -> p4runtime_pb2.WriteRequest:
        return p4runtime_pb2.WriteRequest(
            device_id=self.device_id, role=role, election_id=p4runtime_pb2.Uint128(low=election_id),
            updates=[ent.update(self._session(), "DELETE")])


class AttackStream:
    """An attacker's StreamChannel: arbitration with ``role`` / ``election_id``."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub, device_id: int,
                 election_id: Optional[int], role: str = "", config: Any = None) -> None:
        self._out: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        arb = p4runtime_pb2.MasterArbitrationUpdate(device_id=device_id)
        if election_id is not None:
            arb.election_id.low = election_id
        if role:
            arb.role.name = role
        if config is not None:
            arb.role.config.CopyFrom(config)
        self._out.put(p4runtime_pb2.StreamMessageRequest(arbitration=arb))
        self.call = stub.StreamChannel(iter(self._out.get, None))
        self._answers: "queue.Queue[Any]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="attack-stream").start()

    def _read(self) -> None:
        try:
            for msg in self.call:
                self._answers.put(msg)
        except grpc.RpcError as exc:
            self._answers.put(exc)

    def answer(self, timeout_s: float = STREAM_ANSWER_S) -> p4runtime_pb2.MasterArbitrationUpdate:
        """The arbitration answer; AttackFailed when the switch ended the stream."""
        try:
            got = self._answers.get(timeout=timeout_s)
        except queue.Empty:
            raise AttackFailed("DEADLINE_EXCEEDED", "no arbitration answer") from None
        if isinstance(got, grpc.RpcError):
            raise _refusal(got)
        return got.arbitration

    def primary(self) -> bool:
        """Whether the switch made this stream primary (AttackFailed if it ended it)."""
        return self.answer().status.code == code_pb2.OK

    def send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        """Send one more stream message (a packet-out)."""
        self._out.put(msg)

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()


# ---------------------------------------------------------------------- the attacks
AttackFn = Callable[[Victim], None]
"""An attack: raises AttackFailed at the first refused RPC; returns when all went through."""


def _rpc(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except grpc.RpcError as exc:
        raise _refusal(exc) from None


def _takeover(party: str, role: str, push: bool = True) -> AttackFn:
    """Arbitrate with an election id above the controller's, then delete its clone session
    and push a pipeline."""
    def run(v: Victim) -> None:
        with v.channel(party) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            eid = v.election_id + 1
            stream = AttackStream(stub, v.device_id, eid, role)
            try:
                if not stream.primary():
                    raise AttackFailed("ALREADY_EXISTS", f"{party} was made a backup")
                _rpc(lambda: stub.Write(v.delete_request(eid, role), timeout=RPC_TIMEOUT_S))
                if push:
                    _rpc(lambda: stub.SetForwardingPipelineConfig(v.pipeline_request(eid, role),
                                                                  timeout=60))
            finally:
                stream.close()
    return run


def _write_without_stream(party: str) -> AttackFn:
    """A Write with the primary's own election id and no stream at all."""
    def run(v: Victim) -> None:
        with v.channel(party) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            _rpc(lambda: stub.Write(v.delete_request(v.election_id), timeout=RPC_TIMEOUT_S))
    return run


def _push_without_stream(party: str) -> AttackFn:
    """A pipeline push with the primary's own election id and no stream."""
    def run(v: Victim) -> None:
        with v.channel(party) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            _rpc(lambda: stub.SetForwardingPipelineConfig(
                v.pipeline_request(v.election_id), timeout=60))
    return run


def _read(party: str) -> AttackFn:
    """Read the switch's tables and its P4Info (confidentiality of the fabric's state)."""
    def run(v: Victim) -> None:
        with v.channel(party) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            _rpc(lambda: list(stub.Read(p4runtime_pb2.ReadRequest(device_id=v.device_id, entities=[
                p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]), timeout=RPC_TIMEOUT_S)))
    return run


def _packet_out(party: str, arbitrate: bool = True) -> AttackFn:
    """PacketOuts on a StreamChannel: after arbitrating with an election id above the
    primary's (``arbitrate``), or as a backup (arbitration without an election id);
    refused when the switch ends the stream or answers the packet with a StreamError. A packet-out sent into a NIC's
    pipeline would reach a VM or the fabric as if the NIC's manager sent it."""
    def run(v: Victim) -> None:
        with v.channel(party) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            stream = AttackStream(stub, v.device_id, v.election_id + 1
                                  if arbitrate else None)
            try:
                primary = stream.primary()        # the arbitration answer comes first
                if arbitrate and not primary:
                    raise AttackFailed("ALREADY_EXISTS", f"{party} was made a backup")
                for _ in range(3):
                    stream.send(p4runtime_pb2.StreamMessageRequest(
                        packet=p4runtime_pb2.PacketOut(payload=b"\xff" * 64)))
                try:
                    got = stream._answers.get(timeout=PACKET_OUT_ANSWER_S)
                except queue.Empty:
                    if arbitrate:
                        return                 # the primary's packets: taken
                    # not primary: p4sim and BMv2 drop such a PacketOut without a word
                    # (logged); nothing was injected
                    raise AttackFailed("DROPPED", "no StreamError: a PacketOut from a "
                                       "stream that is not primary is dropped silently") from None
                if isinstance(got, grpc.RpcError):
                    raise _refusal(got)
                if got.HasField("error"):
                    raise AttackFailed(code_pb2.Code.Name(got.error.canonical_code),
                                       got.error.message)
            finally:
                stream.close()
    return run


class IdleStream:
    """A StreamChannel that sends nothing (no arbitration): what a starving client opens."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub) -> None:
        self._out: "queue.Queue[Optional[p4runtime_pb2.StreamMessageRequest]]" = queue.Queue()
        self.call = stub.StreamChannel(iter(self._out.get, None))
        self.ended = threading.Event()
        self.call.add_done_callback(lambda _call: self.ended.set())

    def refusal(self) -> Optional[AttackFailed]:
        """The switch's refusal once the stream ended (None while it is open)."""
        if not self.ended.is_set():
            return None
        code = self.call.code()
        return AttackFailed(code.name if code is not None else "UNKNOWN", self.call.details() or "")

    def close(self) -> None:
        self._out.put(None)
        self.call.cancel()


def open_streams(v: Victim, party: str, n: int, settle_s: float = 0.1
                 ) -> tuple[list[IdleStream], list[AttackFailed], grpc.Channel]:
    """``n`` idle StreamChannels from ``party`` on one channel, opened one after the
    other: a stream not ended within ``settle_s`` counts as open (a refused one ends at
    once). Returns the open ones, the refusals and the channel (close it)."""
    ch = v.channel(party)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
    kept, refused = [], []
    for _ in range(n):
        s = IdleStream(stub)
        s.ended.wait(settle_s)
        why = s.refusal()
        (refused.append(why) if why is not None else kept.append(s))
    return kept, refused, ch


def controller_read_ms(v: Victim, reads: int = 20) -> list[float]:
    """The controller's Read latency (ms), ``reads`` times: the clone session."""
    req = v.conn.read_request(v._session())
    out = []
    for _ in range(reads):
        t0 = time.perf_counter()
        list(v.conn.send_read(req))
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def _starve(party: str) -> AttackFn:
    """:data:`STARVATION_STREAMS` idle streams, then the controller's Read must still be
    answered within :data:`RPC_TIMEOUT_S` (refused: the extra streams were refused and the
    Read answered)."""
    def run(v: Victim) -> None:
        kept, refused, ch = open_streams(v, party, STARVATION_STREAMS)
        try:
            try:
                controller_read_ms(v, reads=3)
            except grpc.RpcError as exc:
                raise AttackFailed("OK", f"{len(kept)} streams starved the server: the controller's "
                                         f"Read failed {exc.code().name}") from None
            late = [r for r in (s.refusal() for s in kept) if r is not None]
            refused += late
            if refused:
                raise AttackFailed(refused[0].code, f"{len(refused)} of {STARVATION_STREAMS} streams "
                                                   f"refused: {refused[0].detail}")
        finally:
            for s in kept:
                s.close()
            ch.close()
    return run


def _stall_reads(party: str) -> AttackFn:
    """:data:`STALLED_READS` Reads that each ask for every counter :data:`STALLED_READ_COPIES`
    times and are never read: each holds a worker of the switch while its answer waits
    in gRPC's flow control. The controller's Read and an empty Write must still be answered
    within :data:`RPC_TIMEOUT_S` (refused: the extra Reads were refused and the controller
    served)."""
    def run(v: Victim) -> None:
        with v.channel(party) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            req = p4runtime_pb2.ReadRequest(device_id=v.device_id, entities=[
                p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry())] * STALLED_READ_COPIES)
            ended = threading.Event()        # the switch refused one of them
            calls = [stub.Read(req) for _ in range(STALLED_READS)]
            for c in calls:
                c.add_done_callback(lambda _c: ended.set())
            try:
                # the Reads reach the switch before the controller's probe: the first
                # refusal, or (nothing refused) RPC_TIMEOUT_S for them to take the workers
                ended.wait(RPC_TIMEOUT_S)
                mine = v.conn.stub
                try:
                    list(mine.Read(v.conn.read_request(v._session()), timeout=RPC_TIMEOUT_S))
                    mine.Write(p4runtime_pb2.WriteRequest(
                        device_id=v.device_id,
                        election_id=p4runtime_pb2.Uint128(low=v.election_id)), timeout=RPC_TIMEOUT_S)
                except grpc.RpcError as exc:
                    raise AttackFailed("OK", f"{STALLED_READS} stalled Reads starved the server: the "
                                             f"controller's RPC failed {exc.code().name}") from None
                refused = [c for c in calls if c.done() and c.code() != grpc.StatusCode.OK]
                if refused:
                    raise AttackFailed(refused[0].code().name, f"{len(refused)} of {STALLED_READS} "
                                                               f"Reads refused: {refused[0].details()}")
            finally:
                for c in calls:
                    c.cancel()
    return run


HELD_P4RT_CALLS = 200
"""Reads a holder opens on a switch without ever sending their request: more than the
p4sim server's workers (the stream bound, 32, plus 16 for unary RPCs)."""


def _hold_workers(party: str) -> AttackFn:
    """:data:`HELD_P4RT_CALLS` Reads whose request never comes (:class:`HeldCalls`), then
    the controller's Read must be answered within :data:`RPC_TIMEOUT_S` (refused: the
    Read answered and the held calls refused or cancelled). Before sec-red2-s49 p4sim gave
    each a worker that waited for the request without bound."""
    def run(v: Victim) -> None:
        with v.channel(party) as ch:
            grpc.channel_ready_future(ch).result(timeout=RPC_TIMEOUT_S)
            held = HeldCalls(ch, HELD_P4RT_CALLS, method="/p4.v1.P4Runtime/Read")
            try:
                # the switch is at the calls once one ended (bounded: none ends on a switch
                # that holds them all)
                held.wait_ended(1, RPC_TIMEOUT_S)
                try:
                    list(v.conn.stub.Read(v.conn.read_request(v._session()), timeout=RPC_TIMEOUT_S))
                except grpc.RpcError as exc:
                    raise AttackFailed("OK", f"{HELD_P4RT_CALLS} Reads without a request starved the "
                                             f"server: the controller's Read failed {exc.code().name}") from None
                codes = held.ended()
                refused = [c for c in held.calls if c.done() and c.code() == grpc.StatusCode.RESOURCE_EXHAUSTED]
                if refused:
                    raise AttackFailed("RESOURCE_EXHAUSTED", f"{len(refused)} of {HELD_P4RT_CALLS} Reads "
                                                             f"without a request refused ({codes}): "
                                                             f"{refused[0].details()}")
            finally:
                held.close()
    return run


def _amplified_read(party: str) -> AttackFn:
    """One small Read that repeats the wildcard "every counter" :data:`AMPLIFIED_COPIES`
    times: the switch builds the whole answer in memory before it sends it (taken when it
    is answered in full)."""
    def run(v: Victim) -> None:
        tls = v.party_tls(party)     # the client takes an answer of any size: the switch decides
        with grpc.secure_channel(v.addr, tls.credentials(), options=[
                ("grpc.ssl_target_name_override", v.switch), ("grpc.max_receive_message_length", -1)]) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            req = p4runtime_pb2.ReadRequest(device_id=v.device_id, entities=[
                p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry())] * AMPLIFIED_COPIES)
            got = _rpc(lambda: sum(len(r.entities) for r in stub.Read(req, timeout=120)))
            if got == 0:
                raise AttackFailed("EMPTY", "the switch answered no entity")
    return run


def _flood_stream(party: str) -> AttackFn:
    """One StreamChannel of :data:`FLOOD_STREAM_MESSAGES` PacketOuts of
    :data:`FLOOD_STREAM_MESSAGE_BYTES` each, sent without arbitration (taken when the
    stream ends OK: the switch read and parsed every one; a backup's PacketOut is dropped
    without a word, as on BMv2)."""
    def run(v: Victim) -> None:
        out = p4runtime_pb2.StreamMessageRequest()
        out.packet.payload = bytes(FLOOD_STREAM_MESSAGE_BYTES)
        with v.channel(party) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            _rpc(lambda: list(stub.StreamChannel(iter([out] * FLOOD_STREAM_MESSAGES), timeout=60)))
    return run


def _hog_device_lock(party: str) -> AttackFn:
    """:data:`HOG_READERS` threads sending Reads one after the other for up to
    :data:`HOG_ATTACK_S`, each of every counter :data:`HOG_COPIES` times and read in full:
    each holds the switch's device lock while its answer is built, so the data plane waits
    (taken when none is refused in that time). When one is refused, the controller must
    still be served, and ``party`` again once its share of the lock is back (within
    :data:`HOG_RECOVER_S`: a rate bound, not a ban)."""
    def run(v: Victim) -> None:
        tls = v.party_tls(party)
        with grpc.secure_channel(v.addr, tls.credentials(), options=[
                ("grpc.ssl_target_name_override", v.switch), ("grpc.max_receive_message_length", -1)]) as ch:
            stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
            req = p4runtime_pb2.ReadRequest(device_id=v.device_id, entities=[
                p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry())] * HOG_COPIES)
            start = time.monotonic()
            stop = threading.Event()
            refusals: "queue.Queue[grpc.RpcError]" = queue.Queue()
            answered = [0] * HOG_READERS

            def reader(k: int) -> None:
                while not stop.is_set() and time.monotonic() - start < HOG_ATTACK_S:
                    try:
                        for _ in stub.Read(req, timeout=60):
                            pass
                        answered[k] += 1
                    except grpc.RpcError as exc:
                        refusals.put(exc)
                        stop.set()

            threads = [threading.Thread(target=reader, args=(k,), daemon=True) for k in range(HOG_READERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(HOG_ATTACK_S + 120.0)
            stop.set()
            if refusals.empty():
                raise AttackFailed("OK", f"{sum(answered)} wildcard Reads by {HOG_READERS} readers "
                                         f"answered in {time.monotonic() - start:.1f} s, none refused")
            refused = _refusal(refusals.get())
            try:
                list(v.conn.stub.Read(v.conn.read_request(v._session()), timeout=RPC_TIMEOUT_S))
            except grpc.RpcError as exc:
                raise AttackFailed("OK", f"the controller's Read failed {exc.code().name} while "
                                         f"{party} was bounded") from None
            small = v.conn.read_request(v._session())          # one clone session
            deadline = time.monotonic() + HOG_RECOVER_S
            while True:                       # bounded probe: the identity's share comes back
                try:
                    list(stub.Read(small, timeout=RPC_TIMEOUT_S))
                    break
                except grpc.RpcError as exc:
                    if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                        raise AttackFailed("BANNED", f"{party} not served again after the bound: "
                                                     f"{exc.code().name} {exc.details()}") from None
                    threading.Event().wait(0.2)
            raise AttackFailed(refused.code, f"Read refused after {sum(answered)} answered: {refused.detail}")
    return run


@dataclass(frozen=True, slots=True)
class Attack:
    """One line of the attack matrix: who attacks, what it tries, the threat-model claim."""

    name: str
    attacker: str
    claim: str
    run: AttackFn = field(repr=False)


def p4rt_attacks(host: str, other_switch: str) -> list[Attack]:
    """The P4Runtime attack matrix with a host's and another switch's certificates (names
    of the PKI) besides the monitor's."""
    return [
        Attack("host-takeover-own-role", host, "a compromised host cannot program a switch",
               _takeover(host, "attacker")),
        Attack("host-takeover-default-role", host, "a compromised host cannot program a switch",
               _takeover(host, "")),
        Attack("host-write-no-stream", host, "a compromised host cannot program a switch",
               _write_without_stream(host)),
        Attack("host-read", host, "a compromised host cannot read a switch's tables",
               _read(host)),
        Attack("switch-takeover-default-role", other_switch,
               "a compromised switch cannot pose as the controller to another switch",
               _takeover(other_switch, "")),
        Attack("switch-write-no-stream", other_switch,
               "a compromised switch cannot pose as the controller to another switch",
               _write_without_stream(other_switch)),
        Attack("monitor-takeover-default-role", MONITOR, "the monitor's key only reads",
               _takeover(MONITOR, "")),
        Attack("monitor-takeover-own-role", MONITOR, "the monitor's key only reads",
               _takeover(MONITOR, "monitor")),
        Attack("monitor-write-no-stream", MONITOR, "the monitor's key only reads",
               _write_without_stream(MONITOR)),
        Attack("monitor-push-pipeline", MONITOR, "only the controller may push a pipeline",
               _push_without_stream(MONITOR)),
        Attack("monitor-starves-streams", MONITOR,
               "no client can starve a switch's P4Runtime server", _starve(MONITOR)),
        Attack("monitor-stalls-reads", MONITOR,
               "no client can starve a switch's P4Runtime server", _stall_reads(MONITOR)),
        Attack("monitor-amplified-read", MONITOR,
               "no client can exhaust a switch's memory with a small request", _amplified_read(MONITOR)),
        Attack("monitor-hogs-device-lock", MONITOR,
               "a read-only client cannot keep the data plane waiting on the device lock",
               _hog_device_lock(MONITOR)),
        Attack("monitor-holds-workers", MONITOR,
               "no client can starve a switch's P4Runtime server", _hold_workers(MONITOR)),
        Attack("monitor-floods-stream", MONITOR,     # last: the monitor's streams are held off after it
               "a read-only client cannot make the switch take large stream messages", _flood_stream(MONITOR)),
    ]


def smartnic_attacks(peer_manager: str, peer_nic: str, operator: str = CONTROLLER,
                     foreign: Sequence[str] = ()) -> list[Attack]:
    """The attack matrix against one FORNAX SmartNIC of the VPC testbed
    (:mod:`testbed.vpcnet`): with another NIC's manager certificate (``peer_manager``, the
    same control CA as the victim's manager), another NIC's own switch certificate
    (``peer_nic``), the operator's read-only certificate, and each of ``foreign`` (parties
    added to the victim with :meth:`Victim.add_party`: certificates of another PKI)."""
    out = [
        Attack("peer-manager-takeover", peer_manager,
               "a NIC's manager cannot take mastership of another NIC and program it",
               _takeover(peer_manager, "")),
        Attack("peer-manager-takeover-own-role", peer_manager,
               "a NIC's manager cannot take mastership of another NIC and program it",
               _takeover(peer_manager, "attacker")),
        Attack("peer-manager-write-no-stream", peer_manager,
               "a NIC's manager cannot write another NIC's sessions", _write_without_stream(peer_manager)),
        Attack("peer-manager-push-pipeline", peer_manager,
               "a NIC's manager cannot replace another NIC's pipeline", _push_without_stream(peer_manager)),
        Attack("peer-manager-read-sessions", peer_manager,
               "a NIC's manager cannot read another NIC's sessions (tenants' connections)",
               _read(peer_manager)),
        Attack("peer-manager-packet-out", peer_manager,
               "a NIC's manager cannot inject packets through another NIC", _packet_out(peer_manager)),
        Attack("peer-manager-packet-out-as-backup", peer_manager,
               "a NIC's manager cannot inject packets through another NIC",
               _packet_out(peer_manager, arbitrate=False)),
        Attack("peer-manager-starves-streams", peer_manager,
               "no client can starve a NIC's P4Runtime server", _starve(peer_manager)),
        Attack("peer-nic-takeover", peer_nic, "a NIC's own certificate is no client certificate",
               _takeover(peer_nic, "")),
        Attack("peer-nic-read-sessions", peer_nic,
               "a NIC's own certificate is no client certificate", _read(peer_nic)),
        Attack("operator-takeover", operator, "the operator's key only reads a NIC",
               _takeover(operator, "")),
        Attack("operator-takeover-own-role", operator, "the operator's key only reads a NIC",
               _takeover(operator, "operator")),
        Attack("operator-write-no-stream", operator, "the operator's key only reads a NIC",
               _write_without_stream(operator)),
        Attack("operator-push-pipeline", operator, "the operator's key only reads a NIC",
               _push_without_stream(operator)),
        Attack("operator-packet-out", operator, "the operator's key cannot inject packets",
               _packet_out(operator, arbitrate=False)),
        Attack("operator-starves-streams", operator,
               "no client can starve a NIC's P4Runtime server", _starve(operator)),
        Attack("operator-holds-workers", operator,
               "no client can starve a NIC's P4Runtime server", _hold_workers(operator)),
    ]
    for party in foreign:
        out += [Attack(f"{party}-takeover", party, "a certificate of another CA is refused",
                       _takeover(party, "")),
                Attack(f"{party}-read-sessions", party, "a certificate of another CA is refused",
                       _read(party))]
    return out


class LiveNic:
    """A NIC of a running VPC testbed as an attacker sees it: its address, device id and
    name, its primary manager's ``election_id``, and the attacker's credentials
    (``parties``: name → ClientTls) — no programming
    connection of its own (the NIC's real manager is primary and stays so)."""

    def __init__(self, addr: str, device_id: int, switch: str, parties: dict[str, ClientTls],
                 p4info: Path, device_config: Path, *, election_id: int) -> None:
        self.addr, self.device_id, self.switch = addr, device_id, switch
        self.election_id = election_id       # the real manager's: a write refused for a
                                             # wrong id would prove nothing about identity
        self.parties = parties
        self.p4info, self.device_config = Path(p4info), Path(device_config)

    def channel(self, party: str) -> grpc.Channel:
        return self.parties[party].for_server(self.switch).channel(self.addr)

    pipeline_request = Victim.pipeline_request
    delete_request = Victim.delete_request
    _session = Victim._session


LIVE_STREAMS = 20
"""Idle streams the live attack opens (each must be refused)."""


def live_nic_attacks(nic: LiveNic, party: str) -> list[tuple[str, str, str]]:
    """Attack a NIC serving traffic with ``party``'s certificate: take mastership and
    write, write without a stream, push a pipeline, read its sessions, packet-outs, and
    :data:`LIVE_STREAMS` idle streams. Returns (attack, code, detail) per attack; code
    ``OK`` means it went through. The caller checks the NIC's state (its manager still
    primary, its connections unbroken)."""
    attacks: list[tuple[str, Callable[[Any], None]]] = [
        ("takeover", _takeover(party, "")), ("write-no-stream", _write_without_stream(party)),
        ("push-pipeline", _push_without_stream(party)), ("read-sessions", _read(party)),
        ("packet-out", _packet_out(party))]
    out = []
    for name, run in attacks:
        try:
            run(nic)
            out.append((name, "OK", "every RPC went through"))
        except AttackFailed as exc:
            out.append((name, exc.code, exc.detail))
    kept, refused, ch = open_streams(nic, party, LIVE_STREAMS)  # type: ignore[arg-type]
    for st in kept:
        st.close()
    ch.close()
    out.append(("idle-streams", refused[0].code if len(refused) == LIVE_STREAMS else "OK",
                f"{len(refused)} of {LIVE_STREAMS} refused"
                + (f": {refused[0].detail}" if refused else "")))
    return out


SPOOF_ATTACKER, SPOOF_VICTIM, SPOOF_RECEIVER = "b1s1", "b0s0", "b1s0"
PAUSE_SENDER = "b0s1"
"""The host of another leaf whose datagrams to the attacker its PAUSE storm holds."""
"""The spoofing row's hosts on the default fabric: b1s1 sends to b1s0 (its leaf
neighbour) with b0s0's address, as sec-audit5 measured it live."""


def live_fabric_attacks(shells: dict[str, int], fabric: Any, pki: Optional[FabricPki] = None,
                        attacker: str = SPOOF_ATTACKER, victim: str = SPOOF_VICTIM,
                        receiver: str = SPOOF_RECEIVER,
                        connections: Optional[Mapping[str, Any]] = None,
                        state: Any = None) -> list[Outcome]:
    """The data-plane rows of the matrix, on a running testbed (root; ``shells``: host →
    its shell's PID, :func:`testbed.spoof.host_shells`). ``attacker`` is a testbed host
    (with ``pki``, its certificate must be one the hosts' CA issued).

    * ``host-spoofs-source-address``: ``attacker`` sends frames with ``victim``'s source
      to ``receiver`` (:func:`testbed.spoof.spoof_frames`). Refused (``DROPPED``) when none
      of them was delivered; the state is kept when every frame with its own source was
      (the guard leaves legitimate traffic alone).
    * ``host-floods-arp-punts`` (with ``connections``: switch name → the controller's
      connection, e.g. ``programmer.connections``): ``attacker`` floods gratuitous ARP,
      which its leaf punts (:func:`testbed.arpflood.punt_flood`). Refused (``POLICED``)
      when the controller got no more PacketIns from the port than the leaf's policer
      allows and the policer dropped the rest; the state is kept when the controller's
      connection is still primary and its Read is answered.
    * ``host-loops-free-address`` (with ``connections``): ``attacker`` sends datagrams to
      an address of its subnet that no NIC holds (:func:`testbed.freeaddr.free_address_flood`).
      Refused (``DROPPED``) when the fabric's links carried none of them (its leaf drops
      them: the subnet's drop route); the state is kept when the counts settled.
    * ``host-pauses-its-leaf`` (with ``state``, the testbed state: the switches' register
      runtimes): ``attacker`` sends PAUSE frames while a host of another leaf sends it
      datagrams (:func:`testbed.pfcstorm.pause_storm`). Refused (``NO_LEAK``) when its
      leaf's uplink PFC cells are back at 0 packets, not paused, once the counts settle
      (the egress queue limit, ``admission.p4``); the state is kept when they settled."""
    if pki is not None and _kind(pki, attacker) != "host":
        raise ValueError(f"{attacker}: no host certificate in {pki.root}")
    got = spoof_frames(shells, fabric, attacker, victim, receiver)
    rows = [Outcome("host-spoofs-source-address",
                    "a host cannot send with another host's IPv4 source (the leaf's source guard)",
                    got.spoofed_seen == 0 and got.own_seen == got.frames,
                    "DROPPED" if got.spoofed_seen == 0 else "OK", got.delivered(),
                    got.own_seen == got.frames)]
    if connections is not None:
        rows.append(punt_flood_row(shells, fabric, connections, attacker))
        rows.append(free_address_row(shells, fabric, connections, attacker))
    if state is not None:
        rows.append(pause_storm_row(shells, fabric, state, attacker))
    return rows


def free_address_row(shells: Mapping[str, int], fabric: Any, connections: Mapping[str, Any],
                     attacker: str = SPOOF_ATTACKER) -> Outcome:
    """The ``host-loops-free-address`` row (:func:`live_fabric_attacks`)."""
    flood = free_address_flood(shells, fabric, connections, attacker)
    refused = flood.settled and flood.link_frames == 0
    return Outcome("host-loops-free-address",
                   "a host's datagrams to an address nobody holds do not go round the fabric "
                   "(the leaf's subnet drop route)",
                   refused, "DROPPED" if refused else "OK", str(flood), flood.settled)


def pause_storm_row(shells: Mapping[str, int], fabric: Any, state: Any,
                    attacker: str = SPOOF_ATTACKER, sender: str = PAUSE_SENDER) -> Outcome:
    """The ``host-pauses-its-leaf`` row (:func:`live_fabric_attacks`)."""
    storm = pause_storm(shells, fabric, state, attacker, sender)
    refused = storm.settled and not storm.leaked()
    return Outcome("host-pauses-its-leaf",
                   "a host's PAUSE frames leave no count behind in its leaf's PFC "
                   "(the egress queue limit)",
                   refused, "NO_LEAK" if refused else "OK", str(storm), storm.settled)


def punt_flood_row(shells: Mapping[str, int], fabric: Any, connections: Mapping[str, Any],
                   attacker: str = SPOOF_ATTACKER) -> Outcome:
    """The ``host-floods-arp-punts`` row (:func:`live_fabric_attacks`)."""
    conn = connections[fabric.host(attacker).nics[0].leaf]
    flood = punt_flood(shells, fabric, conn, attacker)
    refused = flood.within_policer() and flood.policed_drops > 0
    try:
        conn.read_counter(ARP_PUNT_DROPS_COUNTER, flood.punts.port)
        kept = bool(conn.is_primary)
    except grpc.RpcError:
        kept = False
    return Outcome("host-floods-arp-punts",
                   "a host cannot flood its leaf's controller with punted ARP (the leaf's policer)",
                   refused and kept, "POLICED" if refused else "OK", str(flood), kept)


def run_attack(v: Victim, attack: Attack) -> Outcome:
    """Run one attack against the victim; restores the victim's state afterwards."""
    before = v.snapshot()
    try:
        attack.run(v)
        code, detail, failed = "OK", "every RPC went through", False
    except AttackFailed as exc:
        code, detail, failed = exc.code, exc.detail, True
    after = v.snapshot()
    kept = after == before
    if not kept:
        detail += f" (state changed: {before} -> {after})"
    try:
        v.restore()
    except Exception as exc:  # noqa: BLE001 — say it; the next attack's snapshot shows it
        detail += f" (restore failed: {exc})"
    return Outcome(attack.name, attack.claim, failed and kept and code != "OK", code, detail, kept)


def run_attacks(v: Victim, attacks: Optional[Sequence[Attack]] = None) -> list[Outcome]:
    """Every attack (default: :func:`p4rt_attacks` with the PKI's first host and a switch
    other than the victim's), in order."""
    if attacks is None:
        attacks = p4rt_attacks(*default_attackers(v.pki, v.switch))
    return [run_attack(v, a) for a in attacks]


def default_attackers(pki: FabricPki, victim_switch: str) -> tuple[str, str]:
    """(a host, a switch other than ``victim_switch``) with certificates in ``pki``,
    chosen by file name (``*.pem`` that are not CAs or trust bundles)."""
    names = sorted(p.stem for p in pki.root.glob("*.pem")
                   if not p.name.startswith("ca") and not p.name.endswith(".trust.pem"))
    hosts = [n for n in names if _kind(pki, n) == "host"]
    switches = [n for n in names if _kind(pki, n) == "switch" and n != victim_switch]
    if not hosts or not switches:
        raise ValueError(f"{pki.root}: no host or no second switch certificate to attack with")
    return hosts[0], switches[0]


def _kind(pki: FabricPki, name: str) -> str:
    if name in (CONTROLLER, MONITOR):
        return name
    issuer = _issuer(pki.files(name).cert)
    return {"astral-p4 switches CA": "switch", "astral-p4 hosts CA": "host"}.get(issuer, "?")


def _issuer(cert: Path) -> str:
    c = x509.load_pem_x509_certificate(cert.read_bytes())
    attrs = c.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(attrs[0].value) if attrs else ""


# ---------------------------------------------------------------------- the agent protocol
class RecordingMover:
    """A host's flows that only record the moves applied (the attacks' witness)."""

    def __init__(self, flows: Sequence[Any]) -> None:
        self._sport = {f.flow_id: f.sport for f in flows}
        self.moves: list[tuple[str, int]] = []

    def current_sport(self, flow_id: str) -> int:
        return self._sport[flow_id]

    def move(self, flow_id: str, sport: int) -> None:
        self._sport[flow_id] = sport
        self.moves.append((flow_id, sport))


class AgentFabric:
    """GOR's flow registry (``controller``'s certificate) and two hosts' agents over
    mutual TLS with a testbed PKI, each host with one flow (ids as agents send them)."""

    HOSTS = ("b0s0", "b1s0")

    def __init__(self, pki_dir: Path, host_ips: dict[str, list[str]]) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        from host.agent.service import Agent  # noqa: PLC0415 — heavy: scapy
        self.pki = FabricPki.load(Path(pki_dir))
        self.host_ips = host_ips
        self.scratch = Path(tempfile.mkdtemp(prefix="astral-attack-"))
        self.registry = FlowRegistry(MutualTls.from_dir(self.pki.root, CONTROLLER), host_ips)
        self.server, self.address = serve_registry(self.registry)
        self.flows, self.movers, self.agents = {}, {}, {}
        try:
            for n, host in enumerate(self.HOSTS):
                src, dst = host_ips[host][0], host_ips[self.HOSTS[1 - n]][0]
                self.flows[host] = HostFlow(flow_id(src, dst, 7), src, dst, 49152, 7)
                sec = MutualTls.from_dir(self.pki.root, host)
                self.movers[host] = RecordingMover([self.flows[host]])
                self.agents[host] = Agent(sec, self.movers[host], [self.flows[host]],
                                          registry=RegistryClient(self.address, sec))
                self.agents[host].start()
        except BaseException:
            self.close()
            raise

    def snapshot(self) -> tuple[Any, ...]:
        """Each flow's owner and port as GOR's registry knows them, and the moves applied."""
        owners = []
        for host, f in self.flows.items():
            try:
                known = self.registry.flow(f.flow_id)
                owners.append((f.flow_id, self.registry.owner(f.flow_id), known.sport, known.nic_port))
            except KeyError:
                owners.append((f.flow_id, None, None, None))
        return (tuple(owners), tuple(tuple(m.moves) for m in self.movers.values()))

    def restore(self) -> None:
        for a in self.agents.values():
            a.register()

    def close(self) -> None:
        for a in self.agents.values():
            a.stop()
        self.server.stop(0).wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _as(fab: "AgentFabric", party: str) -> Any:
    """Party ``party``'s mutual-TLS security, trusting every CA of the PKI (an attacker
    completes its own side of any handshake; CA certificates are public)."""
    pki = fab.pki
    every = fab.scratch / "every-ca.pem"
    every.write_bytes(b"".join(pki.ca_cert(c).read_bytes() for c in ("control", "switches", "hosts")))
    files = pki.files(party)
    return MutualTls(TlsFiles(every, files.cert, files.key))


def _squat(squatter: str, victim: str) -> Callable[[AgentFabric], None]:
    """Register the victim's flow id with the squatter's own source address, then see the
    victim register its own flow."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        theirs = fab.flows[victim]
        mine = fab.host_ips[squatter][0]
        client = RegistryClient(fab.address, _as(fab, squatter))
        try:
            _rpc(lambda: client.register([HostFlow(theirs.flow_id, mine, theirs.dst_ip, 1, theirs.qpn)],
                                         agent_address="127.0.0.1:1", incarnation="squat"))
        finally:
            client.close()
    return run


def _register_as(party: str) -> Callable[[AgentFabric], None]:
    """A party that is not a host registers a flow of b0s0 in its own name."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        client = RegistryClient(fab.address, _as(fab, party), timeout_s=3.0)
        try:
            _rpc(lambda: client.register([fab.flows["b0s0"]], agent_address="127.0.0.1:1",
                                         incarnation="evil"))
        finally:
            client.close()
    return run


def _order_as(party: str, target: str) -> Callable[[AgentFabric], None]:
    """A party that is not the controller sends ``target``'s agent a well-formed move order
    (a fresh nonce, the right host and 5-tuple, a valid expiry)."""
    def run(fab: AgentFabric) -> None:
        sec = _as(fab, party)
        order = fab.registry.order_message(fab.registry.new_order(fab.flows[target].flow_id, 50001), 5.0)
        with sec.dial(fab.agents[target].address, target) as ch:
            reply = _rpc(lambda: agent_pb2_grpc.AgentServiceStub(ch).MoveFlow(
                order, metadata=sec.metadata(target), timeout=RPC_TIMEOUT_S))
        if not reply.accepted:
            raise AttackFailed("NOT_ACCEPTED", reply.reason)
    return run


FLOOD_AGENTS = 3
FLOOD_FLOWS = 2000
"""The registry flood: :data:`FLOOD_FLOWS` flows under each of :data:`FLOOD_AGENTS`
made-up agent addresses (6,000 flows of one host)."""


def _flood_registry(host: str) -> Callable[[AgentFabric], None]:
    """``host`` registers flows of its own source address under made-up agent addresses
    until it holds :data:`FLOOD_AGENTS` × :data:`FLOOD_FLOWS` (taken when every
    registration went through); they are unregistered afterwards."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        src = fab.host_ips[host][0]
        dst = fab.flows[host].dst_ip
        client = RegistryClient(fab.address, _as(fab, host), timeout_s=30.0)
        fakes = [f"127.0.0.1:{2 + a}" for a in range(FLOOD_AGENTS)]
        try:
            for a, addr in enumerate(fakes):
                qpns = range(1000 + a * FLOOD_FLOWS, 1000 + (a + 1) * FLOOD_FLOWS)
                _rpc(lambda: client.register([HostFlow(flow_id(src, dst, q), src, dst, 49152, q)
                                              for q in qpns], agent_address=addr, incarnation="flood"))
        finally:
            for addr in fakes:
                client.register([], agent_address=addr, incarnation="flood")
            client.close()
    return run


OUTSIDE_DST = "198.51.100.7"
"""A destination no fabric has (TEST-NET-2, RFC 5737)."""


def _register_outside(host: str) -> Callable[[AgentFabric], None]:
    """``host`` registers a flow of its own source address to an address outside the
    fabric (:data:`OUTSIDE_DST`), then one to itself; unregistered afterwards."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        src = fab.host_ips[host][0]
        client = RegistryClient(fab.address, _as(fab, host))
        try:
            for dst in (OUTSIDE_DST, src):
                _rpc(lambda: client.register([HostFlow(flow_id(src, dst, 4000), src, dst, 49152, 4000)],
                                             agent_address="127.0.0.1:3", incarnation="outside"))
        finally:
            client.register([], agent_address="127.0.0.1:3", incarnation="outside")
            client.close()
    return run


FOREIGN_NIC_PORT = 7
"""A NIC port no NIC of the topology has (the model's NICs have one or two ports)."""


def _foreign_nic_port(host: str) -> Callable[[AgentFabric], None]:
    """``host`` registers its own flow as sending on NIC port :data:`FOREIGN_NIC_PORT`,
    then (GOR ordered a move, the registry's side in process) reports the move done on
    that port: a port its NIC does not have would be kept with the flow."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        f = fab.flows[host]
        client = RegistryClient(fab.address, _as(fab, host))
        try:
            try:
                _rpc(lambda: client.register([f.with_nic_port(FOREIGN_NIC_PORT)],
                                             agent_address=fab.agents[host].address,
                                             incarnation=fab.agents[host].incarnation))
            except AttackFailed:
                o = fab.registry.new_order(f.flow_id, f.sport)
                _rpc(lambda: client.report_move(o.order_id, f.flow_id, done=True, sport=f.sport,
                                                nic_port=FOREIGN_NIC_PORT))
                raise
        finally:
            client.close()
    return run


REPLAYED_SPORT = 61000
"""The source port a replayed move report claims."""


def _replay_report(host: str) -> Callable[[AgentFabric], None]:
    """GOR orders a move of ``host``'s flow and the agent reports it done (the registry's
    side, in process); then ``host``'s certificate sends a second report of that order,
    done on another source port (:data:`REPLAYED_SPORT`) and NIC port 1: a report replayed
    or forged later would set the flow's port, NIC port and move time again."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        f = fab.flows[host]
        o = fab.registry.new_order(f.flow_id, f.sport)
        fab.registry.report(host, o.order_id, f.flow_id, done=True, sport=f.sport)
        client = RegistryClient(fab.address, _as(fab, host))
        try:
            _rpc(lambda: client.report_move(o.order_id, f.flow_id, done=True,
                                            sport=REPLAYED_SPORT, nic_port=1))
        finally:
            client.close()
    return run


def _claim_late_move(host: str) -> Callable[[AgentFabric], None]:
    """Right after GOR's registry (re)started, in the window where it takes an agent's word
    that a flow moved recently (``MOVE_CLAIMS_S``, meant for the predecessor's moves),
    ``host``'s own agent address and incarnation register its flow as moved 0 s ago: a move
    after the registry started, which it would have ordered and seen. Taken when the
    registry dates the move after its start (GOR then holds every round for
    ``move_settle_s`` and rests the flow for ``cooldown_s`` from the claim: a host that
    claims 9 s after a restart froze GOR's rounds until 10.1 s instead of 1.1 s). The
    matrix's first row: the window is open."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        f, agent = fab.flows[host], fab.agents[host]
        client = RegistryClient(fab.address, _as(fab, host))
        try:
            _rpc(lambda: client.register([f.with_move_age(0.0)], agent_address=agent.address,
                                         incarnation=agent.incarnation))
        finally:
            client.close()
        age_s = time.monotonic() - fab.registry.started_s        # the registry's clock; then its answer
        moved = next(x.moved_s_ago for x in fab.registry.flows(host) if x.flow_id == f.flow_id)
        if moved is None or moved >= age_s:
            raise AttackFailed("DATED_AT_START", f"the claimed move is dated at the registry's "
                                                 f"start or before: moved "
                                                 f"{'never' if moved is None else f'{moved:.3f} s ago'}, "
                                                 f"the registry up {age_s:.3f} s before")
    return run


LATE_REPORT_S = 100.0
"""How long before its report the late-report attack's order was made."""


def _report_late(host: str) -> Callable[[AgentFabric], None]:
    """GOR ordered a move of ``host``'s flow :data:`LATE_REPORT_S` ago (the registry's side,
    in process: the order's time set back); ``host``'s agent held back its report and sends
    it now, done. Taken when the registry dates the move at the report: GOR holds every
    round for ``move_settle_s`` after a move it learns of, so a host with held-back orders
    froze GOR's rounds (every host's links) whenever it chose (before sec-audit5)."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        f = fab.flows[host]
        o = fab.registry.new_order(f.flow_id, f.sport)
        o.created_s -= LATE_REPORT_S
        client = RegistryClient(fab.address, _as(fab, host))
        try:
            _rpc(lambda: client.report_move(o.order_id, f.flow_id, done=True, sport=f.sport))
        finally:
            client.close()
        moved = next(x.moved_s_ago for x in fab.registry.flows(host) if x.flow_id == f.flow_id)
        if moved is not None and moved >= LATE_REPORT_S - MOVE_REPORT_S - 1.0:
            raise AttackFailed("DATED_BY_ORDER", f"the move is dated {MOVE_REPORT_S:g} s after its "
                                                 f"order at the latest: moved {moved:.1f} s ago")
    return run


HIJACK_SPORT = 50002
"""The source port GOR's order to the hijacking host's flow names."""


def _hijack_agent_address(host: str, victim: str) -> Callable[[AgentFabric], None]:
    """``host`` registers its own flow under ``victim``'s agent address (an agent address
    is the registering host's word), then GOR orders a move of that flow (the registry's
    side, in process). The order fails at the handshake (the agent there is ``victim``'s,
    whose certificate does not name ``host``: UNAVAILABLE); the attack is taken when GOR
    then holds ``victim``'s flows for silent, senders gone that it orders nothing to (before
    sec-audit5: every flow registered at the address, whoever's)."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        mine, theirs = fab.flows[host], fab.flows[victim]
        client = RegistryClient(fab.address, _as(fab, host))
        try:
            _rpc(lambda: client.register([mine], agent_address=fab.agents[victim].address,
                                         incarnation="hijack"))
            try:
                fab.registry.move(mine.flow_id, HIJACK_SPORT, timeout_s=RPC_TIMEOUT_S)
                order = "OK"
            except grpc.RpcError as exc:
                order = exc.code().name
            if theirs.flow_id not in fab.registry.silent_flows(DEFAULT_AGENT_SILENT_S):
                raise AttackFailed(order, f"the order to {host}'s flow at {victim}'s agent failed "
                                          f"({order}); {victim}'s flows are not silent")
        finally:
            client.close()
    return run


HELD_CALLS = 40
"""Registry calls a holder opens without ever sending their request: ten times the
threads GOR's registry had (4), over twice it has now (``controller.registry.
REGISTRY_WORKERS``)."""
REGISTRY_METHOD = "/astral.agent.v1.FlowRegistry/ReportMove"


class HeldCalls:
    """``n`` calls of ``method`` on ``channel`` whose request is never sent: the HTTP/2
    headers go out, then nothing, which any party that passed a server's handshake can
    do. gRPC Python's synchronous server gives such a call a thread and waits there for
    the request.

    >>> HeldCalls.__name__
    'HeldCalls'
    """

    def __init__(self, channel: grpc.Channel, n: int, metadata: Sequence[tuple[str, str]] = (),
                 method: str = REGISTRY_METHOD) -> None:
        self._stop = threading.Event()
        self._changed = threading.Condition()

        def never() -> Iterator[bytes]:
            self._stop.wait()
            yield from ()

        def ended(_: Any) -> None:
            with self._changed:
                self._changed.notify_all()

        call = channel.stream_unary(method, request_serializer=None, response_deserializer=None)
        self.calls = [call.future(never(), metadata=tuple(metadata)) for _ in range(n)]
        for c in self.calls:
            c.add_done_callback(ended)

    def ended(self) -> dict[str, int]:
        """How many calls ended so far, by status code name."""
        codes: dict[str, int] = {}
        for c in self.calls:
            if c.done():
                name = c.code().name if c.code() is not None else "CANCELLED"
                codes[name] = codes.get(name, 0) + 1
        return codes

    def wait_ended(self, at_least: int, timeout_s: float) -> dict[str, int]:
        """Wait (bounded) until at least ``at_least`` calls ended; their codes."""
        with self._changed:
            self._changed.wait_for(lambda: sum(self.ended().values()) >= at_least, timeout_s)
        return self.ended()

    def close(self) -> None:
        self._stop.set()
        for c in self.calls:
            c.cancel()


def _hold_registry_calls(party: str, victim: str) -> Callable[[AgentFabric], None]:
    """``party`` opens :data:`HELD_CALLS` registry calls and never sends their requests;
    while they are open ``victim``'s agent registers its flow. Taken when the victim is
    not served in :data:`RPC_TIMEOUT_S`: before sec-red2-s49 the registry's 4 threads
    each waited for a request that never came, and every agent's registration and move
    report waited until its deadline (a switch's certificate too: it was named only
    once the request had come)."""
    def run(fab: AgentFabric) -> None:
        sec = _as(fab, party)
        with sec.dial(fab.address, CONTROLLER) as ch:
            grpc.channel_ready_future(ch).result(timeout=RPC_TIMEOUT_S)
            held = HeldCalls(ch, HELD_CALLS, sec.metadata(CONTROLLER))
            try:
                # the server is at the calls once one ended (a registry that bounds them
                # refuses the rest at once; one that holds them all ends none: bounded)
                held.wait_ended(1, RPC_TIMEOUT_S)
                t0 = time.monotonic()
                try:
                    fab.agents[victim].register()
                except grpc.RpcError:
                    return                                 # the victim was not served: taken
                ms = (time.monotonic() - t0) * 1000
                raise AttackFailed("SERVED", f"{victim} registered in {ms:.0f} ms while {party} held "
                                             f"{HELD_CALLS} calls without a request ({held.ended()})")
            finally:
                held.close()
    return run


def _hold_agent_calls(party: str, target: str) -> Callable[[AgentFabric], None]:
    """``party`` opens :data:`HELD_CALLS` MoveFlow calls to ``target``'s agent and never
    sends their requests; then the controller asks that agent its Status. Taken when the
    controller is not served in :data:`RPC_TIMEOUT_S`: before sec-red2-s49 the agent's 4
    threads waited for requests that never came (the agents trust the control CA, so the
    monitor's certificate passes their handshake), and GOR's orders to the host failed."""
    def run(fab: AgentFabric) -> None:
        sec = _as(fab, party)
        address = fab.agents[target].address
        with sec.dial(address, target) as ch:
            grpc.channel_ready_future(ch).result(timeout=RPC_TIMEOUT_S)
            held = HeldCalls(ch, HELD_CALLS, sec.metadata(target), method="/astral.agent.v1.AgentService/MoveFlow")
            try:
                held.wait_ended(1, RPC_TIMEOUT_S)       # the agent is at the calls (bounded)
                ctl = fab.registry.security
                t0 = time.monotonic()
                with ctl.dial(address, target) as cch:
                    try:
                        agent_pb2_grpc.AgentServiceStub(cch).Status(
                            agent_pb2.StatusRequest(), metadata=ctl.metadata(target), timeout=RPC_TIMEOUT_S)
                    except grpc.RpcError:
                        return                          # the controller was not served: taken
                ms = (time.monotonic() - t0) * 1000
                raise AttackFailed("SERVED", f"the controller was answered by {target}'s agent in {ms:.0f} ms "
                                             f"while {party} held {HELD_CALLS} calls without a request "
                                             f"({held.ended()})")
            finally:
                held.close()
    return run


ESCAPES = "\x1b]2;astral owned\x07\x1b[2J\x1b[31m"
"""Terminal escape sequences (set the window title, clear the screen, red): what a
compromised host's agent writes into the texts GOR logs and prints."""


class _RogueAgent(agent_pb2_grpc.AgentServiceServicer):
    """A host's compromised agent: refuses every order with :data:`ESCAPES` and 1 MB of
    text in its reason."""

    def MoveFlow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return agent_pb2.MoveReply(accepted=False, reason="refused " + ESCAPES + "x" * 1_000_000)


def _terminal_escapes(host: str) -> Callable[[AgentFabric], None]:
    """``host`` serves a rogue agent (its own certificate, :class:`_RogueAgent`) and
    registers its flow there; GOR orders a move of it (the registry's side, in process).
    Taken when the refusal reason GOR keeps, logs and prints (``order_rolled_back`` in the
    story, the terminal and report.md) holds the escape sequences raw, or more than
    ``astral_proto.net.PEER_TEXT_CHARS`` characters; then a move report's error the same."""
    def run(fab: AgentFabric) -> None:
        from host.agent.registry_client import RegistryClient  # noqa: PLC0415 — heavy: scapy
        f = fab.flows[host]
        sec = MutualTls.from_dir(fab.pki.root, host)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
        agent_pb2_grpc.add_AgentServiceServicer_to_server(_RogueAgent(), server)
        address = listen(server, sec, "127.0.0.1:0", "rogue agent")
        server.start()
        client = RegistryClient(fab.address, _as(fab, host))
        try:
            _rpc(lambda: client.register([f], agent_address=address, incarnation="rogue"))
            _, reply = fab.registry.move(f.flow_id, HIJACK_SPORT, timeout_s=RPC_TIMEOUT_S)
            o = fab.registry.new_order(f.flow_id, f.sport)
            _rpc(lambda: client.report_move(o.order_id, f.flow_id, done=False, sport=f.sport,
                                            error="failed " + ESCAPES))
            kept = (reply.reason, fab.registry.order(o.order_id).error)
            if all("\x1b" not in t and len(t) <= 2 * PEER_TEXT_CHARS for t in kept):
                raise AttackFailed("ESCAPED", "GOR keeps the agent's texts as one printable, "
                                              f"bounded line: {kept[0][:60]!r}")
        finally:
            client.close()
            server.stop(0).wait()
    return run


RX_FLOOD_QPNS = 1500
"""QPNs the receiver-flood attack names, one small frame each: over a receiver's bound on
one source's flows (``host.nic.qp.MAX_RX_FLOWS_PER_SOURCE``, 1,024)."""


def _flood_receiver(host: str, victim: str) -> Callable[[AgentFabric], None]:
    """``host`` (its own address) sends the receiver of ``victim``'s NIC (the NIC
    emulator's :class:`host.nic.qp.Receiver`) one small data frame for each of
    :data:`RX_FLOOD_QPNS` QPNs. Taken when the receiver keeps a flow for each: before
    sec-audit5 it kept them all and built each one's replies with Scapy (~3 ms a frame)."""
    def run(fab: AgentFabric) -> None:
        from host.nic.frames import FlowSpec, FrameTemplate, ip_bytes, readdress  # noqa: PLC0415 — heavy: scapy
        from host.nic.frames import OP_RC_WRITE_ONLY  # noqa: PLC0415 — heavy: scapy
        from host.nic.qp import Receiver  # noqa: PLC0415 — heavy: scapy
        src, dst = fab.host_ips[host][0], fab.host_ips[victim][0]
        macs = (bytes.fromhex("020000000003"), bytes.fromhex("020000000002"))
        first = FrameTemplate.data(FlowSpec("02:00:00:00:00:03", "02:00:00:00:00:02", src, dst, 49152,
                                            0x100), OP_RC_WRITE_ONLY, 8).frame(0, ext=bytes(16))
        rx = Receiver()
        for q in range(RX_FLOOD_QPNS):
            rx.on_frame(readdress(first, *macs, ip_bytes(src), ip_bytes(dst), 49152, 0x100 + q, 26), 0.0)
        if len(rx.flows) < RX_FLOOD_QPNS:
            raise AttackFailed("BOUNDED", f"the receiver kept {len(rx.flows)} of {host}'s "
                                          f"{RX_FLOOD_QPNS} flows ({rx.flows_refused} frames refused)")
    return run


FORGED_NAK_SYNDROME = 0x62
"""A fatal NAK's AETH syndrome (type NAK, remote access error): the requester's QP goes
to ERROR when it takes one."""


def _forge_qp_replies(host: str, victim: str) -> Callable[[AgentFabric], None]:
    """``host`` (from its own address, no spoofing) sends the NIC of ``victim``'s flow (its
    sender QP, the NIC emulator's :class:`host.nic.qp.SenderQP` with that flow's addresses
    and QPN) a CNP, a PSN-sequence NAK and a fatal NAK naming the QP. Taken when the QP
    takes any of them (before sec-audit5: all three, the QP in ERROR: the flow dead)."""
    def run(fab: AgentFabric) -> None:
        from host.nic.frames import FlowSpec, FrameTemplate, aeth_bytes, build_cnp  # noqa: PLC0415 — heavy: scapy
        from host.nic.qp import SenderQP  # noqa: PLC0415 — heavy: scapy
        f = fab.flows[victim]
        qp = SenderQP(FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", f.src_ip, f.dst_ip, f.sport,
                               f.qpn), message_bytes=1024, mtu=1024, messages=1, rate_limit=False)
        qp.poll(0.0)
        back = FlowSpec("02:00:00:00:00:03", "02:00:00:00:00:01", fab.host_ips[host][0], f.src_ip,
                        f.sport, f.qpn)
        ack = FrameTemplate.ack(back)
        taken = [qp.on_frame(frame, 0.001) for frame in (
            build_cnp(back), ack.frame(0, ext=aeth_bytes(AETH_NAK_PSN_SEQ, 0)),
            ack.frame(0, ext=aeth_bytes(FORGED_NAK_SYNDROME, 0)))]
        if not any(taken):
            raise AttackFailed("IGNORED", f"{victim}'s sender QP takes replies from its peer "
                                          f"{f.dst_ip} only (QP {qp.rc.state})")
    return run


@dataclass(frozen=True, slots=True)
class AgentAttack:
    """One line of the agent protocol's attack matrix."""

    name: str
    attacker: str
    claim: str
    run: Callable[[AgentFabric], None] = field(repr=False)


def agent_attacks(switch: str) -> list[AgentAttack]:
    """The agent protocol's attack matrix (hosts b0s0 and b1s0, a switch's certificate)."""
    return [
        AgentAttack("host-claims-move-after-restart", "b0s0",     # first: the claims window is open
                    "a host cannot date a move after GOR's restart (freeze GOR's rounds)",
                    _claim_late_move("b0s0")),
        AgentAttack("host-squats-flow-id", "b1s0", "a host cannot claim another host's flow id",
                    _squat("b1s0", "b0s0")),
        AgentAttack("switch-registers-flows", switch, "only hosts register flows",
                    _register_as(switch)),
        AgentAttack("monitor-registers-flows", MONITOR, "only hosts register flows",
                    _register_as(MONITOR)),
        AgentAttack("controller-registers-flows", CONTROLLER,
                    "the controller's key cannot act as a host (register flows)",
                    _register_as(CONTROLLER)),
        AgentAttack("monitor-orders-move", MONITOR, "only the controller orders a host",
                    _order_as(MONITOR, "b0s0")),
        AgentAttack("host-orders-move", "b1s0", "a compromised host cannot pose as the controller",
                    _order_as("b1s0", "b0s0")),
        AgentAttack("switch-orders-move", switch, "a compromised switch cannot pose as the controller",
                    _order_as(switch, "b0s0")),
        AgentAttack("host-floods-registry", "b1s0", "a host cannot fill GOR's registry",
                    _flood_registry("b1s0")),
        AgentAttack("host-registers-outside-fabric", "b1s0",
                    "a host registers only flows to another NIC of the fabric",
                    _register_outside("b1s0")),
        AgentAttack("host-replays-move-report", "b0s0",
                    "a host reports each move order once (no replayed or forged report)",
                    _replay_report("b0s0")),
        AgentAttack("host-claims-foreign-nic-port", "b0s0",
                    "a host registers and reports only NIC ports its NIC has",
                    _foreign_nic_port("b0s0")),
        AgentAttack("host-writes-terminal-escapes", "b0s0",
                    "a host's agent cannot write to the operator's terminal through GOR",
                    _terminal_escapes("b0s0")),
        AgentAttack("host-forges-qp-replies", "b1s1",
                    "a host cannot kill or slow another host's QP with forged ACK/NAK/CNP",
                    _forge_qp_replies("b1s1", "b0s0")),
        AgentAttack("host-reports-move-late", "b0s0",
                    "a host cannot freeze GOR's rounds with held-back move reports",
                    _report_late("b0s0")),
        AgentAttack("host-floods-receiver-flows", "b1s1",
                    "a host cannot make another host's receiver keep (and answer) a flow per QPN",
                    _flood_receiver("b1s1", "b0s0")),
        AgentAttack("host-hijacks-agent-address", "b0s0",
                    "a host cannot make GOR take another host's senders for gone",
                    _hijack_agent_address("b0s0", "b1s0")),
        AgentAttack("host-holds-registry-calls", "b1s0",
                    "a host cannot hold GOR's registry with calls whose request never comes",
                    _hold_registry_calls("b1s0", "b0s0")),
        AgentAttack("monitor-holds-agent-calls", MONITOR,
                    "the monitor's certificate cannot hold a host's agent with calls whose request never comes",
                    _hold_agent_calls(MONITOR, "b0s0")),
        AgentAttack("switch-holds-registry-calls", switch,
                    "a switch's certificate cannot hold GOR's registry with calls whose request never comes",
                    _hold_registry_calls(switch, "b0s0")),
    ]


def run_agent_attack(fab: AgentFabric, attack: AgentAttack) -> Outcome:
    """One agent-protocol attack; the registry's owners and ports and the moves applied
    must be the same before and after (and the victim can still register its flow)."""
    before = fab.snapshot()
    try:
        attack.run(fab)
        code, detail, failed = "OK", "every RPC went through", False
    except AttackFailed as exc:
        code, detail, failed = exc.code, exc.detail, True
    fab.restore()
    after = fab.snapshot()
    kept = after == before
    if not kept:
        detail += f" (state changed: {before} -> {after})"
    return Outcome(attack.name, attack.claim, failed and kept and code != "OK", code, detail, kept)


def run_agent_attacks(pki_dir: Path, host_ips: dict[str, list[str]], switch: str) -> list[Outcome]:
    """:func:`agent_attacks` against a fresh :class:`AgentFabric`."""
    fab = AgentFabric(pki_dir, host_ips)
    try:
        return [run_agent_attack(fab, a) for a in agent_attacks(switch)]
    finally:
        fab.close()


def denied_fraction(outcomes: Sequence[Outcome]) -> float:
    """The fraction of attacks refused (``security.authz_denied_ok``).

    >>> denied_fraction([Outcome("a", "c", True, "PERMISSION_DENIED", "", True),
    ...                  Outcome("b", "c", False, "OK", "", False)])
    0.5
    """
    return sum(o.refused for o in outcomes) / len(outcomes) if outcomes else 0.0


def iter_table(outcomes: Sequence[Outcome]) -> Iterator[str]:
    """Markdown rows: attack, refused, code, message."""
    yield "| attack | refused | code | message |"
    yield "|---|---|---|---|"
    for o in outcomes:
        yield f"| {o.attack} | {'yes' if o.refused else '**no**'} | {o.code} | {o.detail[:160]} |"


__all__ = ["HELD_CALLS", "HELD_P4RT_CALLS", "HeldCalls", "smartnic_attacks", "LiveNic", "live_nic_attacks", "LIVE_STREAMS", "live_fabric_attacks",
           "punt_flood_row",
           "SPOOF_ATTACKER", "SPOOF_RECEIVER", "SPOOF_VICTIM", "AgentAttack", "AgentFabric", "RecordingMover", "agent_attacks", "run_agent_attack",
           "run_agent_attacks", "READY_TIMEOUT_S", "started_switch", "Attack", "AttackFailed", "AttackStream", "CONTROLLER_ELECTION_ID", "COOKIE", "Outcome",
           "IdleStream", "STALLED_READS", "STARVATION_STREAMS", "Victim", "controller_read_ms", "default_attackers",
           "denied_fraction", "iter_table", "open_streams", "p4rt_attacks", "run_attack",
           "run_attacks"]
