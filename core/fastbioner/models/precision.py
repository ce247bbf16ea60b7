"""Numeric precision and device for inference: which modes this hardware offers,
which one ``auto`` picks, and how a model is put into that mode.

A reduced-precision mode (bf16, fp16, int8) is only picked by ``auto`` when the
model's manifest holds a passing check for it: its entities on devel were compared
with float32's and it lost at most :data:`MAX_F1_LOSS_POINTS` F1 points (or, for a
model that trained on devel's labels, its entities agree with float32's closely
enough that it cannot have lost more: :attr:`PrecisionCheck.f1_loss_bound`). A model
never checked is tagged in float32 unless the user asks for a mode by name; the
checks are written by ``fastbioner benchmark`` (see :mod:`fastbioner.infer.speed`).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Mapping

from fastbioner.base.cpu import describe_cpu
from fastbioner.base.defaults import table
from fastbioner.base.errors import FastBioNERError

# torch is imported inside the functions that ask it: choosing a mode from a manifest needs none.

# The rules of ``auto``, from the defaults table's [precision] section (their decision
# records in docs/research/decisions.md give the figures that set them).
_PRECISION = table().section("precision")
# A mode that loses more than this many F1 points (F1 x 100) against float32 on
# devel is never a default.
MAX_F1_LOSS_POINTS: float = _PRECISION["max_f1_loss_points"]
# Among modes allowed and timed side by side, one that loses more F1 than another is
# picked only when at least this many times faster.
SPEEDUP_WORTH_F1: float = _PRECISION["speedup_worth_f1"]
SAME_F1_POINTS: float = _PRECISION["same_f1_points"]   # F1 losses closer than this are the same



class Precision(str, Enum):
    AUTO = "auto"
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    INT8 = "int8"


PRECISION_CHOICES = [p.value for p in Precision]


def cpu_has_bf16() -> bool:
    """True where oneDNN runs bfloat16 natively (AVX512-BF16 or AMX); elsewhere bf16
    is emulated and slower than float32, so it is not offered."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def cpu_flags_say_bf16() -> bool | None:
    """The same question without importing torch (for a dialog on the GUI thread): the
    CPU's flags on Linux; None where they cannot be read (torch answers at run time)."""
    return describe_cpu().has_any("avx512_bf16", "amx_bf16")


def cpu_has_int8() -> bool:
    import torch

    return any(e in torch.backends.quantized.supported_engines for e in ("x86", "fbgemm", "onednn"))


def available_precisions(device) -> list[Precision]:
    """Modes that run natively on ``device``, fastest first, float32 last."""
    import torch

    if device.type == "cuda":
        modes = [Precision.FP16]
        if torch.cuda.is_bf16_supported():
            modes.append(Precision.BF16)
        return modes + [Precision.FP32]
    modes = []
    if cpu_has_bf16():
        modes.append(Precision.BF16)
    if cpu_has_int8():
        modes.append(Precision.INT8)
    return modes + [Precision.FP32]


@dataclass(frozen=True)
class PrecisionCheck:
    """A reduced-precision mode measured against float32 on the same documents.

    ``agreement`` is the entity-level F1 (0 to 1) of this mode's entities scored
    against float32's: 1.0 means identical entities. ``f1`` and ``f1_fp32`` are
    entity F1 (0 to 1) against gold on devel; ``f1_loss_points`` is their difference
    in points (x 100), the unit of :data:`MAX_F1_LOSS_POINTS`.
    """

    precision: str
    agreement: float
    f1: float | None = None
    f1_fp32: float | None = None
    documents: int = 0
    data: str = ""
    hardware: str = ""
    date: str = ""
    tokens_per_s: float | None = None  # this mode's speed in the same run (on ``hardware``)
    # tokens_per_s over float32's in that run: survives float32 being measured again
    # alone later (a new float32 speed from another run does not compare with this one).
    speedup: float | None = None

    @property
    def f1_loss_points(self) -> float | None:
        if self.f1 is None or self.f1_fp32 is None:
            return None
        return round(100.0 * (self.f1_fp32 - self.f1), 4)

    @property
    def f1_loss_bound(self) -> float:
        """The F1 points this mode may lose: measured against gold when it was, else
        the bound its agreement with float32 sets. A check without gold is a final model's
        (trained on train + devel: no held-out labelled text here). When a fraction 1 - a
        of its entities changes (a: the agreement, entity F1 against float32's), F1
        against any gold moves by at most about 1 - a (every entity dropped a right one,
        every entity added a wrong one): so 100 x (1 - a) points, and an agreement of at least
        1 - :data:`MAX_F1_LOSS_POINTS` / 100 passes."""
        measured = self.f1_loss_points
        return measured if measured is not None else round(100.0 * (1.0 - self.agreement), 4)

    @property
    def passes(self) -> bool:
        return self.f1_loss_bound <= MAX_F1_LOSS_POINTS + 1e-9

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["f1_loss_points"] = self.f1_loss_points
        if self.f1 is None:  # checked without gold: the loss its agreement allows
            d["f1_loss_bound"] = self.f1_loss_bound
        d["default_allowed"] = self.passes
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PrecisionCheck":
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in fields})


