"""TLS on the testbed's P4Runtime channels: who gets which certificate, and how each
tool that talks to a switch finds its credentials.

At ``up`` (unless ``--insecure``) the testbed makes a throw-away PKI under ``build/pki/``
(:meth:`testbed.pki.FabricPki.create_split`): a CA for the control plane (``controller``,
``monitor``), one for the switches and one for the hosts, a certificate for every party,
and records the directory in ``build/testbed-state.json`` (``pki``; GOR's agents use the
same certificates for their mutual TLS: scenarios/gor_session.py). Every switch, on
either target, starts with simple_switch_grpc's ``--grpc-server-ssl --grpc-server-cacert
SW.trust.pem --grpc-server-cert SW.pem --grpc-server-key SW.key
--grpc-server-with-client-auth`` (after ``--``): P4Runtime only over TLS, and only from a
client whose certificate the *control* CA signed — the controller's or the monitor's; a
host's or a switch's certificate fails the handshake, on BMv2 as on p4sim. A p4sim switch
also gets ``--p4rt-policy build/pki/p4rt-policy.yaml`` (:data:`POLICY_FILE`, written at
``up``): the controller may program it, the monitor only read (BMv2 has no such option:
there the monitor's certificate could write too). The controller (the testbed's
programmer, GOR, ``python -m testbed.traffic``) connects with the ``controller``
certificate and checks that each switch presents *its own* certificate, signed by the
switches' CA; the monitor reads with the ``monitor`` certificate; ``make shell`` passes
the controller's files to p4runtime-shell (``--ssl --cacert --cert --private-key``).

>>> import tempfile
>>> fab = type("F", (), {"switches": [type("S", (), {"name": "s0"})()],
...                      "hosts": [type("H", (), {"name": "b0s0"})()]})()
>>> sorted(pki_names(fab))
['b0s0', 'controller', 'monitor', 's0']
>>> root = Path(tempfile.mkdtemp()) / "pki"
>>> pki = create_fabric_pki(fab, root)
>>> shell_tls_args(root)[:3] == ["--ssl", "--cacert", str(root / "ca-switches.pem")]
True
>>> controller_tls(root).for_server("s0").server_name
's0'
>>> monitor_tls(root).ca_cert.name, policy_path(root).name
('ca-switches.pem', 'p4rt-policy.yaml')
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from controller.p4rt.tls import ClientTls
from testbed.pki import FabricPki, TlsFiles, write_private

PKI_DIR = Path(__file__).resolve().parents[1] / "build" / "pki"
CONTROLLER = "controller"
"""The party name of the controller's certificate (also used by ``make shell``)."""
MONITOR = "monitor"
"""The party name of the monitor's certificate (P4Runtime reads only)."""
P4RT_POLICY_TEXT = f"""\
# P4Runtime authorization of the testbed's p4sim switches (p4sim switch --p4rt-policy FILE;
# the format: p4sim/README.md). Identities are the common names of client certificates
# the control CA signed.
version: 1
roles:
  "":                      # P4Runtime's default role: full pipeline access
    can_push_pipeline: true
    receives_packet_ins: true
  monitor:                 # Read and GetForwardingPipelineConfig only
    read_only: true
identities:
  {CONTROLLER}: [""]
  {MONITOR}: [monitor]
"""
"""The testbed's policy: the controller programs, the monitor reads, nobody else."""
POLICY_FILE = "p4rt-policy.yaml"
"""The p4sim switches' P4Runtime policy, beside the certificates (:func:`policy_path`)."""


def pki_kinds(fabric: Any) -> dict[str, str]:
    """Every party of ``fabric`` that gets a certificate, with its kind
    (:data:`testbed.pki.KINDS`): switches, the controller, the monitor, hosts."""
    return {**{sw.name: "switch" for sw in fabric.switches}, CONTROLLER: "controller",
            MONITOR: "monitor", **{h.name: "host" for h in fabric.hosts}}


def pki_names(fabric: Any) -> list[str]:
    """The parties of :func:`pki_kinds`."""
    return list(pki_kinds(fabric))


def policy_path(pki_dir: Path) -> Path:
    """Where ``up`` writes the p4sim switches' ``--p4rt-policy`` file."""
    return Path(pki_dir) / POLICY_FILE


def create_fabric_pki(fabric: Any, root: Path = PKI_DIR) -> FabricPki:
    """A new split PKI for :func:`pki_kinds` under ``root`` (replacing any; the directory
    readable by its owner only) and the switches' P4Runtime policy beside it
    (:data:`P4RT_POLICY_TEXT`: ``controller`` programs,
    ``monitor`` reads)."""
    pki = FabricPki.create_split(root, pki_kinds(fabric))
    root.chmod(0o700)
    policy_path(root).write_text(P4RT_POLICY_TEXT, encoding="utf-8")
    return pki


