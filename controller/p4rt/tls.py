"""TLS credentials of a P4Runtime client (the switch side: simple_switch_grpc's
``--grpc-server-ssl`` options, or ``python -m p4sim switch``'s, which are the same).

A :class:`ClientTls` names PEM files: the CA the switch's certificate must verify
against, and — for a switch started with ``--grpc-server-with-client-auth`` — the
client's own certificate and key. ``server_name`` is the name the switch's certificate
must carry (gRPC's ``ssl_target_name_override``): the fabric programmer sets it to the
switch's name, so a switch is accepted only with *its* certificate, whatever address it
listens on. Without it the address's host must be in the certificate (the testbed's
certificates carry ``localhost`` and ``127.0.0.1``).

>>> tls = ClientTls(Path("build/pki/ca.pem"), Path("build/pki/controller.pem"),
...                 Path("build/pki/controller.key"))
>>> tls.for_server("b0r0l0").server_name
'b0r0l0'
>>> ClientTls(Path("ca.pem"), cert=Path("c.pem"))
Traceback (most recent call last):
...
ValueError: a client certificate needs its key (and a key its certificate): cert=c.pem key=None
>>> ClientTls(Path("/nonexistent/ca.pem")).credentials()
Traceback (most recent call last):
...
FileNotFoundError: /nonexistent/ca.pem: cannot read this TLS file ...
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import grpc


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FileNotFoundError(f"{path}: cannot read this TLS file ({exc.strerror or exc})") from None


@dataclass(frozen=True, slots=True)
class ClientTls:
    """What a P4Runtime client presents and trusts (see the module docstring)."""

    ca_cert: Path
    cert: Optional[Path] = None
    key: Optional[Path] = None
    server_name: Optional[str] = None

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError("a client certificate needs its key (and a key its certificate): "
                             f"cert={self.cert} key={self.key}")

    def for_server(self, name: str) -> "ClientTls":
        """The same credentials, expecting a switch certificate that names ``name``."""
        return dataclasses.replace(self, server_name=name)

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials (files read now; FileNotFoundError naming a missing one)."""
        ca = _read(self.ca_cert)
        cert = _read(self.cert) if self.cert is not None else None
        key = _read(self.key) if self.key is not None else None
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                            certificate_chain=cert)

    def channel(self, addr: str) -> grpc.Channel:
        """A secure channel to ``addr`` with these credentials."""
        options = [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []
        return grpc.secure_channel(addr, self.credentials(), options=options)


def open_channel(addr: str, tls: Optional[ClientTls]) -> grpc.Channel:
    """A TLS channel with ``tls``, a plaintext one without.

    >>> open_channel("127.0.0.1:9559", None).close()
    """
    return grpc.insecure_channel(addr) if tls is None else tls.channel(addr)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """``--p4rt-ca-cert``, ``--p4rt-cert``, ``--p4rt-key``: a command's P4Runtime TLS."""
    ap.add_argument("--p4rt-ca-cert", type=Path, default=None, metavar="PEM",
                    help="connect to the switches over TLS, verifying them against this CA "
                         "(each switch's certificate must name it)")
    ap.add_argument("--p4rt-cert", type=Path, default=None, metavar="PEM",
                    help="client certificate (switches with --grpc-server-with-client-auth)")
    ap.add_argument("--p4rt-key", type=Path, default=None, metavar="PEM",
                    help="the client certificate's private key")


def from_arguments(args: argparse.Namespace) -> Optional[ClientTls]:
    """The ClientTls of :func:`add_arguments`'s options (None: plaintext); ValueError
    with one line when they do not go together.

    >>> ap = argparse.ArgumentParser(); add_arguments(ap)
    >>> from_arguments(ap.parse_args([])) is None
    True
    >>> from_arguments(ap.parse_args(["--p4rt-cert", "c.pem", "--p4rt-key", "c.key"]))
    Traceback (most recent call last):
    ...
    ValueError: --p4rt-cert/--p4rt-key need --p4rt-ca-cert (the CA the switches are verified against)
    """
    if args.p4rt_ca_cert is None:
        if args.p4rt_cert is not None or args.p4rt_key is not None:
            raise ValueError("--p4rt-cert/--p4rt-key need --p4rt-ca-cert (the CA the switches "
                             "are verified against)")
        return None
    return ClientTls(args.p4rt_ca_cert, args.p4rt_cert, args.p4rt_key)


__all__ = ["ClientTls", "add_arguments", "from_arguments", "open_channel"]
