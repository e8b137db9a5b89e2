"""The agent-protocol campaign: mutated messages for every RPC of every service in
``astral_proto/agent.proto`` (``AgentService`` on a host, ``FlowRegistry`` on GOR), drawn
by walking the message descriptors (:mod:`fuzz.protogen`: a field added to the proto is
fuzzed with no change here), sent over gRPC to a live agent and registry
(:mod:`fuzz.agent_targets`, the only module that knows how to start and reach them) as
each kind of caller: the host, another host, GOR, nobody, a forged token.

Checked for every call (a :class:`~fuzz.report.Finding` otherwise):

* ``status`` — never ``UNKNOWN`` or ``INTERNAL`` (an exception escaping a servicer is
  ``UNKNOWN`` "Exception calling application");
* ``hang`` — answered within :data:`CALL_TIMEOUT_S`;
* ``auth`` — a caller the service does not take (``AgentTargets.authorized``) gets
  ``UNAUTHENTICATED`` or ``PERMISSION_DENIED``, whatever the message;
* ``state`` — a refused call (an error status, or a ``MoveReply`` with ``accepted``
  false) leaves the registry's flows and the agent's flows and pending orders unchanged;
* ``ownership`` — every flow in the registry has a source IP of the host that owns it.

After every batch the agent re-registers through its own client and GOR's ``Status``
call must succeed (``alive``): both services still work.

``identities=True`` (``python -m fuzz agent-mtls``) runs the same campaign under mutual
TLS with the testbed's split PKI, the callers being every identity the testbed issues
(:data:`fuzz.agent_targets.MTLS_ROLES`: the monitor and a switch too); a refusal may then
also be the handshake's (``UNAVAILABLE``), and the ``auth`` and ``state`` checks hold for
each identity.

>>> sorted(rpc_names())[:2]
['AgentService/MoveFlow', 'AgentService/Status']
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, Optional

import grpc
from google.protobuf import descriptor as _d
from google.protobuf import message_factory
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from astral_proto import agent_pb2
from fuzz.agent_targets import FLOWS, HOST, HOST_IPS, OTHER_HOST, ROLES, AgentTargets, start_targets
from fuzz.protogen import interesting_int, message_strategy
from fuzz.report import CampaignResult, Progress

CALL_TIMEOUT_S = 10.0
BATCH = 8
SIZES = {"small": 1_000, "full": 20_000}
REFUSED = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)
QUIET_LOGGERS = ("controller.registry", "host.agent")


def _services() -> list[_d.ServiceDescriptor]:
    return list(agent_pb2.DESCRIPTOR.services_by_name.values())


def rpc_names() -> list[str]:
    """``Service/Method`` of every RPC of the agent protocol."""
    return [f"{s.name}/{m.name}" for s in _services() for m in s.methods]


def hints() -> dict[str, st.SearchStrategy[Any]]:
    """Values the targets know, by field name (mixed with the generic ones)."""
    ids = [f.flow_id for f in FLOWS]
    ips = [ip for v in HOST_IPS.values() for ip in v]
    now_ms = st.integers(-120_000, 600_000).map(lambda d: int(time.time() * 1000) + d)
    return {
        "flow_id": st.sampled_from(ids + ["", "f0\x00", "../f0"]),
        "host": st.sampled_from([HOST, OTHER_HOST, "", "controller"]),
        "target_host": st.sampled_from([HOST, OTHER_HOST, "", "controller"]),
        "src_ip": st.sampled_from(ips + ["10.9.9.9", "", "not-an-ip"]),
        "dst_ip": st.sampled_from(["10.1.0.1", "", "::1"]),
        "new_sport": interesting_int(0, 70000).map(lambda v: v & 0xFFFFFFFF),
        "src_port": st.sampled_from([f.sport for f in FLOWS] + [0, 65535]),
        "order_id": st.sampled_from(["o1", "o2", ""]),
        "expires_unix_ms": now_ms,
        "nonce": st.one_of(st.binary(min_size=16, max_size=16).map(bytes.hex), st.just("")),
        "incarnation": st.sampled_from(["i1", "i2", ""]),
        "agent_address": st.sampled_from(["127.0.0.1:1", "", "[::1]:99999"]),
    }


Call = tuple[str, str, Any, str, str, int]


def call_strategy(roles: tuple[str, ...] = ROLES) -> st.SearchStrategy[Call]:
    """(service, method, drawn request, caller role, form, pick) for any RPC: ``form``
    ``drawn`` sends the drawn request; ``valid`` a request the target accepts
    (``AgentTargets.valid_request``, flow ``pick``); ``one_off`` that request with one
    field (number ``pick``) taken from the drawn one."""
    h = hints()
    options = []
    for s in _services():
        for m in s.methods:
            options.append(st.tuples(st.just(s.name), st.just(m.name),
                                     message_strategy(m.input_type, h, depth=3),
                                     st.sampled_from(roles + ("host", "controller") * 2),
                                     st.sampled_from(["drawn", "valid", "one_off", "one_off"]),
                                     st.integers(0, 1 << 16)))
    return st.one_of(*options)


def one_field_from(base: Any, drawn: Any, pick: int) -> Any:
    """``base`` with its field number ``pick`` (mod the number of fields) as in ``drawn``."""
    fields = base.DESCRIPTOR.fields
    if not fields:
        return base
    fd = fields[pick % len(fields)]
    out = type(base)()
    out.CopyFrom(base)
    out.ClearField(fd.name)
    if fd.is_repeated:
        getattr(out, fd.name).extend(getattr(drawn, fd.name))
    elif fd.type == _d.FieldDescriptor.TYPE_MESSAGE:
        if drawn.HasField(fd.name):
            getattr(out, fd.name).CopyFrom(getattr(drawn, fd.name))
    else:
        setattr(out, fd.name, getattr(drawn, fd.name))
    return out


class AgentCampaign:
    """Sends calls to the targets and checks them (see the module docstring)."""

    def __init__(self, targets: AgentTargets, result: CampaignResult) -> None:
        self.t, self.result = targets, result
        self.index = 0
        self._calls: dict[tuple[str, str, str], tuple[Callable[..., Any], Any]] = {}

    def _stub(self, service: str, method: str, role: str) -> tuple[Callable[..., Any], Any]:
        key = (service, method, role)
        if key not in self._calls:
            sdesc = agent_pb2.DESCRIPTOR.services_by_name[service]
            mdesc = sdesc.methods_by_name[method]
            channel, md = self.t.dial(service, role)
            out_cls = message_factory.GetMessageClass(mdesc.output_type)
            self._calls[key] = (channel.unary_unary(
                f"/{sdesc.full_name}/{method}", request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=out_cls.FromString), md)
        return self._calls[key]

    def state(self) -> tuple:
        """Registry and agent state (after the agent settled)."""
        self.t.settle()
        return self.t.registry_state(), self.t.agent_state()

    def run(self, service: str, method: str, drawn: Any, role: str, form: str, pick: int) -> None:
        """One call (``form`` as :func:`call_strategy` says) and its checks."""
        request = drawn
        if form != "drawn":
            valid = self.t.valid_request(service, method, pick)
            if valid is not None:
                request = valid if form == "valid" else one_field_from(valid, drawn, pick)
        self.result.count(f"form.{form}")
        self.index += 1
        self.result.count(f"{service}/{method}")
        before = self.state()
        fn, md = self._stub(service, method, role)
        what = f"{service}/{method} as {role}"
        code, reply = grpc.StatusCode.OK, None
        try:
            reply = fn(request, metadata=md, timeout=CALL_TIMEOUT_S)
        except grpc.RpcError as e:
            code = e.code()
            if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
                self.result.add_finding("status", f"{what} answered {code.name}", index=self.index,
                                        message=f"{e.details()}\n--- request ---\n{request}"[:2000])
            elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
                self.result.add_finding("hang", f"{what} did not answer in {CALL_TIMEOUT_S} s",
                                        index=self.index, message=str(request)[:1500])
        self.result.count(f"{service}/{method}.{role}.{code.name}")
        refusals = REFUSED + ((grpc.StatusCode.UNAVAILABLE,) if self.t.mode == "mtls" else ())
        if not self.t.authorized(service, role) and code not in refusals:
            self.result.add_finding("auth", f"{what} was answered {code.name}", index=self.index,
                                    message=str(request)[:1500])
        refused = code != grpc.StatusCode.OK or getattr(reply, "accepted", True) is False
        after = self.state()
        if refused and after != before:
            self.result.add_finding("state", f"a refused {what} changed the state", index=self.index,
                                    message=f"before {before}\nafter {after}\n--- request ---\n{request}"[:2000])
        owners = {fid: (owner, src) for fid, owner, src, *_ in after[0]}
        bad = [fid for fid, (owner, src) in owners.items() if src not in HOST_IPS.get(owner, [])]
        if bad:
            self.result.add_finding("ownership", "a flow is registered to a host it is not from",
                                    index=self.index, message=f"{bad}: {owners}\n{request}"[:2000])

    def alive(self) -> None:
        """The agent re-registers and GOR's Status works (``alive`` finding otherwise)."""
        try:
            self.t.reset()
            fn, md = self._stub("AgentService", "Status", "controller")
            reply = fn(agent_pb2.StatusRequest(), metadata=md, timeout=CALL_TIMEOUT_S)
            if reply.host != HOST:
                raise RuntimeError(f"Status answered host {reply.host!r}")
        except Exception as e:  # noqa: BLE001 - any failure here is the finding
            self.result.add_finding("alive", "a valid call failed after the batch", index=self.index,
                                    message=f"{type(e).__name__}: {e}")


