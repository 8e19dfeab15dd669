"""A trained agent as a shareable artefact: ``model.safetensors`` + ``config.json`` + ``README.md``.

The artefact is the policy/value network alone (not the Lightning checkpoint). Loading reads
JSON and safetensors only, never a pickle, and checks the format version and that the weights
match the config before anything is built. Hub transfers go through ``huggingface_hub``
(``snapshot_download``, ``create_repo``, ``upload_folder``). The method names and arguments
follow ``PyTorchModelHubMixin``; the mixin itself is not used because it loads weights
non-strictly and treats a missing ``config.json`` as a warning, where we want an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
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
from ..untrusted import UntrustedError, check_commit_id, check_relative_path, printable, printable_tree, read_json
from .files import (
    ARTEFACT_PATTERNS,
    CARD_NAME,
    CONFIG_NAME,
    VALUE_NAME,
    WEIGHTS_NAME,
    WIN_VALUE_NAME,
    AgentError,
    AgentFormatError,
    AgentNotFoundError,
    check_weights,
    load_turn_value,
    save_turn_value_file,
    verify_weights,
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
        name = self.training.get("name", "agent")
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
        it (the rest of the card kept)."""
        from .card import with_turn_value_section

        directory = Path(directory)
        if not (directory / CONFIG_NAME).is_file():
            raise AgentFormatError(f"{directory}: missing {CONFIG_NAME} (not an agent folder)")
        save_turn_value_file(self.turn_value, directory)
        try:
            config = read_json(directory / CONFIG_NAME)
        except UntrustedError as e:
            raise AgentFormatError(str(e)) from None
        config["turn_value"] = self.turn_value_config
        (directory / CONFIG_NAME).write_text(json.dumps(config, indent=2))
        card_path = directory / CARD_NAME
        card = card_path.read_text(encoding="utf-8") if card_path.is_file() else self.card
        self._card = with_turn_value_section(card, self.turn_value_config)
        card_path.write_text(self._card, encoding="utf-8")
        return directory

    @classmethod
    def from_pretrained(
        cls,
        id_or_path: str | Path,
        revision: str | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        token: str | None = None,
    ) -> YahtzeeAgent:
        """Load from a local folder, or from a hub repo (``user/name``, optional revision) through the HF cache."""
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
        card = card_path.read_text(encoding="utf-8", errors="replace") if card_path.is_file() else None
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
        agent.win_value, agent.win_value_info = load_win_value(directory, config.get("win_value"), card)
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

        Exactly the agent's files are uploaded (:func:`agent_files`); the repo's other artefact files
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


def agent_files(folder: Path) -> list[str]:
    """The files of the agent in ``folder``: the artefact files (the turn-start value where there is
    one) and the training YAML its config names (nothing else there is part of it, nor pushed or copied)."""
    names = [CONFIG_NAME, WEIGHTS_NAME, CARD_NAME, VALUE_NAME, WIN_VALUE_NAME]
    try:
        yaml_name = (read_json(folder / CONFIG_NAME).get("training") or {}).get("config_file")
    except (OSError, ValueError, AttributeError):
        yaml_name = None
    if isinstance(yaml_name, str) and Path(yaml_name).name == yaml_name and (folder / yaml_name).is_file():
        names.append(yaml_name)
    return [n for n in names if (folder / n).is_file()]


def is_agent_folder(folder: Path) -> bool:
    """Whether ``folder`` holds an agent of ours (its ``config.json``); other files may sit beside it."""
    try:
        config = read_json(folder / CONFIG_NAME)
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("package") == "yahtzee_lightning"


