"""How ``serve`` reads a request before any worker sees it: a connection's state while its bytes
arrive (at most its deadline), and the test for a whole request (its head, then its declared body)."""

from __future__ import annotations

import io
import re
import socket
import time
from collections import deque
from typing import Any

MAX_BODY = 16 * 1024  # bytes; the API's bodies are a few dozen
MAX_HEAD = 64 * 1024  # bytes of request line and headers: a longer head goes to the handler, which refuses it


class _Client:
    """One client address's connections: open (accepted, not yet closed), active (being answered) and
    waiting (their turn to come)."""

    def __init__(self) -> None:
        self.open = self.active = 0
        self.waiting: deque[tuple[Any, Any]] = deque()


class _Pending:
    """A connection whose request is being read: its bytes so far, and by when they must come."""

    def __init__(self, sock: socket.socket, address: Any, first_by: float, deadline: float) -> None:
        self.sock, self.address, self.first_by, self.deadline = sock, address, first_by, deadline
        self.host = address[0] if isinstance(address, tuple) else str(address)
        self.data = b""

    def due(self) -> float:
        return min(self.first_by, self.deadline)


def head_end(data: bytes) -> int:
    """Where a request's head ends (the index after its blank line), or -1 while it has not."""
    for blank in (b"\r\n\r\n", b"\n\n"):
        if (i := data.find(blank)) >= 0:
            return i + len(blank)
    return -1


def request_complete(data: bytes) -> bool:
    """Whether ``data`` is a whole request (its head and the body its ``Content-Length`` names), or
    one that the handler refuses as it is (a head too long, a bad length, a body too large)."""
    end = head_end(data)
    if end < 0:
        return len(data) > MAX_HEAD
    head = data[:end]
    if re.search(rb"(?im)^transfer-encoding:", head):
        return True
    lengths = {v.strip() for v in re.findall(rb"(?im)^content-length:(.*)$", head)}
    if not lengths:
        return True
    if len(lengths) > 1 or not re.fullmatch(rb"\d{1,18}", next(iter(lengths))):
        return True
    length = int(next(iter(lengths)))
    return length > MAX_BODY or len(data) >= end + length


class _DeadlineReader(io.RawIOBase):
    """A connection's incoming bytes: first those the reader thread read (``read``), then the
    socket's, each read waiting only for what is left of the request's deadline (a per-read timeout
    alone lets a client that sends a byte now and then hold on forever)."""

    def __init__(self, sock: socket.socket, deadline: float, read: bytes = b"") -> None:
        super().__init__()
        self.sock, self.deadline = sock, deadline
        self.read_ahead = read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.read_ahead:
            n = min(len(buffer), len(self.read_ahead))
            buffer[:n] = self.read_ahead[:n]
            self.read_ahead = self.read_ahead[n:]
            return n
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive before its deadline")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)
