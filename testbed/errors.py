"""The testbed's error: a step failed, the message says what and how to fix it. Every
module of the testbed raises it (or a subclass, e.g. ``FaultError``); it imports nothing.

>>> str(TestbedError("switch b0r0l0 did not start: see logs/b0r0l0.log"))
'switch b0r0l0 did not start: see logs/b0r0l0.log'
"""
from __future__ import annotations


class TestbedError(RuntimeError):
    """A testbed step failed; the message says what and how to fix it."""

    __test__ = False  # not a pytest class


__all__ = ["TestbedError"]
