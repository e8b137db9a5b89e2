"""Keep the testbed's hosts out of the root namespace: the switch ports' root-namespace
ends (the veths the testbed creates) answer no ARP, route nothing and deliver nothing to
the root namespace's own sockets.

The switches (p4sim, BMv2) read and write their ports with packet sockets, which see a
frame before the kernel's IP stack does, so the root namespace's IP stack has no business
on those interfaces. Left alone it had one: a host that routed an address of the root
namespace onto its NIC got an ARP answer from the root kernel on the switch port (found
by a security audit of the testbed; pinned by tests/testbed/test_rootguard.py) and its
packets reached the root namespace's sockets. :func:`guard_interfaces` closes that per interface:

* sysctls ``arp_ignore=8`` (answer no ARP request at all on it), ``forwarding=0`` (route
  nothing that comes in on it), IPv6 off and ``accept_ra=0``;
* an nftables table (family ``inet``, named :func:`table_name` after the testbed's owner
  process and a random token: one name per run, never shared with a dead run's leftover) dropping every IPv4/IPv6 packet those interfaces bring to the ``input`` and
  ``forward`` hooks. The table is the testbed's own: created by name, recorded in the
  testbed's state, deleted by name at teardown (:func:`remove_table`) — nothing else in
  the ruleset is touched.

>>> print(table_text("astral_rootguard_7", ["s0-eth1", "s0-eth2"]))
table inet astral_rootguard_7 {
  set ports { type ifname; elements = { "s0-eth1", "s0-eth2" } }
  chain input { type filter hook input priority -300; policy accept; iifname @ports drop; }
  chain forward { type filter hook forward priority -300; policy accept; iifname @ports drop; }
}
"""
from __future__ import annotations

import re
import secrets
import shutil
import subprocess
from typing import Sequence

TABLE_PREFIX = "astral_rootguard_"
SYSCTLS = ("net/ipv4/conf/{dev}/arp_ignore=8", "net/ipv4/conf/{dev}/forwarding=0",
           "net/ipv6/conf/{dev}/disable_ipv6=1", "net/ipv6/conf/{dev}/accept_ra=0")
"""Per-interface sysctls :func:`guard_interfaces` writes (``{dev}``: the interface)."""
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


class RootGuardError(Exception):
    """The guard could not be set up (nft refused the table): the message says why."""


TOKEN_BYTES = 4
"""Random bytes in a table's name after the owner's PID (8 hex digits)."""


def table_name(owner_pid: int) -> str:
    """A new guard table name for the testbed run by process ``owner_pid``: the PID (to
    tell whose it is) and :data:`TOKEN_BYTES` random bytes, so that no two runs share a
    name. With the PID alone, a testbed whose owner got a PID that a dead testbed had
    used loaded its ports into the leftover table, and ``down`` of the stale state file
    deleted the live testbed's table (its hosts reached the root namespace again;
    ``tests/testbed/test_rootguard.py``, sec-audit3).

    >>> name = table_name(4242)
    >>> name.startswith("astral_rootguard_4242_"), len(name) - len("astral_rootguard_4242_")
    (True, 8)
    >>> table_name(4242) != table_name(4242)
    True
    """
    return f"{TABLE_PREFIX}{int(owner_pid)}_{secrets.token_hex(TOKEN_BYTES)}"


def table_text(table: str, interfaces: Sequence[str]) -> str:
    """The nftables script of the guard table over ``interfaces`` (names checked)."""
    bad = [i for i in interfaces if not _NAME.match(i)]
    if bad or not re.match(r"^[A-Za-z0-9_]+$", table):
        raise RootGuardError(f"not an interface/table name: {bad or table!r}")
    elements = ", ".join(f'"{i}"' for i in interfaces)
    return (f"table inet {table} {{\n"
            f"  set ports {{ type ifname; elements = {{ {elements} }} }}\n"
            "  chain input { type filter hook input priority -300; policy accept; iifname @ports drop; }\n"
            "  chain forward { type filter hook forward priority -300; policy accept; "
            "iifname @ports drop; }\n}")


def nft_command() -> str:
    """The ``nft`` binary, or "" when nftables is not installed."""
    return shutil.which("nft") or ""


def guard_interfaces(table: str, interfaces: Sequence[str]) -> list[str]:
    """Write the sysctls on every interface and load table ``table``; returns one line per
    thing that could not be done (empty: fully guarded). Without ``nft`` the sysctls still
    close ARP and forwarding; the line says the input drop is missing."""
    problems: list[str] = []
    for dev in interfaces:
        for tmpl in SYSCTLS:
            res = subprocess.run(["sysctl", "-qw", tmpl.format(dev=dev)],
                                 capture_output=True, text=True, check=False)
            if res.returncode != 0 and "ipv6" not in tmpl:      # no IPv6: nothing to close
                problems.append(f"sysctl {tmpl.format(dev=dev)}: {res.stderr.strip()}")
    if not interfaces:
        return problems
    nft = nft_command()
    if not nft:
        return problems + ["nft (nftables) is not installed: the root namespace's input drop on "
                           "the switch ports is missing (apt-get install -y nftables)"]
    if table_exists(table):          # never load into (nor later delete) another run's table
        raise RootGuardError(f"nft table inet {table} exists already: another testbed's; "
                             "not loaded into it")
    res = subprocess.run([nft, "-f", "-"], input=table_text(table, interfaces),
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RootGuardError(f"nft could not load table inet {table}: {res.stderr.strip()}")
    return problems


def table_exists(table: str) -> bool:
    """True when the guard table ``table`` is loaded."""
    nft = nft_command()
    return bool(nft) and subprocess.run([nft, "list", "table", "inet", table],
                                        capture_output=True, check=False).returncode == 0


def remove_table(table: str) -> list[str]:
    """Delete the guard table by name when it is loaded; one line per action taken."""
    if not table or not table_exists(table):
        return []
    subprocess.run([nft_command(), "delete", "table", "inet", table], capture_output=True, check=False)
    return [f"deleted nft table inet {table}"]
