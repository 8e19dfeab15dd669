"""A trial's ``final.json`` carries the sha256 of its record: one edited by hand, damaged or cut short
is named in one line and treated as absent (its cell runs again), never used as a result."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..digest import DIGEST_KEY, record_sha256

LOG = logging.getLogger(__name__)


def final_text(record: dict[str, Any]) -> str:
    """``record`` as ``final.json`` holds it: with its sha256."""
    return json.dumps({**record, DIGEST_KEY: record_sha256(record)})


def read_final(path: Path) -> dict[str, Any] | None:
    """The record in ``path``, or None when there is none or it cannot be trusted (warned, naming it).
    A record written before digests is used, with a warning."""
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        LOG.warning("warning: %s: unreadable (%s); its cell runs again", path, type(e).__name__)
        return None
    if not isinstance(record, dict):
        LOG.warning("warning: %s: not a JSON object; its cell runs again", path)
        return None
    if DIGEST_KEY not in record:
        LOG.warning("warning: %s: carries no sha256 (written before digests)", path)
        return record
    if record[DIGEST_KEY] != record_sha256(record):
        LOG.warning("warning: %s: does not match its sha256 (damaged or edited); its cell runs again", path)
        return None
    return {k: v for k, v in record.items() if k != DIGEST_KEY}
