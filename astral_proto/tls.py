"""Mutual TLS on the agent protocol: :class:`MutualTls`, the default
:class:`~astral_proto.security.Security` of GOR and of every agent.

Every party holds three PEM files (:class:`TlsFiles`): the CA certificate(s) it trusts,
its own certificate and its private key. The testbed's PKI (``testbed/pki.py``, under
``build/pki/``) writes them as ``NAME.trust.pem`` (``ca.pem`` with a single CA),
``NAME.pem`` and ``NAME.key`` (:meth:`TlsFiles.in_dir`). A certificate's common name is the party's name
(``controller``, ``b0s0``) and it is also a DNS subject-alternative name.

* A server requires a client certificate signed by the fabric CA (a plaintext client or
  one with another CA's certificate fails the handshake: ``UNAVAILABLE`` at the client);
  the caller's name is its certificate's common name (:func:`peer_common_name`).
* A client checks that the server's certificate names the peer it meant to reach
  (``grpc.ssl_target_name_override`` = the peer's name). This is also what makes TLS work
  on Unix sockets (``unix:/path``), where gRPC would otherwise check the socket's path.

>>> TlsFiles.in_dir(Path("build/pki"), "b0s0").cert
PosixPath('build/pki/b0s0.pem')
>>> class Ctx:
...     def auth_context(self):
...         return {"transport_security_type": [b"ssl"], "x509_common_name": [b"controller"]}
>>> peer_common_name(Ctx())
'controller'
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol

import grpc
from cryptography import x509
from cryptography.x509.oid import NameOID

from astral_proto.security import Metadata


class TlsPaths(Protocol):
    """Anything with the three paths (``testbed.pki.TlsFiles`` is one)."""

    @property
    def ca_cert(self) -> Path: ...

    @property
    def cert(self) -> Path: ...

    @property
    def key(self) -> Path: ...


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """The CA a party trusts, its certificate and its key: ``TlsFiles(ca, cert, key)``."""

    ca_cert: Path
    cert: Path
    key: Path

    @classmethod
    def in_dir(cls, root: Path, name: str) -> "TlsFiles":
        """The files of party ``name`` in a PKI directory (``NAME.pem``, ``NAME.key``, and
        what it trusts: ``NAME.trust.pem`` where the PKI has one CA per kind of party,
        else the one CA ``ca.pem``: the layouts ``testbed/pki.py`` writes)."""
        trust = root / f"{name}.trust.pem"
        return cls(trust if trust.is_file() else root / "ca.pem", root / f"{name}.pem",
                   root / f"{name}.key")

    def read(self) -> tuple[bytes, bytes, bytes]:
        """``(ca, cert, key)`` as bytes (what ``grpc.ssl_*_credentials`` take)."""
        return self.ca_cert.read_bytes(), self.cert.read_bytes(), self.key.read_bytes()


def certificate_name(cert_pem: bytes) -> str:
    """The common name of a PEM certificate (``ValueError`` if it is not one).

    >>> certificate_name(b"junk")
    Traceback (most recent call last):
    ...
    ValueError: not a PEM certificate: ...
    """
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as exc:
        raise ValueError(f"not a PEM certificate: {exc}") from None
    attrs = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(attrs[0].value) if attrs else ""


def peer_common_name(context: Any) -> Optional[str]:
    """The common name of the verified client certificate of a call (None on a plaintext
    channel or without one).

    >>> class Plain:
    ...     def auth_context(self): return {}
    >>> peer_common_name(Plain()) is None
    True
    """
    auth = context.auth_context() or {}
    if b"ssl" not in auth.get("transport_security_type", []):
        return None
    names = auth.get("x509_common_name") or []
    return names[0].decode() if names else None


def _read(path: Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise FileNotFoundError(f"{path}: cannot read the {what} ({exc.strerror})") from None


class MutualTls:
    """Mutual TLS with the fabric CA for the party whose files these are (its name is its
    certificate's common name). Reads the files once; ``FileNotFoundError`` naming a
    missing one, ``ValueError`` for a file that is not a certificate."""

    kind = "mtls"

    def __init__(self, files: TlsPaths) -> None:
        self.files = files
        self._ca = _read(files.ca_cert, "CA certificate")
        self._cert = _read(files.cert, "certificate")
        self._key = _read(files.key, "private key")
        certificate_name(self._ca)
        self._name = certificate_name(self._cert)
        if not self._name:
            raise ValueError(f"{files.cert}: the certificate has no common name")

    @classmethod
    def from_dir(cls, root: Path, name: str) -> "MutualTls":
        """Party ``name``'s files in a PKI directory; ``ValueError`` when the certificate
        found there names someone else."""
        tls = cls(TlsFiles.in_dir(Path(root), name))
        if tls.name != name:
            raise ValueError(f"{tls.files.cert}: the certificate names {tls.name!r}, not {name!r}")
        return tls

    @property
    def name(self) -> str:
        return self._name

    def bind(self, server: grpc.Server, address: str) -> int:
        creds = grpc.ssl_server_credentials([(self._key, self._cert)], root_certificates=self._ca,
                                            require_client_auth=True)
        return server.add_secure_port(address, creds)

    def dial(self, address: str, peer: str) -> grpc.Channel:
        creds = grpc.ssl_channel_credentials(root_certificates=self._ca, private_key=self._key,
                                             certificate_chain=self._cert)
        return grpc.secure_channel(address, creds,
                                   options=[("grpc.ssl_target_name_override", peer)])

    def metadata(self, peer: str) -> Metadata:
        return ()

    def caller(self, context: grpc.ServicerContext) -> Optional[str]:
        return peer_common_name(context)

    def __repr__(self) -> str:
        return f"MutualTls({self._name!r}, cert={str(self.files.cert)!r})"


__all__ = ["MutualTls", "TlsFiles", "TlsPaths", "certificate_name", "peer_common_name"]
