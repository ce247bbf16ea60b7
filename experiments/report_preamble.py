"""The report's opening: the protocol every table follows (worded once, its figures
filled in from paper_tables' settings) and how far the tables have got, counted from
the results file each time the report is written."""

from __future__ import annotations

PREAMBLE = """**Protocol.** Two CPU cores, no GPU; the CPU model differs between working sessions
(an Intel Xeon with AMX, an AMD EPYC), and each run records its own, with its wall
time, commit and exact command (see *Commands*). The teacher is all-mpnet-base-v2
fine-tuned for 3 epochs (no biomedical encoder can be had offline here; the paper's
teacher is BioBERT). Students made of the teacher's layers train for **{epochs} epochs** of
batch 16 ({steps:,} steps on BC5CDR; table 0's grid 3), students taken from an encoder
already fine-tuned on the corpus 3; devel is scored three times per epoch and the
best-scoring weights are kept, so each
row shows where its best step fell ("best step / steps"; "(last)" marks a run whose
best was its last scoring, which may not have converged). Every soft-label method
(hinton, pkd, tinybert, FastBioNER) uses the same temperature, T = 2. The students'
learning rate is the one table 0 supports: {shallow_lr:g} for up to 3 of the teacher's
layers, {deep_lr:g} for more (a 6-layer student diverged at {shallow_lr:g}; table 0's 6-layer
rows). Students train on `train` only
and are selected on `devel` (the paper trains on train and devel merged; keeping devel
out of training is the honest protocol for a score reported on devel). The top rows of
each table run with three seeds (13, 14, 15): mean, standard deviation and count. Runs
are owned by `experiments/experiment_queue.py` (one torch thread each, two at a time,
resumed from their checkpoints across working sessions). A machine replaced between
sessions takes its models with it: the queue then rebuilds a teacher with the same
command and seed on the new CPU, and *Commands* lists the earlier build under the
teacher's row. Students finished before a rebuild learnt from the earlier build, so a
row whose seeds straddle it has a spread that includes the two builds' difference.

**Precision.** The students of tables 1, 2 and 4 train under CPU bf16 autocast
(`--cpu-bf16`: matrix products in bfloat16, weights, optimiser and losses in fp32; devel
scored in bf16 to pick the weights, the picked weights scored again in fp32 for the
figures here), which makes a step about 1.5 times faster on these CPUs; section 8 runs two of those rows
in fp32 with the same seed and gives the difference. Teachers, table 0's grid and
table 5's candidates train in fp32. Jobs queued at commit d08c2c6 or later update the weights
with torch's fused AdamW kernel (the same update, equal to float rounding: 1.5e-8 after 6
steps; torch's default per-tensor loop on the CPU had taken 40% of a 6-layer student's
step); each row's commit is under *Commands*.

**FastBioNER, as written and calibrated.** `fastbioner-N` rows run the method as the
paper writes it: every loss term with weight 1 and attention compared as pre-softmax
scores. `fastbioner-cal-N` rows add what the paper leaves open: before the first step,
each matching term (hidden states, attention) is scaled so that its phi-weighted
gradient norm equals the gold-label term's, measured on the first 4 batches
(`--calibrate grad-norm`; the scales are in each student's manifest), and attention
maps are compared after centring each query row (`--attention centred`: softmax
ignores a per-row offset, so that part of the score difference teaches the student
nothing). `experiments/loss_scales.py` prints each term's value, its weighted gradient
norm and the cosine of the combined update with the label terms' update, before and
after calibration, for any configuration.

**Not yet run.** {progress} A row marked *not yet run* has not run, and no figure here
comes from anything but the command beside it. The one-epoch rows of the first two
sessions, which the tables replace, are listed at the end."""


def run_progress(rows: list, results: dict) -> str:
    """How far the tables have got, counted from the results file each time the report is
    written (a sentence typed once goes stale as rows land)."""
    full = part = 0
    for r in rows:
        ran = sum(str(s) in results.get(r.id, {}) for s in r.seeds)
        full += ran == len(r.seeds)
        part += 0 < ran < len(r.seeds)
    none = len(rows) - full - part

    def have(n: int) -> str:
        return f"{n} {'has' if n == 1 else 'have'}"

    return (f"Of the {len(rows)} rows, {have(full)} run with all their seeds"
            + (f", {part} with some of them" if part else "")
            + (f"; {have(none)} not run yet." if none else ": every row has run."))


def protocol_text(rows: list, results: dict, *, epochs: int, steps: int, shallow_lr: float, deep_lr: float) -> str:
    """The preamble with the tables' settings and the count of rows run."""
    return PREAMBLE.format(epochs=epochs, steps=steps, shallow_lr=shallow_lr, deep_lr=deep_lr,
                           progress=run_progress(rows, results))
