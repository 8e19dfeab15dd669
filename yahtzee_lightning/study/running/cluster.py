"""A study on a Ray cluster: checked before any trial runs, and each trial's node recorded.

Before the first trial, ``study run --address`` checks (each failure is one line that names the
address or the node): that something answers at the address (a TCP connection within a few
seconds, so that a wrong address does not wait on Ray's own long retries); then, by a tiny task
pinned to every node, that the node imports ``yahtzee_lightning`` at this machine's version and
sees the study folder: it reads a file this machine wrote there and writes one of its own. Run
folders and Ray Tune's checkpoints are written where the trial runs, so the study folder must be
one folder for every node (a shared filesystem such as NFS, mounted at the same path).

A trial may ask for a fraction of a GPU (``gpus_per_trial``): Ray then places up to 1/fraction
trials on one GPU, and each trains on the GPU Ray gave it (``accelerator: gpu``, ``devices: 1``).
"""

from __future__ import annotations

import importlib
import socket
import uuid
from pathlib import Path
from typing import Any

from ..model import StudyError

ANSWER_TIMEOUT_S = 5.0  # for the address to accept a connection
PROBE_TIMEOUT_S = 120.0  # for every node's check (a node may have to start a Python worker first)
#: Retries of a trial whose process died (its node lost) on a cluster: it resumes from its newest checkpoint.
CLUSTER_RETRIES = 3


def check_address(address: str, timeout: float = ANSWER_TIMEOUT_S) -> None:
    """Raise ``StudyError`` unless ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``) accepts a
    connection within ``timeout`` seconds. ``auto`` (the cluster this machine joined) is left to Ray."""
    if address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise StudyError(f"--address {address}: expected HOST:PORT (e.g. 10.0.0.1:6379) or ray://HOST:10001")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        why = "no answer" if isinstance(e, TimeoutError) else (e.strerror or type(e).__name__)
        raise StudyError(
            f"--address {address}: no Ray cluster answers there within {timeout:g} s ({why}); "
            "start one with `ray start --head` and give the address it prints"
        ) from None


def where() -> dict[str, str]:
    """This process's Ray node id and host name, kept with a trial's results (empty outside Ray)."""
    try:
        import ray

        if not ray.is_initialized():
            return {}
        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname()}
    except Exception:  # a Ray without a runtime context: the results simply lack the node
        return {}


def node_probe(out: str, token: str, files: list[str]) -> dict[str, Any]:
    """Run on one node: its ``yahtzee_lightning`` version (or why it does not import), which of the
    study's config ``files`` it lacks, whether it sees ``out/token`` (written by the machine that
    runs the study) and can write beside it."""
    found: dict[str, Any] = where()
    found["missing"] = [f for f in files if not Path(f).is_file()]
    try:
        # The whole package, as that node imports it (an install there, not a module of ours here):
        # a runtime probe, so looked up by name rather than imported as a dependency.
        package = importlib.import_module("yahtzee_lightning")
        found["version"] = package.__version__
    except Exception as e:  # not installed, or broken there
        found["import_error"] = f"{type(e).__name__}: {e}"
    folder = Path(out)
    found["sees"] = (folder / token).is_file()
    mine = folder / f"{token}-{found.get('node', 'node')[:12]}"
    try:
        mine.write_text("written by a node of the cluster\n")
        mine.unlink()
        found["write_error"] = None
    except OSError as e:
        found["write_error"] = e.strerror or type(e).__name__
    return found


def node_name(node: dict[str, Any]) -> str:
    """A node of ``ray.nodes()`` in words: its id's start, host name and address."""
    return f"node {node['NodeID'][:12]} ({node.get('NodeManagerHostname', '?')}, {node.get('NodeManagerAddress', '?')})"


def check_nodes(out: Path, files: list[str], timeout: float = PROBE_TIMEOUT_S) -> int:
    """Run ``node_probe`` on every alive node of the connected cluster; raise ``StudyError``
    naming the first node that lacks the project (or has another version of it) or one of the
    study's config ``files`` (a trial reads its cell's base config where it runs), does not see the
    study folder ``out`` or cannot write there, or does not answer. Returns the number of nodes."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ..._version import __version__

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    out.mkdir(parents=True, exist_ok=True)
    token = f".cluster-check-{uuid.uuid4().hex[:12]}"
    (out / token).write_text("written by the machine that runs the study\n")
    try:
        probe = ray.remote(num_cpus=0, max_retries=0)(node_probe)  # looked up now: a test may replace it
        refs = {
            probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(
                str(out), token, files
            ): n
            for n in nodes
        }
        done, late = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
        problems = [f"{node_name(refs[r])}: did not answer the check within {timeout:g} s" for r in late]
        for ref in done:
            problems += _problems(refs[ref], ref, out, __version__)
    finally:
        (out / token).unlink(missing_ok=True)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StudyError(problems[0] + more)
    return len(nodes)


def _problems(node: dict[str, Any], ref: Any, out: Path, version: str) -> list[str]:
    """What the probe ``ref`` of ``node`` found wrong, as lines naming the node."""
    import ray

    name = node_name(node)
    try:
        found = ray.get(ref)
    except Exception as e:  # the check itself could not run there (its function did not import, ...)
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        return [f"{name}: the check could not run there ({lines[-1] if lines else type(e).__name__})"]
    install = f"install yahtzee_lightning {version} (as on this machine) on every node"
    if "import_error" in found:
        return [f"{name}: yahtzee_lightning does not import there ({found['import_error']}); {install}"]
    if found["version"] != version:
        return [f"{name}: has yahtzee_lightning {found['version']}, this machine {version}; {install}"]
    if found["missing"]:
        where_ = "at the same path on every node (e.g. a checkout on the shared folder)"
        return [f"{name}: lacks the study's config file {found['missing'][0]}; keep the config files {where_}"]
    shared = "the study folder must be one shared folder at the same path on every node (e.g. NFS)"
    if not found["sees"]:
        return [f"{name}: does not see the study folder {out} as this machine does; {shared}"]
    if found["write_error"]:
        return [f"{name}: cannot write to the study folder {out} ({found['write_error']}); {shared}, writable"]
    return []


def trial_resources(gpus: float) -> dict[str, float]:
    """What a trial asks Ray for: one CPU, and ``gpus`` of a GPU where that is more than 0."""
    return {"cpu": 1, "gpu": gpus} if gpus > 0 else {"cpu": 1}


def on_gpu(config: dict[str, Any]) -> dict[str, Any]:
    """A fit config set to train on the one GPU Ray gave the trial (Ray sets ``CUDA_VISIBLE_DEVICES``)."""
    trainer = config.setdefault("trainer", {})
    trainer["accelerator"], trainer["devices"] = "gpu", 1
    return config
