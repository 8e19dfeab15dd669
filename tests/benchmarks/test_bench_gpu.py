"""benchmarks/bench_gpu.py, the script a lent GPU runs, on the CPU at tiny sizes: each phase writes
its rows (a lent GPU's minutes are too few to find a broken script there)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.slow("every phase of the GPU script on the CPU: about 40 s")
def test_the_gpu_script_runs_its_phases_on_the_cpu_and_writes_its_rows(tmp_path):
    out = tmp_path / "gpu.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--device", "cpu", "--quick"]
    cmd += ["--batches", "2", "--members", "2", "--big", "32", "--phases", "a2c", "study", "solver", "profile"]
    done = subprocess.run(cmd + ["--json", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["name"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["A2C recipe, big batch"]["games_per_batch"] == 32
    packed = rows["study config packed K=2"]
    assert packed["games_per_s"] > 0 and packed["over_one_member"] > 0
    # The table in the device's layout and in the CPU's: the same game (a 4-box variant here).
    assert rows["solver flat=None"]["optimum"] == rows["solver flat=False"]["optimum"] > 0
    assert rows["profile: study config alone"]["wall_s"] > 0 and "GPU busy" in done.stdout
