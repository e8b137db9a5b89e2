"""Secrets are written readable by their owner only from the first byte (issue 28, item
5): a host's token file (``HostCredentials.save``) and a PKI key (``testbed.pki.write_private``)
— new, or over an older world-readable file: the mode is 0600 before any byte of the
secret is written; a symlink planted at the path is refused, not followed."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

from astral_proto.auth import HostCredentials
from testbed.pki import write_private


def _save_creds(path: Path) -> None:
    HostCredentials.derive(b"secret", "b0s0").save(path)


def _save_key(path: Path) -> None:
    write_private(path, b"-----BEGIN PRIVATE KEY-----\n...\n")


WRITERS = {"host credentials": _save_creds, "pki key": _save_key}


@pytest.mark.parametrize("older", [False, True], ids=["new file", "over a 0644 file"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_mode_is_0600_before_the_first_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           name: str, older: bool) -> None:
    path = tmp_path / "secret"
    if older:
        path.write_text("old")
        path.chmod(0o644)
    modes: list[int] = []
    real_fdopen: Callable[..., Any] = os.fdopen

    def watching_fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        modes.append(os.fstat(fd).st_mode & 0o777)       # what the file is when writing starts
        assert os.fstat(fd).st_size == 0                 # and the old contents are gone
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", watching_fdopen)
    old_umask = os.umask(0)                              # the process's umask does not help
    try:
        WRITERS[name](path)
    finally:
        os.umask(old_umask)
    assert modes == [0o600] and path.stat().st_mode & 0o777 == 0o600
    assert path.read_bytes() and b"old" not in path.read_bytes()


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_planted_symlink_is_refused(tmp_path: Path, name: str) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("theirs")
    link = tmp_path / "secret"
    link.symlink_to(target)
    with pytest.raises(OSError):
        WRITERS[name](link)
    assert target.read_text() == "theirs"
