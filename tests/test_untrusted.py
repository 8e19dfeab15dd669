"""What comes from a file, a flag or a server: bounded, escaped, refused in one line naming it."""

import json
import shutil
from pathlib import Path

import pytest

from yahtzee_lightning.cli import main
from yahtzee_lightning.hub import AgentFormatError, YahtzeeAgent
from yahtzee_lightning.untrusted import (
    UntrustedError,
    check_commit_id,
    check_count,
    check_relative_path,
    check_size,
    json_depth,
    load_yaml,
    parse_json,
    printable,
    printable_tree,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "distilled-128x2"


def test_json_is_bounded_in_nesting_before_it_is_parsed():
    deep = "[" * 200_000 + "]" * 200_000  # a parser recurses: this overflowed it (RecursionError)
    with pytest.raises(UntrustedError, match=r"^config\.json: JSON nested deeper than 64 levels$"):
        parse_json(deep, "config.json")
    assert parse_json('{"a": "[[[[[[[[", "b": [1, {"c": 2}]}', "x") == {"a": "[[[[[[[[", "b": [1, {"c": 2}]}
    with pytest.raises(UntrustedError, match=r"^x: not JSON \("):
        parse_json("{nope", "x")


def _nesting(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_nesting, value), default=0)
    return 0


def test_the_depth_counted_before_parsing_is_the_parsed_values_nesting():
    import random

    rng = random.Random(0)
    tricky = ['"', "\\", "[", "]", "{", "}", '\\"', "a", "\u005b"]

    def value(level):
        kind = rng.choice("lds" if level < 8 else "s")
        if kind == "s":
            return "".join(rng.choice(tricky) for _ in range(rng.randrange(6)))
        if kind == "l":
            return [value(level + 1) for _ in range(rng.randrange(4))]
        return {value(9): value(level + 1) for _ in range(rng.randrange(4))}

    for _ in range(300):
        v = value(0)
        text = json.dumps(v, ensure_ascii=rng.random() < 0.5)
        assert json_depth(text) == _nesting(v), text
    # 64 levels are read, 65 refused; the count stops once past the limit.
    assert parse_json("[" * 64 + "]" * 64, "x") is not None
    with pytest.raises(UntrustedError, match="deeper than 64"):
        parse_json("[" * 65 + "]" * 65, "x")
    assert json_depth("[" * 1000 + "]" * 1000, limit=64) == 65


def test_text_from_outside_is_shown_with_its_control_characters_escaped():
    title = "agent\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x1b[31m\u202eevil"
    shown = printable(title)
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert shown == "agent\\x1b]0;pwned\\x07\\x1b]52;c;ZXZpbA==\\x07\\x1b[31m\\u202eevil"
    assert printable("two\nlines\tand a tab", keep_newlines=True) == "two\nlines\tand a tab"
    tree = printable_tree({"name": title, "b": [1, {"\x1bk": "v"}], "a": None})
    assert list(tree) == ["name", "b", "a"] and tree["b"][1] == {"\\x1bk": "v"} and tree["name"] == shown


@pytest.mark.parametrize("name", ["../../evil.yaml", "/abs.yaml", "sub/../x", "a\\b", "", "./x", "c:/x", "a\x1bb"])
def test_a_file_name_from_a_server_must_be_a_plain_relative_path(name):
    with pytest.raises(UntrustedError, match="is not a plain relative path"):
        check_relative_path(name, "alice/tiny")
    assert check_relative_path("sub/model.safetensors", "alice/tiny") == "sub/model.safetensors"


def test_a_commit_id_from_a_server_must_be_forty_hex_digits():
    assert check_commit_id("a" * 40, "x") == "a" * 40
    for bad in ("../../x/config", "A" * 40, "a" * 39, None, 7):
        with pytest.raises(UntrustedError, match="not 40 hex digits"):
            check_commit_id(bad, "alice/tiny")


def test_sizes_and_counts_have_one_bound_each():
    assert check_size("hidden", 4096) == 4096
    for name, bad in (("hidden", 20_000), ("layers", 0), ("d_h", True), ("n_layers", 2.0)):
        with pytest.raises(UntrustedError, match=rf"^{name} must be an integer in"):
            check_size(name, bad)
    assert check_count("seed", 2**32 - 1) == 2**32 - 1 and check_count("total_games", 1e6) == 1_000_000
    for name, bad in (("seed", 10**20), ("seed", -5), ("ensemble", 100_000), ("max_epochs", -3), ("total_games", 1e18)):
        with pytest.raises(UntrustedError, match=rf"^{name} must be an integer in .*\(.+\), got"):
            check_count(name, bad)


@pytest.mark.parametrize(
    "flag",
    [
        "--model.init_args.ensemble=100000",
        "--seed_everything=-5",
        "--seed_everything=4294967296",
        "--trainer.max_epochs=-3",
    ],
)
def test_fit_refuses_an_unbounded_flag_in_one_line_before_anything_is_built(flag, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["fit", "--config", str(ROOT / "conf" / "a2c.yaml"), "--model.init_args.d_h=8", flag])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]  # (Lightning's "Seed set to 0" may precede)
    assert exit_.value.code == 2 and len(errors) == 1, err
    assert "must be an integer in" in errors[0] and "Traceback" not in err
    assert not list(tmp_path.rglob("*.ckpt"))  # nothing trained


def _copy_agent(tmp_path: Path) -> Path:
    folder = tmp_path / "agent"
    shutil.copytree(SHIPPED, folder)
    return folder


