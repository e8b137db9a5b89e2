"""The policy file: every malformed statement named by file, line and field (never a
traceback), and the decisions of the evaluation (security groups, routes, spoofing,
load-balancer backends chosen alike on every NIC, kept across a change)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fornax.nicview import NicView
from fornax.policy import Conn, PolicyError, ip, parse_policy
from test_fornax_manager import POLICY

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("line, message", [
    ("vpc green vni 0", "p:19: vpc green: field 'vni': 0 is not in 1..16777215"),
    ("vpc green vni 100", "p:19: vpc green: field 'vni': 100 is another VPC's"),
    ("vpc green", "p:19: vpc green: field 'vni': missing"),
    ("vpc green vni 5 color red", "p:19: vpc green: field 'color': unknown field (expected: vni)"),
    ("vm x vpc blue nic nicA port 300 ip 10.0.0.9 mac 02:00:00:00:09:09",
     "p:19: vm x: field 'port': 300 is not in 2..254"),
    ("vm x vpc blue nic nicA port 2 ip 10.0.0.9 mac 02:00:00:00:09:09",
     "p:19: vm x: field 'port': port 2 of nicA is a1's"),
    ("vm x vpc blue nic nicA port 9 ip 10.0.0.2 mac 02:00:00:00:09:09",
     "p:19: vm x: field 'ip': 10.0.0.2 is b1's in VPC blue"),
    ("vm x vpc blue nic nicA port 9 ip 10.0.0.9 mac 02:00:00:00:09",
     "p:19: vm x: field 'mac': '02:00:00:00:09' is not a MAC address (aa:bb:cc:dd:ee:ff)"),
    ("vm x vpc pink nic nicA port 9 ip 10.0.0.9 mac 02:00:00:00:09:09",
     "p:19: vm x: field 'vpc': no vpc named 'pink' declared before"),
    ("vm a1 vpc blue nic nicA port 9 ip 10.0.0.9 mac 02:00:00:00:09:09",
     "p:19: vm a1: field 'name': declared twice"),
    ("rule web inbound allow tcp 80 from 0.0.0.0/0",
     "p:19: rule web: field 'direction': 'inbound' is not ingress or egress"),
    ("rule web ingress allow tpc 80 from 0.0.0.0/0",
     "p:19: rule web: field 'proto': 'tpc' is not tcp, udp, icmp or any"),
    ("rule web ingress allow tcp 90-80 from 0.0.0.0/0",
     "p:19: rule web: field 'ports': 90-80: the range is empty"),
    ("rule web ingress allow icmp 80 from 0.0.0.0/0",
     "p:19: rule web: field 'ports': ports need tcp or udp, not icmp"),
    ("rule web ingress allow tcp 80 to 0.0.0.0/0",
     "p:19: rule web: field 'peer': ingress takes 'from PREFIX', not 'to'"),
    ("rule web ingress allow tcp 80 from 10.0.0.1/24",
     "p:19: rule web: field 'peer': '10.0.0.1/24' is not an IPv4 prefix"),
    ("route blue 10.0.0.0/24 direct", "p:19: route blue: field 'prefix': 10.0.0.0/24 has a route already"),
    ("route blue 10.1.0.0/16 nowhere", "p:19: route blue: field 'action': 'nowhere' is not direct or drop"),
    ("lb blue 10.0.0.1:80 tcp 10.0.0.2:80", "p:19: lb blue: field 'vip': 10.0.0.1:80: the address is a VM's"),
    ("lb blue 10.0.0.101:80 tcp 10.0.0.1:8080",
     "p:19: lb blue: field 'backends': 10.0.0.1:8080 is a backend of another VIP"),
    ("lb blue 10.0.0.101:80 tcp 10.0.0.77:8080",
     "p:19: lb blue: field 'backends': 10.0.0.77:8080: no VM of blue has this address"),
    ("lb blue 10.0.0.101 tcp 10.0.0.2:80", "p:19: lb blue: field 'vip': '10.0.0.101' is not ADDRESS:PORT"),
    ("firewall on", "p:19: unknown statement 'firewall' (nic, vpc, vm, rule, route, lb)"),
])
def test_bad_statements_are_named_by_line_and_field(line: str, message: str) -> None:
    with pytest.raises(PolicyError) as exc:
        parse_policy(POLICY + line + "\n", "p")
    assert str(exc.value).startswith(message)


def test_unknown_group_names_the_vm_line() -> None:
    bad = POLICY.replace("groups db", "groups dbx")
    with pytest.raises(PolicyError, match=r"^p:6: vm a3: field 'groups': no rule names group 'dbx'"):
        parse_policy(bad, "p")


def test_check_policy_command(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.policy", tmp_path / "bad.policy"
    good.write_text(POLICY)
    bad.write_text(POLICY + "vpc x vni nine\n")
    ok = subprocess.run([sys.executable, "-m", "fornax", "check-policy", str(good)], cwd=REPO,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "5 vms" in ok.stdout
    no = subprocess.run([sys.executable, "-m", "fornax", "check-policy", str(bad)], cwd=REPO,
                        capture_output=True, text=True, timeout=60)
    assert no.returncode == 1 and no.stderr.strip() == \
        f"{bad}:19: vpc x: field 'vni': 'nine' is not a number"
    assert "Traceback" not in no.stderr


def test_decisions() -> None:
    p = parse_policy(POLICY, "p")
    blue, red = 100, 200
    a1, b1, a3 = ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3")
    assert p.evaluate("nicA", Conn(blue, 6, a1, 4000, b1, 22), "a1").allowed   # b1's rules: nicB's
    assert not p.evaluate("nicB", Conn(blue, 6, a1, 4000, b1, 22)).allowed
    assert p.evaluate("nicB", Conn(blue, 6, a1, 4000, b1, 80)).allowed
    assert not p.evaluate("nicA", Conn(blue, 6, a1, 4000, a3, 80), "a1").allowed
    assert p.evaluate("nicA", Conn(blue, 6, a1, 4000, a3, 5432), "a1").allowed
    spoof = p.evaluate("nicA", Conn(blue, 6, a3, 4000, b1, 80), "a1")
    assert not spoof.allowed and "spoofed" in spoof.reason
    assert p.evaluate("nicA", Conn(red, 6, a1, 4000, b1, 80), "a2").src_vm == "a2"
    assert not p.evaluate("nicA", Conn(blue, 6, a1, 4000, ip("10.9.0.1"), 80), "a1").allowed
    assert not p.evaluate("nicA", Conn(999, 6, a1, 4000, b1, 80), "a1").allowed


def test_backends_are_chosen_alike_and_kept() -> None:
    text = POLICY.replace("lb blue 10.0.0.100:80 tcp 10.0.0.1:8080",
                          "lb blue 10.0.0.100:80 tcp 10.0.0.1:8080 10.0.0.2:8080 10.0.0.3:8080")
    text = text.replace("rule db ingress allow tcp 5432", "rule db ingress allow tcp 8080")
    p = parse_policy(text, "p")
    vip = ip("10.0.0.100")
    counts: dict[int, int] = {}
    for port in range(2000, 2300):
        c = Conn(100, 6, ip("10.0.0.2"), port, vip, 80)
        d = p.evaluate("nicB", c, "b1")             # b1 connects from its port on nicB
        assert d.allowed and d.backend is not None
        counts[d.backend[0]] = counts.get(d.backend[0], 0) + 1
        back = p.evaluate(p.vms[d.dst_vm].nic, c)   # the backend's NIC chooses the same
        assert back.backend == d.backend
    assert len(counts) == 3 and min(counts.values()) > 60
    # a backend removed: the connections of the others keep theirs
    fewer = parse_policy(text.replace(" 10.0.0.3:8080", ""), "p")
    for port in range(2000, 2100):
        c = Conn(100, 6, ip("10.0.0.2"), port, vip, 80)
        before = p.evaluate("nicB", c, "b1").backend
        if before[0] != ip("10.0.0.3"):
            assert fewer.evaluate("nicB", c, "b1", keep_backend=before).backend == before


def test_a_change_bumps_only_the_scopes_it_affects() -> None:
    view = NicView("nicA")
    view.load(parse_policy(POLICY, "p"))
    v0 = dict(view.versions)
    text = POLICY.replace("rule db ingress allow tcp 5432", "rule db ingress allow tcp 5433")
    changed = view.load(parse_policy(text, "p"))
    assert changed == {view.scope_of_vm["a3"], view.pair_scope_of_vpc["blue"]}
    assert view.versions[view.scope_of_vm["a1"]] == v0[view.scope_of_vm["a1"]]
    routes = view.load(parse_policy(text.replace("route red 10.0.0.0/24 direct",
                                                   "route red 10.0.0.0/25 direct"), "p"))
    assert routes == {view.scope_of_vm["a2"], view.pair_scope_of_vpc["red"]}


def test_a_reply_first_is_taken_the_way_its_connection_was_opened() -> None:
    """A SYN+ACK or an ACK seen before the SYN (a connection picked up mid-stream) is
    allowed when the connection's own direction is; a pure SYN only in its own."""
    view = NicView("nicA")
    view.load(parse_policy(POLICY, "p"))
    reply = Conn(100, 6, ip("10.0.0.2"), 80, ip("10.0.0.1"), 40000)   # b1:80 -> a1
    assert not view.decide(reply, None, 0x02).allowed                  # a SYN: a1 takes no 40000
    for flags in (0x12, 0x10, 0x11):
        d = view.decide(reply, None, flags)
        assert d.allowed and (d.src_vm, d.dst_vm) == ("b1", "a1")
