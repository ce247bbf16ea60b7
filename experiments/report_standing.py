"""Where calibrated FastBioNER stands, as the report judges it: each depth's row
against the best baseline at that depth (a difference counts only beyond the seeds'
spread, Welch's t beside it) and against the teacher build it learnt from, with issue
11's goals and the paper's own gaps; and the variant the defaults run, against the
others at 3 layers. Pure computation over the results: nothing is trained."""

from __future__ import annotations

import statistics

from .report_format import f1_cell, pct, teacher_builds, teacher_f1_for
from .runs import CALIBRATED_VARIANT, SEEDED_ABLATIONS, UNLABELED_BASELINE, UNLABELED_VARIANT, all_rows

# The paper's own figures (FastBioNER, BioBERT teacher, GPU): F1 points below the
# teacher, size reduction, speed-up, for 6, 4 and 3 layers.
PAPER = {6: (1.10, 39.26, 46.17), 4: (3.72, 52.35, 60.77), 3: (4.97, 58.9, 68.78)}

# Issue 11's goal: calibrated FastBioNER within this many F1 points of the teacher.
TEACHER_GAP_GOAL = {6: 1.0, 3: 3.0}
BASELINES = ("og", "hinton", "pkd", "tinybert", "mse-prob", "mse-logit", "fastbioner")


def verdict(ours: dict, other: dict, other_is: str = "the baseline") -> str:
    """How two rows compare, by the rule the report states: a difference counts only
    when it exceeds the spread (the larger of the two sample standard deviations);
    with one seed on either side there is no spread to judge by, and it says which
    side has the one seed (the other's spread alone would flatter or damn the single run).
    ``other_is``: what the other row is, in that sentence."""
    diff = 100 * (ours["f1"] - other["f1"])
    single = [side for side, row in (("this row", ours), (other_is, other))
              if len(row.get("seeds") or []) < 2]
    if single:
        which = "one seed on each side" if len(single) == 2 else f"one seed of {single[0]}"
        return f"{diff:+.2f} F1, {which}: no spread to judge by"
    spread = 100 * max(ours.get("f1_sd") or 0.0, other.get("f1_sd") or 0.0)
    t = welch_t(ours, other)
    basis = f"sd up to {spread:.2f}" + (f"; Welch's t {t:.1f}" if t is not None else "")
    if abs(diff) <= spread:
        return f"{diff:+.2f} F1, within the spread ({basis}): no real difference"
    return f"{diff:+.2f} F1, beyond the spread ({basis}): {'ahead' if diff > 0 else 'behind'}"


def welch_t(ours: dict, other: dict) -> float | None:
    """Welch's t of two rows' mean F1 (from each side's mean, sample sd and seed
    count): how firm a lead is, shown beside the spread rule, not instead of it. None
    where either side has one seed or both spreads are 0."""
    n1, n2 = len(ours.get("seeds") or []), len(other.get("seeds") or [])
    if n1 < 2 or n2 < 2:
        return None
    se = ((ours.get("f1_sd") or 0.0) ** 2 / n1 + (other.get("f1_sd") or 0.0) ** 2 / n2) ** 0.5
    return (ours["f1"] - other["f1"]) / se if se > 0 else None


def og_teacher_f1(teacher: dict, og: dict | None) -> float | None:
    return teacher_f1_for(teacher, og) if og and og.get("f1") is not None else None


def depth_cost(ours: dict, og: dict | None, og_teacher: float | None, name_build: bool = False) -> str:
    """Why a gap to the teacher is what it is: the same student trained on gold labels
    alone (``og``, the teacher's layers, no teacher; ``og_teacher``: the F1 of the build
    it learnt from) shows what the depth costs before any distillation; the method's
    share is how much of that it closes (student F1 against student F1). ``name_build``
    when og learnt from another build than ours: the two gaps are to different teachers."""
    if og is None or og_teacher is None:
        return ""
    cost = 100 * (og_teacher - og["f1"])
    if cost <= 0:
        return ""
    closed = 100 * (ours["f1"] - og["f1"])
    build = f" build it learnt from ({pct(og_teacher)})" if name_build else ""
    return (f"; gold labels alone at this depth (`og`) sit {cost:.2f} below the teacher{build}: distillation "
            f"closes {closed:.2f} of that ({closed / cost:.0%})")


