"""Network git remotes on 127.0.0.1 for push tests: a real `git daemon` and smart HTTP.

`git_daemon(base)` serves `base/remote.git` over git:// with receive-pack on (anyone may
push); `http_remote(base, user, password)` serves it through `git http-backend` behind
basic authentication. Both are started by the test, waited for, and stopped after it.
A remote's refs are read from its repository on disk, never through the server.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = "remote.git"


@dataclass(frozen=True)
class Remote:
    url: str
    port: int
    git_dir: Path

    def refs(self) -> dict[str, str]:
        """What the remote's repository holds, read from disk: ref -> object."""
        out = subprocess.run(
            [
                "git",
                "--git-dir",
                str(self.git_dir),
                "for-each-ref",
                "--format=%(refname) %(objectname)",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return dict(line.split(" ", 1) for line in out.splitlines())


def bare_repository(base: Path, seed: Path) -> Path:
    """`base/remote.git`, holding `seed`'s main branch (pushed by path, before any server)."""
    git_dir = base / REPO
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    subprocess.run(["git", "-C", str(seed), "push", "-q", str(git_dir), "main"], check=True)
    subprocess.run(
        ["git", "--git-dir", str(git_dir), "config", "http.receivepack", "true"], check=True
    )
    return git_dir


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after 120 s")


@contextlib.contextmanager
def git_daemon(base: Path, seed: Path) -> Iterator[Remote]:
    """A `git daemon` on 127.0.0.1 serving `base/remote.git`, which anyone may push to."""
    with serve_git(bare_repository(base, seed)) as remote:
        yield remote


@contextlib.contextmanager
def serve_git(git_dir: Path) -> Iterator[Remote]:
    """A `git daemon` on 127.0.0.1 serving the bare repository `git_dir` (whoever owns
    it: safe.directory is `*` for the daemon's receive-pack), which anyone may push to."""
    port = free_port()
    argv = ["git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr"]
    argv += ["--listen=127.0.0.1", f"--port={port}", f"--base-path={git_dir.parent}"]
    env = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory"}
    env["GIT_CONFIG_VALUE_0"] = "*"
    with open(git_dir.parent / f"daemon-{port}.log", "wb") as log:
        daemon = subprocess.Popen(
            [*argv, str(git_dir.parent)], stdout=log, stderr=log, env=env, start_new_session=True
        )
    try:
        wait_for_port(port, daemon)
        yield Remote(f"git://127.0.0.1:{port}/{git_dir.name}", port, git_dir)
    finally:
        daemon.terminate()
        daemon.wait(10)


def _handler(root: Path, user: str, password: str) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    backend = shutil.which("git") or "git"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            env = {
                "PATH": os.environ.get("PATH", os.defpath),
                "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "REMOTE_USER": user,
                "REMOTE_ADDR": "127.0.0.1",
            }
            done = subprocess.run(
                [backend, "http-backend"], input=body, env=env, capture_output=True
            )
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            status, headers = 200, []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def self_signed(base: Path) -> Path | None:
    """A certificate and key for 127.0.0.1 (one PEM file) made by openssl; None without it."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    pem = base / "tls.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(pem),
            "-out",
            str(base / "tls-cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    pem.write_text(pem.read_text() + (base / "tls-cert.pem").read_text())
    return pem


@contextlib.contextmanager
def http_remote(
    base: Path, seed: Path, user: str, password: str, tls: Path | None = None
) -> Iterator[Remote]:
    """Smart HTTP (`git http-backend`) on 127.0.0.1 serving `base/remote.git` to whoever
    sends `user` and `password` (basic authentication); anyone else gets 401. With `tls`
    (`self_signed`'s PEM) it is HTTPS (git trusts it through GIT_SSL_CAINFO)."""
    git_dir = bare_repository(base, seed)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(base, user, password))
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = int(server.server_address[1])
    scheme = "https" if tls is not None else "http"
    try:
        wait_for_port(port)
        yield Remote(f"{scheme}://127.0.0.1:{port}/{REPO}", port, git_dir)
    finally:
        server.shutdown()
        server.server_close()
