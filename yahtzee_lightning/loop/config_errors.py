"""A bad ``fit`` argument or config worded in one line: jsonargparse's report (a usage, then every
Union branch it tried) becomes the key, the value and what it accepts, or the nearest known keys."""

from __future__ import annotations

import difflib
import re
from typing import Any


def parse_error(message: str, options: list[str] | None = None) -> str:
    """jsonargparse's report of a bad argument (usage, then every Union branch tried) as one line,
    for ``fit`` and for a study's check of its configs alike.

    An unknown key names the nearest keys its class accepts (a model's) or the parser's
    ``options`` (``trainer.*``, ...); an ill-typed value names its key, the value and the types
    accepted; a class path that does not import names it; anything else keeps jsonargparse's first
    and innermost lines.
    """
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    unknown = re.search(r"Option '([^']+)' is not accepted", message)
    owner = re.findall(r"class_path '([\w.]+)'", message)
    if unknown and owner:
        return unknown_key(unknown[1], owner[-1], _class_keys(owner[-1]))
    unrecognized = re.search(r"nrecognized arguments: --([^\s=]+)|does not accept option '([^']+)'", message)
    if unrecognized and options:  # on the command line, or in a YAML (a dict: "Group 'trainer' does not ...")
        in_group = re.search(r"Group '([\w.]+)' does not accept", message)
        key = (f"{in_group[1]}." if in_group else "") + (unrecognized[1] or unrecognized[2])
        group = [o for o in options if o.split(".")[0] == key.split(".")[0]]  # trainer.max_epoch: trainer.*
        return unknown_key(key, f"--{key.split('.')[0]}" if group else "fit", group or options)
    keys = re.findall(r'Parser key "([^"]+)"', message)
    if len(keys) > 1:  # an init argument of the wrong type: the innermost report, its key, value and types
        inner = [line.strip() for line in message.rsplit(f'Parser key "{keys[-1]}":', 1)[1].splitlines()]
        given = next((line.split(":", 1)[1].strip() for line in inner if line.startswith("Given value:")), None)
        subtypes = next((line.split(":", 1)[1].strip() for line in inner if line.startswith("Subtypes:")), None)
        if given is not None and subtypes is not None:
            return f"{keys[-1]}: {given!r} is not a valid value (it must be one of {_type_names(subtypes)})"
        expected = re.match(r"Expected an? (.+?)\. Got value: (.*)", next((x for x in inner if x), ""))
        if expected:
            return f"{keys[-1]}: {expected[2]!r} is not a valid value (it must be {_type_names(expected[1])})"
    for i, line in enumerate(lines):  # a class path that does not import, or a class it cannot be
        if "Problem with given class_path" in line:
            detail = []
            for more in lines[i + 1 :]:
                if more.startswith(("- ", "Given value", "Subtypes")):
                    break
                detail.append(more)
            return ": ".join([line.lstrip("- ").rstrip(":"), *([" ".join(detail)] if detail else [])])
    rest = [
        x
        for x in lines[1:]
        if not x.startswith(("Given value", "Subtypes", "Errors", "- Expected a <class 'NoneType'>"))
    ]
    return " ".join(lines[:1] + rest[-1:])


def unknown_key(key: str, owner: str, known: list[str]) -> str:
    """An unknown key in one line: the nearest keys ``owner`` accepts, or all of them."""
    near = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else f"; {owner} accepts: {', '.join(known)}"
    return f"unknown key {key!r} for {owner}{hint}"


def _options(parser: Any) -> list[str]:
    """A parser's long options without their dashes (``trainer.max_epochs``, ``ckpt_path``, ...)."""
    return [s[2:] for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"]


def _type_names(types: str) -> str:
    """``[<class 'int'>, typing.Any]`` as ``int, Any``."""
    return re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", types).replace("typing.", "").strip("[]")


def _class_keys(class_path: str) -> list[str]:
    """The init arguments jsonargparse accepts for a class (``**kwargs`` followed), in its order."""
    from jsonargparse import ArgumentParser
    from jsonargparse._util import import_object

    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(import_object(class_path), "m")
    return [a.dest[2:] for a in parser._actions if a.dest.startswith("m.")]
