"""The agent protocol's fallback authentication: per-host HMAC tokens in gRPC metadata.

**Mutual TLS is the default** (:mod:`astral_proto.tls`). These tokens are used only when a
party is given no certificates — unit tests, and runs with ``--insecure`` — through
:class:`HostTokens` (a host) and :class:`ControllerTokens` (GOR), the token forms of
:class:`~astral_proto.security.Security`. The channel is then plaintext: a token seen once
can be replayed for ever (orders still carry nonces and expiries, which the agent checks).

Every call carries gRPC metadata ``astral-host`` (a host name) and ``astral-token``:

* a host calling the controller's ``FlowRegistry`` sends its **host token**
  ``HMAC(secret, "host:" + name)``;
* GOR calling a host's ``AgentService`` sends that host's **order token**
  ``HMAC(secret, "order:" + name)``.

Only the controller knows the fabric secret; each host is given its own two tokens
(:class:`HostCredentials`, e.g. a JSON file the testbed writes into the host). A host
therefore cannot speak for another host, and can impersonate GOR only towards itself.

>>> creds = HostCredentials.derive(b"fabric-secret", "b0s0")
>>> creds.host_token == host_token(b"fabric-secret", "b0s0") != creds.order_token
True
>>> identity(call_metadata("b0s0", creds.host_token))[0]
'b0s0'
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

import grpc

from astral_proto.security import CONTROLLER, Metadata

HOST_KEY = "astral-host"
TOKEN_KEY = "astral-token"


def _mac(secret: bytes, label: str) -> str:
    if not secret:
        raise ValueError("the fabric secret must not be empty")
    return hmac.new(secret, label.encode(), hashlib.sha256).hexdigest()


def host_token(secret: bytes, host: str) -> str:
    """The token ``host`` presents to the controller.

    >>> len(host_token(b"s", "b0s0"))
    64
    """
    return _mac(secret, "host:" + host)


def order_token(secret: bytes, host: str) -> str:
    """The token GOR presents to ``host``'s agent.

    >>> order_token(b"s", "b0s0") != host_token(b"s", "b0s0")
    True
    """
    return _mac(secret, "order:" + host)


def call_metadata(host: str, token: str) -> Metadata:
    """gRPC metadata for a call on behalf of (or to) ``host``.

    >>> call_metadata("b0s0", "t")
    (('astral-host', 'b0s0'), ('astral-token', 't'))
    """
    return ((HOST_KEY, host), (TOKEN_KEY, token))


def identity(metadata: Optional[Iterable[tuple[str, Union[str, bytes]]]]) -> tuple[Optional[str], Optional[str]]:
    """``(host, token)`` from a call's metadata (None for a missing key).

    >>> identity([("astral-token", "t")])
    (None, 't')
    """
    host: Optional[str] = None
    token: Optional[str] = None
    for key, value in metadata or ():
        text = value.decode() if isinstance(value, bytes) else value
        if key == HOST_KEY:
            host = text
        elif key == TOKEN_KEY:
            token = text
    return host, token


def token_ok(expected: str, given: Optional[str]) -> bool:
    """Constant-time token comparison (False when ``given`` is missing).

    >>> token_ok("abc", "abc"), token_ok("abc", None), token_ok("abc", "abd")
    (True, False, False)
    """
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


@dataclass(frozen=True, slots=True)
class HostCredentials:
    """What one host knows: its name, its host token and the order token GOR uses with it.

    >>> c = HostCredentials.derive(b"s", "b0s1")
    >>> HostCredentials.from_json(c.to_json()) == c
    True
    """

    host: str
    host_token: str
    order_token: str

    @classmethod
    def derive(cls, secret: bytes, host: str) -> "HostCredentials":
        """Both tokens of ``host`` from the fabric secret (done by the controller/testbed)."""
        return cls(host, host_token(secret, host), order_token(secret, host))

    def to_json(self) -> str:
        """The JSON form (the file the testbed writes into the host)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "HostCredentials":
        """Parse :meth:`to_json` output; ``ValueError`` on a malformed document."""
        try:
            d = json.loads(text)
            return cls(str(d["host"]), str(d["host_token"]), str(d["order_token"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"malformed host credentials: {exc}") from exc

    def save(self, path: Union[str, Path]) -> Path:
        """Write the JSON form to ``path``, readable by its owner only from the first byte
        (created 0600; an older file is made 0600 before it is truncated; a symlink is
        refused)."""
        p = Path(path)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)
            fh = os.fdopen(fd, "w", encoding="utf-8")
        except BaseException:
            os.close(fd)
            raise
        with fh:
            fh.write(self.to_json())
        return p

    @classmethod
    def load(cls, path: Union[str, Path]) -> "HostCredentials":
        """Read a file written by :meth:`save`."""
        return cls.from_json(Path(path).read_text())

    def security(self) -> "HostTokens":
        """The host's (token) :class:`~astral_proto.security.Security`."""
        return HostTokens(self)


class HostTokens:
    """A host on plaintext gRPC with its tokens (the fallback; see the module docstring):
    it sends its host token to the controller and takes calls that carry its order token.

    >>> sec = HostTokens(HostCredentials.derive(b"s", "b0s0"))
    >>> class Call:
    ...     def __init__(self, md): self.md = md
    ...     def invocation_metadata(self): return self.md
    >>> order = call_metadata("b0s0", order_token(b"s", "b0s0"))
    >>> sec.caller(Call(order)), sec.caller(Call(sec.metadata(CONTROLLER)))
    ('controller', None)
    """

    kind = "tokens"

    def __init__(self, creds: HostCredentials) -> None:
        self.creds = creds

    @property
    def name(self) -> str:
        return self.creds.host

    def bind(self, server: grpc.Server, address: str) -> int:
        return server.add_insecure_port(address)

    def dial(self, address: str, peer: str) -> grpc.Channel:
        return grpc.insecure_channel(address)

    def metadata(self, peer: str) -> Metadata:
        return call_metadata(self.creds.host, self.creds.host_token)

    def caller(self, context: grpc.ServicerContext) -> Optional[str]:
        host, token = identity(context.invocation_metadata())
        if host == self.creds.host and token_ok(self.creds.order_token, token):
            return CONTROLLER
        return None


class ControllerTokens:
    """GOR on plaintext gRPC with the fabric secret (the fallback): it sends each host's
    order token to that host's agent and names a caller by its host token.

    >>> sec = ControllerTokens(b"s")
    >>> class Call:
    ...     def invocation_metadata(self): return call_metadata("b0s0", host_token(b"s", "b0s0"))
    >>> sec.caller(Call()), sec.metadata("b0s0")[1][1] == order_token(b"s", "b0s0")
    ('b0s0', True)
    """

    kind = "tokens"
    name = CONTROLLER

    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise ValueError("the fabric secret must not be empty")
        self._secret = secret

    def bind(self, server: grpc.Server, address: str) -> int:
        return server.add_insecure_port(address)

    def dial(self, address: str, peer: str) -> grpc.Channel:
        return grpc.insecure_channel(address)

    def metadata(self, peer: str) -> Metadata:
        return call_metadata(peer, order_token(self._secret, peer))

    def caller(self, context: grpc.ServicerContext) -> Optional[str]:
        host, token = identity(context.invocation_metadata())
        if host and token_ok(host_token(self._secret, host), token):
            return host
        return None
