#!/usr/bin/env python
"""Loss-scale figures of a distillation configuration, on its first batches.

For any `fastbioner distill` configuration (the same flags), on the first N batches
of the first epoch and before any step, this prints per batch:

- each loss term's value (unweighted, as the progress bar logs it);
- each term's gradient norm over every trainable parameter, weighted as the
  objective weighs it at step 0 (phi-weighted for FastBioNER), and the cosine
  between the combined gradient and the label terms' gradient;
- for attention matching, the score MSE, the same after centring each query row
  (what softmax cannot see taken out), and the MSE of the probabilities;
- the schedule: the step where phi reaches 0 and the mean learning-rate factor of
  the steps after it (how much learning is left for the gold labels alone).

With --calibrate grad-norm it also prints the scales the calibration would set and
the figures after scaling, so a calibration is checked, not assumed.

    python -m experiments.loss_scales --batches 4 -- --teacher teacher-mpnet-bc5cdr \\
        --train ../shared/data/bc5cdr/iob/train.tsv --name probe --layers 6 --method fastbioner
    ... -- ... --calibrate grad-norm --attention centred --json scales.json

Nothing is trained or registered (``--name`` is required by the flags but unused).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import torch


def parse(argv: list[str]) -> tuple[argparse.Namespace, argparse.Namespace]:
    from fastbioner.research import register_distill_flags

    own = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    own.add_argument("--batches", type=int, default=4, help="first batches of epoch 0 to measure (4)")
    own.add_argument("--json", help="write the figures here")
    own.add_argument("--train-mode", action="store_true", help="measure with dropout on (default: eval mode)")
    own.add_argument("--scales-from", metavar="MODEL",
                     help="a registered student: if the method calibrates, apply the calibration its run "
                          "recorded (its manifest) instead of calibrating again (measuring a trained student)")
    if "--" in argv:
        i = argv.index("--")
        mine, theirs = argv[:i], argv[i + 1:]
    else:
        mine, theirs = [], argv
    args = own.parse_args(mine)
    parser = argparse.ArgumentParser(prog="loss_scales.py -- ")
    register_distill_flags(parser.add_subparsers(dest="cmd"))
    return args, parser.parse_args(["distill", *theirs])


def main(argv: list[str] | None = None) -> int:
    from fastbioner import Registry
    from fastbioner.research import (PairedBatches, ProgressReporter, attention_mse, batches_total, calibrate,
                                     fit_projections, linear_warmup_decay, measure_terms, move_to, prepare_run)
    from fastbioner.research import distill_config_from_args as config_from_args

    args, dargs = parse(sys.argv[1:] if argv is None else argv)
    config = config_from_args(dargs)
    # A few batches only: the teacher runs on them live rather than filling a cache
    # over the whole training set first.
    config.teacher_cache = "none"
    config.validate()
    if config.training.threads:
        torch.set_num_threads(config.training.threads)
    method = config.method.to_method()
    notes: list[str] = []
    figures: dict = {"config": config.to_dict(), "batches": []}
    with contextlib.ExitStack() as cleanup:
        run = prepare_run(config, method, Registry(), ProgressReporter(None, None), cleanup, notes)
        tc = config.training
        batches = PairedBatches(run.data, tc.batch_size, tc.seed)
        total = batches_total(batches, config)
        first = [move_to(b, run.device) for _, b in zip(range(args.batches), batches.epoch(0))]
        objective = run.objective
        student = objective.student.to(run.device)
        for part in run.parts.modules().values():
            part.to(run.device)
        student.train(args.train_mode)
        if config.method.projection_init == "lstsq" and run.parts.modules():
            figures["projection_fit_mse"] = fit_projections(objective, first)
        params = [p for m in (student, *run.parts.modules().values()) for p in m.parameters() if p.requires_grad]

        def report(title: str) -> list[dict]:
            print(f"\n{title}")
            names = objective.method.term_names
            print(f"{'batch':>5}  " + "  ".join(f"{n + ' value':>16} {n + ' |grad|w':>16}" for n in names)
                  + f"  {'cos(all, labels)':>16}")
            rows = []
            for i, batch in enumerate(first):
                m = measure_terms(objective, batch, params, 0, total)
                cos = "–" if m.label_cosine is None else f"{m.label_cosine:.3f}"
                print(f"{i:>5}  " + "  ".join(f"{m.values[n]:>16.4g} {m.weighted_norm(n):>16.4g}" for n in names)
                      + f"  {cos:>16}")
                rows.append({"values": m.values, "grad_norms": m.grad_norms, "weights": m.weights,
                             "weighted_grad_norms": {n: m.weighted_norm(n) for n in names},
                             "label_cosine": m.label_cosine})
            return rows

        figures["batches"] = report("at step 0, as configured")
        if "attention" in objective.method.term_names and objective.capture_kind == "scores":
            figures["attention_forms"] = attention_forms(objective, first, attention_mse)
        if objective.method.calibrate == "none":
            cal = calibrate(objective, first, params, total, config.method.calibration_ratio,
                            config.method.term_ratios)
            print("\n(--calibrate grad-norm would scale: "
                  + (", ".join(f"{n} x{v:.4g}" for n, v in cal.scales.items()) or "nothing") + ")")
            figures["would_calibrate"] = cal.to_dict()
        else:
            if args.scales_from:
                cal = recorded_calibration(args.scales_from, Registry())
            else:
                cal = calibrate(objective, first, params, total, config.method.calibration_ratio,
                                config.method.term_ratios)
            objective.scales = dict(cal.scales)
            figures["calibration"] = cal.to_dict()
            whose = f" (as {args.scales_from} trained with)" if args.scales_from else ""
            print(f"\ncalibration scales{whose}: " + ", ".join(f"{n} x{v:.4g}" for n, v in cal.scales.items()))
            figures["calibrated_batches"] = report("after calibration")
        figures["schedule"] = schedule_figures(objective, total, tc, linear_warmup_decay)
        s = figures["schedule"]
        print(f"\nschedule: {total} steps; the schedule's weight reaches 0 at step {s['w_zero_step']}; "
              f"the steps after it run at {s['mean_lr_factor_after']:.2f} of the peak learning rate on average")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=float) + "\n", encoding="utf-8")
    return 0


def recorded_calibration(model: str, registry):
    """The calibration a registered student's run applied (its manifest's copy)."""
    from fastbioner.research import Calibration

    saved = (registry.get(model).manifest.training or {}).get("calibration")
    if not saved:
        raise SystemExit(f"{model}: its manifest records no calibration (was it distilled with --calibrate?)")
    return Calibration.from_dict(saved)


def attention_forms(objective, first, attention_mse) -> list[dict]:
    """Per batch, summed over the mapped layers: score MSE, centred score MSE, and
    probability MSE (softmax over the real keys of both sides)."""
    from fastbioner.research import capture

    print("\nattention matching, summed over layers: scores | row-centred scores | probabilities")
    out = []
    n = len(objective.mapping)
    with torch.no_grad():
        for i, batch in enumerate(first):
            sb = batch.student
            s = capture(objective.student, sb.input_ids, sb.attention_mask, [], list(range(1, n + 1)), "scores")
            t = objective.teacher.outputs(batch.teacher)
            real = sb.attention_mask.bool()
            neg = torch.finfo(torch.float32).min
            keys = ~real[:, None, None, :]

            def probs(a, keys=keys, neg=neg):
                return a.float().masked_fill(keys, neg).softmax(-1)

            pairs = list(enumerate(objective.mapping, start=1))
            raw = sum(float(attention_mse(s.attention[j], t.attention[m], real)) for j, m in pairs)
            centred = sum(float(attention_mse(s.attention[j], t.attention[m], real, centre=True)) for j, m in pairs)
            prob = sum(float(attention_mse(probs(s.attention[j]), probs(t.attention[m]), real)) for j, m in pairs)
            print(f"{i:>5}  {raw:10.4g} | {centred:10.4g} | {prob:10.4g}")
            out.append({"scores": raw, "centred": centred, "probs": prob})
    return out


def schedule_figures(objective, total: int, tc, linear_warmup_decay) -> dict:
    factor = linear_warmup_decay(int(tc.warmup_ratio * total), total)
    zero = next((s for s in range(total) if objective.method.weights(s, total)[0] == 0.0), None)
    after = [factor(s) for s in range(zero, total)] if zero is not None else []
    return {"total_steps": total, "w_zero_step": zero,
            "mean_lr_factor_after": sum(after) / len(after) if after else float("nan")}


if __name__ == "__main__":
    sys.exit(main())
