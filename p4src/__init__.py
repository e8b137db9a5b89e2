"""The fabric data plane: the P4_16 programs for the leaf and spine roles and their
published contracts.

The ``.p4`` sources (``fabric.p4`` and ``include/``) are compiled by ``p4c-bm2-ss`` for
BMv2 or loaded by p4sim; ``p4src/README.md`` documents every table, register, counter and
digest. The Python side of this package holds the wire contracts other layers import:

* :mod:`p4src.hashmodel` — the ECMP hash model a controller publishes (JSON) and hosts
  use to predict, offline, the member every 5-tuple takes at every hop.

Example::

    >>> from p4src.hashmodel import FabricHashModel
    >>> FabricHashModel.from_json('{"version": 1, "switches": []}').switches
    {}
"""
