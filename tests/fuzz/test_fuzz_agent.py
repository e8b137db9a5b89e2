"""The agent-protocol campaign at ``make test`` size (fuzz/agent.py) against a live
registry and agent: no finding, every RPC of the proto called, valid orders accepted.
And the campaign catches what it is there to catch: a servicer that raises, an
unauthenticated call that goes through, a refused call that changes the state."""
from __future__ import annotations

import grpc
import pytest
from hypothesis import HealthCheck, given, settings

from astral_proto import agent_pb2
from controller.registry import RegistryError
from fuzz.agent import SIZES, AgentCampaign, call_strategy, rpc_names, run_agent
from fuzz.agent_targets import start_targets
from fuzz.report import CampaignResult


def test_small_campaign_finds_nothing() -> None:
    result = run_agent(1, SIZES["small"], size="small")
    assert result.ok, [(f.kind, f.what, f.index, f.message[:300]) for f in result.findings]
    assert result.inputs == SIZES["small"]
    for rpc in rpc_names():
        assert result.counts.get(rpc, 0) > 0, rpc
    assert result.counts.get("AgentService/MoveFlow.controller.OK", 0) > 0, result.counts
    assert result.counts.get("FlowRegistry/RegisterFlows.host.OK", 0) > 0, result.counts


def test_drawn_messages_set_every_field_of_every_request_type() -> None:
    """Walking the descriptors covers every field, so a field added to the proto (an
    order's nonce, expiry, …) is fuzzed with no change to the campaign."""
    seen: dict[str, set[str]] = {}

    @settings(max_examples=300, database=None, suppress_health_check=list(HealthCheck))
    @given(call_strategy())
    def collect(call) -> None:  # type: ignore[no-untyped-def]
        drawn = call[2]
        seen.setdefault(drawn.DESCRIPTOR.full_name, set()).update(
            fd.name for fd, _ in drawn.ListFields())

    collect()
    for service in agent_pb2.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            want = {f.name for f in method.input_type.fields}
            assert want <= seen.get(method.input_type.full_name, set()) | set(), \
                (method.full_name, want - seen.get(method.input_type.full_name, set()))


def test_the_campaign_reports_a_servicer_that_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    targets = start_targets()
    try:
        def boom(*a: object, **k: object) -> None:
            raise RuntimeError("boom")
        monkeypatch.setattr(targets.registry, "report", boom)
        result = CampaignResult("agent", seed=0, size="test")
        campaign = AgentCampaign(targets, result)
        report = agent_pb2.MoveReport(host="b0s0", order_id="o1", flow_id="f0", done=True, sport=1)
        campaign.run("FlowRegistry", "ReportMove", report, "host", "drawn", 0)
        assert [f.kind for f in result.findings] == ["status"]
        assert "UNKNOWN" in result.findings[0].what
    finally:
        targets.close()


def test_the_campaign_reports_an_unauthenticated_call_that_goes_through(
        monkeypatch: pytest.MonkeyPatch) -> None:
    targets = start_targets()
    try:
        monkeypatch.setattr(targets, "authorized", lambda service, role: False)
        result = CampaignResult("agent", seed=0, size="test")
        AgentCampaign(targets, result).run("AgentService", "Status", agent_pb2.StatusRequest(),
                                           "controller", "drawn", 0)
        assert [f.kind for f in result.findings] == ["auth"]
    finally:
        targets.close()


def test_the_campaign_reports_a_refused_call_that_changed_the_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    targets = start_targets()
    try:
        real = targets.registry.register

        def register_then_refuse(host, agent_address, incarnation, flows):  # type: ignore[no-untyped-def]
            real(host, agent_address, incarnation, [])          # forgets the host's flows
            raise RegistryError(grpc.StatusCode.PERMISSION_DENIED, "refused after the fact")
        monkeypatch.setattr(targets.registry, "register", register_then_refuse)
        result = CampaignResult("agent", seed=0, size="test")
        campaign = AgentCampaign(targets, result)
        req = targets.valid_request("FlowRegistry", "RegisterFlows", 0)
        campaign.run("FlowRegistry", "RegisterFlows", req, "host", "drawn", 0)
        assert "state" in [f.kind for f in result.findings], result.findings
    finally:
        targets.close()
