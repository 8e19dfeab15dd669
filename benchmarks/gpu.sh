#!/usr/bin/env bash
# Everything a lent GPU is asked for, in one run of about six minutes on an H100 (its first run,
# 2026-11-26, is in BENCHMARKS.md; the time limit cut its profiles and compiled rows), each part under
# its own time limit so that one failure loses one part: the suite's CUDA tests, the optimal table
# beside yatzy-solver on the machine's cores, the look-ahead player on the GPU against the CPU,
# and bench_gpu.py (training games/s with the GPU's utilisation, profiles, compiled rows).
#
#   OUT=gpu-out bash benchmarks/gpu.sh                 # on the lent machine
#   DEVICE=cpu QUICK=1 NO_WHEELS=1 OUT=/tmp/g bash benchmarks/gpu.sh   # checks that it all runs, here
#   PARTS="tests bench" PHASES="paper a2c study" OUT=gpu-out bash benchmarks/gpu.sh   # some parts only
#
# PARTS picks the parts (tests, lookahead, solver, bench; all by default), PHASES bench_gpu.py's
# phases (its defaults; `paper` times the paper's recipes on the device against one CPU thread, so
# run it with OMP_NUM_THREADS=1).
#
# The lent machine has torch and lightning but not torchrl, tensordict, jsonargparse, gymnasium or
# yatzy-solver: a .whl/ folder of their wheels travels with the tree and is installed into
# /tmp/site (see suite.sh). The package runs from the checkout.
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-gpu-out}
PARTS=${PARTS:-tests lookahead solver bench}
part() { [[ " $PARTS " == *" $1 "* ]]; }
mkdir -p "$OUT"
if [ -z "${NO_WHEELS:-}" ] && compgen -G ".whl/*.whl" > /dev/null; then  # NO_WHEELS=1: use what is installed
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
{
  date -u; nproc
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  python3 -c "import torch, torchrl, tensordict, lightning; print('torch', torch.__version__, '| torchrl', torchrl.__version__, '| tensordict', tensordict.__version__, '| lightning', lightning.__version__)"
  python3 -c "from yahtzee_lightning.machine import describe_machine; print(describe_machine())"
} 2>&1 | tee "$OUT/machine.txt"

if [ -n "${QUICK:-}" ]; then
  bench=(--quick --batches 4 --members 4 --big 64); games=50; tests=(-k "cuda or machine")
else
  bench=(--batches 20 --members 64 --big 16384); games=400; tests=(-k "cuda or machine" -n 4)
fi

if part tests; then
echo "== the CUDA tests" | tee "$OUT/tests.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -rA "${tests[@]}" tests/env/test_env.py \
  tests/algorithms/test_overhead.py tests/algorithms/test_capture.py tests/test_machine.py 2>&1 | tail -40 | tee -a "$OUT/tests.txt"
fi

if part lookahead; then
echo "== the look-ahead player, $DEVICE against cpu, $games games each (each device draws its own dice: compare the regrets)" | tee -a "$OUT/tests.txt"
for dev in cpu "$DEVICE"; do
  timeout 60 python3 -m yahtzee_lightning.cli evaluate --agent lookahead:checkpoints/a2c-best-stage2-128x2 \
    --games "$games" --device "$dev" 2>&1 | grep -E "mean score|regret per game|Error|error" | sed "s/^/$dev: /" | tee -a "$OUT/tests.txt"
done
fi

if part solver; then
echo "== the optimal table" | tee -a "$OUT/bench.txt"
timeout 80 python3 benchmarks/bench_solver.py --device "$DEVICE" --variants default --repeat 3 \
  --json "$OUT/solver.json" 2>&1 | tee -a "$OUT/bench.txt"
fi

if part bench; then
echo "== training, profiles, compiled rows" | tee -a "$OUT/bench.txt"
timeout "${BENCH_SECONDS:-270}" python3 benchmarks/bench_gpu.py --device "$DEVICE" "${bench[@]}" ${PHASES:+--phases $PHASES} \
  --json "$OUT/gpu.json" 2>&1 | grep -v -E "Warning|warn\(|litlogger|TPU available|GPU available|LOCAL_RANK|USDT|max_epochs|^\s*$" \
  | tee -a "$OUT/bench.txt"
fi
echo "done $(date -u)" | tee -a "$OUT/bench.txt"