def standing_section(results: dict, grid_lr: str | None = None) -> list[str]:
    """Where calibrated FastBioNER stands, computed from the results at each depth
    and dataset that has run: against the best baseline (by mean F1) and against the
    teacher, with issue 11's goals and the paper's own gaps beside it. ``grid_lr``:
    table 0's rows at that rate (3 layers, the grid's epochs) are stated too, as
    what is known before the table rows run."""
    out = []
    ours_name = "calibrated FastBioNER"
    cases = [(ds, layers, f"{ds}/fastbioner-cal-{layers}", lambda m, ds=ds, n=layers: f"{ds}/{m}-{n}",
              f"{layers} layers", f"{ours_name} with the paper's phi (`{ds}/fastbioner-cal-{layers}`)")
             for ds in ("bc5cdr", "ncbi") for layers in (6, 4, 3)]
    grid_cases = []
    if grid_lr:
        grid_cases.append(("bc5cdr", 3, f"bc5cdr/sweep-fastbioner-cal-3-lr{grid_lr}",
                      lambda m: f"bc5cdr/sweep-{m}-3-lr{grid_lr}", f"3 layers, table 0's grid at lr {grid_lr}",
                      f"{ours_name} with the paper's phi (`bc5cdr/sweep-fastbioner-cal-3-lr{grid_lr}`)"))
    # The schedule variants that beat the triple on a first seed, judged by the same rule
    # at every depth and dataset they have run.

    planned = {row.id for row in all_rows()}

    for slug, what in SEEDED_ABLATIONS.items():
        cases += [(ds, layers, f"{ds}/{slug}-{layers}", lambda m, ds=ds, n=layers: f"{ds}/{m}-{n}",
                   f"{layers} layers", f"{ours_name} with {what} (`{ds}/{slug}-{layers}`)")
                  for ds in ("bc5cdr", "ncbi") for layers in (6, 4, 3)]
    # Given unlabelled text, judged against the baselines given the same text (hinton;
    # og has no use for text without tags), not against those trained without it.
    cases += [(ds, layers, f"{ds}/{UNLABELED_VARIANT}-{layers}",
               lambda m, ds=ds, n=layers: f"{ds}/{m}-{UNLABELED_BASELINE}-{n}",
               f"{layers} layers, + unlabelled text",
               f"{ours_name} with phi constant at 0.5 (`{ds}/{UNLABELED_VARIANT}-{layers}`)")
              for ds in ("bc5cdr", "ncbi") for layers in (6, 4, 3)]
    # Read by corpus, then depth (widest first), the variant the defaults run first at
    # each depth, the paper's schedule next, the other variants after; the grid last.
    rank = ({f"fastbioner-cal-{n}": 1 for n in (6, 4, 3)} | {f"{CALIBRATED_VARIANT}-{n}": 0 for n in (6, 4, 3)}
            | {f"{UNLABELED_VARIANT}-{n}": 3 for n in (6, 4, 3)})
    cases.sort(key=lambda c: (("bc5cdr", "ncbi").index(c[0]), -c[1], rank.get(c[2].split("/", 1)[1], 2)))
    for ds, layers, ours_id, baseline_id, label, name in cases + grid_cases:
        teacher = results.get(f"{ds}/teacher")
        ours = results.get(ours_id)
        if ours is None or ours.get("f1") is None:
            continue
        given_text = ours_id == f"{ds}/{UNLABELED_VARIANT}-{layers}"  # judged beside baselines given the text
        runs = {m: r for m in BASELINES if (r := results.get(baseline_id(m))) and r.get("f1") is not None}
        missing = [m for m in BASELINES if m not in runs and baseline_id(m) in planned]  # rows the tables run
        epochs = f", {ours['epochs']} epochs" if ours.get("epochs") else ""
        line = f"- **{ds}, {label}{epochs}**: {name} {f1_cell(ours)}"
        if runs:
            best = max(runs, key=lambda m: runs[m]["f1"])
            so_far = f" so far ({', '.join(f'`{m}`' for m in missing)} not yet run)" if missing else ""
            line += f"; best baseline{so_far} `{best}` {f1_cell(runs[best])}: {verdict(ours, runs[best])}"
        else:
            line += "; no baseline row given the same text has run" if given_text else \
                "; no baseline row has run at this depth"
        teacher_f1 = teacher_f1_for(teacher, ours)
        if teacher_f1 is not None:
            gap = 100 * (teacher_f1 - ours["f1"])
            # What the depth costs is og's gap at this depth: og has no use for untagged
            # text, so beside the unlabelled-text row it is the plain og.
            og = results.get(f"{ds}/og-{layers}") if given_text else runs.get("og")
            og_teacher = og_teacher_f1(teacher, og)
            og_other_build = og_teacher is not None and abs(og_teacher - teacher_f1) >= 1e-9
            same_build = abs(teacher_f1 - teacher["f1"]) < 1e-9 and not og_other_build
            line += f"; {gap:.2f} below the teacher" + ("" if same_build else
                                                        f" build it learnt from ({pct(teacher_f1)})")
            goal = TEACHER_GAP_GOAL.get(layers)
            if goal is not None:
                line += f" (goal: within {goal:.1f}; {'met' if gap <= goal else 'not met'}"
                line += f"; the paper's gap below BioBERT: {PAPER[layers][0]:.2f})" if ds == "bc5cdr" else ")"
            line += depth_cost(ours, og, og_teacher, og_other_build)
        out.append(line + ".")
    if not out:
        return ["_No calibrated FastBioNER row has run yet._"]
    return out + teacher_build_lines(results) + recommended_lines(results)


