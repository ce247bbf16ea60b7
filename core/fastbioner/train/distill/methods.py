"""Distillation methods as named configurations over one code path.

A method is a schedule (a weight ``w`` as a pure function of progress) and a list
of loss terms, each taking ``w``, ``1 - w`` or a fixed weight, times a coefficient.
The objective (:mod:`fastbioner.train.distill.objective`) computes whatever terms a
method lists, so the baselines differ from FastBioNER only in this table, and an
ablation is a method with a term dropped or the schedule replaced.

Terms:

- ``soft``: L_SL, teacher's soft labels (temperature T) over labelled positions;
- ``gold``: L_TL, cross-entropy with gold labels (the configured gold loss);
- ``hidden``: MSE(H_s^j W_h, H_t^m(j)) over the mapped layers, summed over j;
- ``attention``: mean over heads of MSE(A_s^j, A_t^m(j)), summed over j;
- ``hidden-norm``: Patient KD's distance between unit-normalised hidden states;
- ``embedding``: MSE between the embedding layers' outputs (TinyBERT);
- ``prob-mse`` / ``logit-mse``: squared distance between softmax outputs / logits.

Every term's weight is the schedule's share times the method's coefficient times the
user's ``term_weights`` entry (1 unless set) times, for the matching terms, the
calibration scale measured at the start of a run (``calibrate``; 1 unless asked for).
The paper's literal form is every user weight 1 and no calibration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fastbioner.base.config import ConfigError, Settings, opt
from fastbioner.train.distill.schedules import SCHEDULE_NAMES, ScheduleConfig

TERM_NAMES = ("soft", "gold", "hidden", "attention", "hidden-norm", "embedding", "prob-mse", "logit-mse")
# Terms that compare positions one by one and so need the same subwords on both sides.
TOKEN_LEVEL_TERMS = ("hidden", "attention", "hidden-norm", "embedding")
TEACHER_FREE_TERMS = ("gold",)


def term_reads_teacher(name: str, soft_from_ensemble: bool = False) -> bool:
    """Whether a term reads the (first) teacher's outputs at each step: every term but
    the gold labels, and but the soft labels when several teachers' combined labels
    stand in for them (``soft_from_ensemble``)."""
    return name not in TEACHER_FREE_TERMS and not (soft_from_ensemble and name == "soft")

# Terms that match the teacher's insides rather than its outputs: calibration scales these.
MATCHING_TERMS = ("hidden", "attention", "hidden-norm", "embedding")
# How attention maps are compared: the paper's pre-softmax scores QK^T/sqrt(d_k); the same
# with each query row's mean over the real keys taken out (softmax ignores a row offset,
# so that part of the score MSE teaches nothing); or the probabilities after softmax.
ATTENTION_FORMS = ("scores", "centred", "probs")
CALIBRATIONS = ("none", "grad-norm")


@dataclass(frozen=True)
class Term:
    name: str
    share: str = "fixed"  # "w", "1-w" or "fixed"
    coefficient: float = 1.0
    # A matching term that calibration leaves at its own weight (a term carried over
    # from another method at that method's strength); others are scaled when asked.
    calibrated: bool = True

    def weight(self, w: float) -> float:
        if self.share == "w":
            return self.coefficient * w
        if self.share == "1-w":
            return self.coefficient * (1.0 - w)
        return self.coefficient


@dataclass(frozen=True)
class Method:
    name: str
    schedule: ScheduleConfig
    terms: tuple[Term, ...]
    temperature: float = 1.0
    summary: str = ""
    calibrate: str = "none"      # the method's own; MethodConfig.calibrate overrides it
    attention: str = "scores"    # the method's own; MethodConfig.attention overrides it

    @property
    def capture_kind(self) -> str:
        """What the hooks capture: probabilities, or scores (centred ones are scores
        centred in the loss)."""
        return "probs" if self.attention == "probs" else "scores"

    def weights(self, step: int, total_steps: int) -> tuple[float, dict[str, float]]:
        """The schedule's ``w`` and every term's weight at ``step``."""
        w = self.schedule.build()(step, total_steps)
        return w, {t.name: t.weight(w) for t in self.terms}

    @property
    def term_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.terms)

    def reads_teacher(self, soft_from_ensemble: bool = False) -> bool:
        """Whether one of the method's terms reads the teacher (:func:`term_reads_teacher`)."""
        return any(term_reads_teacher(t.name, soft_from_ensemble) for t in self.terms)

    def uses(self, *names: str) -> bool:
        return any(t.name in names for t in self.terms)

    @property
    def calibrated_terms(self) -> tuple[str, ...]:
        """The matching terms a calibration scales (every one but those kept at their
        own weight)."""
        return tuple(t.name for t in self.terms if t.name in MATCHING_TERMS and t.calibrated)

    def check_learnable(self) -> None:
        """Refuse a method (after dropped terms) whose every weight is 0 for part of
        training: the student would take steps with nothing to learn from."""
        for tenth in range(10):
            _, weights = self.weights(tenth, 10)
            if not any(weights.values()):
                raise ConfigError(f"method {self.name} with terms {', '.join(self.term_names)} has "
                                  f"nothing to learn from at {tenth * 10}% of training (every "
                                  f"weight is 0); keep more terms or change the schedule")


