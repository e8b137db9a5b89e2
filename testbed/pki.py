"""The testbed's throw-away public-key infrastructure: one certificate authority per
testbed and a certificate per party (each switch, the controller, each host), for TLS on
P4Runtime and mutual TLS on the agent protocol.

Everything is written under one directory (``build/pki/`` for the testbed): ``ca.pem``,
and per party ``NAME.pem`` (its certificate) and ``NAME.key`` (its private key, mode
0600, never committed: ``build/`` is ignored). A certificate names its party as its
common name and as a DNS subject-alternative name — a peer is *identified* by it (an
agent's order comes from the controller; a host registers only its own flows) — and also
carries ``localhost`` and ``127.0.0.1``, where the testbed's switches listen. Keys are
ECDSA P-256: small, and generated in about a millisecond.

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> pki = FabricPki.create(root, ["b0r0l0", "controller"])
>>> files = pki.files("b0r0l0")
>>> files.ca_cert == root / "ca.pem" and oct(files.key.stat().st_mode & 0o777)
'0o600'
>>> certificate_name(files.cert.read_bytes())
'b0r0l0'
>>> FabricPki.load(root).files("nobody")
Traceback (most recent call last):
...
KeyError: "no certificate for 'nobody' in ..."
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path
from typing import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from astral_proto.tls import TlsFiles, certificate_name

VALID_DAYS = 30
"""A testbed's certificates are valid this long (a throw-away CA, made at ``up``)."""


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only (0600 from the start)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.chmod(path, 0o600)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class FabricPki:
    """A CA and the parties' certificates under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def create(cls, root: Path, names: Iterable[str], valid_days: int = VALID_DAYS,
               ca_name: str = "astral-p4 testbed CA") -> "FabricPki":
        """A new CA under ``root`` (replacing any there) and a certificate for each of
        ``names``."""
        root.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
        ca = (x509.CertificateBuilder().subject_name(ca_subject).issuer_name(ca_subject)
              .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - datetime.timedelta(minutes=5))
              .not_valid_after(now + datetime.timedelta(days=valid_days))
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                             critical=True)
              .sign(ca_key, hashes.SHA256()))
        (root / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        pki = cls(root)
        for name in names:
            pki._issue(name, ca, ca_key, now, valid_days)
        return pki

    @classmethod
    def load(cls, root: Path) -> "FabricPki":
        """The PKI ``create`` wrote under ``root``; FileNotFoundError naming ``ca.pem``
        when there is none."""
        if not (root / "ca.pem").is_file():
            raise FileNotFoundError(f"{root / 'ca.pem'}: no testbed CA here (python -m testbed up makes one)")
        return cls(root)

    def _issue(self, name: str, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
               now: datetime.datetime, valid_days: int) -> None:
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"{name!r}: not a party name for a certificate")
        key = ec.generate_private_key(ec.SECP256R1())
        san = x509.SubjectAlternativeName([x509.DNSName(name), x509.DNSName("localhost"),
                                           x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(ca.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=valid_days))
                .add_extension(san, critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        (self.root / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_private(self.root / f"{name}.key", _key_pem(key))

    def files(self, name: str) -> TlsFiles:
        """The files of party ``name``; KeyError naming it when it has no certificate."""
        out = TlsFiles.in_dir(self.root, name)
        if not (out.cert.is_file() and out.key.is_file()):
            raise KeyError(f"no certificate for {name!r} in {self.root}")
        return out


__all__ = ["FabricPki", "TlsFiles", "VALID_DAYS"]