def teacher_build_lines(results: dict) -> list[str]:
    """How far a rebuild alone moves a teacher: each corpus's teacher builds (the same
    command and seed, run again on each replaced machine), oldest first, with the CPU
    each ran on. The gaps above are to the build each row learnt from; this spread
    says how much of a gap's size a different build could have changed."""
    out = []
    for ds in ("bc5cdr", "ncbi"):
        teacher = results.get(f"{ds}/teacher")
        builds = [b for b in teacher_builds(teacher) if b.get("f1") is not None] if teacher else []
        if len(builds) < 2:
            continue
        f1s = [100 * b["f1"] for b in builds]
        listed = ", ".join(f"{f:.2f}" + (f" ({b['cpu'].replace('(R)', '')})" if b.get("cpu") else "")
                           for f, b in zip(f1s, builds))
        out.append(f"- **{ds}**: {len(builds)} builds, oldest first: {listed}; "
                   f"{statistics.mean(f1s):.2f} ± {statistics.stdev(f1s):.2f}, {max(f1s) - min(f1s):.2f} from the "
                   f"lowest to the highest.")
    if out:
        out = ["", "The teacher itself moves between builds of one command and seed (rebuilt on each replaced "
               "machine, at the commit its job was queued at, some resumed from a checkpoint; *Commands* gives "
               "each build's commit; each row above is set against the build it learnt from):", ""] + out
    return out


def recommended_lines(results: dict) -> list[str]:
    """The variant the defaults run (``--method fastbioner-cal``) against the other
    calibrated variants at each depth where both have run, by the same rule."""

    out = []
    for ds in ("bc5cdr", "ncbi"):
        for layers in (6, 4, 3):
            ours = results.get(f"{ds}/{CALIBRATED_VARIANT}-{layers}")
            if not ours or ours.get("f1") is None:
                continue
            others = [(f"`{ds}/fastbioner-cal-{layers}` (the paper's phi)",
                       results.get(f"{ds}/fastbioner-cal-{layers}"))]
            others += [(f"`{ds}/{slug}-{layers}` ({what})", results.get(f"{ds}/{slug}-{layers}"))
                       for slug, what in SEEDED_ABLATIONS.items() if slug != CALIBRATED_VARIANT]
            compared = [f"against {name}: {verdict(ours, other, 'the other variant')}" for name, other in others
                        if other and other.get("f1") is not None]
            if compared:
                out.append(f"- **{ds}, {layers} layers**: `{CALIBRATED_VARIANT}` {f1_cell(ours)} "
                           + "; ".join(compared) + ".")
    if out:
        from fastbioner import teacher_layers_methods_summary

        # The method each depth defaults to, as core says (not a copy).
        out = ["", f"`--method fastbioner-cal` runs `{CALIBRATED_VARIANT}` "
               f"({SEEDED_ABLATIONS[CALIBRATED_VARIANT]}), chosen by "
               f"the 3-layer rows:", ""] + out + [
               "", "The command line's and the app's default for a student of the teacher's own layers is the "
               f"method that led at its depth: {teacher_layers_methods_summary()}."]
    return out
