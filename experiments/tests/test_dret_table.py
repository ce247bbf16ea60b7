"""The DRET page's table is generated from the recorded runs (experiments/dret_table.py):
the committed page is the table of the committed records, and a row never shows a
figure no run recorded."""

from __future__ import annotations

import importlib

dret_table = importlib.import_module("experiments.dret_table")


def test_the_committed_page_is_the_table_of_the_committed_records():
    assert dret_table.main(["--check"]) == 0


def _entry(f1: float, chemical: float, disease: float) -> dict:
    return {"f1": f1, "wall_seconds": 1200.0, "cpu": "a CPU",
            "per_type": {"Chemical": {"f1": chemical}, "Disease": {"f1": disease}}}


def test_rows_show_each_seed_their_mean_and_spread_and_say_when_nothing_ran():
    results = {"bc5cdr/dret-ft-none": {"13": _entry(0.80, 0.85, 0.74), "14": _entry(0.78, 0.83, 0.72)}}
    lines = {line.split(" | ")[0]: line for line in dret_table.table(results).splitlines()}
    none = lines["| `bc5cdr/dret-ft-none`"]
    assert "s13 80.00, s14 78.00" in none and "79.00 ± 1.41 (2 seeds)" in none
    assert "Chemical 84.00, Disease 73.00" in none and "20 min" in none
    assert "not yet run" in lines["| `bc5cdr/dret-ft-average`"]
    assert "frozen" in lines["| `bc5cdr/dret-ft-average-frozen`"]


def test_the_students_table_lists_todays_recorded_students_and_every_dret_student_row():
    results = {"bc5cdr/hinton-minilm": {"13": {**_entry(0.84, 0.88, 0.79), "cpu": "CPU A"}},
               "bc5cdr/dret-hinton-minilm-priority": {"13": _entry(0.82, 0.86, 0.77)}}
    lines = {line.split(" | ")[0]: line for line in dret_table.students_table(results).splitlines()}
    assert "(recorded earlier, bf16, CPU A)" in lines["| `bc5cdr/hinton-minilm` (recorded earlier, bf16, CPU A)"]
    # a reference with no record is left out, never shown empty
    assert not any(key.startswith("| `bc5cdr/cnn-minilm`") for key in lines)
    priority = lines["| `bc5cdr/dret-hinton-minilm-priority`"]
    assert "dret-minilm-priority | trained | s13 82.00" in priority
    # the convolutional student names the fine-tuned base its embeddings come from
    assert "CNN 4 × 256 | dret-minilm-average-bc5cdr | frozen | - | not yet run" in lines[
        "| `bc5cdr/dret-cnn-average-frozen`"]
    assert "not yet run" in lines["| `bc5cdr/dret-hinton-minilm-none`"]


def test_a_row_with_layer_wise_rates_names_them_and_one_without_says_only_how_it_trains():
    lines = {line.split(" | ")[0]: line for line in dret_table.students_table({}).splitlines()}
    layerwise = lines["| `bc5cdr/dret-hinton-minilm-average-layerwise`"]
    assert "| trained, layer-wise rates (embeddings × 0.1, layer decay 0.9, head × 5) |" in layerwise
    assert "| dret-minilm-average | trained | " in lines["| `bc5cdr/dret-hinton-minilm-average`"]
    # the convolutional student has no layers to decay: its rates are by part
    assert "| trained, rates by part (embeddings × 0.1, head × 5) |" in lines["| `bc5cdr/dret-cnn-none-layerwise`"]