def resolve_folder(
    id_or_path: str | Path,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    local_files_only: bool = False,
    token: str | None = None,
    hub_only: bool = False,
) -> Path:
    """A local agent folder as is; a hub id downloaded (or found in the cache when offline).

    ``hub_only``: ``id_or_path`` is a hub id (``pull``'s argument), so a failure speaks of the hub
    repo alone, not of a local folder that was never asked for.

    Every downloaded file is checked against its hub checksum (:func:`damaged_files`): a damaged
    one, or a plain file where the cache keeps a link to a checked blob, is downloaded again with a
    warning, or, offline, is an ``AgentFormatError``. Hub failures
    that mean "no such agent" become ``AgentNotFoundError``; other network errors (a server
    error, a refused token) pass through unchanged.
    """
    path = Path(id_or_path)
    if path.is_dir():
        return path
    if path.suffix == ".ckpt" or path.is_file():  # a training checkpoint is not an agent yet
        what = "a file, not an agent folder" if path.is_file() else "no such file (nor an agent folder)"
        raise AgentFormatError(
            f"{id_or_path}: {what}; a checkpoint of fit becomes an agent folder with: "
            f"yahtzee-lightning export {id_or_path} my-agent"
        )
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    def download(force: bool) -> Path:
        return Path(
            snapshot_download(
                str(id_or_path),
                revision=pinned,
                cache_dir=cache_dir,
                local_files_only=local_files_only,
                token=token,
                allow_patterns=ARTEFACT_PATTERNS,
                force_download=force,
            )
        )

    try:
        pinned = revision if local_files_only else pin_revision(str(id_or_path), revision, token)
        try:
            folder = download(force=False)
        except ValueError as e:  # the library's own guard on a path it would not write (a hostile listing)
            if isinstance(e, HFValidationError):
                raise
            raise AgentFormatError(
                f"{id_or_path}: the hub's answer names a path outside its repo ({printable(e)})"
            ) from None
        if pinned is not None and pinned != revision:
            remember_revision(folder, revision or "main", pinned)
        damaged = damaged_files(folder)
        if damaged:  # never load a damaged download: fetch it again, or say why that cannot be done
            from huggingface_hub import is_offline_mode

            if local_files_only or is_offline_mode():
                raise AgentFormatError(
                    f"{id_or_path}: the cached {', '.join(damaged)} do not match their hub checksum (damaged, "
                    "or not a link to a checked blob); "
                    "go online to download them again"
                )
            logging.getLogger(__name__).warning(
                "warning: %s: cached %s do not match their hub checksum; downloading again", id_or_path, damaged
            )
            for name in damaged:  # a plain file is not replaced by a new download: remove it (it is the cache's)
                if not (folder / name).is_symlink():
                    (folder / name).unlink()
            folder = download(force=True)
            if damaged := damaged_files(folder, plain_ok=True):
                raise AgentFormatError(f"{id_or_path}: {', '.join(damaged)} do not match their hub checksum")
    except HFValidationError as e:
        if hub_only:
            raise AgentNotFoundError(f"{id_or_path}: not a hub repo id (user/name) ({e})") from e
        raise AgentNotFoundError(f"{id_or_path}: no such agent folder, and not a hub repo id ({e})") from e
    except RevisionNotFoundError as e:
        raise AgentNotFoundError(f"{id_or_path}: the hub repo has no revision {revision!r}") from e
    except RepositoryNotFoundError as e:
        what = "no such agent folder, nor a hub repo you can read"
        if hub_only:
            what = "no hub repo by that id that you can read"
        raise AgentNotFoundError(f"{id_or_path}: {what}") from e
    except LocalEntryNotFoundError as e:
        where = "" if hub_only else "no such agent folder; "
        raise AgentNotFoundError(
            f"{id_or_path}: {where}the hub is unreachable or offline, and this hub repo is not in the local cache"
        ) from e
    return folder


def damaged_files(folder: Path, plain_ok: bool = False) -> list[str]:
    """Files of a hub snapshot whose content does not match the name of their blob in the HF cache.

    The cache names a blob by its hub checksum: the sha256 for LFS files (the weights), the git
    blob id (sha1) for the others. A plain file where the cache keeps a link has nothing to be
    checked against: it counts as damaged, unless ``plain_ok`` (a file just downloaded again, in
    a cache that cannot make links).
    """
    damaged = []
    for f in sorted(folder.rglob("*")):
        if not f.is_file():
            continue
        if not f.is_symlink():
            if not plain_ok:
                damaged.append(f.relative_to(folder).as_posix())
            continue
        blob, data = f.resolve().name, f.read_bytes()
        if len(blob) == 64:
            actual = hashlib.sha256(data).hexdigest()
        elif len(blob) == 40:
            actual = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        else:
            continue
        if actual != blob:
            damaged.append(f.relative_to(folder).as_posix())
    return damaged