METHODS: dict[str, Method] = {
    "og": Method(
        "og", ScheduleConfig("constant", alpha=1.0), (Term("gold"),),
        summary="gold labels only, same initialisation (the paper's Bert-OG)"),
    "hinton": Method(
        "hinton", ScheduleConfig("constant", alpha=0.5), (Term("soft", "w"), Term("gold", "1-w")),
        temperature=2.0, summary="soft and gold labels, fixed alpha and temperature"),
    "pkd": Method(
        # PKD searched beta in 10..1000 for a [CLS]-only term; ours is over every
        # token and summed over layers, so the low end of that range.
        "pkd", ScheduleConfig("constant", alpha=0.5),
        (Term("soft", "w"), Term("gold", "1-w"), Term("hidden-norm", "fixed", 10.0)),
        temperature=2.0, summary="Patient KD: soft labels plus normalised hidden-state distance (through W_h when the "
                "student is narrower than the teacher)"),
    "tinybert": Method(
        "tinybert", ScheduleConfig("two-stage", split=0.5),
        (Term("embedding", "w"), Term("hidden", "w"), Term("attention", "w"), Term("soft", "1-w")),
        summary="embedding, hidden and attention matching, then prediction-layer distillation"),
    "mse-prob": Method(
        "mse-prob", ScheduleConfig("constant", alpha=1.0), (Term("prob-mse"), Term("gold")),
        summary="MSE of softmax outputs plus gold cross-entropy (BERT+CRF to BiGRU+CRF)"),
    "mse-logit": Method(
        "mse-logit", ScheduleConfig("constant", alpha=0.2), (Term("gold", "w"), Term("logit-mse", "1-w")),
        summary="MSE of logits plus gold cross-entropy, alpha = 0.2 (BERT to BiLSTM)"),
    "fastbioner": Method(
        "fastbioner", ScheduleConfig("dynamic", b=0.3),
        (Term("soft", "w"), Term("gold", "1-w"), Term("hidden", "w"), Term("attention", "w")),
        summary="dynamic phi over soft, gold and intermediate-layer terms (FastBioNER)"),
    # FastBioNER as the tables support it (docs/research/benchmarks.md, "Where FastBioNER stands";
    # 3-layer students of the teacher's layers, 6 epochs, three seeds): each matching term
    # calibrated to the gold term's gradient norm, attention scores row-centred, T = 2 as
    # every soft-label method, and phi held at 0.5 to the end: 82.64 +- 0.12 against
    # hinton's 82.15 +- 0.03 and the paper's phi (calibrated) 82.25 +- 0.11. phi with
    # b = 0 (fading out over the whole run) scored 82.52 +- 0.46: no better, less steady.
    "fastbioner-cal": Method(
        "fastbioner-cal", ScheduleConfig("constant", alpha=0.5),
        (Term("soft", "w"), Term("gold", "1-w"), Term("hidden", "w"), Term("attention", "w")),
        temperature=2.0, calibrate="grad-norm", attention="centred",
        summary="FastBioNER calibrated: matching terms scaled to the gold term's gradient norm, centred "
                "attention scores, T = 2, phi held at 0.5"),
    # The last open question about the named method (issue 51): does FastBioNER's own
    # intermediate-layer signal add anything once its hidden term is Patient KD's? The
    # calibrated method with its hidden MSE replaced by pkd's normalised distance at
    # pkd's weight (10, fixed, not calibrated, which is what made pkd lead): with phi
    # at 0.5 this is pkd plus the calibrated, centred attention term and nothing else.
    "fastbioner-cal-pkd": Method(
        "fastbioner-cal-pkd", ScheduleConfig("constant", alpha=0.5),
        (Term("soft", "w"), Term("gold", "1-w"), Term("hidden-norm", "fixed", 10.0, calibrated=False),
         Term("attention", "w")),
        temperature=2.0, calibrate="grad-norm", attention="centred",
        summary="calibrated FastBioNER with Patient KD's normalised hidden term at pkd's weight: pkd plus the "
                "calibrated, centred attention term"),
}
METHOD_NAMES = tuple(METHODS)


