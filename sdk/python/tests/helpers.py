"""A real `ams serve` for the tests: built from this repository, started
once per test run on a free port with its own data directory, and stopped
at exit.

The accounts are made with the ams CLI on the same data directory before
the server starts:

- sdk@example.com: enterprise plan with a high rate limit (most tests), a
  password (the OAuth login), a key with read, write, messages and
  integrations, a read-only key (403 tests), an assistant and an OAuth
  client;
- limited@example.com: standard plan, 60 requests a minute (the 429 test);
- the dev user that `ams serve --dev` prints, whose key and assistant the
  examples use.

Set AMS_BINARY to use a binary already built instead of `go build`.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SDK_DIR = os.path.dirname(HERE)  # sdk/python
REPO = os.path.dirname(os.path.dirname(SDK_DIR))
EMAIL = "sdk@example.com"
PASSWORD = "sdk-test-password-4821"
LIMITED_EMAIL = "limited@example.com"
REDIRECT_URI = "http://127.0.0.1:9/callback"

sys.path.insert(0, SDK_DIR)

import ams  # noqa: E402


class Server:
    """The running server and the credentials made for the tests."""

    base_url: str
    key: str  # sdk@example.com: read,write,messages,integrations
    read_key: str  # sdk@example.com: read only
    limited_key: str  # limited@example.com, standard plan
    assistant_id: str  # sdk@example.com's
    dev_key: str
    dev_assistant_id: str
    dev_password: str
    oauth_client_id: str
    oauth_client_secret: str
    data_dir: str
    binary: str

    def __init__(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="ams-pysdk-")
        self.data_dir = os.path.join(self.tmp, "data")
        self.binary = os.environ.get("AMS_BINARY") or self._build()
        self.proc: Optional[subprocess.Popen] = None
        try:
            self._accounts()
            self._start()
        except BaseException:
            self.stop()
            raise

    def _build(self) -> str:
        out = os.path.join(self.tmp, "ams")
        r = subprocess.run(["go", "build", "-o", out, "./cmd/ams"], cwd=REPO, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("go build ./cmd/ams failed:\n" + r.stdout + r.stderr)
        return out

    def cli(self, *args: str, stdin: Optional[str] = None) -> str:
        """Run the ams CLI on the server's data directory; its stdout."""
        r = subprocess.run(
            [self.binary, "--data-dir", self.data_dir, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode != 0:
            raise RuntimeError("ams %s failed:\n%s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout.strip()

    def _accounts(self) -> None:
        os.makedirs(self.data_dir)
        self.cli("users", "create", "--email", EMAIL, "--plan", "enterprise", "--password-stdin", stdin=PASSWORD + "\n")
        self.cli("users", "update", "--email", EMAIL, "--rpm", "100000", "--rpd", "10000000")
        self.key = self.cli("keys", "create", "--email", EMAIL, "--name", "sdk tests", "--permissions", "read,write,messages,integrations")
        self.read_key = self.cli("keys", "create", "--email", EMAIL, "--name", "read only", "--permissions", "read")
        self.assistant_id = self.cli("assistants", "create", "--email", EMAIL, "--name", "SDK Assistant")
        out = self.cli("oauth-clients", "create", "--email", EMAIL, "--name", "SDK Test App", "--redirect-uri", REDIRECT_URI)
        self.oauth_client_id = re.search(r"client_id (cli_\w+)", out).group(1)  # type: ignore[union-attr]
        self.oauth_client_secret = re.search(r"client_secret (ams_cs_\w+)", out).group(1)  # type: ignore[union-attr]
        self.cli("users", "create", "--email", LIMITED_EMAIL, "--plan", "standard")
        self.limited_key = self.cli("keys", "create", "--email", LIMITED_EMAIL, "--name", "limited", "--permissions", "read")

    def _start(self) -> None:
        self.log_path = os.path.join(self.tmp, "serve.log")
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [
                self.binary, "serve", "--dev",
                "--addr", "127.0.0.1:0",
                "--data-dir", self.data_dir,
                "--webhook-retry-schedule", "0s,1s",
                "--shutdown-timeout", "10s",
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=self.tmp,
        )
        log.close()
        lines: List[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for raw in self.proc.stdout:
                if not ready.is_set():
                    lines.append(raw.decode("utf-8", "replace"))
                    if "Hello! What can you do?" in lines[-1]:
                        ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or self.proc.poll() is not None:
            raise RuntimeError("ams serve did not start:\n%s\n%s" % ("".join(lines), self.logs()))
        out = "".join(lines)

        def field(pattern: str) -> str:
            m = re.search(pattern, out)
            if not m:
                raise RuntimeError("%s not in the dev output:\n%s" % (pattern, out))
            return m.group(1)

        self.base_url = field(r"ams is running in dev mode at (http://\S+)")
        self.dev_key = field(r"API key\s+(ams_sk_\w+)")
        self.dev_assistant_id = field(r"assistant\s+(ast_\w+)")
        self.dev_password = field(r"password\s+(\S+)")

    def logs(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-5000:]
        except OSError:
            return ""

    def client(self, key: Optional[str] = None, **kw: Any) -> ams.Client:
        return ams.Client(api_key=key or self.key, base_url=self.base_url, **kw)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


_server: Optional[Server] = None
_lock = threading.Lock()


def server() -> Server:
    """The test run's server, started on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = Server()
            atexit.register(_server.stop)
        return _server


# -- local HTTP servers ------------------------------------------------------


class Recorded:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method, self.path, self.headers, self.body = method, path, headers, body

    def header(self, name: str) -> str:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return ""


class LocalServer:
    """A threaded http.server on 127.0.0.1:<free port> whose answers come
    from ``handle(recorded) -> (status, headers, body)``; it records every
    request."""

    def __init__(self, handle: Callable[[Recorded], "tuple[int, Dict[str, str], bytes]"]) -> None:
        self.requests: List[Recorded] = []
        self.cond = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                rec = Recorded(self.command, self.path, dict(self.headers.items()), body)
                with outer.cond:
                    outer.requests.append(rec)
                    outer.cond.notify_all()
                status, headers, out = handle(rec)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait_for(self, pred: Callable[[List[Recorded]], bool], timeout: float = 15) -> List[Recorded]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred(self.requests):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting; got %d requests" % len(self.requests))
                self.cond.wait(left)
            return list(self.requests)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def proxy_to(base_url: str, rec: Recorded) -> "tuple[int, Dict[str, str], bytes]":
    """Forward a recorded request to the real server and return its answer."""
    headers = {k: v for k, v in rec.headers.items() if k.lower() not in ("host", "content-length", "connection")}
    req = urllib.request.Request(base_url + rec.path, data=rec.body or None, headers=headers, method=rec.method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, rh, body = resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as e:
        status, rh, body = e.code, dict(e.headers.items()), e.read()
    keep = {k: v for k, v in rh.items() if k.lower() not in ("content-length", "connection", "transfer-encoding", "date")}
    return status, keep, body


def json_answer(status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> "tuple[int, Dict[str, str], bytes]":
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return status, h, json.dumps(body).encode()


def free_port_closed() -> int:
    """A port nothing listens on."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port



# -- a proxy that cuts event streams ---------------------------------------

Cut = Callable[[bytes], Optional[int]]


def _nth(data: bytes, pattern: bytes, n: int) -> int:
    """The index of the n-th (from 1) occurrence of pattern, or -1."""
    i = -1
    for _ in range(n):
        i = data.find(pattern, i + 1)
        if i < 0:
            return -1
    return i


def cut_inside_chunk(n: int) -> Cut:
    """Cuts one byte into the text of the n-th message.delta: inside an
    HTTP chunk, in the middle of a line (the server writes each event as
    one chunk)."""

    def cut(body: bytes) -> Optional[int]:
        i = _nth(body, b'"delta":"', n)
        pos = i + len(b'"delta":"') + 1
        return pos if i >= 0 and pos <= len(body) else None

    return cut


def cut_between_events(n: int) -> Cut:
    """Cuts after the n-th event and its chunk: between two events, on a
    chunk boundary."""

    def cut(body: bytes) -> Optional[int]:
        i = _nth(body, b"\n\n\r\n", n)
        return i + 4 if i >= 0 else None

    return cut


def cut_mid_event(n: int) -> Cut:
    """Cuts after the ``event:`` line of the n-th message.delta: the id and
    the name of an event arrived, its data and blank line did not."""

    def cut(body: bytes) -> Optional[int]:
        p = b"\nevent: message.delta\n"
        i = _nth(body, p, n)
        return i + len(p) if i >= 0 else None

    return cut


DROP_ANSWER = -2


def drop_the_answer(body: bytes) -> Optional[int]:
    """Closes the connection before any byte of the answer: the request
    was sent, its answer never came."""
    return DROP_ANSWER


class CuttingProxy:
    """A TCP proxy on 127.0.0.1:<free port> in front of ``upstream`` (an
    http:// base URL). Each answer that is an event stream takes the next
    of ``cuts``: the proxy forwards its bytes (status line, headers, chunk
    framing and all) up to the offset in the body that the cut names, then
    closes both connections, as a dropped network would (``drop_the_answer``
    sends none of the answer). Once the cuts are used up, streams pass
    whole. ``cuts_done`` counts the cuts made."""

    def __init__(self, upstream: str, cuts: List[Cut]) -> None:
        host, _, port = upstream.split("://", 1)[1].rstrip("/").partition(":")
        self.upstream = (host, int(port or 80))
        self.cuts = list(cuts)
        self.cuts_done = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _next_cut(self) -> Optional[Cut]:
        with self.lock:
            return self.cuts.pop(0) if self.cuts else None

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            try:
                up = socket.create_connection(self.upstream, timeout=30)
            except OSError:
                conn.close()
                continue
            up.settimeout(None)
            threading.Thread(target=self._requests, args=(conn, up), daemon=True).start()
            threading.Thread(target=self._answers, args=(conn, up), daemon=True).start()

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _requests(self, conn: socket.socket, up: socket.socket) -> None:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    up.shutdown(socket.SHUT_WR)
                    return
                up.sendall(data)
        except OSError:
            self._close(conn, up)

    def _answers(self, conn: socket.socket, up: socket.socket) -> None:
        buf = b""
        sent = 0
        start = -1  # where the event stream's body begins in buf
        cut: Optional[Cut] = None
        try:
            while True:
                data = up.recv(65536)
                if not data:
                    break
                buf += data
                if start < 0:
                    i = buf.lower().find(b"content-type: text/event-stream")
                    j = buf.find(b"\r\n\r\n", i) if i >= 0 else -1
                    if j >= 0:
                        start = j + 4
                        cut = self._next_cut()
                if cut is not None and start >= 0:
                    pos = cut(buf[start:])
                    if pos is not None:
                        if pos >= 0:
                            conn.sendall(buf[sent : start + pos])
                        with self.lock:
                            self.cuts_done += 1
                        self._close(conn, up)
                        return
                conn.sendall(buf[sent:])
                sent = len(buf)
        except OSError:
            pass
        self._close(conn, up)

    def close(self) -> None:
        self.listener.close()


EVERYTHING_DIR = os.path.join(REPO, "mcp", "testdata", "everything")


def everything_server(t: Any) -> str:
    """Start the reference MCP server (@modelcontextprotocol/server-everything,
    installed by `npm ci --prefix mcp/testdata/everything`) in its
    streamableHttp mode, bound to 127.0.0.1 by its preload, until the test
    ends; return its MCP URL. Skips the test when node or the package is
    missing, unless AMS_REQUIRE_NODE_TESTS=1."""
    entry = os.path.join(EVERYTHING_DIR, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
    if shutil.which("node") is None or not os.path.exists(entry):
        msg = "node or @modelcontextprotocol/server-everything is missing: run `npm ci --prefix mcp/testdata/everything`"
        if os.environ.get("AMS_REQUIRE_NODE_TESTS") == "1":
            t.fail(msg)
        t.skipTest(msg)
    env = {"PATH": os.environ.get("PATH", ""), "PORT": "0", "HOME": tempfile.gettempdir()}
    proc = subprocess.Popen(["node", "--require", os.path.join(EVERYTHING_DIR, "bind-localhost.cjs"), entry, "streamableHttp"],
                            cwd=EVERYTHING_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t.addCleanup(lambda: (proc.kill(), proc.wait(), proc.stderr.close() if proc.stderr else None))
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("AMS_LISTENING "):
            port = int(line.split()[2])
            # Drain the rest so that the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
            return "http://127.0.0.1:%d/mcp" % port
    t.fail("the reference MCP server exited before listening")
    return ""
