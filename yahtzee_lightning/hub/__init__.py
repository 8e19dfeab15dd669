"""Agents as Hugging Face Hub artefacts: save, load, card, push, pull."""

from .agent import FORMAT_VERSION, AgentError, AgentFormatError, AgentNotFoundError, YahtzeeAgent

__all__ = ["FORMAT_VERSION", "AgentError", "AgentFormatError", "AgentNotFoundError", "YahtzeeAgent"]
