"""The local hub server, and the environment a ``huggingface_hub`` client process needs to use it."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_server import HubServer


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        yield server


@pytest.fixture
def hub_env(hub: HubServer, tmp_path: Path) -> dict[str, str]:
    """For subprocesses: ``huggingface_hub`` reads these at import time, so the test process can't use them.

    Xet is off (the server speaks LFS basic transfer), and ``HF_HOME`` is temporary because the
    cache is not keyed by endpoint. Tests point ``HF_HOME`` elsewhere for a fresh, empty cache.
    """
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    root = str(Path(__file__).resolve().parents[2])  # the tree under test, not whichever copy is installed
    return dict(
        inherited,
        PYTHONPATH=os.pathsep.join([root, *filter(None, [inherited.get("PYTHONPATH")])]),
        HF_ENDPOINT=hub.url,
        HF_HOME=str(tmp_path / "hf_home"),
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_TOKEN="hf_test_token",
    )
