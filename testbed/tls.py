"""TLS on the testbed's P4Runtime channels: who gets which certificate, and how each
tool that talks to a switch finds its credentials.

At ``up`` (unless ``--insecure``) the testbed makes a throw-away CA under ``build/pki/``
(:class:`testbed.pki.FabricPki`) with a certificate for every switch, for the controller
(``controller``) and for every host, and records the directory in
``build/testbed-state.json`` (``pki``; GOR's agents use the same certificates for their
mutual TLS: scenarios/gor_session.py). Every switch, on either target, starts with
simple_switch_grpc's ``--grpc-server-ssl --grpc-server-cacert ca.pem --grpc-server-cert
SW.pem --grpc-server-key SW.key --grpc-server-with-client-auth`` (after ``--``): P4Runtime
only over TLS, from a client holding a certificate of this CA. The controller (the
testbed's programmer, GOR, ``python -m testbed.traffic``) connects with the
``controller`` certificate and checks that each switch presents *its own* certificate;
``make shell`` passes the same files to p4runtime-shell (``--ssl --cacert --cert
--private-key``).

>>> import tempfile
>>> fab = type("F", (), {"switches": [type("S", (), {"name": "s0"})()],
...                      "hosts": [type("H", (), {"name": "b0s0"})()]})()
>>> sorted(pki_names(fab))
['b0s0', 'controller', 's0']
>>> root = Path(tempfile.mkdtemp()) / "pki"
>>> pki = create_fabric_pki(fab, root)
>>> shell_tls_args(root)[:3] == ["--ssl", "--cacert", str(root / "ca.pem")]
True
>>> controller_tls(root).for_server("s0").server_name
's0'
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from controller.p4rt.tls import ClientTls
from testbed.pki import FabricPki, TlsFiles

if TYPE_CHECKING:  # the controller's client library, imported when a credential is built
    from controller.p4rt.tls import ClientTls

PKI_DIR = Path(__file__).resolve().parents[1] / "build" / "pki"
CONTROLLER = "controller"
"""The party name of the controller's certificate (also used by ``make shell``)."""


def pki_names(fabric: Any) -> list[str]:
    """Every party of ``fabric`` that gets a certificate: switches, the controller, hosts."""
    return [*(sw.name for sw in fabric.switches), CONTROLLER, *(h.name for h in fabric.hosts)]


def create_fabric_pki(fabric: Any, root: Path = PKI_DIR) -> FabricPki:
    """A new CA and certificates for :func:`pki_names` under ``root`` (replacing any;
    the directory readable by its owner only)."""
    pki = FabricPki.create(root, pki_names(fabric))
    root.chmod(0o700)
    return pki


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


def controller_tls(pki_dir: Path) -> "ClientTls":
    """The controller's P4Runtime credentials from the testbed PKI at ``pki_dir``
    (FileNotFoundError / KeyError naming what is missing)."""
    files = FabricPki.load(pki_dir).files(CONTROLLER)
    return ClientTls(files.ca_cert, files.cert, files.key)


def recorded_controller_tls(pki_dir: Optional[str]) -> Optional["ClientTls"]:
    """:func:`controller_tls` of a state's ``pki``, None when it recorded none
    (a testbed started with ``--insecure``).

    >>> recorded_controller_tls("") is None
    True
    """
    return controller_tls(Path(pki_dir)) if pki_dir else None


def shell_tls_args(pki_dir: Path) -> list[str]:
    """p4runtime-shell's (0.0.6) options to connect as the controller over TLS."""
    files = FabricPki.load(pki_dir).files(CONTROLLER)
    return ["--ssl", "--cacert", str(files.ca_cert), "--cert", str(files.cert),
            "--private-key", str(files.key)]


__all__ = ["CONTROLLER", "PKI_DIR", "controller_tls", "create_fabric_pki", "pki_names",
           "recorded_controller_tls", "shell_tls_args", "switch_tls_options"]
