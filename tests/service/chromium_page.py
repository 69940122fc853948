"""A headless Chromium page driven over the DevTools protocol: navigate, click, read text, screenshot.

Just enough of CDP for the UI check (no Playwright on these machines): one browser process per
:class:`ChromiumPage`, stopped by ``close``.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
]


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class ChromiumPage:
    """One tab of a headless Chromium started with its own profile folder."""

    def __init__(self, binary: str, profile: Path, timeout: float = 30) -> None:
        self._process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._ids = itertools.count(1)
        self._ws = self._attach(timeout)

    def _attach(self, timeout: float) -> ClientConnection:
        assert self._process.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self._process.stderr.readline()
            found = re.search(r"DevTools listening on ws://([^/]+)/", line)
            if found:
                targets = httpx.get(f"http://{found.group(1)}/json/list", timeout=10).json()
                page = next(t for t in targets if t["type"] == "page")
                return connect(page["webSocketDebuggerUrl"], max_size=64 << 20, open_timeout=10)
        raise TimeoutError("chromium did not open its DevTools port")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one CDP command and return its result (events in between are skipped)."""
        message_id = next(self._ids)
        self._ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv(timeout=30))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def wait_for_text(self, needles: list[str], timeout: float = 30) -> str:
        """The page's visible text once it contains every needle; ``TimeoutError`` with the text otherwise."""
        deadline, text = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            text = self.evaluate("document.body ? document.body.innerText : ''") or ""
            if all(needle in text for needle in needles):
                return str(text)
            time.sleep(0.5)
        missing = [n for n in needles if n not in text]
        raise TimeoutError(f"page lacks {missing}; text was: {text[:2000]}")

    def click(self, element_id: str) -> None:
        self.evaluate(f"document.getElementById({json.dumps(element_id)}).click()")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
