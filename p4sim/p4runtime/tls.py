"""TLS for the P4Runtime server of a p4sim switch, with simple_switch_grpc's options.

simple_switch_grpc (BMv2, target options after ``--``) and so ``python -m p4sim switch``:

* ``--grpc-server-ssl``: serve P4Runtime over TLS; then ``--grpc-server-cert PATH`` (the
  switch's certificate chain, PEM) and ``--grpc-server-key PATH`` (its private key, PEM)
  are required: "When enabling SSL/TLS for gRPC server, --grpc-server-cert is required"
  (or ``--grpc-server-key``), exit status 1.
* ``--grpc-server-cacert PATH``: the CA certificate(s) client certificates are verified
  against.
* ``--grpc-server-with-client-auth``: a client must present a certificate that verifies
  against that CA, or the TLS handshake fails (gRPC's
  ``REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY``, what BMv2 asks of PI); without
  it, no client certificate is requested.
* Without ``--grpc-server-ssl`` the PEM options and ``--grpc-server-with-client-auth``
  are ignored with BMv2's warnings ("SSL/TLS is disabled for gRPC server, so provided
  .pem files will be ignored" / "... so cannot request client auth") and the server is
  plaintext, as BMv2's.
* A PEM file that cannot be opened: "Error when reading pem file 'PATH': file cannot be
  opened", exit status 1 (BMv2's message).

p4sim refuses two starts BMv2 lets through to a server no client can use, each with one
line and exit status 1 (never more permissive): a file that opens but holds no PEM
certificate / private key, or a key that does not match the certificate (BMv2's gRPC
fails to open the port), and ``--grpc-server-with-client-auth`` without
``--grpc-server-cacert`` (BMv2 starts with no CA to verify against, and every client's
handshake then fails).

>>> ServerTlsOptions().load() is None                       # plaintext, as by default
True
>>> ServerTlsOptions(ssl=True, key="k.pem").load()
Traceback (most recent call last):
...
p4sim.p4runtime.tls.TlsConfigError: When enabling SSL/TLS for gRPC server, --grpc-server-cert is required
>>> ServerTlsOptions(ssl=True, cert="/nonexistent.pem", key="k.pem").load()
Traceback (most recent call last):
...
p4sim.p4runtime.tls.TlsConfigError: Error when reading pem file '/nonexistent.pem': file cannot be opened
>>> ServerTlsOptions(cert="c.pem", with_client_auth=True).warnings()
['SSL/TLS is disabled for gRPC server, so provided .pem files will be ignored', 'SSL/TLS is disabled for gRPC server, so cannot request client auth']
"""
from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Optional

import grpc


class TlsConfigError(ValueError):
    """TLS options a switch cannot start with; the message is the one line to print."""


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The PEM material of a TLS P4Runtime server, read and checked.

    ``root_certs`` is None without ``--grpc-server-cacert``; ``require_client_auth``
    is ``--grpc-server-with-client-auth``.
    """

    cert_chain: bytes
    private_key: bytes
    root_certs: Optional[bytes]
    require_client_auth: bool

    def credentials(self) -> grpc.ServerCredentials:
        """gRPC server credentials: client certificates required and verified against
        ``root_certs`` when ``require_client_auth``, not requested otherwise."""
        return grpc.ssl_server_credentials([(self.private_key, self.cert_chain)],
                                           root_certificates=self.root_certs,
                                           require_client_auth=self.require_client_auth)

    def describe(self) -> str:
        """One phrase for the switch log, e.g. ``TLS, client certificate required``."""
        return "TLS, client certificate required" if self.require_client_auth else \
            "TLS, no client certificate requested"


def _read_pem(path: str) -> bytes:
    """The bytes of a PEM file, or BMv2's error when it cannot be opened."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        raise TlsConfigError(f"Error when reading pem file '{path}': file cannot be opened") from None


def _check_pair(cert_path: str, cert: bytes, key_path: str, key: bytes) -> None:
    """Refuse a certificate or key that is not PEM, or a key not matching the certificate."""
    if b"-----BEGIN CERTIFICATE-----" not in cert:
        raise TlsConfigError(f"Error when reading pem file '{cert_path}': no PEM certificate in it")
    if b"PRIVATE KEY-----" not in key:
        raise TlsConfigError(f"Error when reading pem file '{key_path}': no PEM private key in it")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    # load_cert_chain reads files only: give it a private copy of the key.
    fd, tmp = tempfile.mkstemp(prefix="p4sim-key-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        ctx.load_cert_chain(cert_path, tmp)
    except ssl.SSLError as exc:
        reason = "the key does not match the certificate" if "KEY_VALUES_MISMATCH" in str(exc) \
            else f"the certificate or key cannot be loaded ({exc.reason or exc})"
        raise TlsConfigError(f"Error when reading pem files '{cert_path}' and '{key_path}': "
                             f"{reason}") from None
    finally:
        os.unlink(tmp)


def _check_ca(path: str, data: bytes) -> None:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(cadata=data.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError, ValueError):
        raise TlsConfigError(f"Error when reading pem file '{path}': no PEM CA certificate in it") from None


@dataclass(frozen=True, slots=True)
class ServerTlsOptions:
    """simple_switch_grpc's five TLS target options, as given (see the module docstring)."""

    ssl: bool = False
    cacert: Optional[str] = None
    cert: Optional[str] = None
    key: Optional[str] = None
    with_client_auth: bool = False

    def warnings(self) -> list[str]:
        """BMv2's warnings for TLS options given without ``--grpc-server-ssl``."""
        if self.ssl:
            return []
        out = []
        if self.cacert or self.cert or self.key:
            out.append("SSL/TLS is disabled for gRPC server, so provided .pem files will be ignored")
        if self.with_client_auth:
            out.append("SSL/TLS is disabled for gRPC server, so cannot request client auth")
        return out

    def load(self) -> Optional[ServerTls]:
        """The server's TLS material, None for plaintext; TlsConfigError (one line) when
        the switch must not start."""
        if not self.ssl:
            return None
        for flag, value in (("--grpc-server-cert", self.cert), ("--grpc-server-key", self.key)):
            if not value:
                raise TlsConfigError(f"When enabling SSL/TLS for gRPC server, {flag} is required")
        assert self.cert and self.key
        root = _read_pem(self.cacert) if self.cacert else None
        cert, key = _read_pem(self.cert), _read_pem(self.key)
        if root is not None:
            _check_ca(self.cacert or "", root)
        _check_pair(self.cert, cert, self.key, key)
        if self.with_client_auth and root is None:
            raise TlsConfigError("--grpc-server-with-client-auth needs --grpc-server-cacert: "
                                 "without a CA no client certificate can be verified (BMv2 "
                                 "would start and refuse every client)")
        return ServerTls(cert, key, root, self.with_client_auth)


__all__ = ["ServerTls", "ServerTlsOptions", "TlsConfigError"]
