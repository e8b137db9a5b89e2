"""The testbed's throw-away public-key infrastructure: certificate authorities made at
``up`` and a certificate per party (each switch, the controller, the monitor, each host),
for TLS on P4Runtime and mutual TLS on the agent protocol.

Everything is written under one directory (``build/pki/`` for the testbed): per party
``NAME.pem`` (its certificate) and ``NAME.key`` (its private key, mode 0600 from its
first byte, never committed: ``build/`` is ignored), and the CA certificates. Two
layouts:

* **split** (:meth:`FabricPki.create_split`, what ``testbed up`` makes): three CAs, so
  that who can talk to whom is decided by the trust anchors, not only by names checked
  after the handshake — on BMv2, which checks no names, that is the only guard:

  ===================  ===========================  ===================================
  CA file              signs                        trusted by (``NAME.trust.pem``)
  ===================  ===========================  ===================================
  ``ca-control.pem``   ``controller``, ``monitor``  switches (``--grpc-server-cacert``),
                                                    hosts (the agents' order channel)
  ``ca-switches.pem``  every switch                 the controller and the monitor
  ``ca-hosts.pem``     every host                   the controller (registry, agents)
  ===================  ===========================  ===================================

  A host's certificate cannot even finish a TLS handshake with a switch, nor a switch's
  with another switch or with a host.
* **one CA** (:meth:`FabricPki.create`: ``ca.pem`` signs every party and everyone trusts
  it), for tests and tools that need a CA and a few names.

:meth:`TlsFiles.in_dir` finds a party's trust file in either layout (``NAME.trust.pem``,
else ``ca.pem``). A certificate names its party as its common name and as a DNS
subject-alternative name — a peer is *identified* by it (an agent's order comes from the
controller; a host registers only its own flows; a p4sim switch with ``--p4rt-policy``
lets only the controller write) — and also carries ``localhost`` and ``127.0.0.1``, where
the testbed's switches listen. Keys are ECDSA P-256: small, and generated in about a
millisecond.

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
>>> split = FabricPki.create_split(Path(tempfile.mkdtemp()),
...                                {"s0": "switch", "controller": "controller", "b0s0": "host"})
>>> split.files("s0").ca_cert.name, split.ca_cert("control").name
('s0.trust.pem', 'ca-control.pem')
>>> split.trusted_names("s0"), split.trusted_names("controller")
(['astral-p4 control CA'], ['astral-p4 switches CA', 'astral-p4 hosts CA'])
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path
from typing import Iterable, Mapping

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from astral_proto.tls import TlsFiles, certificate_name

VALID_DAYS = 30
"""A testbed's certificates are valid this long (a throw-away CA, made at ``up``)."""

#: party kind → (the CA that signs it, the CAs it trusts), in the split layout
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "controller": ("control", ("switches", "hosts")),
    "monitor": ("control", ("switches",)),
    "switch": ("switches", ("control",)),
    "host": ("hosts", ("control",)),
}
CA_NAMES = {"control": "astral-p4 control CA", "switches": "astral-p4 switches CA",
            "hosts": "astral-p4 hosts CA"}


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by its owner only from the first byte: a new
    file is created 0600, an older one is made 0600 before it is truncated (never a
    moment where the new secret sits in a file others may read); a symlink is refused."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)
        fh = os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        fh.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _make_ca(name: str, now: datetime.datetime,
             valid_days: int) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA certificate named ``name`` and its key (kept in memory only)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    ca = (x509.CertificateBuilder().subject_name(ca_subject).issuer_name(ca_subject)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=valid_days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                         critical=True)
          .sign(ca_key, hashes.SHA256()))
    return ca, ca_key


