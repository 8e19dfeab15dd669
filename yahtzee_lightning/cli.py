"""The one console script, ``yahtzee-lightning VERB ...``.

Every verb is a module of ``yahtzee_lightning.commands`` (the verbs' one room, on top of the
library: nothing below imports it), imported only when called, so ``solve`` does not pay for
Lightning and ``demo`` does not pay for the solver. ``fit``/``validate`` go through LightningCLI;
the other verbs are small argparse programs with a ``main(argv) -> int``.
"""

from __future__ import annotations

import importlib
import sys

VERBS: dict[str, tuple[str, str]] = {
    "demo": ("yahtzee_lightning.commands.demo:main", "play a few games with random legal actions and print the cards"),
    "solve": ("yahtzee_lightning.commands.solve:main", "build (or load) the exact optimal value table"),
    "evaluate": ("yahtzee_lightning.commands.evaluate:main", "evaluate a player side by side with the optimum"),
    "fit": ("yahtzee_lightning.commands.fit:main", "train an agent (LightningCLI)"),
    "validate": ("yahtzee_lightning.commands.fit:main", "validate an agent (LightningCLI)"),
    "agents": (
        "yahtzee_lightning.commands.agents:main",
        "list the agents shipped with the package (by name from any folder), with their scores",
    ),
    "export": (
        "yahtzee_lightning.commands.hub:export_main",
        "turn a Lightning checkpoint into a shareable agent folder",
    ),
    "push": ("yahtzee_lightning.commands.hub:push_main", "upload an agent folder to the Hugging Face Hub"),
    "pull": ("yahtzee_lightning.commands.hub:pull_main", "download an agent from the Hugging Face Hub into a folder"),
    "turn-value": (
        "yahtzee_lightning.commands.turn_value:main",
        "learn an agent's turn-start value from its own games (for lookahead:AGENT)",
    ),
    "expert-iteration": (
        "yahtzee_lightning.commands.expert_iteration:main",
        "expert iteration from nothing in one resumable command: self-play, its value, search-taught stages",
    ),
    "win-value": (
        "yahtzee_lightning.commands.win_value:main",
        "learn an agent's chance of winning a match from its own play (for winlookahead:AGENT)",
    ),
    "bench": ("yahtzee_lightning.commands.bench:main", "run a benchmark and print its table"),
    "study": (
        "yahtzee_lightning.commands.study:main",
        "run a study's ablations on Ray Tune and write its report (the study extra)",
    ),
    "play": (
        "yahtzee_lightning.commands.coach:play_main",
        "play a game in the terminal; the optimum judges each choice",
    ),
    "advise": ("yahtzee_lightning.commands.coach:advise_main", "rank the choices of a position by expected points"),
    "serve": ("yahtzee_lightning.commands.coach:serve_main", "play the coached game in a browser (local page)"),
}