def hub_errors() -> tuple[type[BaseException], ...]:
    """What ``huggingface_hub`` raises when the hub cannot be reached or refuses a request (for CLIs to report)."""
    from huggingface_hub import errors

    # ``errors.HTTPError``: the HTTP client's base error (connection refused, timeout), as huggingface_hub exports it.
    return (errors.HfHubHTTPError, getattr(errors, "HTTPError", OSError), OSError)


def _summary_only(evaluation: dict | None) -> dict | None:
    """The evaluation without the raw score tensors (JSON-able, and small)."""
    if evaluation is None:
        return None
    return {k: v for k, v in evaluation.items() if k != "scores"}


#: The most an agent's downloaded files may weigh in all (the hub's listing says, before any download).
MAX_DOWNLOAD_BYTES = 2 << 30


def pin_revision(repo_id: str, revision: str | None, token: str | None) -> str | None:
    """The commit the hub names for ``revision``, checked before anything is written.

    ``huggingface_hub`` uses the commit id a server answers as a file name in its cache
    (``snapshots/{sha}/``, ``trees/{sha}.json``) without checking it: a mirror or an
    ``HF_ENDPOINT`` that answers ``../../x`` would write outside the cache. So the commit is asked
    for here, checked to be 40 hex digits, and the download pinned to it (the library then asks no
    more); the file names and sizes the hub lists for it are checked too (plain relative paths, at
    most ``MAX_DOWNLOAD_BYTES`` in all). Where the hub cannot be reached, ``revision`` as it was: the
    library looks in the cache (whose commit ids were checked when they were written).
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError
    from huggingface_hub.utils import filter_repo_objects

    api = HfApi(token=token)
    try:
        info = api.repo_info(repo_id, revision=revision)
    except (RepositoryNotFoundError, RevisionNotFoundError):
        raise
    except (HfHubHTTPError, OSError, *hub_errors()):
        return revision  # unreachable: the cache decides, as the library would
    where = f"{repo_id}" + (f"@{revision}" if revision else "")
    try:
        sha = check_commit_id(info.sha, where)
        files = [f for f in api.list_repo_tree(repo_id, revision=sha, recursive=True) if hasattr(f, "size")]
        for f in files:
            check_relative_path(f.path, where)
        wanted = set(filter_repo_objects([f.path for f in files], allow_patterns=ARTEFACT_PATTERNS))
        sizes = [f.size for f in files if f.path in wanted]
        if any(not isinstance(s, int) or s < 0 for s in sizes) or sum(sizes) > MAX_DOWNLOAD_BYTES:
            raise UntrustedError(
                f"{where}: the hub lists {printable(sizes)} bytes for the agent's files (at most "
                f"{MAX_DOWNLOAD_BYTES:,} in all are downloaded)"
            )
    except UntrustedError as e:
        raise AgentFormatError(str(e)) from None
    except ValueError as e:  # the library's own parsing of a malformed answer
        raise AgentFormatError(f"{where}: the hub's answer is malformed ({printable(e)})") from None
    return sha


def remember_revision(snapshot: Path, revision: str, sha: str) -> None:
    """Record in the cache that ``revision`` (a branch or tag) was ``sha``, as the library does
    when it resolves a revision itself: an offline load of the same id then finds the snapshot."""
    refs = snapshot.parent.parent / "refs"
    try:
        check_relative_path(revision, "revision")
        (refs / revision).parent.mkdir(parents=True, exist_ok=True)
        (refs / revision).write_text(sha)
    except (UntrustedError, OSError):
        pass  # the cache keeps no name for it: an offline load asks for the commit instead