class FabricPki:
    """CAs and the parties' certificates under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def split(self) -> bool:
        """Whether this is the split layout (three CAs) rather than one CA."""
        return (self.root / "ca-control.pem").is_file()

    @staticmethod
    def _clear(root: Path) -> None:
        """Remove the CA and trust files of an earlier PKI (either layout) under ``root``."""
        for old in [root / "ca.pem", *root.glob("ca-*.pem"), *root.glob("*.trust.pem")]:
            old.unlink(missing_ok=True)

    @classmethod
    def create(cls, root: Path, names: Iterable[str], valid_days: int = VALID_DAYS,
               ca_name: str = "astral-p4 testbed CA") -> "FabricPki":
        """A new single CA (``ca.pem``) under ``root`` (replacing any PKI there) and a
        certificate for each of ``names``."""
        root.mkdir(parents=True, exist_ok=True)
        cls._clear(root)
        now = datetime.datetime.now(datetime.timezone.utc)
        ca, ca_key = _make_ca(ca_name, now, valid_days)
        (root / "ca.pem").write_bytes(_pem(ca))
        pki = cls(root)
        for name in names:
            pki._issue(name, ca, ca_key, now, valid_days)
        return pki

    @classmethod
    def create_split(cls, root: Path, parties: Mapping[str, str],
                     valid_days: int = VALID_DAYS) -> "FabricPki":
        """The split layout under ``root`` (replacing any PKI there): one CA per kind of
        party, ``parties`` mapping each name to its kind (:data:`KINDS`: ``controller``,
        ``monitor``, ``switch``, ``host``), and per party its certificate, key and trust
        bundle ``NAME.trust.pem``. The CAs' keys are never written."""
        bad = {n: k for n, k in parties.items() if k not in KINDS}
        if bad:
            raise ValueError(f"unknown party kinds {bad} (one of {', '.join(KINDS)})")
        root.mkdir(parents=True, exist_ok=True)
        cls._clear(root)
        now = datetime.datetime.now(datetime.timezone.utc)
        cas = {c: _make_ca(name, now, valid_days) for c, name in CA_NAMES.items()}
        for c, (ca, _) in cas.items():
            (root / f"ca-{c}.pem").write_bytes(_pem(ca))
        pki = cls(root)
        for name, kind in parties.items():
            signer, trusts = KINDS[kind]
            pki._issue(name, *cas[signer], now, valid_days)
            (root / f"{name}.trust.pem").write_bytes(b"".join(_pem(cas[t][0]) for t in trusts))
        return pki

    def add_ca(self, ca_name: str, stem: str, names: Iterable[str],
               trusts: Iterable[Path], valid_days: int = VALID_DAYS) -> Path:
        """One more CA (certificate ``ca-STEM.pem``, common name ``ca_name``; its key is
        never written) that signs only ``names``; each of them trusts the CA certificates
        ``trusts`` (its ``NAME.trust.pem``). Returns the new CA's certificate: a server
        that trusts it (and no other CA that signed them) takes these clients only."""
        now = datetime.datetime.now(datetime.timezone.utc)
        ca, ca_key = _make_ca(ca_name, now, valid_days)
        out = self.root / f"ca-{stem}.pem"
        out.write_bytes(_pem(ca))
        bundle = b"".join(Path(t).read_bytes() for t in trusts)
        for name in names:
            self._issue(name, ca, ca_key, now, valid_days)
            (self.root / f"{name}.trust.pem").write_bytes(bundle)
        return out

    @classmethod
    def load(cls, root: Path) -> "FabricPki":
        """The PKI ``create`` or ``create_split`` wrote under ``root``;
        FileNotFoundError naming ``ca.pem`` when there is none."""
        if not (root / "ca.pem").is_file() and not (root / "ca-control.pem").is_file():
            raise FileNotFoundError(f"{root / 'ca.pem'}: no testbed CA here (python -m testbed up makes one)")
        return cls(root)

    def ca_cert(self, ca: str) -> Path:
        """A CA's certificate: ``control``, ``switches`` or ``hosts`` in the split layout
        (``ca.pem`` for any of them with one CA)."""
        if not self.split:
            return self.root / "ca.pem"
        if ca not in CA_NAMES:
            raise KeyError(f"no CA {ca!r} (one of {', '.join(CA_NAMES)})")
        return self.root / f"ca-{ca}.pem"

    def trusted_names(self, name: str) -> list[str]:
        """The common names of the CAs party ``name`` trusts (its trust file)."""
        data = self.files(name).ca_cert.read_bytes()
        return [certificate_name(_pem(c)) for c in x509.load_pem_x509_certificates(data)]

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
        write_private(self.root / f"{name}.key", _key_pem(key))

    def files(self, name: str) -> TlsFiles:
        """The files of party ``name``; KeyError naming it when it has no certificate."""
        out = TlsFiles.in_dir(self.root, name)
        if not (out.cert.is_file() and out.key.is_file()):
            raise KeyError(f"no certificate for {name!r} in {self.root}")
        return out


__all__ = ["CA_NAMES", "FabricPki", "KINDS", "TlsFiles", "VALID_DAYS", "write_private"]
