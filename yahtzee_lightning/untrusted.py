"""What comes from a file, a flag or a server, checked before it is used: sizes, JSON, text and paths.

One place for the bounds, so that no number read from a ``config.json``, a checkpoint, a study file,
a flag or a hub's answer can make the program allocate gigabytes, recurse without end, write
outside its target or drive the terminal. Each check raises ``UntrustedError`` (a
``ValueError``: the verbs report it in one line) naming what was wrong.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any


class UntrustedError(ValueError):
    """Data from outside (a file, a flag, a server) that is refused: the message names it."""


#: Network sizes a file or a flag may ask for: wide enough for any study, small enough that an
#: untrusted ``config.json`` cannot make the loader allocate gigabytes before its weights are checked.
#: The policy network's keys and the side networks' (turn-start value, win value) alike.
SIZE_BOUNDS = {
    "d_h": (1, 4096),
    "n_layers": (1, 16),
    "head_hidden": (1, 4096),
    "d_emb": (1, 256),
    "hidden": (1, 4096),
    "layers": (1, 16),
}
#: Counts a flag or a config may set, with the reason for each bound.
COUNT_BOUNDS = {
    "ensemble": (1, 1024, "members trained in one process"),
    "total_games": (1, 10**11, "games in one run (39 steps each; a lifetime of CPU beyond it)"),
    "seed": (0, 2**32 - 1, "a seed torch and numpy both accept"),
    "max_epochs": (-1, 10**6, "evaluation intervals; -1: as many as the budget needs"),
}
MAX_JSON_DEPTH = 64
MAX_JSON_BYTES = 64 << 20


def check_size(name: str, value: Any, bounds: dict[str, tuple[int, int]] = SIZE_BOUNDS) -> int:
    """``value`` as a network size within its bounds, else one line naming it."""
    low, high = bounds[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UntrustedError(f"{name} must be an integer in {low}..{high}, got {printable(repr(value))}")
    return value


def check_count(name: str, value: Any) -> int:
    """``value`` as one of ``COUNT_BOUNDS``' counts, else one line with the bound and its reason."""
    low, high, why = COUNT_BOUNDS[name]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UntrustedError(f"{name} must be an integer in {low:,}..{high:,} ({why}), got {printable(repr(value))}")
    return value


