"""A trained agent as a shareable artefact: ``model.safetensors`` + ``config.json`` + ``README.md``.

The artefact is the policy/value network alone (not the Lightning checkpoint). Loading reads
JSON and safetensors only, never a pickle, and checks the format version and that the weights
match the config before anything is built. Hub transfers go through ``huggingface_hub``
(``snapshot_download``, ``create_repo``, ``upload_folder``). The method names and arguments
follow ``PyTorchModelHubMixin``; the mixin itself is not used because it loads weights
non-strictly and treats a missing ``config.json`` as a warning, where we want an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from .._version import __version__
from ..digest import VALUE_DIGEST, WEIGHTS_DIGEST, nonfinite, tensors_sha256
from ..manifest import Manifest
from ..nn import PolicyValueNet
from ..solver.value import TurnValueNet
from ..untrusted import (
    MAX_NAME_CHARS,
    UntrustedError,
    printable,
    printable_tree,
    read_json,
    read_text_capped,
    shortened,
)
from .download import resolve_folder
from .files import agent_files, check_weights, load_turn_value, save_turn_value_file, verify_weights, with_side_files
from .layout import (
    ARTEFACT_PATTERNS,
    CARD_NAME,
    CONFIG_NAME,
    VALUE_NAME,
    WEIGHTS_NAME,
    WIN_VALUE_NAME,
    AgentError,
    AgentFormatError,
)
from .win_value import load_win_value, save_win_value_file, win_value_entry

FORMAT_VERSION = 1


class YahtzeeAgent:
    """The network plus what is needed to rebuild and describe it.

    ``training`` and ``evaluation`` are free-form JSON (algorithm, games, wall clock, hardware;
    the evaluation result of ``yahtzee_lightning.evaluation.evaluate``) that end up in
    ``config.json`` and in the model card. ``turn_value`` (optional) is a turn-start value learned
    from the agent's own games, ``turn_value_info`` how (JSON): with it, ``lookahead:AGENT`` plays.
    """

    def __init__(
        self,
        net: PolicyValueNet,
        training: dict | None = None,
        evaluation: dict | None = None,
        card: str | None = None,
        turn_value: TurnValueNet | None = None,
        turn_value_info: dict | None = None,
    ) -> None:
        self.net = net
        self.training = training or {}
        self.evaluation = evaluation
        self._card = card
        self.turn_value = turn_value
        self.turn_value_info = turn_value_info or {}
        self.win_value, self.win_value_info = None, {}  # for winlookahead: (hub/win_value.py)

    @property
    def card(self) -> str:
        """The model card (Markdown): the folder's ``README.md`` when loaded, else generated from
        ``training`` and ``evaluation`` as ``save_pretrained`` would write it."""
        if self._card is not None:
            return self._card
        from .card import model_card

        return str(model_card(self))

    @property
    def config(self) -> dict[str, Any]:
        """The content of ``config.json``; ``network`` alone rebuilds the net (``PolicyValueNet(**network)``)."""
        return {
            "format_version": FORMAT_VERSION,
            "package": "yahtzee_lightning",
            "package_version": __version__,
            "network": self.net.config,
            "rules": self.net.config["rules"],
            WEIGHTS_DIGEST: tensors_sha256(self.net.state_dict()),
            "training": self.training,
            "evaluation": _summary_only(self.evaluation),
            **({"turn_value": self.turn_value_config} if self.turn_value is not None else {}),
            **({"win_value": win_value_entry(self.win_value, self.win_value_info)} if self.win_value else {}),
        }

    @property
    def turn_value_config(self) -> dict[str, Any]:
        """``config.json``'s ``turn_value``: its file, network (``TurnValueNet(**network)``), sha256
        and how it was learned."""
        if self.turn_value is None:
            raise AgentError("this agent carries no turn-start value")
        return {
            "file": VALUE_NAME,
            "network": self.turn_value.config,
            VALUE_DIGEST: tensors_sha256(self.turn_value.state_dict()),
            **self.turn_value_info,
        }

    def player(self, device: torch.device | str = "cpu", greedy: bool = True):
        """The agent as a ``Player`` for evaluation and play (``AgentPlayer`` over the network)."""
        from ..players.agent import AgentPlayer

        self.net.to(device).eval()
        name = shortened(str(self.training.get("name", "agent")), MAX_NAME_CHARS)  # a column's heading
        return AgentPlayer(self.net, greedy, name, self.turn_value, self.win_value)

    # ------------------------------------------------------------ save / load
    def save_pretrained(self, directory: str | Path, card: str | None = None) -> Path:
        """Write the three artefact files (``card`` replaces the generated model card); the weights'
        sha256 goes into the safetensors metadata, ``config.json`` and the card, and is checked on load.
        The folder's ``manifest.json`` names them: the files a later ``export --force`` may replace."""
        from .card import model_card

        directory = Path(directory)
        state = {k: v.detach().cpu().contiguous() for k, v in self.net.state_dict().items()}
        if bad := nonfinite(state):
            raise AgentFormatError(f"{directory}: weights not finite (NaN or inf) in {bad[:5]}; not saved")
        directory.mkdir(parents=True, exist_ok=True)
        metadata = {"format": "pt", WEIGHTS_DIGEST: tensors_sha256(state)}
        save_file(state, str(directory / WEIGHTS_NAME), metadata=metadata)
        if self.turn_value is not None:
            save_turn_value_file(self.turn_value, directory)
        if self.win_value is not None:
            save_win_value_file(self.win_value, directory)
        (directory / CONFIG_NAME).write_text(json.dumps(self.config, indent=2))
        (directory / CARD_NAME).write_text(card if card is not None else str(model_card(self)))
        written = [WEIGHTS_NAME, CONFIG_NAME, CARD_NAME] + ([VALUE_NAME] if self.turn_value is not None else [])
        written += [WIN_VALUE_NAME] if self.win_value is not None else []
        Manifest.read(directory).add(written)  # what a --force may replace
        return directory

    def save_turn_value(self, directory: str | Path) -> Path:
        """Add (or replace) the turn-start value in the agent folder ``directory``, its weights as
        they are: the value's file, ``config.json``'s ``turn_value`` entry and the card's section on
        it (the rest of the card kept); the folder changes in one step (``hub/files.py``, ``with_side_files``)."""
        from .card import with_turn_value_section

        entry = self.turn_value_config

        def card(old: str | None) -> str:
            self._card = with_turn_value_section(old if old is not None else self.card, entry)
            return self._card

        return with_side_files(
            directory,
            "turn-value",
            lambda tmp: save_turn_value_file(self.turn_value, tmp),
            VALUE_NAME,
            "turn_value",
            entry,
            card,
        )

    @classmethod
    def from_pretrained(
        cls,
        id_or_path: str | Path,
        revision: str | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        token: str | None = None,
    ) -> YahtzeeAgent:
        """Load from a local folder; a shipped agent by its name (``"distilled-128x2"``: the package's
        own copy, from any folder, offline; ``yahtzee-lightning agents`` lists them); or a hub repo
        (``user/name``, optional revision) through the HF cache, which serves it offline once fetched.
        A path that exists wins over a shipped name, a shipped name over a hub id without ``user/``."""
        return cls.load(resolve_folder(id_or_path, revision, cache_dir, local_files_only, token))

    @classmethod
    def load(cls, directory: str | Path) -> YahtzeeAgent:
        """Load a local agent folder, checking every part before building anything."""
        directory = Path(directory)
        config_path, weights_path = directory / CONFIG_NAME, directory / WEIGHTS_NAME
        for p in (config_path, weights_path):
            if not p.is_file():
                raise AgentFormatError(f"{directory}: missing {p.name}")
        try:
            config = read_json(config_path)
        except UntrustedError as e:
            raise AgentFormatError(str(e)) from None
        if not isinstance(config, dict):
            raise AgentFormatError(f"{config_path}: not an agent config (a JSON object is expected)")
        for key in ("training", "evaluation"):  # free-form, but mappings: what reads them expects keys
            if not isinstance(config.get(key) or {}, dict):
                raise AgentFormatError(f"{config_path}: {key} must be a JSON object, got {type(config[key]).__name__}")
        version = config.get("format_version")
        if version != FORMAT_VERSION:
            raise AgentFormatError(
                f"{config_path}: agent format version {version!r}; this yahtzee_lightning reads {FORMAT_VERSION}"
            )
        try:
            net = PolicyValueNet(**config["network"])
        except (KeyError, TypeError, ValueError) as e:
            raise AgentFormatError(f"{config_path}: network config does not build a PolicyValueNet ({e!r})") from e
        try:
            with safe_open(str(weights_path), framework="pt") as f:
                metadata = f.metadata() or {}
                state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is no dict)
        except (SafetensorError, OSError) as e:
            raise AgentFormatError(f"{weights_path}: corrupt safetensors file ({e})") from e
        check_weights(net, state, weights_path)
        card_path = directory / CARD_NAME
        card = read_text_capped(card_path) if card_path.is_file() else None
        verify_weights(state, weights_path, metadata.get(WEIGHTS_DIGEST), config.get(WEIGHTS_DIGEST), card)
        net.load_state_dict(state)
        net.eval()
        value, value_info = load_turn_value(directory, config.get("turn_value"), card)
        # Text from the folder is shown as text: no digest covers a name or a card, so their control
        # characters (a terminal's escapes: title, colours, OSC 52 to the clipboard) are escaped here,
        # once, for every verb that prints them.
        training, evaluation = printable_tree(config.get("training")), printable_tree(config.get("evaluation"))
        card = printable(card, keep_newlines=True) if card is not None else None
        agent = cls(net, training, evaluation, card, value, printable_tree(value_info))
        agent.win_value, win_info = load_win_value(directory, config.get("win_value"), card)
        agent.win_value_info = printable_tree(win_info)
        return agent

    def push_to_hub(
        self,
        repo_id: str,
        private: bool = False,
        token: str | None = None,
        directory: str | Path | None = None,
        commit_message: str = "Upload Yahtzee agent",
    ):
        """Create the repo if needed and upload the agent folder (``directory``, or a freshly saved one).

        Exactly the agent's files are uploaded (``agent_files``); the repo's other artefact files
        go. Returns ``huggingface_hub``'s ``CommitInfo``.
        """
        import tempfile

        from huggingface_hub import HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(directory) if directory is not None else self.save_pretrained(tmp)
            return api.upload_folder(
                repo_id=repo_id,
                folder_path=folder,
                commit_message=commit_message,
                allow_patterns=agent_files(folder),
                delete_patterns=ARTEFACT_PATTERNS,  # an older agent's files in the repo go
            )


def is_agent_folder(folder: Path) -> bool:
    """Whether ``folder`` holds an agent of ours (its ``config.json``); other files may sit beside it."""
    try:
        config = read_json(folder / CONFIG_NAME)
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("package") == "yahtzee_lightning"


def _summary_only(evaluation: dict | None) -> dict | None:
    """The evaluation without the raw score tensors (JSON-able, and small)."""
    if evaluation is None:
        return None
    return {k: v for k, v in evaluation.items() if k != "scores"}