def _finite_number(x: object) -> bool:
    """A user's weight or ratio: an int or float (not a bool), neither NaN nor infinite."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass
class MethodConfig(Settings):
    """A method by name plus the overrides an ablation or a user asks for; saved
    whole in the student's manifest. ``None`` keeps the method's own value."""

    # hinton works for any student and tokenizer; the CLI and the app pick by the
    # student's source and depth (distill.config.default_method: for the teacher's own
    # layers, the method that led at that depth). fastbioner is the paper's literal form unless --calibrate/--attention
    # say otherwise.
    name: str = opt("hinton", "distillation method", flag="--method", choices=METHOD_NAMES)
    schedule: str | None = opt(None, "replace the method's schedule", choices=SCHEDULE_NAMES)
    b: float | None = opt(None, "offset b of the dynamic phi (0.3)")
    alpha: float | None = opt(None, "weight of a constant schedule")
    temperature: float | None = opt(None, "soft-label temperature (default: the method's)")
    scale_by_t2: bool = opt(True, "do not scale the soft-label term by T^2", flag="--no-t2", kind="negate")
    drop_terms: list[str] = opt(help=f"leave out loss terms (ablations): {', '.join(TERM_NAMES)}", factory=list,
                                metavar="T1,T2", kind="comma-list")
    attention: str | None = opt(None, "attention maps to match: scores QK^T/sqrt(d_k) before softmax (the "
                                      "paper's); centred: the same with each query row's mean removed "
                                      "(softmax ignores it); probs: probabilities after softmax (default: the "
                                      "method's own: centred for fastbioner-cal, else scores)",
                                choices=ATTENTION_FORMS)
    term_weights: dict[str, float] = opt(
        help=f"weight of one loss term, multiplying the method's own (repeat for several; terms: "
             f"{', '.join(TERM_NAMES)}); e.g. --term-weight attention=0.01. Every weight 1 and --calibrate "
             f"none is the paper's literal form", flag="--term-weight", factory=dict, metavar="TERM=W",
        kind="term-weights")
    calibrate: str | None = opt(None, "grad-norm: before training, scale each matching term (hidden, "
                                      "attention, ...) so its weighted gradient norm equals the gold term's "
                                      "(recorded in the manifest); none: the weights as given (default: the "
                                      "method's own: grad-norm for fastbioner-cal, else none)",
                                choices=CALIBRATIONS)
    calibration_batches: int = opt(4, "batches the calibration averages over", metavar="N")
    calibration_ratio: float = opt(1.0, "each matching term's gradient norm as a multiple of the gold term's",
                                   metavar="R")
    term_ratios: dict[str, float] = opt(
        help=f"with calibration: one matching term's gradient norm as a multiple of the gold term's, in place "
             f"of --calibration-ratio for that term (repeat for several; terms: {', '.join(MATCHING_TERMS)}); "
             f"e.g. --term-ratio hidden=200", flag="--term-ratio", factory=dict, metavar="TERM=R",
        kind="term-weights")
    projection_init: str = opt("lstsq", "W_h of a student of another width: least-squares fit on the first "
                                        "batches, or random", choices=("lstsq", "random"))
    projection_lr: float | None = opt(None, "peak learning rate of W_h (default: the student's)", metavar="LR")

    def validate(self) -> None:
        if self.name not in METHODS:
            raise ConfigError(f"unknown method {self.name!r}; choose from {', '.join(METHOD_NAMES)}")
        bad = [t for t in [*self.drop_terms, *self.term_weights] if t not in TERM_NAMES]
        if bad:
            raise ConfigError(f"unknown loss term(s) {', '.join(bad)}; terms are {', '.join(TERM_NAMES)}")
        for term, weight in self.term_weights.items():
            if not _finite_number(weight) or not weight >= 0:
                raise ConfigError(f"the weight of term {term} must be a finite number >= 0, not {weight!r}")
        if self.attention not in (None, *ATTENTION_FORMS):
            raise ConfigError(f"attention must be one of {', '.join(ATTENTION_FORMS)}")
        if self.calibrate not in (None, *CALIBRATIONS):
            raise ConfigError(f"calibrate must be one of {', '.join(CALIBRATIONS)}")
        if self.calibration_batches < 1 or not self.calibration_ratio > 0:
            raise ConfigError("calibration needs at least 1 batch and a positive ratio")
        for term, ratio in self.term_ratios.items():
            if term not in MATCHING_TERMS:
                raise ConfigError(f"--term-ratio {term}: calibration scales the matching terms only "
                                  f"({', '.join(MATCHING_TERMS)})")
            if not _finite_number(ratio) or not ratio > 0:
                raise ConfigError(f"the ratio of term {term} must be a finite number > 0, not {ratio!r}")
        if self.projection_init not in ("lstsq", "random"):
            raise ConfigError("projection_init must be 'lstsq' or 'random'")
        if self.projection_lr is not None and not self.projection_lr > 0:
            raise ConfigError("projection_lr must be positive")
        if self.temperature is not None and self.temperature <= 0:
            raise ConfigError("temperature must be positive")

    def to_method(self) -> Method:
        """The method with the overrides applied (a registry's ``resolve`` finds models;
        this builds a method)."""
        self.validate()
        base = METHODS[self.name]
        sched = base.schedule
        if self.schedule is not None:
            sched = replace(sched, name=self.schedule)
        if self.b is not None:
            sched = replace(sched, b=self.b)
        if self.alpha is not None:
            sched = replace(sched, alpha=self.alpha)
        try:
            sched.build()  # an unknown schedule name fails here, before any work
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        terms = tuple(replace(t, coefficient=t.coefficient * float(self.term_weights.get(t.name, 1.0)))
                      for t in base.terms if t.name not in self.drop_terms)
        if not terms:
            raise ConfigError(f"method {self.name} has no loss term left after dropping "
                                  f"{', '.join(self.drop_terms)}")
        temperature = self.temperature if self.temperature is not None else base.temperature
        method = replace(base, schedule=sched, terms=terms, temperature=temperature,
                         calibrate=self.calibrate or base.calibrate, attention=self.attention or base.attention)
        if self.term_ratios and method.calibrate == "none":
            raise ConfigError("--term-ratio sets a term's pull under calibration: add --calibrate grad-norm "
                              "(or use --term-weight)")
        missing = [t for t in self.term_ratios if t not in method.term_names]
        if missing:
            raise ConfigError(f"--term-ratio {', '.join(missing)}: not a term of {self.name} "
                              f"({', '.join(method.term_names)})")
        fixed = [t for t in self.term_ratios if t not in method.calibrated_terms]
        if fixed:
            raise ConfigError(f"--term-ratio {', '.join(fixed)}: {self.name} keeps that term at its own weight "
                              f"(calibration scales {', '.join(method.calibrated_terms) or 'none'}); use "
                              f"--term-weight")
        method.check_learnable()
        return method