# A JSON string, written as "unrolled" alternatives (a run of plain characters, then an escape and
# another run): 20 times faster than one alternative a character on a 20 MB name.
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def json_depth(text: str | bytes, limit: int | None = None) -> int:
    """How deeply a JSON text's arrays and objects nest, counted before parsing (a parser recurses:
    200,000 levels overflow it). With ``limit``, counting stops at ``limit + 1``: enough to refuse."""
    raw = text.encode() if isinstance(text, str) else text
    depth = deepest = 0
    # Only the brackets outside strings are walked in Python (the rest is dropped in C).
    for c in _STRINGS.sub(b"", raw).translate(None, _NOT_BRACKETS):
        if c in b"[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if limit is not None and deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def parse_json(text: str | bytes, where: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON from outside: bounded in size and nesting (checked before parsing), refused in one line
    naming ``where``."""
    if len(text) > MAX_JSON_BYTES:
        raise UntrustedError(f"{where}: {len(text):,} bytes of JSON, more than the {MAX_JSON_BYTES:,} read")
    if json_depth(text, limit=max_depth) > max_depth:
        raise UntrustedError(f"{where}: JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise UntrustedError(f"{where}: not JSON ({printable(str(e))})") from None


def read_json(path: str | Path, what: str | None = None) -> Any:
    """A JSON file from outside (``what`` names it; default: its path): bounded as ``parse_json``.
    ``OSError`` passes through (a missing file is the caller's to word)."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise UntrustedError(f"{what or path}: {size:,} bytes of JSON, more than the {MAX_JSON_BYTES:,} read")
    return parse_json(path.read_bytes(), str(what or path))


#: Control characters (C0 but tab and newline, DEL, C1), line and paragraph separators, the
#: bidirectional overrides, and lone surrogates (a file name's bytes that are not UTF-8).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: Any, keep_newlines: bool = False) -> str:
    """``text`` with control characters escaped (``\\x1b``, ``\\u202e`` ...): a name or a card from
    an agent folder or a hub cannot set the terminal's title or colours, write the clipboard
    (OSC 52) or reorder what is shown. Tabs stay; newlines stay where ``keep_newlines``."""
    text = str(text)

    def escape(m: re.Match[str]) -> str:
        c = m.group()
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"

    if keep_newlines:
        return "\n".join(_CONTROL.sub(escape, line) for line in text.split("\n"))
    return _CONTROL.sub(escape, text.replace("\n", "\\n"))


#: The longest string (a name, a setting) kept from an agent folder or a server's JSON: longer ones
#: are cut, saying how much, so that a 20 MB ``training.name`` is not printed, copied and held.
MAX_TEXT_CHARS = 1000
#: A name as a table's column or a title shows it (an agent's ``training.name``, a player's).
MAX_NAME_CHARS = 80
#: The most of an agent's card (``README.md``) read and shown.
MAX_CARD_CHARS = 1 << 20


def shortened(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more characters cut)"


def read_text_capped(path: str | Path, limit: int = MAX_CARD_CHARS) -> str:
    """A text file from outside, at most ``limit`` characters of it read (``shortened`` beyond);
    undecodable bytes replaced."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read(limit + 1)
        more = len(f.read(1 << 20)) if len(text) > limit else 0  # a taste of the rest: "at least"
    return text if len(text) <= limit else f"{text[:limit]}\n... (at least {more + 1:,} more characters cut)"


def printable_tree(value: Any, limit: int = MAX_TEXT_CHARS) -> Any:
    """Every string in a JSON value (keys too) made ``printable`` and ``shortened`` to
    ``limit`` characters (iteratively)."""

    def clean(text: str) -> str:
        return printable(shortened(text, limit))

    if isinstance(value, str):
        return clean(value)
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [None]
    stack = [(value, root, 0)]
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, dict):  # keys in their order, values filled as the stack reaches them
            keys = [clean(k) if isinstance(k, str) else k for k in item]
            new: Any = dict.fromkeys(keys)
            stack.extend((v, new, k) for k, v in zip(keys, item.values(), strict=True))
        elif isinstance(item, list):
            new = [None] * len(item)
            for i, v in enumerate(item):
                stack.append((v, new, i))
        else:
            new = clean(item) if isinstance(item, str) else item
        parent[key] = new
    return root[0]


COMMIT_ID = re.compile(r"[0-9a-f]{40}")


def check_commit_id(sha: Any, where: str) -> str:
    """A commit id from a server, before it is used in a path: 40 lowercase hex digits."""
    if not isinstance(sha, str) or not COMMIT_ID.fullmatch(sha):
        raise UntrustedError(
            f"{where}: the hub answered the commit id {printable(repr(sha))}, not 40 hex digits; "
            "refusing to use it (a misbehaving mirror or HF_ENDPOINT?)"
        )
    return sha


def check_relative_path(name: Any, where: str) -> str:
    """A file name from a server or a file, before it is used in a path: relative, inside its folder."""
    ok = isinstance(name, str) and name and not name.startswith(("/", "\\")) and "\\" not in name
    parts = name.split("/") if ok else []
    if not ok or any(p in ("", ".", "..") for p in parts) or _CONTROL.search(name) or ":" in parts[0]:
        raise UntrustedError(
            f"{where}: the file name {printable(repr(name))} is not a plain relative path; refusing to write it"
        )
    return name


#: YAML read from a file or a flag (a recipe, a study, an agent's training YAML): at most this many
#: bytes, and at most this many nodes once its aliases are expanded (a 1 KB "billion laughs" file
#: names 10**9 of them: refused before anything walks it).
MAX_YAML_BYTES = 8 << 20
MAX_YAML_NODES = 100_000
#: The YAML tags a plain config uses (``yaml.safe_load``'s): any other (``!!python/...``) is refused.
_YAML_TAGS = {f"tag:yaml.org,2002:{t}" for t in "str int float bool null seq map timestamp binary merge set".split()}


def check_yaml(text: str, where: str) -> None:
    """Refuse, in one line naming ``where``, a YAML text that is too long, does not parse, carries a
    tag other than plain data's, or whose aliases expand past ``MAX_YAML_NODES`` nodes: checked
    on the node graph, before anything is built from it."""
    import yaml

    if len(text) > MAX_YAML_BYTES:
        raise UntrustedError(f"{where}: {len(text):,} bytes of YAML, more than the {MAX_YAML_BYTES:,} read")
    try:
        root = yaml.compose(text, Loader=_safe_loader())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UntrustedError(f"{where}: does not parse as YAML ({printable(problem)}{at})") from None
    if root is None:
        return
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:  # post-order over the graph, each shared (aliased) node counted once per use
        node, done = stack.pop()
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
        children = children if isinstance(node, yaml.CollectionNode) else []
        if done:
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            open_.discard(id(node))
            if sizes[id(node)] > MAX_YAML_NODES:
                raise UntrustedError(
                    f"{where}: YAML aliases expand to more than {MAX_YAML_NODES:,} values (a 'billion laughs' "
                    "file?); refused before reading further"
                )
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_:
            raise UntrustedError(f"{where}: a YAML alias that contains itself (line {node.start_mark.line + 1})")
        if node.tag not in _YAML_TAGS:
            raise UntrustedError(
                f"{where}: the YAML tag {printable(node.tag.replace('tag:yaml.org,2002:', '!!'))} at line "
                f"{node.start_mark.line + 1} is not plain data; refused (nothing of it was run)"
            )
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children)


def _safe_loader() -> type:
    """PyYAML's safe loader in C (libyaml, in PyYAML's wheels) where it is there: the same plain data, a
    hundred times faster on a long value (a 7 MB string: 8.4 s in Python); else the Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, where: str) -> Any:
    """YAML from outside as plain data, checked first (``check_yaml``): one line naming ``where``."""
    import yaml

    check_yaml(text, where)
    try:
        return yaml.load(text, Loader=_safe_loader())  # a safe loader: plain data only
    except (yaml.YAMLError, RecursionError) as e:
        raise UntrustedError(f"{where}: does not parse as YAML ({printable(str(e).splitlines()[0])})") from None


def read_yaml(path: str | Path, what: str | None = None) -> Any:
    """A YAML file from outside (``what`` names it; default: its path), bounded as ``load_yaml``.
    ``OSError`` passes through."""
    path = Path(path)
    if path.stat().st_size > MAX_YAML_BYTES:
        raise UntrustedError(f"{what or path}: more than the {MAX_YAML_BYTES:,} bytes of YAML read")
    return load_yaml(path.read_text(encoding="utf-8"), str(what or path))