def loss_points_text(points: float | None, missing: str = "-") -> str:
    """An F1 loss in points as tables print it, two decimals.

    A mode that scored a hair better than float32 has a loss that rounds to
    zero from below; it prints ``0.00``, not ``-0.00`` (a reader takes the sign
    for a measurable gain). ``missing`` stands in for a loss not measured.
    """
    if points is None:
        return missing
    return f"{round(points, 2) + 0.0:.2f}"  # + 0.0 turns a rounded -0.0 into 0.0


def checks_from_manifest(manifest: Mapping[str, Any] | None) -> dict[str, PrecisionCheck]:
    """The checks recorded in a manifest's ``speed["modes"]`` (one per measured mode)."""
    raw = ((manifest or {}).get("speed") or {}).get("modes") or {}
    out = {}
    for mode, d in raw.items():
        if not isinstance(d, Mapping) or "agreement" not in d:
            continue
        try:
            out[mode] = PrecisionCheck.from_dict(d)
        except TypeError:  # an entry from another version: ignore it rather than fail tagging
            continue
    return out


def choose_precision(requested: str | Precision, device,
                     checks: Mapping[str, PrecisionCheck] | None = None) -> Precision:
    """The mode to run in. A named mode is honoured if the device runs it (error if
    not); ``auto``: :func:`auto_precision` over the modes the device offers."""
    try:
        requested = Precision(requested)
    except ValueError:
        raise FastBioNERError(f"unknown precision {requested!r} (expected one of "
                              f"{', '.join(PRECISION_CHOICES)})") from None
    offered = available_precisions(device)
    if requested is not Precision.AUTO:
        if requested not in offered:
            hint = "bf16 needs a CPU with AVX512-BF16 or AMX" if requested is Precision.BF16 else \
                "fp16 is for CUDA GPUs; on a CPU use bf16 or int8" if requested is Precision.FP16 else \
                "int8 dynamic quantisation runs on the CPU only"
            raise FastBioNERError(f"precision {requested.value} is not available on {device.type} ({hint}); "
                                  f"available: {', '.join(p.value for p in offered)}")
        return requested
    return auto_precision(offered, checks or {})


def auto_precision(offered: list[Precision], checks: Mapping[str, PrecisionCheck]) -> Precision:
    """What ``auto`` runs where ``offered`` are the modes: the fastest whose recorded
    check passes, weighed against its F1 loss (:func:`fastest_worth_its_loss`) when
    the speeds compare (each mode's speedup over float32 in its own run, or tokens/s
    of modes timed in one run), else in ``offered``'s order; float32 when none has
    passed (or none was measured)."""
    passing: list[Precision] = [m for m in offered if m is not Precision.FP32 and checks.get(m.value) is not None
               and checks[m.value].passes]
    if not passing:
        return Precision.FP32
    ratios = {m: r for m in passing
              if (r := speedup_over_fp32(checks[m.value], checks.get(Precision.FP32.value))) is not None}
    if len(ratios) == len(passing):
        # float32 competes too: a mode that costs F1 must be worth it against it.
        return fastest_worth_its_loss(passing + [Precision.FP32], checks, {**ratios, Precision.FP32: 1.0})
    timed = [checks[m.value] for m in passing]
    speeds = {m: float(c.tokens_per_s) for m, c in zip(passing, timed) if c.tokens_per_s}
    if len(passing) > 1 and len(speeds) == len(passing) and len({(c.hardware, c.date) for c in timed}) == 1:
        # Timed side by side, in one run on one machine: the fastest (int8 beat bf16 by
        # 1.4x for the convolutional student on an AVX512-BF16 EPYC, at the same F1), not
        # a fixed order.
        return fastest_worth_its_loss(passing, checks, speeds)
    return passing[0]


def speedup_over_fp32(check: PrecisionCheck, fp32: PrecisionCheck | None) -> float | None:
    """``check``'s tokens/s over float32's in the same run: recorded, or worked out
    from a float32 check of that run (manifests written before ``speedup`` was); None
    when the two were not timed together."""
    if check.speedup:
        return check.speedup
    if fp32 is None or not check.tokens_per_s or not fp32.tokens_per_s or \
            (check.hardware, check.date) != (fp32.hardware, fp32.date):
        return None
    return check.tokens_per_s / fp32.tokens_per_s


