"""Per-host tokens of the agent protocol (HMAC-SHA256 of the host name with a fabric secret).

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

HOST_KEY = "astral-host"
TOKEN_KEY = "astral-token"

Metadata = tuple[tuple[str, str], ...]


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
        """Write the JSON form to ``path`` (mode 0600)."""
        p = Path(path)
        p.write_text(self.to_json())
        p.chmod(0o600)
        return p

    @classmethod
    def load(cls, path: Union[str, Path]) -> "HostCredentials":
        """Read a file written by :meth:`save`."""
        return cls.from_json(Path(path).read_text())
