"""testbed.pki, the testbed's throw-away CA: every certificate is signed by the CA and
names its party (CN, SAN) with localhost and 127.0.0.1, keys are 0600 even over an
older file, a new CA replaces the old one (its certificates no longer verify), bad
party names and a missing CA are refused with a message."""
from __future__ import annotations

import ipaddress
import os

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from astral_proto.tls import certificate_name as common_name
from testbed.pki import FabricPki


def load(path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        ca.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                               ec.ECDSA(cert.signature_hash_algorithm))
    except Exception:  # noqa: BLE001 — cryptography raises InvalidSignature
        return False
    return cert.issuer == ca.subject


def test_certificates_name_their_party_and_are_signed_by_the_ca(tmp_path) -> None:
    pki = FabricPki.create(tmp_path, ["b0r0l0", "controller"])
    ca = load(tmp_path / "ca.pem")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for name in ("b0r0l0", "controller"):
        cert = load(pki.files(name).cert)
        assert common_name(pki.files(name).cert.read_bytes()) == name
        assert signed_by(cert, ca)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == [name, "localhost"]
        assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_keys_are_private_even_over_an_older_file(tmp_path) -> None:
    old = tmp_path / "s0.key"
    old.write_text("old")
    os.chmod(old, 0o644)
    pki = FabricPki.create(tmp_path, ["s0"])
    assert pki.files("s0").key.stat().st_mode & 0o777 == 0o600
    assert b"PRIVATE KEY" in pki.files("s0").key.read_bytes()


def test_a_new_ca_replaces_the_old_one(tmp_path) -> None:
    FabricPki.create(tmp_path, ["s0"])
    old_cert = load(tmp_path / "s0.pem")
    FabricPki.create(tmp_path, ["s0"])
    new_ca = load(tmp_path / "ca.pem")
    assert not signed_by(old_cert, new_ca)
    assert signed_by(load(tmp_path / "s0.pem"), new_ca)


@pytest.mark.parametrize("name", ["", "../x", ".hidden", "a/b"])
def test_bad_party_names_are_refused(tmp_path, name) -> None:
    with pytest.raises(ValueError, match="not a party name"):
        FabricPki.create(tmp_path, [name])


def test_load_without_a_ca_and_unknown_party(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no testbed CA here"):
        FabricPki.load(tmp_path)
    FabricPki.create(tmp_path, ["s0"])
    with pytest.raises(KeyError, match="no certificate for 'h9'"):
        FabricPki.load(tmp_path).files("h9")
