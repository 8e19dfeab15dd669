"""A small Hugging Face Hub-compatible HTTP server on 127.0.0.1 for tests without internet.

It implements what the real ``huggingface_hub`` client (2.x, Xet disabled) uses to create a repo,
upload a folder (preupload, LFS basic transfer, NDJSON commit) and download it again (repo info
by revision, recursive tree, resolve with the ETag / commit headers the cache is built from).
Dataset repos (a study's weights) are served as models are, under
``datasets/`` (``state.repos["datasets/alice/s"]``), as the Hub's own URLs name them.
Repos live in memory. Every commit is a snapshot with its own 40-hex id, so a download can pin
an older revision; ``main`` is the only branch. Routes are matched on the raw (still quoted)
path because the client quotes revisions (``refs%2Fpr%2F1``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

import yaml

#: Files the server stores through LFS, like the Hub's default ``.gitattributes``.
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".ckpt")


def git_blob_id(data: bytes) -> str:
    """The git object id of a file, which the Hub sends as ETag and tree ``oid`` for regular files."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def validate_card_metadata(readme: str) -> list[str]:
    """What the Hub would reject in a model card's YAML header (the parts of ``model-index`` we use)."""
    if not readme.startswith("---\n"):
        return []
    try:
        meta = yaml.safe_load(readme.split("---\n", 2)[1]) or {}
    except yaml.YAMLError as e:
        return [f"invalid YAML: {e}"]
    errors = []
    for model in meta.get("model-index", []):
        for result in model.get("results", []):
            if not result.get("task", {}).get("type"):
                errors.append("model-index: a result without task.type")
            if not {"name", "type"} <= set(result.get("dataset", {})):
                errors.append("model-index: a result's dataset needs name and type")
            if not result.get("metrics") or any(not {"type", "value"} <= set(m) for m in result["metrics"]):
                errors.append("model-index: every metric needs type and value")
    return errors


class _Repo:
    """Commits as snapshots: ``commits[sha]`` maps path -> (content, stored through LFS)."""

    def __init__(self, repo_id: str) -> None:
        first = hashlib.sha1(f"init {repo_id}".encode()).hexdigest()
        self.commits: dict[str, dict[str, tuple[bytes, bool]]] = {first: {}}
        self.refs = {"main": first}

    def resolve(self, revision: str) -> str | None:
        return self.refs.get(revision) or (revision if revision in self.commits else None)


