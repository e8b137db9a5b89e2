"""QoS, ECN and PFC configuration of the fabric plan: the DSCP → priority map, the ECN
marking and PFC thresholds written on every port, and their table entries.

Defaults: RoCE data (DSCP 26) → priority 3, CNP (DSCP 48) → priority 6; ECN RED between
8 and 32 packets with pmax 51/255 ≈ 20 %; PFC XOFF at 32, XON at 16 packets, pause
65535 quanta.

Dynamic mode (``thresholds=`` a :class:`p4src.buffermodel.DynamicThresholds`): the
program keeps a shared buffer and PFC XOFF/XON and the ECN kmin/kmax follow its free
cells with a per-priority alpha (:func:`dynamic_entries`; p4src/README.md, "Dynamic
thresholds"). Static stays the default.

Example::

    >>> ecn_entry(3, EcnConfig(kmin_pkts=10, kmax_pkts=None)).action
    'FabricEgress.ecn.set_ecn_threshold'
    >>> pfc_entry(3, PfcConfig()).params["xoff_pkts"]
    32
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

from controller.fabric.entries import T_ECN, T_PFC, T_QOS, Entry
from p4src.buffermodel import (BUFFER_ACTION, BUFFER_TABLE, DEFAULT_DYNAMIC, ECN_ALPHA_ACTION,
                               ECN_ALPHA_TABLE, ECN_DYNAMIC_ACTION, PFC_ALPHA_ACTION,
                               PFC_ALPHA_TABLE, PFC_DYNAMIC_ACTION, DynamicThresholds)

T_BUFFER = BUFFER_TABLE
T_PFC_ALPHA = PFC_ALPHA_TABLE
T_ECN_ALPHA = ECN_ALPHA_TABLE
THRESHOLD_MODES = ("static", "dynamic")

DSCP_TO_PRIORITY: dict[int, int] = {26: 3, 48: 6}
"""RoCE data (DSCP 26, AF31) → priority 3; CNP (DSCP 48, CS6) → priority 6."""


@dataclass(frozen=True, slots=True)
class EcnConfig:
    """ECN marking on every egress port: RED between ``kmin_pkts`` and ``kmax_pkts`` with
    ``pmax_per_255`` at ``kmax``; ``kmax_pkts=None`` marks every packet from ``kmin_pkts``.

    >>> EcnConfig().kmin_pkts, EcnConfig(kmin_pkts=10, kmax_pkts=None).kmax_pkts
    (8, None)
    """

    kmin_pkts: int = 8
    kmax_pkts: Optional[int] = 32
    pmax_per_255: int = 51


@dataclass(frozen=True, slots=True)
class PfcConfig:
    """PFC on every ingress port: PAUSE when the port's packets in the switch reach
    ``xoff_pkts``, RESUME at ``xon_pkts``, pausing for ``pause_quanta`` (512 bit times each).

    >>> PfcConfig().xoff_pkts > PfcConfig().xon_pkts
    True
    """

    xoff_pkts: int = 32
    xon_pkts: int = 16
    pause_quanta: int = 0xFFFF


def qos_entries() -> list[Entry]:
    """``qos.dscp_to_priority``: one entry per :data:`DSCP_TO_PRIORITY` item, by DSCP.

    >>> [e.params["prio"] for e in qos_entries()]
    [3, 6]
    """
    return [Entry(T_QOS, {"hdr.ipv4.dscp": dscp}, "FabricIngress.qos.set_priority",
                  {"prio": prio})
            for dscp, prio in sorted(DSCP_TO_PRIORITY.items())]


def ecn_entry(port: int, ecn: EcnConfig) -> Entry:
    """``FabricEgress.ecn.thresholds`` of egress ``port``: RED, or a plain threshold when
    ``ecn.kmax_pkts`` is None."""
    match = {"standard_metadata.egress_port": port}
    if ecn.kmax_pkts is None:
        return Entry(T_ECN, match, "FabricEgress.ecn.set_ecn_threshold",
                     {"kmin_pkts": ecn.kmin_pkts})
    return Entry(T_ECN, match, "FabricEgress.ecn.set_ecn_red",
                 {"kmin_pkts": ecn.kmin_pkts, "kmax_pkts": ecn.kmax_pkts,
                  "pmax_per_255": ecn.pmax_per_255})


def pfc_entry(port: int, pfc: PfcConfig) -> Entry:
    """``FabricIngress.pfc.thresholds`` of ingress ``port``."""
    return Entry(T_PFC, {"standard_metadata.ingress_port": port},
                 "FabricIngress.pfc.set_thresholds",
                 {"xoff_pkts": pfc.xoff_pkts, "xon_pkts": pfc.xon_pkts,
                  "pause_quanta": pfc.pause_quanta})


def dynamic_entries(ports: list[int], dyn: DynamicThresholds, pfc: bool = True,
                    ecn: bool = True) -> list[Entry]:
    """The entries of the dynamic mode on one switch: the pool (default of
    ``FabricIngress.buffer.config``), per port ``set_dynamic_thresholds`` (``pfc``) and
    ``set_ecn_dynamic`` (``ecn``), per priority the alphas.

    >>> es = dynamic_entries([1, 2], DEFAULT_DYNAMIC)
    >>> [e.action.rsplit(".", 1)[1] for e in es][:3], es[-1].params
    (['set_shared_buffer', 'set_dynamic_thresholds', 'set_ecn_dynamic'], {'kmin_alpha_code': 1, 'kmax_alpha_code': 3, 'pmax_per_255': 51})
    """
    out = [Entry(T_BUFFER, {}, BUFFER_ACTION, dyn.buffer.table_params(), default=True)]
    for p in ports:
        if pfc:
            out.append(Entry(T_PFC, {"standard_metadata.ingress_port": p}, PFC_DYNAMIC_ACTION,
                             {"pause_quanta": dyn.pause_quanta}))
        if ecn:
            out.append(Entry(T_ECN, {"standard_metadata.egress_port": p}, ECN_DYNAMIC_ACTION, {}))
    if pfc:
        out += [Entry(T_PFC_ALPHA, {"meta.priority": prio}, PFC_ALPHA_ACTION, a.table_params())
                for prio, a in sorted(dyn.pfc.items())]
    if ecn:
        out += [Entry(T_ECN_ALPHA, {"meta.priority": prio}, ECN_ALPHA_ACTION, a.table_params())
                for prio, a in sorted(dyn.ecn.items())]
    return out


THRESHOLD_TABLES = (T_PFC, T_ECN, T_BUFFER, T_PFC_ALPHA, T_ECN_ALPHA)
"""The tables whose entries differ between the static and the dynamic mode."""


def threshold_updates(old: list[Entry], new: list[Entry]) -> list[tuple[str, Entry]]:
    """The P4Runtime updates (``"INSERT"``, ``"MODIFY"``, ``"DELETE"``, entry) that take one
    switch's :data:`THRESHOLD_TABLES` entries from plan ``old`` to plan ``new`` in place
    (every other table is left alone): deletes first, then modifies, then inserts; a
    default entry the new plan does not set goes back to ``NoAction``.

    >>> static = [pfc_entry(1, PfcConfig())]
    >>> dyn = dynamic_entries([1], DEFAULT_DYNAMIC, ecn=False)
    >>> [(op, e.action.rsplit(".", 1)[-1]) for op, e in threshold_updates(static, dyn)]
    [('MODIFY', 'set_shared_buffer'), ('MODIFY', 'set_dynamic_thresholds'), ('INSERT', 'set_pfc_alpha')]
    >>> [(op, e.action.rsplit(".", 1)[-1]) for op, e in threshold_updates(dyn, static)]
    [('DELETE', 'set_pfc_alpha'), ('MODIFY', 'NoAction'), ('MODIFY', 'set_thresholds')]
    """
    def keyed(entries: list[Entry]) -> dict[tuple[str, tuple[tuple[str, str], ...], bool], Entry]:
        return {(e.table, tuple(sorted((k, repr(v)) for k, v in e.match.items())), e.default): e
                for e in entries if e.table in THRESHOLD_TABLES}
    before, after = keyed(old), keyed(new)
    deletes = [("DELETE", e) for k, e in before.items() if k not in after and not e.default]
    resets = [("MODIFY", Entry(e.table, {}, "NoAction", {}, default=True))
              for k, e in before.items() if k not in after and e.default]
    modifies = [("MODIFY", e) for k, e in after.items() if k in before and before[k] != e]
    inserts = [("MODIFY" if e.default else "INSERT", e) for k, e in after.items()
               if k not in before]
    return deletes + resets + [u for u in modifies + inserts if u[1].default] + \
        [u for u in modifies if not u[1].default] + [u for u in inserts if not u[1].default]


def thresholds_option(value: str) -> Optional[DynamicThresholds]:
    """What ``--thresholds VALUE`` selects: ``static`` (None: the per-port packet
    thresholds), ``dynamic`` (:data:`~p4src.buffermodel.DEFAULT_DYNAMIC`), or a YAML/JSON
    file whose mapping (or its ``thresholds`` key) is read by
    :meth:`~p4src.buffermodel.DynamicThresholds.from_mapping`. Anything wrong raises
    ``ValueError`` as ``FILE: thresholds.FIELD: why``.

    >>> thresholds_option("static") is None, thresholds_option("dynamic").pfc[3].code
    (True, 4)
    >>> thresholds_option("fast")
    Traceback (most recent call last):
    ...
    ValueError: --thresholds: 'fast' is neither static, dynamic nor a file
    """
    if value == "static":
        return None
    if value == "dynamic":
        return DEFAULT_DYNAMIC
    path = Path(value)
    if not path.is_file():
        raise ValueError(f"--thresholds: {value!r} is neither static, dynamic nor a file")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                         f"{exc}") from None
    if isinstance(data, dict) and "thresholds" in data:
        data = data["thresholds"]
    return DynamicThresholds.from_mapping(data if data is not None else {}, f"{path}: thresholds")


__all__ = ["DEFAULT_DYNAMIC", "DSCP_TO_PRIORITY", "EcnConfig", "PfcConfig", "T_BUFFER",
           "T_ECN_ALPHA", "T_PFC_ALPHA", "THRESHOLD_MODES", "dynamic_entries", "ecn_entry",
           "pfc_entry", "qos_entries", "threshold_updates", "thresholds_option", "THRESHOLD_TABLES"]