def run_agent(seed_value: int, calls: int, *, work_dir: Optional[Path] = None,
              size: str = "custom", identities: bool = False) -> CampaignResult:
    """``calls`` calls from ``seed_value`` against a new registry and agent
    (``identities``: mutual TLS and every identity of the testbed, module docstring)."""
    result = CampaignResult("agent-mtls" if identities else "agent", seed=seed_value, size=size)
    targets = start_targets("mtls" if identities else "tokens", work_dir)
    campaign = AgentCampaign(targets, result)
    examples = max(1, -(-calls // BATCH))
    progress = Progress(result.campaign, calls)

    @seed(seed_value)
    @settings(max_examples=examples, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(call_strategy(targets.roles), min_size=BATCH, max_size=BATCH))
    def drive(batch: list[Call]) -> None:
        for call in batch:
            if campaign.index >= calls:
                return
            campaign.run(*call)
            progress.update(campaign.index)
        campaign.alive()

    quiet = [logging.getLogger(n) for n in QUIET_LOGGERS]
    levels = [lg.level for lg in quiet]
    for lg in quiet:       # every refused call is logged as a warning: thousands of lines
        lg.setLevel(logging.ERROR)
    t0 = time.monotonic()
    try:
        drive()
    finally:
        elapsed = time.monotonic() - t0
        targets.close()
        for lg, level in zip(quiet, levels):
            lg.setLevel(level)
    return result.finish(campaign.index, elapsed, "calls")
