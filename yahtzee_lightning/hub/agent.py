"""A trained agent as a shareable artefact: ``model.safetensors`` + ``config.json`` + ``README.md``.

The artefact is the policy/value network alone (not the Lightning checkpoint). Loading reads
JSON and safetensors only, never a pickle, and checks the format version and that the weights
match the config before anything is built. Hub transfers go through ``huggingface_hub``
(``snapshot_download``, ``create_repo``, ``upload_folder``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .. import __version__
from ..nn import PolicyValueNet

FORMAT_VERSION = 1
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
CARD_NAME = "README.md"


class AgentFormatError(ValueError):
    """A folder or hub repo that is not a loadable agent; the message says which part is wrong."""


class YahtzeeAgent:
    """The network plus what is needed to rebuild and describe it.

    ``training`` and ``evaluation`` are free-form JSON (algorithm, games, wall clock, hardware;
    the evaluation summary) that end up in ``config.json`` and in the model card.
    """

    def __init__(self, net: PolicyValueNet, training: dict | None = None, evaluation: dict | None = None) -> None:
        self.net = net
        self.training = training or {}
        self.evaluation = evaluation

    @property
    def config(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "package": "yahtzee_lightning",
            "package_version": __version__,
            "network": self.net.config,
            "rules": self.net.config["rules"],
            "training": self.training,
            "evaluation": _summary_only(self.evaluation),
        }

    def player(self, device: torch.device | str = "cpu", greedy: bool = True):
        from ..players.agent import AgentPlayer

        self.net.to(device).eval()
        return AgentPlayer(self.net, greedy=greedy, name=self.training.get("name", "agent"))

    # ------------------------------------------------------------ save / load
    def save_pretrained(self, directory: str | Path, card: str | None = None) -> Path:
        from .card import model_card

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.net.state_dict().items()}
        save_file(state, str(directory / WEIGHTS_NAME), metadata={"format": "pt"})
        (directory / CONFIG_NAME).write_text(json.dumps(self.config, indent=2))
        (directory / CARD_NAME).write_text(card if card is not None else str(model_card(self)))
        return directory

    @classmethod
    def from_pretrained(
        cls,
        id_or_path: str | Path,
        revision: str | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
    ) -> YahtzeeAgent:
        """Load from a local folder, or download a hub repo (``user/name``) through the HF cache."""
        path = Path(id_or_path)
        if not path.is_dir():
            from huggingface_hub import snapshot_download

            path = Path(
                snapshot_download(
                    str(id_or_path),
                    revision=revision,
                    cache_dir=cache_dir,
                    local_files_only=local_files_only,
                    allow_patterns=[CONFIG_NAME, WEIGHTS_NAME, CARD_NAME],
                )
            )
        return cls.load(path)

    @classmethod
    def load(cls, directory: Path) -> YahtzeeAgent:
        config_path, weights_path = directory / CONFIG_NAME, directory / WEIGHTS_NAME
        for p in (config_path, weights_path):
            if not p.exists():
                raise AgentFormatError(f"{directory}: missing {p.name}")
        try:
            config = json.loads(config_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AgentFormatError(f"{config_path}: not valid JSON ({e})") from e
        version = config.get("format_version")
        if version != FORMAT_VERSION:
            raise AgentFormatError(
                f"{config_path}: agent format version {version!r}; this yahtzee_lightning reads {FORMAT_VERSION}"
            )
        try:
            net = PolicyValueNet(**config["network"])
        except (KeyError, TypeError, ValueError) as e:
            raise AgentFormatError(f"{config_path}: network config does not build a PolicyValueNet ({e})") from e
        try:
            state = load_file(str(weights_path))
        except (SafetensorError, OSError) as e:
            raise AgentFormatError(f"{weights_path}: corrupt safetensors file ({e})") from e
        _check_weights(net, state, weights_path)
        net.load_state_dict(state)
        net.eval()
        return cls(net, config.get("training"), config.get("evaluation"))

    def push_to_hub(self, repo_id: str, private: bool = False, token: str | None = None, directory: Path | None = None):
        """Create the repo if needed and upload the saved folder (saving it first to a temporary one)."""
        import tempfile

        from huggingface_hub import HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            folder = directory if directory is not None else self.save_pretrained(tmp)
            return api.upload_folder(repo_id=repo_id, folder_path=str(folder), commit_message="Upload Yahtzee agent")


def _check_weights(net: PolicyValueNet, state: dict[str, torch.Tensor], path: Path) -> None:
    expected = net.state_dict()
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    shapes = [
        f"{k}: {tuple(state[k].shape)} != {tuple(v.shape)}"
        for k, v in expected.items()
        if k in state and state[k].shape != v.shape
    ]
    if missing or extra or shapes:
        raise AgentFormatError(
            f"{path}: weights do not match the config (missing {missing[:5]}, unexpected {extra[:5]}, "
            f"mis-shaped {shapes[:5]})"
        )


def _summary_only(evaluation: dict | None) -> dict | None:
    if evaluation is None:
        return None
    return {k: v for k, v in evaluation.items() if k != "scores"}
