"""FORNAX's threat model against a SmartNIC, attacked with certificates the VPC testbed
really issues (:func:`testbed.vpcnet.create_vpc_pki`: the split PKI, a certificate per
NIC manager, each NIC's own ``--p4rt-policy``).

NIC B runs as the testbed starts it (``python -m p4sim switch`` with its certificate, TLS
with client authentication, ``--p4rt-policy p4rt-policy-nicB.yaml``; no interfaces, no
root), programmed by *its* manager's certificate: the FORNAX pipeline pushed, a clone
session written. Each attack of :func:`testbed.attacks.smartnic_attacks` then dials it
with NIC A's manager certificate, NIC A's switch certificate, the operator's read-only
certificate, or a certificate of the fabric's PKI (another CA); each must be refused
with the status P4Runtime names and leave NIC B's state as its manager left it (read back
before and after). Before this test's change both managers presented the one
``controller`` certificate, so NIC A's manager could program NIC B (~35 s).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.p4rt.tls import ClientTls
from fornax.manager import FornaxManager, ManagerConfig
from scenarios.fornax import scenario_policy
from testbed.attacks import (LiveNic, Outcome, Victim, live_nic_attacks, run_attack,
                             smartnic_attacks, started_switch)
from testbed.pki import FabricPki
from testbed.tls import CONTROLLER
from testbed.vpcnet import create_vpc_pki, manager_identity, nic_policy_path, nic_policy_text

NICS = ("nicA", "nicB")
FOREIGN = {"fabric-controller": "controller", "fabric-switch": "b0r0l0", "fabric-host": "b0s0"}


@pytest.fixture(scope="module")
def nic_b(tmp_path_factory: pytest.TempPathFactory, fornax_build: tuple[Path, Path]
          ) -> Iterator[Victim]:
    root = tmp_path_factory.mktemp("vpcpki")
    pki = create_vpc_pki(root / "pki", NICS)
    fabric = FabricPki.create_split(root / "fabric-pki", {"controller": "controller",
                                                          "b0r0l0": "switch", "b0s0": "host"})
    with started_switch("p4sim", pki.root, "nicB", 2, root / "logs",
                        policy=nic_policy_path(pki.root, "nicB")) as addr:
        with Victim(addr, 2, "nicB", pki.root, *fornax_build,
                    identity=manager_identity("nicB")) as v:
            for name, party in FOREIGN.items():
                v.add_party(name, fabric.files(party))
            yield v


def _attacks() -> list[Any]:
    return smartnic_attacks(manager_identity("nicA"), "nicA", CONTROLLER, foreign=list(FOREIGN))


#: the status each attack must end with (the first refused RPC's)
EXPECTED = {
    "peer-manager": "UNAVAILABLE",                  # nicA's managers' CA: nicB trusts it not
    "peer-nic": "UNAVAILABLE",                      # switches' CA: fails the handshake
    "operator-starves-streams": "RESOURCE_EXHAUSTED",
    "operator-holds-workers": "RESOURCE_EXHAUSTED",     # Reads with no request (sec-red2-s49)
    "operator": "PERMISSION_DENIED",               # read-only role
    "fabric": "UNAVAILABLE",                        # another PKI's CA: fails the handshake
}


def _expected(name: str) -> str:
    return next(code for prefix, code in EXPECTED.items() if name.startswith(prefix))


@pytest.mark.parametrize("attack", _attacks(), ids=lambda a: a.name)
def test_each_attack_on_a_nic_is_refused_and_leaves_its_state(nic_b: Victim, attack: Any) -> None:
    out: Outcome = run_attack(nic_b, attack)
    assert out.state_kept, out.detail
    assert out.refused, f"{attack.name} went through: {out.detail}"
    assert out.code == _expected(attack.name), out.detail


def test_the_policy_refuses_another_nics_manager_should_its_ca_be_trusted(
        tmp_path: Path, fornax_build: tuple[Path, Path]) -> None:
    """Defence in depth (p4sim): NIC B made to trust NIC A's managers' CA too, as a
    mistaken deployment would; its policy still names only nicB-manager, so nicA's
    manager gets past the handshake and no further (PERMISSION_DENIED, state kept)."""
    pki = create_vpc_pki(tmp_path / "pki", NICS)
    trust = pki.root / "nicB.trust.pem"
    trust.write_bytes(trust.read_bytes() + (pki.root / "ca-manager-nicA.pem").read_bytes())
    with started_switch("p4sim", pki.root, "nicB", 2, tmp_path / "logs",
                        policy=nic_policy_path(pki.root, "nicB")) as addr:
        with Victim(addr, 2, "nicB", pki.root, *fornax_build,
                    identity=manager_identity("nicB")) as v:
            for attack in _attacks()[:5]:
                out = run_attack(v, attack)
                assert out.refused and out.state_kept and out.code == "PERMISSION_DENIED", out
                assert "identity 'nicA-manager' holds no role on this switch" in out.detail


def test_the_nics_own_manager_and_the_operator_still_work(nic_b: Victim) -> None:
    """The refusals above are not a switch that refuses everything: nicB's manager writes,
    the operator reads (its role is read-only, not absent)."""
    nic_b.restore()
    assert nic_b.snapshot()[1:] == (True, True)
    with nic_b.channel(CONTROLLER) as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        got = list(stub.Read(p4runtime_pb2.ReadRequest(device_id=2, entities=[
            p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]), timeout=10))
    assert got is not None


def test_each_nic_policy_names_only_its_own_manager(tmp_path: Path) -> None:
    pki = create_vpc_pki(tmp_path / "pki", NICS)
    for nic in NICS:
        text = nic_policy_path(pki.root, nic).read_text()
        assert text == nic_policy_text(nic)
        others = [manager_identity(n) for n in NICS if n != nic]
        assert manager_identity(nic) in text and not any(o in text for o in others)
    # a NIC trusts the control CA (the operator) and its own manager's CA, nothing else
    assert pki.trusted_names("nicA") == ["astral-p4 control CA", "astral-p4 nicA manager CA"]
    assert pki.trusted_names("nicA-manager") == ["astral-p4 switches CA"]


def test_a_nic_under_its_running_manager_refuses_the_live_attacks(
        tmp_path: Path, fornax_build: tuple[Path, Path]) -> None:
    """What the scenario does on the live testbed, without root: nicB's real FORNAX
    manager (its own certificate) programs it and stays primary while
    :func:`testbed.attacks.live_nic_attacks` tries everything with nicA's manager and
    switch certificates."""
    pki = create_vpc_pki(tmp_path / "pki", NICS)
    policy = tmp_path / "vpc.policy"
    policy.write_text(scenario_policy())
    with started_switch("p4sim", pki.root, "nicB", 2, tmp_path / "logs",
                        policy=nic_policy_path(pki.root, "nicB")) as addr:
        files = pki.files(manager_identity("nicB"))
        mgr = FornaxManager(ManagerConfig(
            nic="nicB", grpc_addr=addr, device_id=2, policy_path=policy,
            p4info=fornax_build[0], device_config=fornax_build[1],
            tls=ClientTls(files.ca_cert, files.cert, files.key, server_name="nicB")))
        mgr.start()
        try:
            parties = {who: ClientTls(pki.ca_cert("switches"), pki.files(who).cert,
                                      pki.files(who).key)
                       for who in (manager_identity("nicA"), "nicA")}
            target = LiveNic(addr, 2, "nicB", parties, *fornax_build,
                             election_id=mgr.cfg.election_id[1])
            results = [r for who in parties for r in live_nic_attacks(target, who)]
            assert len(results) == 12 and {code for _, code, _ in results} == {"UNAVAILABLE"}, results
            stats = mgr.stats()
            assert stats["mastership_losses"] == 0 and mgr.nic.conn.is_primary
        finally:
            mgr.stop()
