"""``yahtzee-lightning serve``: the coached game as a local web page.

Standard library only: a threaded ``http.server`` bound to 127.0.0.1 serves one static page
(``static/index.html``, shipped with the package) and a small JSON API over ``CoachedGame``,
so the page plays and judges exactly as the terminal game does. Games live in the server's
memory, by id; the page holds no game state of its own.

API (JSON in, JSON out; a bad request is ``400 {"error": "..."}``):

* ``POST /api/new`` ``{"seed": 7}`` (seed optional) -> a new game's view
* ``GET /api/game/ID`` -> the game's view
* ``POST /api/game/ID/keep`` ``{"hold": [0, 3]}`` (positions 0..4 of the sorted dice) -> view
* ``POST /api/game/ID/score`` ``{"box": "sixes"}`` (name, alias or unambiguous prefix) -> view

A view is the game (``CoachedGame.to_json``) plus ``id``, ``advice`` (the ranked choices),
``lines`` (the verdicts on the decisions just made, in words), ``decisions`` (the same as data:
position, chosen and best choice, regret), ``history`` (every verdict of the game, oldest first, so
that a reloaded page shows the game as it was) and, once over, ``summary``. The page keeps its game's
id in the address (``#game=ID``): a reload, or the address pasted in another tab, goes on with it.

Only the page it serves may drive it: a request whose ``Host`` (or ``Origin``) is not the
server's own address is refused (403), so a web page elsewhere cannot reach it by DNS rebinding.
Bodies are small JSON objects: a longer one is refused before it is read (413), a bad
``Content-Length`` (400), deep nesting (400). A whole request, its headers and its body, must
arrive within ``REQUEST_DEADLINE`` seconds of the connection being taken up (408 for a body that
has not, the connection closed for headers that have not), its first byte within ``FIRST_BYTE``.
Requests are read by one thread that waits on every connection at once (a selector): a connection
that is held, or drips its bytes, holds no worker and delays nobody. Only a whole request goes to
the pool of ``WORKERS`` threads that answer (one address's at most ``PER_CLIENT_ACTIVE`` at a time,
the games themselves one request at a time). At most ``MAX_OPEN`` connections are open, at most
``PER_CLIENT_OPEN`` of one address unread: past either, the oldest unfinished request is dropped,
so hundreds of held connections from one address or from many cannot keep a new one out.

A game lives as long as its owner plays it: a new game never takes the place of one played or shown
within ``GAME_IDLE`` seconds (past ``MAX_GAMES``, a finished or idle game goes, else ``/api/new`` is
refused with 503), so no client can evict another's game in progress.
"""

from __future__ import annotations

import math
import selectors
import socket
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from http import HTTPStatus
from http.server import HTTPServer
from typing import Any
from uuid import uuid4

from .advice import parse_box
from .connections import _Client, _Pending, head_end, request_complete
from .game import CoachedGame, Decision, summary, verdict
from .handler import ApiError, _Handler, hold_pattern

MAX_GAMES = 64  # games held; past this many, a new game takes the place of a finished or idle one
GAME_IDLE = 600.0  # seconds without a request before a game in progress may give its place to a new one
MAX_SEED = 2**32  # a game's seed, as the CLI's --seed: well inside torch's 64-bit generator
HOST = "127.0.0.1"
REQUEST_DEADLINE = 10.0  # seconds for a request's headers and body to arrive, all reads together
WORKERS = 16  # threads answering whole requests (reading them takes none: one selector thread)
BACKLOG = 512  # connections the kernel holds until they are accepted
FIRST_BYTE = 2.0  # seconds a new connection may stay silent before it is closed
MAX_OPEN = 1024  # connections open at once; past it, the oldest one whose request is unfinished is dropped
#: One client address at a time: at most this many of its whole requests are being answered (the rest
#: wait their turn, holding no worker), and at most ``PER_CLIENT_OPEN`` of its connections are unread
#: or waiting (past that, its oldest unfinished one is dropped). A client that holds or reopens hundreds
#: of connections then delays only itself.
PER_CLIENT_ACTIVE = 16
PER_CLIENT_OPEN = 256


