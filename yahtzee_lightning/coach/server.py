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
position, chosen and best choice, regret), ``history`` (every verdict of the game, oldest first, so
that a reloaded page shows the game as it was) and, once over, ``summary``. The page keeps its game's
id in the address (``#game=ID``): a reload, or the address pasted in another tab, goes on with it.

Only the page it serves may drive it: a request whose ``Host`` (or ``Origin``) is not the
server's own address is refused (403), so a web page elsewhere cannot reach it by DNS rebinding.
Bodies are small JSON objects: a longer one is refused before it is read (413), a bad
``Content-Length`` (400), deep nesting (400). A whole request, its headers and its body, must
arrive within ``REQUEST_DEADLINE`` seconds of the connection being taken up (408 for a body that
has not, the connection closed for headers that have not): a client that drips its bytes holds a
thread that long at most, however often it sends one. A pool of ``WORKERS`` threads reads and
answers connections (the games themselves are played one request at a time), so that dozens of slow
clients leave threads for everyone else; the listen backlog holds a burst of connections until one
is free.
"""

from __future__ import annotations

import io
import json
import re
import socket
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib.resources import files
from typing import Any
from uuid import uuid4

from ..game import N_DICE
from ..untrusted import parse_json
from .advice import parse_box
from .game import CoachedGame, Decision, summary, verdict

MAX_GAMES = 64  # the oldest game is dropped past this many
MAX_SEED = 2**32  # a game's seed, as the CLI's --seed: well inside torch's 64-bit generator
HOST = "127.0.0.1"
MAX_BODY = 16 * 1024  # bytes; the API's bodies are a few dozen
MAX_DEPTH = 4  # JSON nesting: an object holding a list is 2
REQUEST_DEADLINE = 10.0  # seconds for a request's headers and body to arrive, all reads together
WRITE_TIMEOUT = 10.0  # seconds a reply may wait on a client that does not read it
WORKERS = 128  # threads reading and answering connections; waiting connections queue in the backlog
BACKLOG = 512  # connections the kernel holds until a worker is free
FIRST_BYTE = 2.0  # seconds a new connection may stay silent before it is closed (an idle one holds a worker)
#: One client address at a time: at most this many of its connections are being answered (the rest of
#: them wait their turn, holding no worker), and at most ``PER_CLIENT_OPEN`` are open (past that, closed
#: at once). A client that holds or reopens hundreds of connections then delays only itself.
PER_CLIENT_ACTIVE = 16
PER_CLIENT_OPEN = 256


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


def body_length(values: list[str]) -> int:
    """The request's ``Content-Length`` (0 when absent), or a 400 that says what is wrong with it."""
    if len(set(values)) > 1:
        raise ApiError(HTTPStatus.BAD_REQUEST, f"conflicting Content-Length headers {values}")
    if not values:
        return 0
    if not re.fullmatch(r"\d{1,18}", values[0].strip()):
        raise ApiError(HTTPStatus.BAD_REQUEST, f"Content-Length must be a byte count, got {values[0][:40]!r}")
    return int(values[0])


class CoachServer(HTTPServer):
    """The page and the API; ``new_game(seed)`` makes a :class:`CoachedGame`. ``port=0`` picks a free port."""

    request_queue_size = BACKLOG

    def __init__(self, new_game: Callable[[int | None], CoachedGame], port: int = 8000) -> None:
        super().__init__((HOST, port), _Handler)
        self.new_game = new_game
        self.games: OrderedDict[str, CoachedGame] = OrderedDict()
        self.lock = threading.Lock()  # one request at a time touches games and the oracle
        self.request_deadline = REQUEST_DEADLINE
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="coach")
        self.free = threading.BoundedSemaphore(WORKERS + BACKLOG)  # accepted connections not yet closed
        self.first_byte = FIRST_BYTE
        self._clients: dict[str, _Client] = {}  # per client address: its open, active and waiting connections
        self._clients_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    @property
    def hosts(self) -> set[str]:
        """The ``Host`` values of the page's own requests: the address served, by number or as localhost."""
        port = self.server_address[1]
        return {f"{HOST}:{port}", f"localhost:{port}"}

    def process_request(self, request: Any, client_address: Any) -> None:
        """Hand the connection to the pool, fairly: each client address has at most
        ``PER_CLIENT_ACTIVE`` connections answered at once (its others wait their turn, holding no
        worker) and ``PER_CLIENT_OPEN`` open (past that, closed at once); in all, past the workers'
        queue, the rest waits in the backlog."""
        host = client_address[0] if isinstance(client_address, tuple) else str(client_address)
        with self._clients_lock:
            client = self._clients.setdefault(host, _Client())
            refused = client.open >= PER_CLIENT_OPEN
            if not refused:
                client.open += 1
                run = client.active < PER_CLIENT_ACTIVE
                if run:
                    client.active += 1
                else:
                    client.waiting.append((request, client_address))
        if refused:
            self.shutdown_request(request)
            return
        self.free.acquire()
        if run:
            self.pool.submit(self._process, request, client_address)

    def _process(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self.free.release()
            self._next_of(client_address)

    def _next_of(self, client_address: Any) -> None:
        """A connection of this client's is done: its next waiting one takes the worker's turn."""
        host = client_address[0] if isinstance(client_address, tuple) else str(client_address)
        with self._clients_lock:
            client = self._clients[host]
            client.open -= 1
            waiting = client.waiting.popleft() if client.waiting else None
            if waiting is None:
                client.active -= 1
                if client.open == 0:
                    del self._clients[host]
        if waiting is not None:
            self.pool.submit(self._process, *waiting)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that hangs up mid-reply is the client's business."""

    def server_close(self) -> None:
        super().server_close()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def view(self, game_id: str, made: list[Decision] | None = None) -> dict[str, Any]:
        game = self.games[game_id]
        out = game.to_json()
        out["id"] = game_id
        out["advice"] = [] if game.over else [asdict(c) for c in game.advice()]
        out["lines"] = [verdict(d) for d in made or []]
        out["decisions"] = [d.to_json() for d in made or []]
        out["history"] = [verdict(d) for d in game.history]  # the whole game's, oldest first: a reload redraws it
        out["summary"] = summary(game) if game.over else None
        return out

    def handle_api(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        parts = [p for p in path.split("/") if p][1:]  # after "api"
        if method == "POST" and parts == ["new"]:
            seed = body.get("seed")
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < MAX_SEED):
                raise ValueError(f"'seed' must be an int in 0..2**32-1 (as the CLI's --seed), got {repr(seed)[:40]}")
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


class _Client:
    """One client address's connections: open (accepted, not yet closed), active (being answered) and
    waiting (their turn to come)."""

    def __init__(self) -> None:
        self.open = self.active = 0
        self.waiting: deque[tuple[Any, Any]] = deque()


class _DeadlineReader(io.RawIOBase):
    """A connection's incoming bytes, each read waiting only for what is left of the request's
    deadline: a per-read timeout alone lets a client that sends a byte now and then hold on forever.
    Its first byte must come by ``first_by`` (an idle connection is closed early)."""

    def __init__(self, sock: socket.socket, deadline: float, first_by: float | None = None) -> None:
        super().__init__()
        self.sock, self.deadline = sock, deadline
        self.first_by = first_by

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        until = self.deadline if self.first_by is None else min(self.deadline, self.first_by)
        left = until - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive before its deadline")
        self.sock.settimeout(left)
        n = self.sock.recv_into(buffer)
        self.first_by = None
        return n


class _Handler(BaseHTTPRequestHandler):
    server: CoachServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
        pass

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.connection.settimeout(WRITE_TIMEOUT)  # the reading deadline no longer applies
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: HTTPStatus, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def setup(self) -> None:
        super().setup()
        now = time.monotonic()
        deadline = now + self.server.request_deadline  # headers and body, all reads together
        self.rfile.close()  # the plain reader: its hold on the socket would delay the socket's close
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, deadline, now + self.server.first_byte))

    def _refuse(self, status: HTTPStatus, message: str) -> None:
        self.close_connection = True  # an unread body must not be taken for the next request
        self._json(status, {"error": message})

    def _check_origin(self) -> None:
        """Only the page's own requests: the Host is the address served, and so is the Origin if sent."""
        hosts = self.server.hosts
        host = self.headers.get("Host")
        if host not in hosts:
            raise ApiError(HTTPStatus.FORBIDDEN, f"Host {host!r} is not this server's address {self.server.url}")
        origin = self.headers.get("Origin")
        if origin is not None and origin.removeprefix("http://") not in hosts:
            raise ApiError(HTTPStatus.FORBIDDEN, f"Origin {origin!r} is not this server's page {self.server.url}")

    def _body(self) -> dict[str, Any]:
        """The request's JSON object (``{}`` without a body), read only when it is small enough."""
        if self.headers.get("Transfer-Encoding"):
            raise ApiError(HTTPStatus.BAD_REQUEST, "Transfer-Encoding is not supported: send a Content-Length")
        length = body_length(self.headers.get_all("Content-Length") or [])
        if length > MAX_BODY:
            raise ApiError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body must be at most {MAX_BODY} bytes")
        try:
            raw = self.rfile.read(length) if length else b""
        except TimeoutError:
            raw = b""
        if len(raw) < length:  # the client went silent (or away, or too slow) before sending all it announced
            wait = self.server.request_deadline
            raise ApiError(
                HTTPStatus.REQUEST_TIMEOUT,
                f"the body did not arrive: {length} bytes announced, not all sent within {wait:g} s of the request",
            )
        body = parse_json(raw, "the request body", max_depth=MAX_DEPTH) if raw else {}
        if not isinstance(body, dict):
            raise ValueError("the request body must be a JSON object")
        return body

    def _api(self, method: str) -> None:
        try:
            body = self._body()
            with self.server.lock:
                out = self.server.handle_api(method, self.path.split("?")[0], body)
        except ApiError as e:
            self._refuse(e.status, str(e))
        except ValueError as e:
            self._refuse(HTTPStatus.BAD_REQUEST, str(e))
        else:
            self._json(HTTPStatus.OK, out)

    def _route(self, method: str) -> None:
        path = self.path.split("?")[0]
        try:
            self._check_origin()
        except ApiError as e:
            self._refuse(e.status, str(e))
        else:
            if method == "GET" and path in ("/", "/index.html"):
                page = files(__package__).joinpath("static", "index.html").read_bytes()
                self._send(HTTPStatus.OK, page, "text/html; charset=utf-8")
            elif path.startswith("/api/"):
                self._api(method)
            else:
                self._refuse(HTTPStatus.NOT_FOUND, f"no page {path}")

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._route("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._route("POST")
