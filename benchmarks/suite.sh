#!/usr/bin/env bash
# The whole benchmark suite on one device, each table printed and its JSON written to $OUT.
#
#   bash benchmarks/suite.sh                      # CUDA, the sizes issue 6 asks about
#   DEVICE=cpu QUICK=1 OUT=/tmp/b bash benchmarks/suite.sh   # a quick check that it all runs
#
# Made for a lent GPU machine (the `device` tool), which has torch and lightning but no
# torchrl/tensordict: where a .whl/ folder of their wheels travels with the tree (see the device
# tool's README), they are installed into /tmp/site first. The package runs from the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" PYTHONUNBUFFERED=1
python3 -c "from yahtzee_lightning.machine import describe_machine; print('device: $DEVICE |', describe_machine())" | tee "$OUT/machine.txt"

if [ -n "${QUICK:-}" ]; then
  sizes=(64 1024); seconds=0.2; repeat=1; variants=(no_bonus); games=200; train=(--games 64 --games-per-batch 32); study=2
else
  sizes=(1 1024 16384 65536 262144 1048576); seconds=1; repeat=3; variants=(default forced no_joker no_bonus)
  games=10000; train=(--games 40960 --games-per-batch 4096); study=200
fi
python3 benchmarks/bench_env.py --device "$DEVICE" --sizes "${sizes[@]}" --seconds "$seconds" --json "$OUT/env.json"
python3 benchmarks/bench_solver.py --device "$DEVICE" --variants "${variants[@]}" --repeat "$repeat" --json "$OUT/solver.json"
python3 benchmarks/bench_evaluation.py --device "$DEVICE" --games "$games" --agent checkpoints/distilled-128x2 \
  --json "$OUT/evaluation.json"
python3 benchmarks/bench_training.py --device "$DEVICE" "${train[@]}" --json "$OUT/training.json"
# The study's config (conf/ppo.yaml: 600x3, 20 games a batch) end to end under Lightning, games/s.
python3 benchmarks/bench_study.py --device "$DEVICE" --batches "$study" --json "$OUT/study.json"
