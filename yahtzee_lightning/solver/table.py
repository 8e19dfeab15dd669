"""The exact optimal value of every turn-start state, built by dynamic programming.

``V[mask, upper, flag]``: expected points still to come from the start of a turn with the boxes
of ``mask`` filled, the upper sum ``upper`` (capped at 63) and ``flag`` = the Yahtzee box holds
50. Layers are solved from 12 filled boxes down to 0; inside a layer the states are grouped by
their filled upper boxes, so that only the upper sums those boxes can reach are computed, and a
state with no open upper box is solved once for all upper sums (its future does not depend on
them).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..atomic import written_whole
from ..game import Rules
from ..game.rules import UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from .turn import N_MASKS, N_UPPER, turn_start_values

FORMAT_VERSION = 2  # 2: the values' sha256 is in the metadata and checked on load
UPPER_MASK = (1 << 6) - 1


def reachable_uppers(upper_boxes: list[int]) -> list[int]:
    """Capped upper sums that the filled upper boxes (faces 1..6 as 0..5) can add up to."""
    reach = {0}
    for b in upper_boxes:
        reach = {min(UPPER_BONUS_THRESHOLD, r + (b + 1) * k) for r in reach for k in range(6)}
    return sorted(reach)


class TableFormatError(ValueError):
    """A saved table that cannot be used as is: damaged (its checksum), another format version, a wrong shape."""


class TableRulesError(TableFormatError):
    """A saved table built for other rules: in the cache, solved again; a file the user names, refused."""


def values_sha256(values: torch.Tensor) -> str:
    """The sha256 of the values' bytes (float64, C order), as saved."""
    return hashlib.sha256(values.detach().cpu().contiguous().numpy().tobytes()).hexdigest()


@dataclass
class OptimalTable:
    """Turn-start values for one rule variant."""

    values: torch.Tensor  # (8192, 64, 2) float64
    rules: Rules
    seconds: float = 0.0

    @property
    def start_mask(self) -> int:
        return sum(1 << b for b in self.rules.boxes_out_of_play)

    @property
    def optimum(self) -> float:
        """Expected final score of optimal play from the empty card."""
        return float(self.values[self.start_mask, 0, 0])

    def to(self, device: torch.device | str) -> OptimalTable:
        return OptimalTable(self.values.to(device), self.rules, self.seconds)

    # ------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> None:
        meta = {
            "format_version": str(FORMAT_VERSION),
            "rules": json.dumps(self.rules.to_dict()),
            "rules_tag": self.rules.tag(),
            "optimum": repr(self.optimum),
            "seconds": repr(self.seconds),
            "sha256": values_sha256(self.values),
        }
        path = Path(path)
        with written_whole(path) as partial:  # never a half-written table under its name
            save_file({"values": self.values.cpu().contiguous()}, str(partial), metadata=meta)

    @classmethod
    def load(cls, path: str | Path, rules: Rules | None = None, device: torch.device | str = "cpu") -> OptimalTable:
        """Load a saved table; with ``rules`` given, refuse a table built for other rules.

        The values are checked against the sha256 saved with them: a damaged file raises
        ``TableFormatError`` rather than giving wrong numbers.
        """
        from safetensors import safe_open

        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no optimal table at {path}")
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        field = "format_version"
        try:  # metadata edited or damaged: named, with the file, never a bare parse error
            version = int(meta.get(field, -1))
            if version != FORMAT_VERSION:
                raise TableFormatError(f"{path}: table format version {version}, this package reads {FORMAT_VERSION}")
            field = "rules"
            saved = Rules.from_dict(json.loads(meta[field]))
            field = "seconds"
            seconds = float(meta.get(field, 0.0))
        except (ValueError, TypeError, KeyError) as e:
            if isinstance(e, TableFormatError):
                raise
            detail = "missing" if isinstance(e, KeyError) else f"{str(e)[:80]}"
            raise TableFormatError(f"{path}: its metadata is damaged ({field}: {detail})") from None
        if rules is not None and saved != rules:  # in the cache: another table under this one's name
            raise TableRulesError(f"{path} was built for rules {saved.tag()}, not {rules.tag()}")
        tensors = load_file(str(path))
        if set(tensors) != {"values"}:
            raise TableFormatError(f"{path}: holds {sorted(tensors)[:5]}, not one 'values' tensor (not a table)")
        values = tensors["values"].clone()  # a copy: the checked bytes are the used ones (not a map)
        if values_sha256(values) != meta.get("sha256"):
            raise TableFormatError(f"{path}: the values do not match their checksum (the file is damaged)")
        values = values.to(device)
        if values.shape != (N_MASKS, N_UPPER, 2):
            raise TableFormatError(f"{path}: values have shape {tuple(values.shape)}, expected {(N_MASKS, N_UPPER, 2)}")
        return cls(values, saved, seconds)


