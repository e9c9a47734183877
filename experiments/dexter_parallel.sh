#!/usr/bin/env bash
# Dexter runs side by side, one process per (method, seed), on one GPU (or the CPU):
#   bash experiments/dexter_parallel.sh OUT SUPERS STEPS "ahmc_cv neal_gibbs" "0 1 2" [TIMEOUT_S]
# Each process writes OUT/<method>-s<seed>/dexter.json when its run ends; a run that
# TIMEOUT_S cuts off writes nothing (its log says how far it got).
set -u
out=$1; supers=$2; steps=$3; methods=$4; seeds=$5; limit=${6:-0}
mkdir -p "$out"
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # processes share the GPU's memory
for m in $methods; do
  for s in $seeds; do
    d="$out/$m-s$s"
    ( if [ "$limit" -gt 0 ]; then t="timeout $limit"; else t=""; fi
      $t python experiments/dexter.py --budget paper --supers "$supers" --steps "$steps" \
        --seeds "$s" --methods "$m" --out "$d" > "$out/$m-s$s.log" 2>&1
      echo "$m seed $s exit $?" >> "$out/$m-s$s.log" ) &
  done
done
wait