class HubState:
    """Everything the server holds, readable by tests (``requests`` logs ``METHOD path``)."""

    def __init__(self) -> None:
        self.repos: dict[str, _Repo] = {}
        self.blobs: dict[str, bytes] = {}  # LFS objects by sha256
        self.requests: list[str] = []
        self.lock = threading.Lock()
        #: A hostile server's lies (tests of what a client trusts): ``sha`` (the commit id it answers),
        #: ``listed`` (extra ``{path: size}`` entries in its tree listing), ``size`` (every listed size),
        #: ``fail_first`` (how many model-info requests answer 500 first), ``endless`` (the weights'
        #: download claims 10 GiB and sends zeros, up to this many bytes), ``drip`` (the weights sent one
        #: byte per this many seconds, at most 600 bytes). ``sent`` counts the body bytes it wrote.
        self.hostile: dict = {}
        self.sent = 0

    def serve(self, repo_id: str, files: dict[str, bytes]) -> str:
        """A repo with one commit of ``files`` (LFS by suffix), as a push would leave it: its commit id.
        Tests of a pull seed it so, without a process that pushes."""
        with self.lock:
            repo = self.repos.setdefault(repo_id, _Repo(repo_id))
            sha = hashlib.sha1(f"{repo.refs['main']} {len(repo.commits)}".encode()).hexdigest()
            repo.commits[sha] = {p: (data, p.endswith(LFS_SUFFIXES)) for p, data in files.items()}
            repo.refs["main"] = sha
        return sha

    def files(self, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        repo = self.repos[repo_id]
        return {p: data for p, (data, _) in repo.commits[repo.resolve(revision)].items()}


def _key(kind: str, repo_id: str) -> str:
    """A repo's key in ``state.repos``: a model's id, ``datasets/`` before a dataset's (its URLs' prefix)."""
    return repo_id if kind == "models" else f"{kind}/{repo_id}"


def _handler(state: HubState, base_url: str) -> type[BaseHTTPRequestHandler]:
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

        def _hostile_body(self, data: bytes, headers: dict) -> None:
            """The weights as a hostile server sends them: endless zeros under a 10 GiB Content-Length,
            or the true bytes dripped; both loops bounded, and ended by a client that hangs up."""
            endless = state.hostile.get("endless", 0)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(10 << 30 if endless else len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            chunks = (b"\0" * 65536 for _ in range(endless // 65536)) if endless else (bytes([b]) for b in data[:600])
            try:
                for chunk in chunks:
                    if not endless:
                        threading.Event().wait(state.hostile["drip"])
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    state.sent += len(chunk)
            except OSError:
                pass  # the client hung up: what the test wants
            self.close_connection = True

        def _json(self, code: int, obj, headers: dict | None = None) -> None:
            self._send(code, json.dumps(obj).encode(), headers)

        def _error(self, code: int, error_code: str, message: str) -> None:
            """The headers ``huggingface_hub`` turns into RepositoryNotFoundError, RevisionNotFoundError..."""
            self._json(code, {"error": message}, {"X-Error-Code": error_code, "X-Error-Message": message})

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length", 0) or 0)
            return self.rfile.read(n) if n else b""

        def _route(self, pattern: str) -> list[str] | None:
            m = re.fullmatch(pattern, urlparse(self.path).path)
            return [unquote(g) if g else "" for g in m.groups()] if m else None

        def _snapshot(self, repo_id: str, revision: str) -> tuple[str, dict[str, tuple[bytes, bool]]] | None:
            """The commit id and files of ``repo_id`` at ``revision``, or None after sending the 404."""
            repo = state.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
                return None
            if revision == state.hostile.get("sha"):  # the lie it told: it serves main under that name
                revision = "main"
            sha = repo.resolve(revision)
            if sha is None:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
                return None
            return sha, repo.commits[sha]

        # ------------------------------------------------------------ routes
        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            state.requests.append(f"{self.command} {urlparse(self.path).path}")
            if r := self._route(r"/api/(models|datasets)/(.+?)/tree/([^/]+)(?:/(.*))?"):
                r = [_key(r[0], r[1]), *r[2:]]
                if (snap := self._snapshot(r[0], r[1])) is None:
                    return
                entries = []
                for p, (data, lfs) in sorted(snap[1].items()):
                    if not p.startswith(r[2]):
                        continue
                    e = {"type": "file", "path": p, "size": len(data), "oid": git_blob_id(data)}
                    if lfs:
                        e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 130}
                    entries.append(e)
                for p, size in state.hostile.get("listed", {}).items():
                    entries.append({"type": "file", "path": p, "size": size, "oid": "0" * 40})
                if "size" in state.hostile:
                    for e in entries:
                        e["size"] = state.hostile["size"]
                return self._json(200, entries)
            if r := self._route(r"/api/(models|datasets)/(.+?)(?:/revision/([^/]+))?"):
                r = [_key(r[0], r[1]), *r[2:]]
                if state.hostile.get("fail_first", 0) > 0:
                    state.hostile["fail_first"] -= 1
                    return self._json(500, {"error": "Internal Server Error"})
                if (snap := self._snapshot(r[0], r[1] or "main")) is None:
                    return
                siblings = [{"rfilename": p} for p in sorted(snap[1])]
                sha = state.hostile.get("sha", snap[0])
                return self._json(
                    200, {"id": r[0], "modelId": r[0], "sha": sha, "private": False, "siblings": siblings}
                )
            if r := self._route(r"/(.+?)/resolve/([^/]+)/(.+)"):
                if (snap := self._snapshot(r[0], r[1])) is None:
                    return
                if r[2] not in snap[1]:
                    return self._error(404, "EntryNotFound", f"{r[2]} does not exist at {r[1]}")
                data, lfs = snap[1][r[2]]
                headers = {"X-Repo-Commit": state.hostile.get("sha", snap[0]), "ETag": f'"{git_blob_id(data)}"'}
                if lfs:
                    headers["X-Linked-Etag"] = f'"{hashlib.sha256(data).hexdigest()}"'
                    headers["X-Linked-Size"] = str(len(data))
                if lfs and self.command == "GET" and {"endless", "drip"} & set(state.hostile):
                    return self._hostile_body(data, headers)
                return self._send(200, data, headers, ctype="application/octet-stream")
            self._json(404, {"error": f"no route for GET {self.path}"})

        def do_PUT(self) -> None:
            state.requests.append(f"PUT {urlparse(self.path).path}")
            if not (r := self._route(r"/lfs-upload/([0-9a-f]{64})")):
                return self._json(404, {"error": f"no route for PUT {self.path}"})
            data = self._body()
            if hashlib.sha256(data).hexdigest() != r[0]:
                return self._json(400, {"error": "sha256 mismatch"})
            state.blobs[r[0]] = data
            self._send(200)

        def do_POST(self) -> None:
            state.requests.append(f"POST {urlparse(self.path).path}")
            body = self._body()
            if self._route(r"/api/repos/create") is not None:
                req = json.loads(body)
                repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
                repo_id = _key(f"{req.get('type') or 'model'}s", repo_id)
                with state.lock:
                    if repo_id in state.repos:
                        return self._json(
                            409, {"error": "You already created this model repo", "url": f"{base_url}/{repo_id}"}
                        )
                    state.repos[repo_id] = _Repo(repo_id)
                return self._json(200, {"url": f"{base_url}/{repo_id}", "name": repo_id})
            if self._route(r"/api/validate-yaml") is not None:
                errors = [{"message": m} for m in validate_card_metadata(json.loads(body)["content"])]
                return self._json(400 if errors else 200, {"errors": errors, "warnings": []})
            if r := self._route(r"/api/(models|datasets)/(.+?)/preupload/([^/]+)"):
                r = [_key(r[0], r[1]), *r[2:]]
                if self._snapshot(r[0], r[1]) is None:
                    return
                files = [
                    {
                        "path": f["path"],
                        "uploadMode": "lfs" if f["path"].endswith(LFS_SUFFIXES) else "regular",
                        "shouldIgnore": False,
                    }
                    for f in json.loads(body)["files"]
                ]
                return self._json(200, {"files": files})
            if self._route(r"/(.+?)\.git/info/lfs/objects/batch"):
                objects = []
                for o in json.loads(body)["objects"]:
                    entry = {"oid": o["oid"], "size": o["size"]}
                    if o["oid"] not in state.blobs:
                        entry["actions"] = {"upload": {"href": f"{base_url}/lfs-upload/{o['oid']}", "header": {}}}
                    objects.append(entry)
                return self._json(200, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"})
            if r := self._route(r"/api/(models|datasets)/(.+?)/commit/([^/]+)"):
                return self._commit(_key(r[0], r[1]), r[2], body)
            self._json(404, {"error": f"no route for POST {self.path}"})

        def _commit(self, repo_id: str, branch: str, body: bytes) -> None:
            """Apply an NDJSON commit (header, file, lfsFile, deletedFile lines) on top of ``branch``."""
            if branch != "main":
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {branch} (only main here)")
            with state.lock:
                if (snap := self._snapshot(repo_id, branch)) is None:
                    return
                files = dict(snap[1])
                for line in filter(str.strip, body.decode().splitlines()):
                    item = json.loads(line)
                    key, value = item["key"], item["value"]
                    if key == "file":
                        files[value["path"]] = (base64.b64decode(value["content"]), False)
                    elif key == "lfsFile":
                        if value["oid"] not in state.blobs:
                            return self._json(400, {"error": f"LFS object {value['oid']} was never uploaded"})
                        files[value["path"]] = (state.blobs[value["oid"]], True)
                    elif key == "deletedFile":
                        files.pop(value["path"], None)
                repo = state.repos[repo_id]
                sha = hashlib.sha1(f"{snap[0]} {len(repo.commits)}".encode()).hexdigest()
                repo.commits[sha] = files
                repo.refs["main"] = sha
            url = f"{base_url}/{repo_id}/commit/{sha}"
            self._json(200, {"commitUrl": url, "commitOid": sha, "pullRequestUrl": None})

    return Handler


class HubServer:
    """``with HubServer() as hub:`` serves on a free 127.0.0.1 port; ``hub.url`` goes in ``HF_ENDPOINT``."""

    def __init__(self) -> None:
        self.state = HubState()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._server.RequestHandlerClass = _handler(self.state, self.url)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
