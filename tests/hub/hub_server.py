"""A small Hugging Face Hub-compatible HTTP server on 127.0.0.1 for tests without internet.

It implements what the real ``huggingface_hub`` client uses to create a repo, upload a folder
(preupload, LFS basic transfer, NDJSON commit) and download it again (repo info, resolve with
ETag / commit headers, tree). Repos live in memory; every commit gets a new 40-hex id.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse


class _Repo:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.lfs: set[str] = set()  # paths stored as LFS objects
        self.commits: list[str] = [hashlib.sha1(b"initial").hexdigest()]

    @property
    def head(self) -> str:
        return self.commits[-1]


class HubState:
    def __init__(self) -> None:
        self.repos: dict[str, _Repo] = {}
        self.blobs: dict[str, bytes] = {}  # LFS objects by sha256
        self.requests: list[str] = []
        self.lock = threading.Lock()


def _handler(state: HubState, base_url: str):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        # ----------------------------------------------------------- helpers
        def _send(self, code: int, body: bytes = b"", headers: dict | None = None, ctype="application/json"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, code: int, obj, headers: dict | None = None) -> None:
            self._send(code, json.dumps(obj).encode(), headers)

        def _not_found(self, what: str, code: str = "RepoNotFound") -> None:
            self._json(
                404, {"error": f"{what} not found"}, {"X-Error-Code": code, "X-Error-Message": f"{what} not found"}
            )

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length", 0) or 0)
            return self.rfile.read(n) if n else b""

        def _repo(self, repo_id: str) -> _Repo | None:
            return state.repos.get(repo_id)

        # ------------------------------------------------------------ routes
        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = unquote(urlparse(self.path).path)
            state.requests.append(f"{self.command} {path}")
            m = re.fullmatch(r"/api/models/(.+?)(?:/revision/([^/]+))?", path)
            if m and "/tree/" not in path:
                repo = self._repo(m.group(1))
                if repo is None:
                    return self._not_found(f"repo {m.group(1)}")
                return self._json(
                    200,
                    {
                        "id": m.group(1),
                        "modelId": m.group(1),
                        "sha": repo.head,
                        "private": False,
                        "siblings": [{"rfilename": p} for p in sorted(repo.files)],
                    },
                )
            m = re.fullmatch(r"/api/models/(.+?)/tree/([^/]+)(/.*)?", path)
            if m:
                repo = self._repo(m.group(1))
                if repo is None:
                    return self._not_found(f"repo {m.group(1)}")
                entries = []
                for p, data in sorted(repo.files.items()):
                    e = {"type": "file", "path": p, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                    if p in repo.lfs:
                        e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 130}
                    entries.append(e)
                return self._json(200, entries)
            m = re.fullmatch(r"/(.+?)/resolve/([^/]+)/(.+)", path)
            if m:
                repo = self._repo(m.group(1))
                if repo is None:
                    return self._not_found(f"repo {m.group(1)}")
                data = repo.files.get(m.group(3))
                if data is None:
                    return self._not_found(f"entry {m.group(3)}", "EntryNotFound")
                headers = {"X-Repo-Commit": repo.head, "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}
                if m.group(3) in repo.lfs:
                    headers["X-Linked-Etag"] = f'"{hashlib.sha256(data).hexdigest()}"'
                    headers["X-Linked-Size"] = str(len(data))
                return self._send(200, data, headers, ctype="application/octet-stream")
            self._json(404, {"error": f"no route for GET {path}"})

        def do_PUT(self) -> None:
            path = urlparse(self.path).path
            state.requests.append(f"PUT {path}")
            m = re.fullmatch(r"/lfs-upload/([0-9a-f]{64})", path)
            if not m:
                return self._json(404, {"error": f"no route for PUT {path}"})
            data = self._body()
            if hashlib.sha256(data).hexdigest() != m.group(1):
                return self._json(400, {"error": "sha256 mismatch"})
            state.blobs[m.group(1)] = data
            self._send(200, b"")

        def do_POST(self) -> None:
            path = unquote(urlparse(self.path).path)
            state.requests.append(f"POST {path}")
            body = self._body()
            if path == "/api/repos/create":
                req = json.loads(body)
                repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
                with state.lock:
                    if repo_id in state.repos:
                        return self._json(
                            409, {"error": "You already created this model repo", "url": f"{base_url}/{repo_id}"}
                        )
                    state.repos[repo_id] = _Repo()
                return self._json(200, {"url": f"{base_url}/{repo_id}", "name": repo_id})
            if path == "/api/validate-yaml":
                return self._json(200, {"errors": [], "warnings": []})
            m = re.fullmatch(r"/api/models/(.+?)/preupload/([^/]+)", path)
            if m:
                if self._repo(m.group(1)) is None:
                    return self._not_found(f"repo {m.group(1)}")
                files = json.loads(body)["files"]
                return self._json(
                    200,
                    {
                        "files": [
                            {
                                "path": f["path"],
                                "uploadMode": "lfs" if f["path"].endswith(".safetensors") else "regular",
                                "shouldIgnore": False,
                            }
                            for f in files
                        ]
                    },
                )
            m = re.fullmatch(r"/(.+?)\.git/info/lfs/objects/batch", path)
            if m:
                req = json.loads(body)
                objects = []
                for o in req["objects"]:
                    entry = {"oid": o["oid"], "size": o["size"]}
                    if o["oid"] not in state.blobs:
                        entry["actions"] = {"upload": {"href": f"{base_url}/lfs-upload/{o['oid']}", "header": {}}}
                    objects.append(entry)
                return self._json(200, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"})
            m = re.fullmatch(r"/api/models/(.+?)/commit/([^/]+)", path)
            if m:
                repo = self._repo(m.group(1))
                if repo is None:
                    return self._not_found(f"repo {m.group(1)}")
                for line in body.decode().splitlines():
                    if not line.strip():
                        continue
                    item = json.loads(line)
                    key, value = item["key"], item["value"]
                    if key == "file":
                        repo.files[value["path"]] = base64.b64decode(value["content"])
                        repo.lfs.discard(value["path"])
                    elif key == "lfsFile":
                        if value["oid"] not in state.blobs:
                            return self._json(400, {"error": f"LFS object {value['oid']} was never uploaded"})
                        repo.files[value["path"]] = state.blobs[value["oid"]]
                        repo.lfs.add(value["path"])
                    elif key == "deletedFile":
                        repo.files.pop(value["path"], None)
                sha = hashlib.sha1(f"{repo.head}{len(repo.commits)}".encode()).hexdigest()
                repo.commits.append(sha)
                return self._json(
                    200,
                    {"commitUrl": f"{base_url}/{m.group(1)}/commit/{sha}", "commitOid": sha, "pullRequestUrl": None},
                )
            self._json(404, {"error": f"no route for POST {path}"})

    return Handler


class HubServer:
    """Start with ``with HubServer() as hub:``; ``hub.url`` is the endpoint for ``HF_ENDPOINT``."""

    def __init__(self) -> None:
        self.state = HubState()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: None)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._server.RequestHandlerClass = _handler(self.state, self.url)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