def _usage() -> str:
    lines = ["usage: yahtzee-lightning [--version] VERB [options]", "", "verbs:"]
    lines += [f"  {verb:<10} {doc}" for verb, (_, doc) in VERBS.items()]
    lines += ["", "yahtzee-lightning VERB --help describes a verb's options; fit --model.help CLASS an algorithm's."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        from ._version import __version__

        print(f"yahtzee-lightning {__version__}")
        return 0
    verb, rest = argv[0], argv[1:]
    if verb not in VERBS:
        print(f"yahtzee-lightning: unknown verb {verb!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    from .machine import apply_thread_rule
    from .progress import line_interval

    try:  # before torch is imported: one rule for every verb's threads (docs/guide.md, "Threads")
        apply_thread_rule()
        line_interval()  # $YAHTZEE_LIGHTNING_PROGRESS_SECONDS, before any long work starts
    except ValueError as e:
        print(f"yahtzee-lightning: {e}", file=sys.stderr)
        return 2
    target = VERBS[verb][0]
    module_name, func_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            print(f"yahtzee-lightning: verb {verb!r} is not available in this version", file=sys.stderr)
            return 2
        if (line := failure_line(e)) is None:
            raise
        print(f"yahtzee-lightning {verb}: error: {line}", file=sys.stderr)
        return 2
    func = getattr(module, func_name)
    try:
        if verb in ("fit", "validate"):
            return int(func([verb, *rest]) or 0)
        return int(func(rest) or 0)
    except Exception as e:  # what a verb did not word itself: one line by what went wrong, else a traceback
        if isinstance(e, BrokenPipeError) and _stdout_closed():  # else a remote's connection, worded below
            return _SIGPIPE_EXIT
        line = failure_line(e)
        if line is None:
            raise
        print(f"yahtzee-lightning {verb}: error: {line}", file=sys.stderr)
        return 2 if isinstance(e, (ValueError, ModuleNotFoundError)) else 1


#: A shell's status for a writer whose reader went away (128 + SIGPIPE), as ``yes | head`` gives.
_SIGPIPE_EXIT = 141


def _stdout_closed() -> bool:
    """Whether our standard output's reader has gone (``| head`` read what it wanted): nothing failed,
    so the verb stops quietly. Asked of the pipe itself (its write end reports an error once no reader
    is left), not of Python's buffer, which the failed write already emptied. Then stdout points at the
    null device, so that Python's own flush at exit finds no broken pipe to print about either."""
    import os
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        gone = any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # no poll here, or a stdout without a descriptor
        return False
    if gone:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return gone


#: ``errno`` names of a full disk or a file-size limit, and of a refused permission.
_NO_SPACE = ("ENOSPC", "EFBIG", "EDQUOT")
_NO_PERMISSION = ("EACCES", "EPERM", "EROFS")


def failure_line(error: BaseException) -> str | None:
    """One line for an error of the kinds bad input or a bad environment cause, by what went wrong:
    bad data (a ``ValueError``: a damaged or hostile file, text that is not UTF-8, a safetensors file
    that does not parse), no space, no permission, a file or a remote that is missing or misbehaves
    (an ``OSError``: a hub's HTTP errors are ones), data nested past any sense (``RecursionError``),
    memory, a module of an optional extra that is not installed. None for anything else: a fault of
    ours, which should show its traceback."""
    import errno
    import re

    from .untrusted import printable

    if isinstance(error, ModuleNotFoundError):  # an optional extra's module: which extra to install
        from .extras import MissingExtra, extra_of, missing_line

        if isinstance(error, MissingExtra):
            return str(error)
        extra = extra_of(error.name)
        return missing_line(extra, error.name) if extra else None
    name = type(error).__name__
    detail = printable((str(error).strip().splitlines() or [name])[0])
    if isinstance(error, OSError) and not isinstance(error, (ConnectionError, TimeoutError)) and error.errno:
        code = errno.errorcode.get(error.errno, "")
        where = printable(error.filename) if error.filename else "a file"
        if code in _NO_SPACE:
            return f"no space left (or a file-size limit) writing {where}; nothing replaced: make room and run again"
        if code in _NO_PERMISSION:
            return f"no permission for {where} ({error.strerror})"
        return f"{where}: {error.strerror or detail}"
    if isinstance(error, OSError):  # a connection, a timeout, a remote's HTTP error
        return f"a remote or a connection failed ({name}: {detail})"
    if isinstance(error, UnicodeError):
        return f"text or a file name that is not UTF-8 ({detail})"
    if isinstance(error, ValueError):  # our own errors name the file or the flag; a library's says what
        return detail
    if type(error).__module__.startswith("safetensors"):  # it wraps the system's errors in its own
        code = re.search(r"os error (\d+)", detail)
        if code and errno.errorcode.get(int(code[1]), "") in _NO_SPACE:
            return "no space left (or a file-size limit) writing a safetensors file; nothing replaced: make room"
        return f"a damaged safetensors file ({detail})"
    if isinstance(error, RecursionError):
        return f"data nested too deeply to read ({detail})"
    if isinstance(error, MemoryError):
        return "out of memory: a size from a file or a flag is too large for this machine"
    return None


if __name__ == "__main__":
    sys.exit(main())
