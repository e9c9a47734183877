#!/usr/bin/env bash
# Mahendran's (2011) IM protocol with one process per (method, trial), each on its own CPU core:
#   bash experiments/im_parallel.sh MODEL WARMUP DRAWS OUT [TIMEOUT_S] [METHODS]
# METHODS defaults to "IMExpert IMUnif IMBayesOpt" (five trials each, one process per trial)
# plus Kawasaki (its five trials in one process: it is fast). Each process writes
# OUT/parts/<method>-s<seed>.json when its trial ends; a trial that TIMEOUT_S cuts off writes
# nothing (its log says so). The finished parts are merged into OUT/<MODEL>.json.
# GAMMA_SCALE=linear gives IMBayesOpt the linear γ axis it had before 2026-11-28.
set -u
model=$1; warmup=$2; draws=$3; out=$4; limit=${5:-0}
methods=${6:-"IMExpert IMUnif IMBayesOpt"}
mkdir -p "$out/parts" "$out/logs"
export JAX_PLATFORMS=cpu PYTHONUNBUFFERED=1
# one XLA thread per process: the processes, not the threads, fill the cores
export XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
ncores=$(nproc)
if [ "$limit" -gt 0 ]; then t="timeout $limit"; else t=""; fi
core=0
run() {  # run NAME SEEDS: one process on the next core
  local name=$1 seeds=$2 tag="$1-s${2//,/_}"
  ( taskset -c $((core % ncores)) $t python experiments/im_sampler.py --model "$model" \
      --methods "$name" --seeds "$seeds" --warmup "$warmup" --draws "$draws" \
      ${GAMMA_SCALE:+--gamma-scale "$GAMMA_SCALE"} --out "$out/parts/$tag.json" \
      > "$out/logs/$tag.log" 2>&1
    echo "$tag exit $?" >> "$out/logs/$tag.log" ) &
  core=$((core + 1))
}
for m in $methods; do
  for s in 0 1 2 3 4; do run "$m" "$s"; done
done
run Kawasaki 0,1,2,3,4
wait
python experiments/im_sampler.py --model "$model" --merge "$out"/parts/*.json \
  --out "$out/$model.json"
grep -h "exit" "$out"/logs/*.log
