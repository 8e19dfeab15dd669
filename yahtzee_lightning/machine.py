"""The machine a measurement or a run happened on, described in one place.

Benchmark results (``benchmarks/_common.py``), a study's sessions (``study/running/runner.py``) and a model
card's hardware line (``commands/hub.py``) all describe the machine with ``machine`` (in words:
``describe_machine``), so that a number can be compared with another knowing both came from
machines described the same way. torch is imported when asked, not when this module is.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

#: The libraries whose versions change what a run does or how fast.
LIBRARIES = ("torch", "lightning", "torchrl", "tensordict", "yahtzee_lightning")


def _processor() -> str:
    """The processor's model name (Linux: ``/proc/cpuinfo``), else what ``platform`` knows."""
    fallback = platform.processor() or platform.machine() or "unknown processor"
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return fallback
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), fallback)


def _memory_gib() -> float | None:
    """The machine's memory in GiB (None where the system does not say)."""
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (AttributeError, OSError, ValueError):
        return None


def _version(library: str) -> str | None:
    try:
        return metadata.version(library)
    except metadata.PackageNotFoundError:
        if library == "yahtzee_lightning":  # run from a checkout (PYTHONPATH), not installed
            from ._version import __version__

            return __version__
        return None


def machine() -> dict[str, Any]:
    """This machine: ``processor``, ``cores`` (logical), ``memory_gib``, ``accelerator`` (the GPU(s),
    or None) and ``versions`` of Python and the libraries that train and measure."""
    import torch

    accelerator = None
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        accelerator = f"{count} x {torch.cuda.get_device_name(0)}" if count > 1 else torch.cuda.get_device_name(0)
    elif torch.backends.mps.is_available():
        accelerator = "Apple MPS"
    versions = {"python": platform.python_version(), **{lib: _version(lib) for lib in LIBRARIES}}
    versions["torch"] = torch.__version__  # the imported one (a local build may not be the installed one)
    return {
        "processor": _processor(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "accelerator": accelerator,
        "os": f"{platform.system()} {platform.release()}".strip() or sys.platform,
        "versions": versions,
    }


def describe_machine(info: dict[str, Any] | None = None) -> str:
    """``machine`` (or ``info``, a description it gave) in words, for a card or a report:
    ``"AMD EPYC 7B13, 2 cores, 7.8 GiB, no GPU; Python 3.11.7, torch 2.13.0, ..."``."""
    info = machine() if info is None else info
    memory = f", {info['memory_gib']} GiB" if info.get("memory_gib") is not None else ""
    hardware = f"{info['processor']}, {info['cores']} cores{memory}, {info['accelerator'] or 'no GPU'}"
    versions = ", ".join(f"{'Python' if k == 'python' else k} {v}" for k, v in info["versions"].items() if v)
    return f"{hardware}; {versions}"


# ---------------------------------------------------------------------------------------- threads
#: The ``OMP_NUM_THREADS`` the project chose itself, in the environment beside it (a later step of
#: the same run, knowing more, may choose again); where the two differ, someone else chose.
_CHOSEN_BY_US = "YAHTZEE_LIGHTNING_THREADS_CHOSEN"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask: a container's or ``taskset``'s share)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_rule(processes: int = 1, cores: int | None = None, load: float | None = None) -> int:
    """The torch threads of one process: ``max(1, min(cores // processes, idle cores))``.

    ``processes``: this machine's processes of the same job (DDP ranks on this node; a Ray trial
    and each study process are one and get one thread from the study itself). ``cores``: the
    usable cores; ``load``: the machine's one-minute load average, the cores other work keeps
    busy. Never more threads than idle cores: OpenMP threads that wait for a core another
    program holds spin at every barrier, and a busy 2-core box ran the batched env 8x slower
    with two threads than with one.
    """
    cores = usable_cores() if cores is None else cores
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    idle = cores - int(load + 0.5)
    return max(1, min(cores // max(processes, 1), idle))


def apply_thread_rule(processes: int = 1) -> int | None:
    """Set this process's torch threads by ``thread_rule`` unless the user set
    ``OMP_NUM_THREADS``; returns the count set (None: the user's stands). Before torch is
    imported it sets ``OMP_NUM_THREADS`` (what torch and the processes it starts read); after,
    ``torch.set_num_threads`` too. A user's count must be a whole number within the usable cores:
    anything else is refused naming the setting."""
    given = os.environ.get("OMP_NUM_THREADS")
    if given is not None and os.environ.get(_CHOSEN_BY_US) != given:
        cores = usable_cores()
        if not given.strip().isdigit() or not 1 <= int(given) <= cores:
            raise ValueError(f"OMP_NUM_THREADS={given!r}: must be a whole number in 1..{cores} (the usable cores)")
        return None
    threads = thread_rule(processes)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ[_CHOSEN_BY_US] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    return threads
