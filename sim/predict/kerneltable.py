"""Kernel efficiency from measurement: per-die, per-precision tables of measured GEMM and
attention throughput (``sim/predict/kernel_tables/<chip>.csv``, every row citing its public
source, or a user's own table written by ``sim calibrate-ops --table``), interpolated by
shape, and the shape model that carries a measurement to the shapes nobody measured.

**GEMM.** A GEMM ``M × N × K`` runs as output tiles on the die's SMs (NVIDIA, *Matrix
Multiplication Background User's Guide*: tile and wave quantization). For each tile shape
cuBLAS offers (128×256, 256×128, 128×128, 64×128, 64×64; smaller tiles run their
tensor cores less efficiently) the model counts the tiles, splits K when the tiles do not fill
the SMs (split-K), and takes the best of

    rate = tile_eff × (useful / padded tile area) × units / (waves × SMs) × K_unit / (K_unit + k0)

with the last partial wave shared out over the SMs along K (stream-K, as cuBLAS does on
Ampere and Hopper) at the cost of :data:`STREAM_K_FIXUP` of a wave (the partial sums' fix-up).
``k0`` is the K-loop's fixed cost (prologue, epilogue) in K elements. The measured rows of a
(die, precision) fix the absolute level: ``E`` = the geometric mean of measured / modelled
rate over the rows, and with four rows or more ``k0`` too (grid, least log-error); fewer rows
keep ``k0`` = :data:`DEFAULT_K0`. Near a measured shape (within a factor 2 in every
dimension, log₂ distance ≤ 1) the row's own residual is blended in by inverse distance, so a
measured shape is returned exactly. The result says where it came from: ``measured`` (a row
within that distance), ``shape model`` (anchored on the table's rows), or ``default`` (no
row for this die and precision: ``E`` = :data:`DEFAULT_GEMM_EFF`).

**Attention** (flash kernels): rows per implementation (``fa2``, ``fa3``, ``cudnn``), head
dimension, causal mask and sequence, for the forward (``fwd``) or forward+backward
(``fwdbwd``, 3.5 × the forward's FLOPs) or the backward alone (``bwd``, 2.5 ×). Interpolated linearly in log₂ sequence (held flat
outside the measured 512–16K: the kernels are saturated there) and log₂ head dimension. A
phase without rows is derived and says so: the backward from ``fwd`` and ``fwdbwd`` rows
(``2.5 / (3.5/fwdbwd − 1/fwd)``), a forward from ``fwdbwd`` with the fwd/fwdbwd ratio of the
same implementation on another die, cuDNN's and FA3's backward with FA2's bwd/fwd ratio.

Example::

    >>> t = builtin_table("H100")
    >>> r = t.gemm_tflops("bf16", 2048, 2048, 13312, 132)      # the MAMF shape itself
    >>> round(r.tflops, 1), r.provenance
    (794.5, 'measured')
    >>> r = t.gemm_tflops("bf16", 8192, 1024, 4096, 132)        # a shape nobody measured
    >>> r.provenance, r.tflops < 794.5
    ('shape model', True)
    >>> a = t.attention_tflops("cudnn", "bf16", 4096, 128, True, "fwd")
    >>> round(a.tflops), a.provenance
    (518, 'measured')
    >>> t.attention_tflops("cudnn", "bf16", 4096, 128, True, "bwd").provenance
    'derived (bwd/fwd of fa2)'
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

from sim.topology import SimInputError

TABLE_DIR = Path(__file__).resolve().parent / "kernel_tables"
COLUMNS = ("precision", "kind", "impl", "M", "N", "K", "groups", "seq", "head_dim", "causal", "phase", "tflops",
           "source")
STREAM_K_FIXUP = 0.1
TILES = ((128, 256, 1.0), (256, 128, 1.0), (128, 128, 0.93), (64, 128, 0.80), (64, 64, 0.60))
DEFAULT_K0 = {"bf16": 192.0, "fp16": 192.0, "fp8": 384.0, "fp8_block": 384.0}
PRECISIONS = ("bf16", "fp16", "fp8", "fp8_block")
DEFAULT_GEMM_EFF = 0.70
K0_GRID = (32.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0)
IMPLS = ("fa2", "fa3", "cudnn")
PHASES = ("fwd", "fwdbwd", "bwd")


@dataclass(frozen=True, slots=True)
class Rate:
    """A kernel's throughput (TFLOP/s at the die's datasheet clock) and where it came from."""

    tflops: float
    provenance: str


@dataclass(frozen=True, slots=True)
class Row:
    """One measured kernel of a table."""

    precision: str
    kind: str
    impl: str
    dims: tuple[int, int, int]
    groups: int
    seq: int
    head_dim: int
    causal: bool
    phase: str
    tflops: float
    source: str
    line: int


def _shape_rate(M: float, N: float, K: float, sms: int, k0: float, peak: float) -> float:
    """Modelled TFLOP/s of an M × N × K GEMM at absolute level 1 (module docstring)."""
    best = 0.0
    for tm, tn, eff in TILES:
        tiles_m, tiles_n = math.ceil(M / tm), math.ceil(N / tn)
        tiles = tiles_m * tiles_n
        area = (M * N) / (tiles_m * tm * tiles_n * tn)
        split = max(1, min(sms // tiles, int(K // 1024))) if tiles < sms else 1
        units = tiles * split
        whole, part = divmod(units, sms)
        waves = whole + (min(1.0, part / sms + STREAM_K_FIXUP) if part else 0.0)
        k_unit = K / split
        rate = eff * area * units / (waves * sms) * k_unit / (k_unit + k0)
        best = max(best, rate)
    return best * peak


def _dist(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return math.sqrt(sum((math.log2(x) - math.log2(y)) ** 2 for x, y in zip(a, b)))


@dataclass(slots=True)
class KernelTable:
    """The measured rows of one die (``chip``) and what is derived from them."""

    chip: str
    rows: list[Row]
    path: str
    _gemm_fit: dict[str, tuple[float, float]] = field(default_factory=dict)

    def gemm_rows(self, precision: str) -> list[Row]:
        """GEMM rows at ``precision`` (fp16 falls back to bf16: the same tensor-core rate;
        ``fp8_block``, block-scaled FP8, to per-tensor ``fp8`` when it has no rows)."""
        for p in (precision, {"fp16": "bf16", "fp8_block": "fp8"}.get(precision, "")):
            rows = [r for r in self.rows if r.kind == "gemm" and r.precision == p]
            if rows:
                return rows
        return []

    def _fit(self, precision: str, sms: int) -> tuple[float, float]:
        """(E, k0) of ``precision`` (module docstring); (0, 0) without rows."""
        key = f"{precision}:{sms}"
        if key in self._gemm_fit:
            return self._gemm_fit[key]
        rows = self.gemm_rows(precision)
        if not rows:
            self._gemm_fit[key] = (0.0, 0.0)
            return self._gemm_fit[key]
        grid = K0_GRID if len(rows) >= 4 else (DEFAULT_K0.get(precision, 192.0),)
        best = (float("inf"), 1.0, grid[0])
        for k0 in grid:
            logs = [math.log(r.tflops / _shape_rate(*r.dims, sms, k0, 1.0)) for r in rows]
            mean = sum(logs) / len(logs)
            err = sum((x - mean) ** 2 for x in logs)
            if err < best[0] - 1e-12:
                best = (err, math.exp(mean), k0)
        self._gemm_fit[key] = (best[1], best[2])
        return self._gemm_fit[key]

    def gemm_tflops(self, precision: str, M: int, N: int, K: int, sms: int) -> Rate:
        """Measured or modelled TFLOP/s of an ``M × N × K`` GEMM (module docstring)."""
        E, k0 = self._fit(precision, sms)
        if E <= 0:
            return Rate(0.0, "default")
        shape = (max(M, 1), max(N, 1), max(K, 1))
        model = _shape_rate(*shape, sms, k0, E)
        num = den = 0.0
        nearest = float("inf")
        for r in self.gemm_rows(precision):
            d = _dist(shape, r.dims)
            nearest = min(nearest, d)
            if d <= 1.0:
                w = 1.0 / (d * d + 1e-9)
                resid = math.log(r.tflops / _shape_rate(*r.dims, sms, k0, E))
                num += w * resid * (1.0 - d)
                den += w
        if den > 0:
            model *= math.exp(num / den)
        return Rate(model, "measured" if nearest <= 1.0 else "shape model")

    def _att(self, impl: str, precision: str, phase: str, head_dim: int, causal: bool,
             seq: int) -> Optional[float]:
        prec = precision if precision in ("bf16", "fp16") else "bf16"
        rows = [r for r in self.rows if r.kind == "attention" and r.impl == impl and r.phase == phase
                and r.causal == causal and r.precision in (prec, "bf16")]
        if not rows:
            return None
        dims = sorted({r.head_dim for r in rows})

        def at_dim(d: int) -> float:
            pts = sorted((r.seq, r.tflops) for r in rows if r.head_dim == d)
            x = math.log2(min(max(seq, pts[0][0]), pts[-1][0]))
            for (s0, t0), (s1, t1) in zip(pts, pts[1:]):
                if math.log2(s0) <= x <= math.log2(s1):
                    f = (x - math.log2(s0)) / (math.log2(s1) - math.log2(s0))
                    return t0 + f * (t1 - t0)
            return pts[0][1] if x <= math.log2(pts[0][0]) else pts[-1][1]

        hd = min(max(head_dim, dims[0]), dims[-1])
        lo = max(d for d in dims if d <= hd)
        hi = min(d for d in dims if d >= hd)
        if lo == hi:
            return at_dim(lo)
        f = (math.log2(hd) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
        return at_dim(lo) + f * (at_dim(hi) - at_dim(lo))

    def attention_tflops(self, impl: str, precision: str, seq: int, head_dim: int, causal: bool,
                         phase: str, other: Optional["KernelTable"] = None) -> Rate:
        """TFLOP/s of a flash-attention ``phase`` (``fwd`` | ``bwd``) (module docstring);
        ``other``: a table of another die for the fwd/fwdbwd ratio. ``Rate(0, 'default')``
        when nothing applies."""
        fwd = self._att(impl, precision, "fwd", head_dim, causal, seq)
        fb = self._att(impl, precision, "fwdbwd", head_dim, causal, seq)
        if phase == "bwd":
            bwd = self._att(impl, precision, "bwd", head_dim, causal, seq)
            if bwd is not None:
                return Rate(bwd, "measured")
        if phase == "fwd":
            if fwd is not None:
                return Rate(fwd, "measured")
            if fb is not None:
                for t in (self, other):
                    if t is None:
                        continue
                    f2, fb2 = (t._att(impl, precision, p, head_dim, causal, seq) for p in ("fwd", "fwdbwd"))
                    if f2 and fb2:
                        return Rate(fb * f2 / fb2, f"derived (fwd/fwdbwd of {impl} on {t.chip})")
            return Rate(0.0, "default")
        if fwd is not None and fb is not None and 3.5 / fb > 1.0 / fwd:
            return Rate(2.5 / (3.5 / fb - 1.0 / fwd), "derived (fwd and fwdbwd)")
        if fwd is None and fb is not None:
            f = self.attention_tflops(impl, precision, seq, head_dim, causal, "fwd", other)
            if f.tflops > 0 and 3.5 / fb > 1.0 / f.tflops:
                return Rate(2.5 / (3.5 / fb - 1.0 / f.tflops), "derived (fwdbwd and derived fwd)")
        if fwd is not None and impl != "fa2":
            f2 = self._att("fa2", precision, "fwd", head_dim, causal, seq)
            b2 = self.attention_tflops("fa2", precision, seq, head_dim, causal, "bwd", other)
            if f2 and b2.tflops > 0:
                return Rate(fwd * b2.tflops / f2, "derived (bwd/fwd of fa2)")
        return Rate(0.0, "default")


def _int(v: str, where: str, col: str, minimum: int = 1) -> int:
    try:
        x = int(v)
    except ValueError:
        raise SimInputError(f"{where}: {col}: not an integer: {v!r}") from None
    if x < minimum:
        raise SimInputError(f"{where}: {col}: must be >= {minimum}, got {x}")
    return x


def load_table(path: Path, chip: Optional[str] = None) -> KernelTable:
    """Read a table (module docstring); ``SimInputError`` names ``file:line: column`` and why."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SimInputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise SimInputError(f"{path}: empty kernel table (header: {','.join(COLUMNS)})")
    head_no, head = lines[0]
    reader = csv.reader([head])
    cols = [c.strip() for c in next(reader)]
    missing = [c for c in ("precision", "kind", "tflops") if c not in cols]
    if missing:
        raise SimInputError(f"{path}:{head_no}: header: missing column(s) {', '.join(missing)} "
                            f"(columns: {', '.join(COLUMNS)})")
    rows = []
    for no, ln in lines[1:]:
        vals = next(csv.reader([ln]))
        where = f"{path}:{no}"
        if len(vals) != len(cols):
            raise SimInputError(f"{where}: {len(vals)} fields, the header has {len(cols)}")
        d = {c: v.strip() for c, v in zip(cols, vals)}
        prec = d["precision"]
        if prec not in PRECISIONS:
            raise SimInputError(f"{where}: precision: one of {', '.join(PRECISIONS)}, got {prec!r}")
        try:
            tf = float(d["tflops"])
        except ValueError:
            raise SimInputError(f"{where}: tflops: not a number: {d['tflops']!r}") from None
        if not tf > 0 or math.isinf(tf):
            raise SimInputError(f"{where}: tflops: must be a positive number, got {d['tflops']}")
        kind = d["kind"]
        if kind == "gemm":
            dims = tuple(_int(d.get(c, ""), where, c) for c in ("M", "N", "K"))
            rows.append(Row(prec, kind, "", dims, _int(d.get("groups") or "1", where, "groups"), 0, 0, False, "",
                            tf, d.get("source", ""), no))
        elif kind == "attention":
            impl = d.get("impl", "")
            if impl not in IMPLS:
                raise SimInputError(f"{where}: impl: one of {', '.join(IMPLS)}, got {impl!r}")
            phase = d.get("phase", "")
            if phase not in PHASES:
                raise SimInputError(f"{where}: phase: fwd, bwd or fwdbwd, got {phase!r}")
            if d.get("causal", "") not in ("0", "1"):
                raise SimInputError(f"{where}: causal: 0 or 1, got {d.get('causal')!r}")
            rows.append(Row(prec, kind, impl, (0, 0, 0), 1, _int(d.get("seq", ""), where, "seq"),
                            _int(d.get("head_dim", ""), where, "head_dim"), d["causal"] == "1", phase, tf,
                            d.get("source", ""), no))
        else:
            raise SimInputError(f"{where}: kind: gemm or attention, got {kind!r}")
    return KernelTable(chip or path.stem, rows, str(path))


@lru_cache(maxsize=None)
def builtin_table(chip: str) -> KernelTable:
    """The shipped table of ``chip`` (an empty table when none is shipped)."""
    p = TABLE_DIR / f"{chip}.csv"
    return load_table(p, chip) if p.exists() else KernelTable(chip, [], "")


__all__ = ["DEFAULT_GEMM_EFF", "KernelTable", "Rate", "Row", "TABLE_DIR", "builtin_table", "load_table"]
