"""Reading large untrusted files: the checks before parsing must not cost more than the parse.

Reads, with the package's own readers (``read_json``, ``load_yaml``), the shapes a hostile or merely
large agent folder or study file can have: a config.json with a 20 MB name, 40 MB of shallow
brackets, 40 MB of nested brackets (refused at 65 levels), and a YAML file with a 7 MB value.
Run it under ``farm-bench --vs`` against an older checkout (``PYTHONPATH=<old tree>``) to compare.

    python benchmarks/bench_untrusted.py [--only json|yaml]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["json", "yaml"])
    args = parser.parse_args()
    from yahtzee_lightning.untrusted import UntrustedError, load_yaml, read_json

    cases = {
        "json: a 20 MB name": json.dumps({"name": "n" * (20 << 20)}),
        "json: 40 MB of shallow brackets": "[" + "[]," * (13 << 20) + "[]]",
        "json: 40 MB nested (refused)": "[" * (20 << 20) + "]" * (20 << 20),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases.items():
            if args.only not in (None, "json"):
                continue
            path = Path(tmp) / "config.json"
            path.write_text(text)
            start = time.perf_counter()
            try:
                read_json(path)
            except UntrustedError:
                pass
            print(f"{name}: {time.perf_counter() - start:.2f} s")
    if args.only in (None, "yaml"):
        start = time.perf_counter()
        load_yaml("name: " + "n" * (7 << 20) + "\n", "study.yaml")
        print(f"yaml: a 7 MB value: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
