"""A small stdio client of a language server (JSON-RPC 2.0 with Content-Length framing), enough to
drive yaml-language-server as an editor does: initialize, answer its configuration requests, open
documents, collect the diagnostics it publishes, and ask for hovers.

The server is the pinned one `make lsp` installs (tools/lsp/package.json and its lock file, `npm ci`):
no network at test time.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path

from tests.conftest import ROOT

SERVER = ROOT / "tools" / "lsp" / "node_modules" / "yaml-language-server" / "bin" / "yaml-language-server"
# What an editor sends: validation and hover on, no schema store (it would fetch a catalogue over the
# network); the schemas come from each document's `# yaml-language-server: $schema=...` modeline.
SETTINGS = {"yaml": {"validate": True, "hover": True, "completion": True, "schemaStore": {"enable": False},
                     "schemas": {}, "format": {"enable": False}}}


class LanguageServerError(RuntimeError):
    pass


class Client:
    """One yaml-language-server process, spoken to over its stdin and stdout."""

    def __init__(self, root: Path = ROOT, timeout: float = 60.0):
        node = shutil.which("node")
        if node is None or not SERVER.exists():
            raise LanguageServerError(f"yaml-language-server is not installed (node: {node}, {SERVER}): run `make lsp`")
        self.timeout = timeout
        self.proc = subprocess.Popen([node, str(SERVER), "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.inbox: queue.Queue = queue.Queue()
        self.diagnostics: dict[str, list[dict]] = {}
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(), "workspaceFolders": None,
            "capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]},
                                              "publishDiagnostics": {}},
                             "workspace": {"configuration": True}},
        })
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.inbox.put(json.loads(out.read(length)))

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict):
        self.next_id += 1
        mine = self.next_id
        self._send({"id": mine, "method": method, "params": params})
        while True:
            message = self._take(time.monotonic() + self.timeout)
            if message.get("id") == mine and "method" not in message:
                if "error" in message:
                    raise LanguageServerError(f"{method}: {message['error']}")
                return message.get("result")

    def _take(self, deadline: float) -> dict:
        """The next response; server requests and notifications that arrive first are handled."""
        while True:
            message = self._next(deadline)
            if "method" not in message:
                return message

    def _next(self, deadline: float) -> dict:
        """The next message, after answering it if it is a server request or recording it if it
        publishes diagnostics."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise LanguageServerError(f"no answer within {self.timeout} s; stderr: {self._stderr()}")
        try:
            message = self.inbox.get(timeout=left)
        except queue.Empty:
            raise LanguageServerError(f"no answer within {self.timeout} s; stderr: {self._stderr()}") from None
        if message is None:
            raise LanguageServerError(f"the server exited; stderr: {self._stderr()}")
        method = message.get("method")
        if method is not None and "id" in message:  # a request of the server's
            result = None
            if method == "workspace/configuration":
                result = [SETTINGS.get(item.get("section", ""), SETTINGS["yaml"])
                          for item in message["params"]["items"]]
            self._send({"id": message["id"], "result": result})
        elif method == "textDocument/publishDiagnostics":
            self.diagnostics[message["params"]["uri"]] = message["params"]["diagnostics"]
        return message

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            return "(server running)"
        return self.proc.stderr.read().decode("utf-8", "replace")[-2000:]

    def open(self, uri: str, text: str) -> None:
        self.diagnostics.pop(uri, None)
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1,
                                                              "text": text}})

    def diagnostics_of(self, uris: list[str]) -> dict[str, list[dict]]:
        """The diagnostics the server publishes for each opened document (it publishes once per open)."""
        deadline = time.monotonic() + self.timeout
        while any(u not in self.diagnostics for u in uris):
            self._next(deadline)
        return {u: self.diagnostics[u] for u in uris}

    def hover(self, uri: str, line: int, character: int) -> str | None:
        """The hover text at a 0-based position, or None."""
        result = self.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                     "position": {"line": line, "character": character}})
        if not result:
            return None
        contents = result["contents"]
        return contents["value"] if isinstance(contents, dict) else str(contents)

    def close(self) -> None:
        try:
            self.request("shutdown", {})
            self.notify("exit", {})
            self.proc.wait(timeout=10)
        except (LanguageServerError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()