def host_view(pki_dir: Path, host: str) -> Path:
    """What host ``host`` sees at ``pki_dir`` on the testbed: a directory of its own
    (``pki-hosts/HOST`` beside the PKI) holding only its certificate, its key, its trust
    bundle and the CA certificates (:func:`make_host_views`)."""
    return Path(pki_dir).parent / "pki-hosts" / host


def make_host_views(pki: FabricPki, hosts: list[str]) -> dict[str, Path]:
    """Fill :func:`host_view` for each host (replacing what was there; directories 0700,
    the key 0600 from its first byte); returns host → directory. The testbed mounts each
    over ``build/pki`` inside that host's Mininet namespace (``privateDirs``), so a
    program on a host finds its own key where it always does and no other party's key.
    Not a security boundary against root on a host (README, "What a compromised host can
    read")."""
    out = {}
    for host in hosts:
        view = host_view(pki.root, host)
        view.mkdir(parents=True, exist_ok=True)
        view.chmod(0o700)
        view.parent.chmod(0o700)
        for old in view.iterdir():
            old.unlink()
        files = pki.files(host)
        (view / files.cert.name).write_bytes(files.cert.read_bytes())
        (view / files.ca_cert.name).write_bytes(files.ca_cert.read_bytes())
        write_private(view / files.key.name, files.key.read_bytes())
        for ca in pki.root.glob("ca*.pem"):
            (view / ca.name).write_bytes(ca.read_bytes())
        out[host] = view
    return out


def switch_tls_options(files: TlsFiles) -> list[str]:
    """simple_switch_grpc's target options for TLS with client authentication.

    >>> switch_tls_options(TlsFiles(Path("ca.pem"), Path("s0.pem"), Path("s0.key")))
    ... # doctest: +NORMALIZE_WHITESPACE
    ['--grpc-server-ssl', '--grpc-server-cacert', 'ca.pem', '--grpc-server-cert', 's0.pem',
     '--grpc-server-key', 's0.key', '--grpc-server-with-client-auth']
    """
    return ["--grpc-server-ssl", "--grpc-server-cacert", str(files.ca_cert),
            "--grpc-server-cert", str(files.cert), "--grpc-server-key", str(files.key),
            "--grpc-server-with-client-auth"]


def p4rt_client_tls(pki_dir: Path, party: str) -> ClientTls:
    """Party ``party``'s P4Runtime credentials from the testbed PKI at ``pki_dir``: its
    certificate and key, and the switches' CA to verify a switch against
    (FileNotFoundError / KeyError naming what is missing)."""
    pki = FabricPki.load(pki_dir)
    files = pki.files(party)
    return ClientTls(pki.ca_cert("switches"), files.cert, files.key)


def controller_tls(pki_dir: Path) -> ClientTls:
    """The controller's P4Runtime credentials (:func:`p4rt_client_tls`)."""
    return p4rt_client_tls(pki_dir, CONTROLLER)


def monitor_tls(pki_dir: Path) -> ClientTls:
    """The monitor's P4Runtime credentials (:func:`p4rt_client_tls`): Reads only."""
    return p4rt_client_tls(pki_dir, MONITOR)


def recorded_controller_tls(pki_dir: Optional[str]) -> Optional["ClientTls"]:
    """:func:`controller_tls` of a state's ``pki``, None when it recorded none
    (a testbed started with ``--insecure``).

    >>> recorded_controller_tls("") is None
    True
    """
    return controller_tls(Path(pki_dir)) if pki_dir else None


def recorded_monitor_tls(pki_dir: Optional[str]) -> Optional["ClientTls"]:
    """:func:`monitor_tls` of a state's ``pki``, None when it recorded none.

    >>> recorded_monitor_tls(None) is None
    True
    """
    return monitor_tls(Path(pki_dir)) if pki_dir else None


def shell_tls_args(pki_dir: Path) -> list[str]:
    """p4runtime-shell's (0.0.6) options to connect as the controller over TLS."""
    tls = controller_tls(pki_dir)
    return ["--ssl", "--cacert", str(tls.ca_cert), "--cert", str(tls.cert),
            "--private-key", str(tls.key)]


__all__ = ["host_view", "make_host_views", "CONTROLLER", "MONITOR", "PKI_DIR", "POLICY_FILE", "controller_tls",
           "create_fabric_pki", "monitor_tls", "p4rt_client_tls", "pki_kinds", "pki_names",
           "policy_path", "recorded_controller_tls", "recorded_monitor_tls", "shell_tls_args",
           "switch_tls_options"]
