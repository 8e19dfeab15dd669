"""Agents as Hugging Face Hub artefacts: save, load, card, push, pull."""

from .agent import FORMAT_VERSION, AgentFormatError, YahtzeeAgent

__all__ = ["FORMAT_VERSION", "AgentFormatError", "YahtzeeAgent"]