def _edit_config(folder: Path, edit) -> None:
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))


def test_an_agent_config_of_the_wrong_shape_or_depth_is_refused_in_one_line(tmp_path):
    folder = _copy_agent(tmp_path)
    _edit_config(folder, lambda c: c.update(training=[1, 2]))
    with pytest.raises(AgentFormatError, match=r"config\.json: training must be a JSON object, got list"):
        YahtzeeAgent.load(folder)
    (folder / "config.json").write_text('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(AgentFormatError, match="JSON nested deeper than 64 levels"):
        YahtzeeAgent.load(folder)


def test_a_side_network_too_large_to_build_is_refused_before_anything_is_allocated(tmp_path):
    folder = _copy_agent(tmp_path)
    from yahtzee_lightning.game import Rules
    from yahtzee_lightning.hub.layout import VALUE_NAME

    entry = {"file": VALUE_NAME, "network": {"rules": Rules().to_dict(), "hidden": 20_000, "layers": 6}}
    (folder / VALUE_NAME).write_bytes(b"")
    _edit_config(folder, lambda c: c.update(turn_value=entry))
    with pytest.raises(AgentFormatError, match=r"turn_value network does not build a TurnValueNet \(hidden must be"):
        YahtzeeAgent.load(folder)


def test_a_name_with_terminal_escapes_is_printed_escaped_by_evaluate(tmp_path, capsys):
    folder = _copy_agent(tmp_path)
    _edit_config(folder, lambda c: c["training"].update(name="evil\x1b]0;pwned\x07\x1b[31m"))
    agent = YahtzeeAgent.load(folder)
    assert agent.training["name"] == "evil\\x1b]0;pwned\\x07\\x1b[31m"
    assert main(["evaluate", "--agent", str(folder), "--games", "20"]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err and "\x07" not in out.out + out.err


def _laughs(levels: int = 9) -> str:
    """A "billion laughs" YAML: 9 aliases of the level below at each of ``levels`` levels (9**9 values)."""
    names = [chr(97 + i) for i in range(levels)]
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip(names, names[1:], strict=False)]
    return "\n".join(lines) + "\n"


TAG = "model: !!python/object/apply:os.system ['touch PWNED']\n"


@pytest.mark.parametrize(
    "verb",
    [
        ["fit", "--config", "{}"],
        ["study", "check", "{}"],
        ["win-value", "--config", "{}", "--agent", str(SHIPPED)],
        ["turn-value", "--config", "{}", "--agent", str(SHIPPED)],
    ],
    ids=["fit", "study", "win-value", "turn-value"],
)
@pytest.mark.parametrize("text", [_laughs(), TAG, "a: &a [*a]\n"], ids=["aliases", "tag", "self-alias"])
def test_every_verb_refuses_yaml_aliases_and_tags_in_one_line(tmp_path, capsys, monkeypatch, verb, text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_text(text)
    argv = [a.replace("{}", str(tmp_path / "bad.yaml")) for a in verb]
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    assert code not in (0, None)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.yaml" in err[0] and "Traceback" not in err[0], err
    assert ("aliases expand" in err[0]) or ("!!python/object/apply:os.system" in err[0]) or ("itself" in err[0])
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("loader", ["C", "Python"])
def test_yaml_is_checked_on_its_node_graph_before_anything_is_built(loader, monkeypatch):
    import yaml

    if loader == "Python":  # a PyYAML built without libyaml: the same checks, in Python
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    else:
        assert hasattr(yaml, "CSafeLoader"), "PyYAML's wheel carries libyaml"
    assert load_yaml("a: [1, {b: x}]\nc: 2.5\nd: yes\n", "x.yaml") == {"a": [1, {"b": "x"}], "c": 2.5, "d": True}
    with pytest.raises(UntrustedError, match=r"^x\.yaml: YAML aliases expand to more than 100,000 values"):
        load_yaml(_laughs(6), "x.yaml")  # 9**6 = 531,441 values from 0.4 KB
    assert load_yaml(_laughs(4), "x.yaml")["d"][0][0][0] == ["lol"] * 9  # 6,561: a plain use of aliases
    with pytest.raises(UntrustedError, match=r"^x\.yaml: the YAML tag !!python/name:os\.system at line 1"):
        load_yaml("a: !!python/name:os.system ''\n", "x.yaml")
    with pytest.raises(UntrustedError, match=r"^x\.yaml: does not parse as YAML \(.* at line 2\)$"):
        load_yaml("a: [1,\n", "x.yaml")


def test_a_huge_name_or_card_in_an_agent_folder_is_cut_for_every_verb(tmp_path, capsys):
    folder = _copy_agent(tmp_path)
    _edit_config(folder, lambda c: c["training"].update(name="n" * (20 << 20), **{"k" * 5000: "v"}))
    (folder / "README.md").write_text((folder / "README.md").read_text() + "x" * (3 << 20))
    agent = YahtzeeAgent.load(folder)
    assert agent.training["name"] == "n" * 1000 + f"... ({(20 << 20) - 1000:,} more characters cut)"
    assert max(map(len, agent.training)) < 1100 and len(agent.card) < (1 << 20) + 100
    assert main(["evaluate", "--agent", str(folder), "--games", "20"]) == 0
    out = capsys.readouterr()
    assert len(out.out) + len(out.err) < 20_000  # was 1.28 GB printed