def fastest_worth_its_loss(modes: list[Precision], checks: Mapping[str, PrecisionCheck],
                           speeds: Mapping[Precision, float]) -> Precision:
    """The fastest of ``modes`` by ``speeds`` (which compare), unless it loses more F1
    than a mode at least 1/:data:`SPEEDUP_WORTH_F1` of its speed: then the most
    accurate such mode. Losses within :data:`SAME_F1_POINTS` count as equal; float32
    loses none."""
    def loss(m: Precision) -> float:
        check = checks.get(m.value)
        return check.f1_loss_bound if check is not None else 0.0

    fastest = max(modes, key=lambda m: speeds[m])
    for m in sorted(modes, key=lambda m: (loss(m), -speeds[m])):  # most accurate first
        if loss(m) >= loss(fastest) - SAME_F1_POINTS:
            return fastest
        if speeds[m] * SPEEDUP_WORTH_F1 >= speeds[fastest]:
            # The fastest of the modes as accurate as m: float32 against a bf16 whose
            # bound is 0.01 takes bf16 (the fast model: 1.29 times float32, issue 69).
            return max((p for p in modes if loss(p) <= loss(m) + SAME_F1_POINTS), key=lambda p: speeds[p])
    return fastest


def apply_precision(model, precision: Precision, device):
    """Move ``model`` to ``device`` in ``precision``; returns the model to run (int8
    makes a new, dynamically quantised one whose Linear layers run in int8, all but
    the feed-forward output projections: see :func:`int8_linear_layers`)."""
    import torch

    model.eval()
    if precision is Precision.INT8:
        if device.type != "cpu":
            raise FastBioNERError("int8 dynamic quantisation runs on the CPU only")
        model = model.to("cpu", dtype=torch.float32)
        with warnings.catch_warnings():
            # torch >= 2.10 announces the move of quantisation to torchao on every call.
            warnings.filterwarnings("ignore", message=".*quantiz.*deprecated", category=UserWarning)
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            return torch.ao.quantization.quantize_dynamic(model, int8_linear_layers(model), dtype=torch.qint8)
    dtype = {Precision.FP32: torch.float32, Precision.BF16: torch.bfloat16,
             Precision.FP16: torch.float16}[precision]
    return model.to(device, dtype=dtype)


def is_feed_forward_output(name: str) -> bool:
    """A transformer layer's feed-forward output projection (``...layer.N.output.dense``
    in BERT, RoBERTa, MPNet and the light engine; not the attention's ``output.dense``)."""
    return name.endswith(".output.dense") and ".attention." not in name


def int8_linear_layers(model) -> set[str]:
    """The Linear layers int8 quantises: all but the transformer layers' feed-forward
    output projections. Their inputs (the GELU outputs) carry a few large outliers that
    per-tensor dynamic quantisation of activations clips or coarsens (Bondarenko et al.
    2021). Measured on the shipped default (6 layers, 384 wide, BC5CDR devel): every
    Linear in int8 lost 1.81 F1 points against float32; these six kept in float32,
    0.25 (under :data:`MAX_F1_LOSS_POINTS`), at 1.58x float32's and 1.28x bfloat16's
    tokens/s on an AVX512-BF16 EPYC. Keeping only the first one or three in float lost
    0.84 and 0.49; running the six in bfloat16, 0.32 (and int8's numerics would then
    depend on the CPU, so a check recorded on one would not hold on another)."""
    import torch

    return {name for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and not is_feed_forward_output(name)}


# Padded subword positions per batch, by device and precision: the defaults table's
# [tagging] section (float32 and int8 matrix products run fastest on a CPU while a
# batch's activations stay in cache, bfloat16 with AMX wants larger ones, GPUs large).
_TAGGING = table().section("tagging")
TOKEN_BUDGETS = {("cpu", Precision.FP32): _TAGGING["token_budget_cpu_fp32"],
                 ("cpu", Precision.INT8): _TAGGING["token_budget_cpu_int8"],
                 ("cpu", Precision.BF16): _TAGGING["token_budget_cpu_bf16"]}
GPU_TOKEN_BUDGET: int = _TAGGING["token_budget_gpu"]
OTHER_TOKEN_BUDGET: int = _TAGGING["token_budget_cpu_other"]  # a CPU mode not measured (fp16)


def default_token_budget(device, precision: Precision) -> int:
    if device.type == "cuda":
        return GPU_TOKEN_BUDGET
    return TOKEN_BUDGETS.get((device.type, precision), OTHER_TOKEN_BUDGET)


def hardware_name(device) -> str:
    """The GPU's name, or the CPU's model name (with its core count: ``fastbioner.base.cpu``),
    so speed figures say where they were measured."""
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)

    cpu = describe_cpu()
    return f"{cpu.model} ({cpu.cores} cores)"
