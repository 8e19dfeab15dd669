"""An agent folder's files by name, and the errors of an agent that cannot be loaded: plain names
and classes (no torch), so that a download, or a name checked before anything heavy loads, needs
nothing else."""

from __future__ import annotations

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
CARD_NAME = "README.md"
#: The optional turn-start value (``lookahead:AGENT`` searches against it), beside the weights.
VALUE_NAME = "turn_value.safetensors"
#: The optional win value (``winlookahead:AGENT``; ``.win_value``).
WIN_VALUE_NAME = "win_value.safetensors"
#: What belongs to an agent folder: pushed, downloaded and copied; anything else stays behind.
ARTEFACT_PATTERNS = [CONFIG_NAME, WEIGHTS_NAME, CARD_NAME, VALUE_NAME, WIN_VALUE_NAME, "*.yaml"]


class AgentError(ValueError):
    """An agent that cannot be loaded; a ``ValueError`` so that CLIs report it as a usage error."""


class AgentFormatError(AgentError):
    """A folder or hub repo that is not a loadable agent; the message says which part is wrong."""


class AgentNotFoundError(AgentError):
    """Neither a local folder nor a hub repo (or revision) that can be reached or is cached."""