def check_rules(path: Path, rules: Rules) -> None:
    """Refuse (``TableRulesError``) a saved table built for other rules than ``rules``; any other
    fault of the file is left to the loader (a damaged table is solved again)."""
    try:
        OptimalTable.load(path, rules=rules)
    except TableRulesError:
        raise
    except (TableFormatError, OSError, SafetensorError):
        pass


Block = tuple[torch.Tensor, torch.Tensor, torch.Tensor, bool]


def layer_blocks(rules: Rules, filled: int, device: torch.device) -> list[Block]:
    """States with ``filled`` boxes filled: ``(masks (M,), uppers (M, R), flags (M, R), upper_irrelevant)``.

    A mask's upper sums are those its filled upper boxes can reach (all of them, as one, when no
    upper box is open: its future does not depend on them); masks with the same number R of
    (upper, flag) states and the same irrelevance are stacked into one block.
    """
    out_of_play = sum(1 << b for b in rules.boxes_out_of_play)
    in_play_upper = [b for b in rules.boxes if b < 6]
    bonus_flag = rules.yahtzee_bonus and YAHTZEE_BOX in rules.boxes
    by_part: dict[tuple[int, bool], list[int]] = {}
    for m in range(N_MASKS):
        if m & out_of_play == out_of_play and bin(m).count("1") == filled:
            by_part.setdefault((m & UPPER_MASK, bool(m >> YAHTZEE_BOX & 1)), []).append(m)
    stacked: dict[tuple[int, bool], list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]] = {}
    for (upper_part, has_yahtzee), masks in sorted(by_part.items()):
        filled_upper = [b for b in in_play_upper if upper_part >> b & 1]
        irrelevant = len(filled_upper) == len(in_play_upper)
        uppers = [0] if irrelevant else reachable_uppers(filled_upper)
        flags = [0, 1] if has_yahtzee and bonus_flag else [0]
        row_u = torch.tensor([u for u in uppers for _ in flags], device=device)
        row_f = torch.tensor([f for _ in uppers for f in flags], device=device)
        M, R = len(masks), len(row_u)
        block = (torch.tensor(masks, device=device), row_u.expand(M, R), row_f.expand(M, R))
        stacked.setdefault((R, irrelevant), []).append(block)
    out = []
    for (_, irrelevant), blocks in stacked.items():
        masks, uppers, flags = (torch.cat(parts) for parts in zip(*blocks, strict=True))
        out.append((masks, uppers, flags, irrelevant))
    return out


def flattened(blocks: list[Block]) -> list[Block]:
    """A layer's blocks as at most two, one state a row (``R = 1``): the states whose future depends
    on the upper sum, then those it does not. Each call of ``turn_start_values`` launches some
    500 kernels whatever its size, so on a GPU a layer in few large calls beats many small ones (a
    state's value is computed by the same formulas either way)."""
    out = []
    for irrelevant in (False, True):
        parts = [
            (m.repeat_interleave(u.shape[1]), u.reshape(-1, 1), f.reshape(-1, 1))
            for m, u, f, irr in blocks
            if irr == irrelevant
        ]
        if parts:
            masks, uppers, flags = (torch.cat(p) for p in zip(*parts, strict=True))
            out.append((masks, uppers, flags, irrelevant))
    return out


