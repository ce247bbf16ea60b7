#!/usr/bin/env bash
# The CUDA check (first run on an NVIDIA H200 on 2026-12-04: benchmarks/results/gpu/):
#   1. the CUDA tests (tests/core/test_cuda_paths.py: tagging fp32/bf16/fp16, tag-corpus, fine-tuning);
#   2. tagging speed per precision (fp32, bf16, fp16) on the GPU, with entity agreement against fp32;
#   3. tag-corpus on the GPU (local engine), tokens/s;
#   4. a short distillation on the GPU (3-layer student of the shipped model, 1 epoch), its time.
#   5. each precision mode tagging the documents twice (benchmarks/gpu_passes.py): first use against steady speed.
# Prints the speeds and writes them under $OUT (default benchmarks/results/gpu/).
#
# Needs an environment with a CUDA build of torch (the README's pinned torch is the CPU
# build): e.g.  python3 -m venv .venv-gpu && .venv-gpu/bin/pip install torch && \
#               .venv-gpu/bin/pip install -e ".[test]"  then  PYTHON=.venv-gpu/bin/python bash benchmarks/gpu_check.sh
# Uses ../shared/data when present, else the 20 sample abstracts in assets/samples.
# DEVICE=cpu SHARED_DATA=/nowhere bash benchmarks/gpu_check.sh runs the same steps on the CPU
# (the modes this CPU offers; the CUDA tests skip) with the samples: a check of the script itself.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/core:$PWD${PYTHONPATH:+:$PYTHONPATH}
FB="$PY -m fastbioner.cli.main"
DEVICE=${DEVICE:-cuda}
# On the CPU (a check of the script): the modes this CPU offers.
if [ "$DEVICE" = cpu ]; then MODES=""; PRECISIONS="fp32 auto"; else MODES="bf16 fp16"; PRECISIONS="fp32 bf16 fp16"; fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# A private registry inside $WORK, so nothing of the user's is touched (or left behind).
export FASTBIONER_HOME=${FASTBIONER_HOME:-$WORK/home}

[ "$DEVICE" = cpu ] || $PY - <<'PY'
import sys, torch
if not torch.cuda.is_available():
    sys.exit(f"gpu_check: torch {torch.__version__} sees no CUDA device; run it on a CUDA machine "
             "with a CUDA build of torch (PYTHON=... bash benchmarks/gpu_check.sh)")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}, "
      f"bf16 {'yes' if torch.cuda.is_bf16_supported() else 'no'}")
PY
[ "$DEVICE" = cpu ] || nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.csv" || true

echo "== 1. CUDA tests"
$PY -m pytest -q tests/core/test_cuda_paths.py -rs | tee "$OUT/tests.txt"

SHARED=${SHARED_DATA:-../shared/data}
if [ -f "$SHARED/bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt" ]; then
    DOCS=$SHARED/bc5cdr/pubtator/CDR_DevelopmentSet.PubTator.txt
    DEVEL=$SHARED/bc5cdr/iob/devel.tsv
    head -n 20000 "$SHARED/bc5cdr/iob/train.tsv" > "$WORK/train.tsv"   # 724 sentences
else
    DOCS=assets/samples/bc5cdr-devel-sample.pubtator
    $FB convert "$DOCS" "$WORK/samples.conll" --to conll
    DEVEL=$WORK/samples.conll
    cp "$WORK/samples.conll" "$WORK/train.tsv"
fi
$FB models import assets/default-model --name gpu-check-model >/dev/null

echo "== 2. tagging speed per precision ($DEVICE)"
$FB benchmark gpu-check-model --docs "$DOCS" --devel "$DEVEL" --device "$DEVICE" ${MODES:+--modes $MODES} \
    --no-record --json "$OUT/tagging.json" --quiet | tee "$OUT/tagging.txt"

echo "== 3. tag-corpus ($DEVICE)"
$PY - "$DOCS" "$WORK/pubmed.xml.gz" <<'PY'
import sys
from fastbioner.io.formats import pubmed_xml, read_documents
pubmed_xml.write(read_documents(sys.argv[1]), sys.argv[2])
PY
for precision in $PRECISIONS; do
    $FB tag-corpus "$WORK/pubmed.xml.gz" --out "$WORK/shards-$precision" --model gpu-check-model \
        --device "$DEVICE" --precision "$precision" --quiet | tail -n 1 | sed "s/^/$precision: /" | tee -a "$OUT/tag-corpus.txt"
done

echo "== 4. a short distillation ($DEVICE)"
start=$(date +%s)
$FB distill --teacher gpu-check-model --student-from teacher --layers 3 --method fastbioner --epochs 1 \
    --batch-size 32 --train "$WORK/train.tsv" --dev "$DEVEL" --device "$DEVICE" --name gpu-check-student \
    --quiet | sed "s#$FASTBIONER_HOME#FASTBIONER_HOME#g" | tee "$OUT/distill.txt"   # no machine's folder in the record
echo "distillation: $(( $(date +%s) - start )) s wall (set-up and devel scoring included)" | tee -a "$OUT/distill.txt"
if [ "$DEVICE" != cpu ]; then
    echo "== 5. two passes per mode: first use against steady speed"
    $PY benchmarks/gpu_passes.py "$DOCS" | tee "$OUT/second-pass.txt"
fi
echo "results in $OUT"
