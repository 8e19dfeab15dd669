"""``yahtzee-lightning serve``: the coached game as a local web page.

Standard library only: a threaded ``http.server`` bound to 127.0.0.1 serves one static page
(``static/index.html``, shipped with the package) and a small JSON API over :class:`CoachedGame`,
so the page plays and judges exactly as the terminal game does. Games live in the server's
memory, by id; the page holds no game state of its own.

API (JSON in, JSON out; a bad request is ``400 {"error": "..."}``):

* ``POST /api/new`` ``{"seed": 7}`` (seed optional) -> a new game's view
* ``GET /api/game/ID`` -> the game's view
* ``POST /api/game/ID/keep`` ``{"hold": [0, 3]}`` (positions 0..4 of the sorted dice) -> view
* ``POST /api/game/ID/score`` ``{"box": "sixes"}`` (name, alias or unambiguous prefix) -> view

A view is the game (:meth:`CoachedGame.to_json`) plus ``id``, ``advice`` (the ranked choices),
``lines`` (the verdicts on the decisions just made, in words), ``decisions`` (the same as data:
position, chosen and best choice, regret) and, once over, ``summary``.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any
from uuid import uuid4

from ..game import N_DICE
from .advice import parse_box
from .game import CoachedGame, Decision, summary, verdict

MAX_GAMES = 64  # the oldest game is dropped past this many
HOST = "127.0.0.1"


class ApiError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def hold_pattern(hold: Any) -> int:
    """Keep pattern of the held die positions (``[0, 3]`` holds the first and the fourth sorted die)."""
    if not isinstance(hold, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in hold):
        raise ValueError(f"'hold' must be a list of die positions 0..{N_DICE - 1}, got {hold!r}")
    if any(not 0 <= i < N_DICE for i in hold) or len(set(hold)) != len(hold):
        raise ValueError(f"'hold' must name distinct die positions 0..{N_DICE - 1}, got {hold!r}")
    return sum(1 << i for i in hold)


class CoachServer(ThreadingHTTPServer):
    """The page and the API; ``new_game(seed)`` makes a :class:`CoachedGame`. ``port=0`` picks a free port."""

    daemon_threads = True

    def __init__(self, new_game: Callable[[int | None], CoachedGame], port: int = 8000) -> None:
        super().__init__((HOST, port), _Handler)
        self.new_game = new_game
        self.games: OrderedDict[str, CoachedGame] = OrderedDict()
        self.lock = threading.Lock()  # one request at a time touches games and the oracle

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    def view(self, game_id: str, made: list[Decision] | None = None) -> dict[str, Any]:
        game = self.games[game_id]
        out = game.to_json()
        out["id"] = game_id
        out["advice"] = [] if game.over else [asdict(c) for c in game.advice()]
        out["lines"] = [verdict(d) for d in made or []]
        out["decisions"] = [d.to_json() for d in made or []]
        out["summary"] = summary(game) if game.over else None
        return out

    def handle_api(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        parts = [p for p in path.split("/") if p][1:]  # after "api"
        if method == "POST" and parts == ["new"]:
            seed = body.get("seed")
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
                raise ValueError(f"'seed' must be an int >= 0, got {seed!r}")
            game_id = uuid4().hex
            self.games[game_id] = self.new_game(seed)
            while len(self.games) > MAX_GAMES:
                self.games.popitem(last=False)
            return self.view(game_id)
        if len(parts) < 2 or parts[0] != "game":
            raise ApiError(HTTPStatus.NOT_FOUND, f"no API route {path}")
        game_id = parts[1]
        if game_id not in self.games:
            raise ApiError(HTTPStatus.NOT_FOUND, f"no game {game_id!r} (the server keeps the last {MAX_GAMES})")
        game = self.games[game_id]
        if method == "GET" and len(parts) == 2:
            return self.view(game_id)
        if method == "POST" and parts[2:] == ["keep"]:
            return self.view(game_id, game.keep(hold_pattern(body.get("hold"))))
        if method == "POST" and parts[2:] == ["score"]:
            box = body.get("box")
            if not isinstance(box, str):
                raise ValueError(f"'box' must be a box name, got {box!r}")
            return self.view(game_id, game.score(parse_box(box)))
        raise ApiError(HTTPStatus.NOT_FOUND, f"no API route {method} {path}")


class _Handler(BaseHTTPRequestHandler):
    server: CoachServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
        pass

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: HTTPStatus, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _api(self, method: str) -> None:
        try:
            body: Any = {}
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                try:
                    body = json.loads(self.rfile.read(length))
                except json.JSONDecodeError as e:
                    raise ValueError(f"the request body is not JSON: {e}") from None
            if not isinstance(body, dict):
                raise ValueError("the request body must be a JSON object")
            with self.server.lock:
                out = self.server.handle_api(method, self.path.split("?")[0], body)
        except ApiError as e:
            self._json(e.status, {"error": str(e)})
        except ValueError as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
        else:
            self._json(HTTPStatus.OK, out)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?")[0]
        if path in ("/", "/index.html"):
            page = files(__package__).joinpath("static", "index.html").read_bytes()
            self._send(HTTPStatus.OK, page, "text/html; charset=utf-8")
        elif path.startswith("/api/"):
            self._api("GET")
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {path}"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.startswith("/api/"):
            self._api("POST")
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {self.path}"})
