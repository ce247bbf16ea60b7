"""Light commands start fast: `--help`, `convert`, `stats`, `agree` and `models list` never
import torch or transformers (how fast is measured by benchmarks/bench_startup.py,
not here)."""

import os
import subprocess
import sys

import pytest

PROBE = """
import sys
from fastbioner.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print("HEAVY:" + ",".join(heavy))
"""


@pytest.mark.parametrize("args", [["--help"], ["convert", "--help"], ["distill", "--help"],
                                  ["train-teacher", "--help"], ["tag", "--help"],
                                  ["fetch", "--help"], ["models", "list"],
                                  ["stats", "SAMPLE"], ["convert", "SAMPLE", "OUT"], ["agree", "SAMPLE", "SAMPLE"]])
def test_light_commands_do_not_import_torch(args, tmp_path):
    sample = tmp_path / "a.pubtator"
    sample.write_text("1|t|Cocaine toxicity\n1|a|Seizures followed.\n1\t0\t7\tCocaine\tChemical\tD003042\n\n",
                      encoding="utf-8")
    args = [str(sample) if a == "SAMPLE" else str(tmp_path / "out.jsonl") if a == "OUT" else a for a in args]
    env = {**os.environ, "FASTBIONER_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env,
                          timeout=120)
    heavy = [line for line in proc.stdout.splitlines() if line.startswith("HEAVY:")]
    assert heavy == ["HEAVY:"], (proc.stdout[-500:], proc.stderr[-500:])
