"""``serve``'s request handler: a whole request's checks (its host and origin, its body's size, JSON and
depth) and its route to the game API, answered in JSON."""

from __future__ import annotations

import io
import json
import re
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from importlib.resources import files
from typing import Any

from ..game import N_DICE
from ..untrusted import parse_json
from .connections import MAX_BODY, _DeadlineReader

MAX_DEPTH = 4  # JSON nesting: an object holding a list is 2
WRITE_TIMEOUT = 10.0  # seconds a reply may wait on a client that does not read it


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


class _Handler(BaseHTTPRequestHandler):
    server: Any  # the CoachServer that took the request

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
        read, deadline = self.server._read.pop(self.connection, (b"", time.monotonic() + self.server.request_deadline))
        self.rfile.close()  # the plain reader: its hold on the socket would delay the socket's close
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, deadline, read))

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