class CoachServer(HTTPServer):
    """The page and the API; ``new_game(seed)`` makes a ``CoachedGame``. ``port=0`` picks a free port."""

    request_queue_size = BACKLOG

    def __init__(self, new_game: Callable[[int | None], CoachedGame], port: int = 8000) -> None:
        super().__init__((HOST, port), _Handler)
        self.new_game = new_game
        self.games: OrderedDict[str, CoachedGame] = OrderedDict()  # by last request, least recent first
        self.touched: dict[str, float] = {}  # a game's last request (monotonic seconds)
        self.game_idle = GAME_IDLE
        self.lock = threading.Lock()  # one request at a time touches games and the oracle
        self.request_deadline = REQUEST_DEADLINE
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="coach")
        self.first_byte = FIRST_BYTE
        self._clients: dict[str, _Client] = {}  # per client address: its answered and waiting whole requests
        self._clients_lock = threading.Lock()
        self._pending: dict[socket.socket, _Pending] = {}  # connections being read, oldest first
        self._inbox: deque[tuple[socket.socket, Any]] = deque()  # accepted, for the reader to take up
        self._read: dict[socket.socket, tuple[bytes, float]] = {}  # a whole request's bytes, for its handler
        self._answering = 0  # connections handed to the workers, not yet closed
        self._closed = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)
        self._reader = threading.Thread(target=self._read_loop, name="coach-reader", daemon=True)
        self._reader.start()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.server_address[1]}/"

    @property
    def hosts(self) -> set[str]:
        """The ``Host`` values of the page's own requests: the address served, by number or as localhost."""
        port = self.server_address[1]
        return {f"{HOST}:{port}", f"localhost:{port}"}

    def process_request(self, request: Any, client_address: Any) -> None:
        """Hand the connection to the reader thread: no worker waits on a request still arriving."""
        request.setblocking(False)
        self._inbox.append((request, client_address))
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:  # full (the reader is awake already) or closed
            pass

    def _read_loop(self) -> None:
        """Read every connection's request at once; hand each whole one to the workers. A connection
        silent past its first-byte wait, or unfinished at its deadline, is dropped (a whole head with a
        short body still goes on, to be answered 408); at most ``MAX_OPEN`` connections open and
        ``PER_CLIENT_OPEN`` unread of one address, the oldest unfinished one dropped past either."""
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ)
        while not self._closed:
            now = time.monotonic()
            due = min((p.due() for p in self._pending.values()), default=now + 1.0)
            for key, _ in selector.select(min(max(due - now, 0.0), 1.0)):
                if key.fileobj is self._wake_r:
                    self._wake_r.recv(4096)
                    continue
                pending = key.data
                try:
                    chunk = pending.sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:  # the client hung up
                    self._drop(pending, selector)
                    continue
                pending.data += chunk
                pending.first_by = math.inf
                if request_complete(pending.data):
                    self._hand_over(pending, selector)
            while self._inbox:
                self._admit(*self._inbox.popleft(), selector)
            now = time.monotonic()
            for pending in [p for p in self._pending.values() if p.due() <= now]:
                if head_end(pending.data) >= 0:  # the body came short: its handler answers 408
                    self._hand_over(pending, selector)
                else:
                    self._drop(pending, selector)
        for pending in list(self._pending.values()):
            self._drop(pending, selector)
        selector.close()

    def _admit(self, sock: socket.socket, client_address: Any, selector: selectors.BaseSelector) -> None:
        """Start reading a new connection, dropping the oldest unfinished one of its address, or of
        all, where it would go past ``PER_CLIENT_OPEN`` or ``MAX_OPEN``."""
        now = time.monotonic()
        pending = _Pending(sock, client_address, now + self.first_byte, now + self.request_deadline)
        same = [p for p in self._pending.values() if p.host == pending.host]
        if len(same) >= PER_CLIENT_OPEN:
            self._drop(same[0], selector)
        if len(self._pending) + self._answering >= MAX_OPEN:
            if not self._pending:
                self.shutdown_request(sock)
                return
            self._drop(next(iter(self._pending.values())), selector)
        self._pending[sock] = pending
        selector.register(sock, selectors.EVENT_READ, pending)

    def _drop(self, pending: _Pending, selector: selectors.BaseSelector) -> None:
        selector.unregister(pending.sock)
        del self._pending[pending.sock]
        self.shutdown_request(pending.sock)

    def _hand_over(self, pending: _Pending, selector: selectors.BaseSelector) -> None:
        selector.unregister(pending.sock)
        del self._pending[pending.sock]
        pending.sock.setblocking(True)
        self._read[pending.sock] = (pending.data, pending.deadline)
        with self._clients_lock:
            self._answering += 1
        self._dispatch(pending.sock, pending.address)

    def _dispatch(self, request: Any, client_address: Any) -> None:
        """A whole request to the pool, fairly: each client address has at most ``PER_CLIENT_ACTIVE``
        answered at once (its others wait their turn, holding no worker) and ``PER_CLIENT_OPEN``
        waiting (past that, closed at once)."""
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
            self._closed_one(request)
            return
        if run:
            self.pool.submit(self._process, request, client_address)

    def _process(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._closed_one(request)
            self._next_of(client_address)

    def _closed_one(self, request: Any) -> None:
        self.shutdown_request(request)
        self._read.pop(request, None)
        with self._clients_lock:
            self._answering -= 1

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
        self._closed = True
        self._wake()
        self._reader.join(timeout=5)
        self._wake_r.close()
        self._wake_w.close()
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

    def make_room(self) -> None:
        """Room for a new game: past ``MAX_GAMES``, a finished game goes, else the one left longest
        (no request for ``game_idle`` seconds); a game in progress never gives its place, so
        ``/api/new`` is refused (503) while all are."""
        if len(self.games) < MAX_GAMES:
            return
        now = time.monotonic()
        done = [g for g, game in self.games.items() if game.over]
        idle = [g for g in self.games if now - self.touched.get(g, now) >= self.game_idle]
        if not (done or idle):
            raise ApiError(
                HTTPStatus.SERVICE_UNAVAILABLE,
                f"all {MAX_GAMES} games are in progress (played within {self.game_idle:g} s); "
                "try again once one is finished or left",
            )
        gone = (done or idle)[0]
        del self.games[gone]
        self.touched.pop(gone, None)

    def handle_api(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        parts = [p for p in path.split("/") if p][1:]  # after "api"
        if method == "POST" and parts == ["new"]:
            seed = body.get("seed")
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < MAX_SEED):
                raise ValueError(f"'seed' must be an int in 0..2**32-1 (as the CLI's --seed), got {repr(seed)[:40]}")
            self.make_room()
            game_id = uuid4().hex
            self.games[game_id] = self.new_game(seed)
            self.touched[game_id] = time.monotonic()
            return self.view(game_id)
        if len(parts) < 2 or parts[0] != "game":
            raise ApiError(HTTPStatus.NOT_FOUND, f"no API route {path}")
        game_id = parts[1]
        if game_id not in self.games:
            raise ApiError(
                HTTPStatus.NOT_FOUND,
                f"no game {game_id[:40]!r} (a game left for {self.game_idle:g} s may give its place to a new one)",
            )
        game = self.games[game_id]
        self.games.move_to_end(game_id)
        self.touched[game_id] = time.monotonic()
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
