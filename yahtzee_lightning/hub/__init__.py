"""Agents as Hugging Face Hub artefacts: save, load, card, push, pull."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .agent import FORMAT_VERSION, YahtzeeAgent
    from .layout import AgentError, AgentFormatError, AgentNotFoundError

__all__ = ["FORMAT_VERSION", "AgentError", "AgentFormatError", "AgentNotFoundError", "YahtzeeAgent"]
__getattr__ = lazy_exports(
    __name__, {name: ".agent" if name in ("FORMAT_VERSION", "YahtzeeAgent") else ".layout" for name in __all__}
)
