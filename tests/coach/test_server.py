"""serve: the JSON API plays a whole game (no browser needed); bad requests get clear errors."""

import json
import urllib.error
import urllib.request

import pytest
import torch

from yahtzee_lightning.coach.handler import hold_pattern
from yahtzee_lightning.game import Rules
from yahtzee_lightning.solver import TurnOracle, load_or_solve

SMALL = Rules(boxes=(0, 5, 8, 11, 12))  # the rules of the server fixture


def call(server, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + "api/" + path, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_api_plays_a_whole_game_and_prices_each_choice(server):
    oracle = TurnOracle(SMALL, load_or_solve(SMALL, progress=False))
    status, g = call(server, "POST", "new", {"seed": 4})
    assert status == 200 and g["card"] == [-1 if b in SMALL.boxes else 0 for b in range(13)]
    lines, turns, regrets = [], 0, {"you": 0.0, "greedy": 0.0}
    while not g["over"]:
        before = g
        # The best advice at every step: keep (first hold the best keep's dice), then score the best box.
        best = g["advice"][0]
        assert best["value"] == max(c["value"] for c in g["advice"])
        kv, bv = oracle.action_values(torch.tensor([g["dice"]]), torch.tensor([g["roll"]]), torch.tensor([g["card"]]))
        if g["roll"] < 2:
            assert best["kind"] == "keep" and best["value"] == pytest.approx(float(kv.max()), abs=1e-9)
            hold = [i for i in range(5) if (best["action"] >> i) & 1]
            status, g = call(server, "POST", f"game/{g['id']}/keep", {"hold": hold})
        else:
            assert best["kind"] == "box" and best["value"] == pytest.approx(float(bv.max()), abs=1e-9)
            status, g = call(server, "POST", f"game/{g['id']}/score", {"box": best["label"]})
            turns += 1
        assert status == 200 and g["lines"][0].startswith("you: ") and g["lines"][0].endswith("optimal")
        lines += g["lines"]
        assert [d["who"] for d in g["decisions"]] == [line.split(":")[0] for line in g["lines"]]
        for d in g["decisions"]:
            regrets[d["who"]] += d["regret"]
        assert g["id"] == before["id"]
    assert turns == SMALL.n_turns and g["regret"] == pytest.approx(0.0, abs=1e-9)  # the optimum's own choices
    agent = g["agent"]
    assert regrets == pytest.approx({"you": g["regret"], "greedy": agent["regret"]}, abs=1e-9)
    assert agent["name"] == "greedy" and all(agent["card"][b] >= 0 for b in SMALL.boxes)
    assert sum(1 for line in lines if line.startswith("greedy: ")) == 3 * SMALL.n_turns
    assert g["summary"][-1].startswith(f"{g['score']} to {agent['score']}")
    assert f"greedy's total regret: {agent['regret']:.2f} expected points lost" in g["summary"]
    # The game stays on the server: reading it again gives the same final state.
    assert call(server, "GET", f"game/{g['id']}")[1]["card"] == g["card"]
    assert call(server, "POST", f"game/{g['id']}/keep", {"hold": []}) == (400, {"error": "the game is over"})


def test_bad_requests_get_a_clear_error(server):
    _, g = call(server, "POST", "new", {"seed": 1})
    gid = g["id"]
    cases = [
        ("POST", "new", {"seed": -1}, 400, "'seed' must be an int in 0..2**32-1"),
        ("POST", f"game/{gid}/keep", {"hold": [5]}, 400, "positions 0..4"),
        ("POST", f"game/{gid}/keep", {"hold": "66"}, 400, "list of die positions"),
        ("POST", f"game/{gid}/score", {"box": "f"}, 400, "ambiguous"),
        ("POST", f"game/{gid}/score", {"box": "twos"}, 400, "twos"),  # out of play: filled with 0
        ("POST", f"game/{gid}/score", {}, 400, "'box' must be a box name"),
        ("GET", "game/nothing", None, 404, "no game 'nothing'"),
        ("POST", f"game/{gid}/fly", {}, 404, "no API route"),
    ]
    for method, path, body, code, why in cases:
        status, out = call(server, method, path, body)
        assert status == code and why in out["error"], (path, body, out)
    # None of that changed the game.
    assert call(server, "GET", f"game/{gid}")[1]["dice"] == g["dice"]
    req = urllib.request.Request(server.url + "api/new", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 400 and "not JSON" in json.loads(e.value.read())["error"]


def test_the_page_is_served_and_only_on_localhost(server):
    assert server.server_address[0] == "127.0.0.1"
    with urllib.request.urlopen(server.url, timeout=30) as r:
        page = r.read().decode()
    assert r.headers["Content-Type"].startswith("text/html") and 'id="dice"' in page and "/api/" in page


def test_hold_pattern():
    assert hold_pattern([0, 3]) == 0b01001 and hold_pattern([]) == 0
    for bad in ([0, 0], [True], None, [1.5]):
        with pytest.raises(ValueError):
            hold_pattern(bad)
