#!/usr/bin/env bash
# The LGCP with σ² and μ sampled at the paper's size (64 × 64) and protocol (10 chains, 1000
# burn-in, 5000 draws) on one GPU, float64 (docs/rmhmc.md, "With σ² and μ sampled").
#
#     bash experiments/lgcp_gpu.sh OUT SECONDS
#     WARMUP=300 DRAWS=700 REF_DRAWS=700 bash experiments/lgcp_gpu.sh OUT SECONDS  # shorter
#
# Two processes one after the other, so that a run cut by the time limit loses only itself:
# the reference (NUTS on the non-centred posterior, 10 × 2000, saved as an .npz) and NUTS on
# the centred posterior, then AHMC on the centred posterior against the same reference. Each
# writes its JSON after every run, and its figures at the end.
set -u
OUT=$1
LIMIT=$2
mkdir -p "$OUT/nuts" "$OUT/ahmc"
cd "$(dirname "$0")"
start=$(date +%s)
common=(--hyper centred --side 64 --chains 10 --warmup "${WARMUP:-1000}" --draws "${DRAWS:-5000}"
        --ref-chains 10 --ref-draws "${REF_DRAWS:-2000}" --ref-file "$OUT/ref.npz" --seeds 0)
timeout $((LIMIT * 2 / 3)) python -u lgcp.py "${common[@]}" --samplers nuts \
    --out "$OUT/nuts/lgcp-hyper-64.json" --plots "$OUT/nuts" 2>&1 | tee "$OUT/log.txt"
left=$((LIMIT - ($(date +%s) - start)))
timeout "$left" python -u lgcp.py "${common[@]}" --samplers ahmc \
    --out "$OUT/ahmc/lgcp-hyper-64.json" --plots "$OUT/ahmc" 2>&1 | tee -a "$OUT/log.txt"
echo "total $(($(date +%s) - start)) s" | tee -a "$OUT/log.txt"