def _open_boxes(masks: torch.Tensor, rules: Rules) -> tuple[int, ...]:
    """The boxes open in at least one of ``masks`` (a CPU tensor): known before the work goes to a
    GPU, so that no step waits for the device to say which boxes it must try."""
    return tuple(b for b in rules.boxes if bool((((masks >> b) & 1) == 0).any()))


Chunk = tuple[torch.Tensor, torch.Tensor, torch.Tensor, bool, tuple[int, ...]]


def host_layout(rules: Rules, device: torch.device, chunk_states: int, flat: bool) -> list[tuple[int, list[Chunk]]]:
    """The backward layers' work, laid out on the host: ``(k, chunks)`` from the last turn back to
    the first, each chunk ``(masks, uppers, flags, upper_irrelevant, open boxes)`` already on
    ``device`` with at most ``chunk_states`` states (at least one mask). ``flat``: one state a row
    (``flattened``). The table and the score moments (``.moments``) solve the same layout."""
    cpu = torch.device("cpu")
    n_out = len(rules.boxes_out_of_play)
    layers = []
    for k in range(len(rules.boxes) - 1, -1, -1):
        blocks = layer_blocks(rules, n_out + k, cpu)
        chunks = []
        for masks, uppers, flags, irrelevant in flattened(blocks) if flat else blocks:
            step = max(1, chunk_states // uppers.shape[1])  # masks per batch
            for c in range(0, len(masks), step):
                m, u, f = masks[c : c + step], uppers[c : c + step], flags[c : c + step]
                chunks.append((m.to(device), u.to(device), f.to(device), irrelevant, _open_boxes(m, rules)))
        layers.append((k, chunks))
    return layers


def solve(
    rules: Rules | None = None,
    device: torch.device | str = "cpu",
    progress: bool | Callable[[int], None] = True,
    chunk_states: int | None = None,
    flat: bool | None = None,
) -> OptimalTable:
    """Build the whole table (float64) for ``rules`` on ``device``.

    ``chunk_states``: states solved per batch; by default small enough for the CPU's caches
    (8192) or large enough to fill a GPU (262144). ``flat``: solve each layer as one state a row
    (``flattened``: few large calls, what a GPU wants; by default on any device but the CPU,
    where the grouped form shares each mask's work between its upper sums and is faster).

    The work is laid out on the host first (states, chunks, the boxes each chunk must try) and
    sent to ``device`` before the first computation, so the GPU's queue never waits on the host.
    """
    rules = rules or Rules()
    device = torch.device(device)
    flat = device.type != "cpu" if flat is None else flat
    chunk = chunk_states or (8192 if device.type == "cpu" else 262_144)
    start = time.perf_counter()
    V = torch.zeros(N_MASKS, N_UPPER, 2, dtype=torch.float64, device=device)
    every_upper = torch.arange(N_UPPER, device=device).view(1, N_UPPER, 1)
    layers = host_layout(rules, device, chunk, flat)
    bar = None
    if progress is True:  # counted in states: the layers differ in size by orders of magnitude
        from ..progress import progress_bar

        states = sum(u.numel() for _, chunks in layers for _, u, _, _, _ in chunks)
        bar = progress_bar(states, f"solving {rules.tag()}", unit="state")
    for k, chunks in layers:
        for m, u, f, irrelevant, open_boxes in chunks:
            R = u.shape[1]
            vals = turn_start_values(m, u, f, V, rules, open_boxes).view(len(m), R)
            if irrelevant:  # no open upper box: the same value for every upper sum
                V[m.view(-1, 1, 1), every_upper, f.unsqueeze(1)] = vals.unsqueeze(1).expand(-1, N_UPPER, R)
            else:
                V[m.view(-1, 1), u, f] = vals
            if bar is not None:
                bar.update(vals.numel())
        if callable(progress):
            progress(k)
    if bar is not None:
        bar.close()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return OptimalTable(V, rules, time.perf_counter() - start)
