"""Headless Chromium (Debian package `chromium`) driven through its DevTools protocol over
`--remote-debugging-pipe` (file descriptors 3 and 4, NUL-terminated JSON): no port, no
websocket library. Console errors are the protocol's own events (uncaught exceptions,
console.error, browser log errors), so an error thrown in any event handler is seen.
Screenshots are decoded with zlib and struct alone. Used by the pages' browser tests and
by benchmarks/bench_history_page.py.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIMEOUT_S = 60


def _above_9(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class DevTools:
    """One Chromium process and one page, driven over the DevTools pipe."""

    def __init__(self, profile: Path, log: Path):
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # The child sees our pipe ends as its fds 3 (commands in) and 4 (replies out); its
        # ends move above 9 first so the redirections below cannot clobber one another
        # (bash: dash takes single-digit fds only).
        to_chrome_r, from_chrome_w = (_above_9(fd) for fd in (to_chrome_r, from_chrome_w))
        shell = f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- ' \
                f"{from_chrome_w}>&-"
        argv = ["bash", "-c", shell, CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", f"--user-data-dir={profile}", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                "--hide-scrollbars", "about:blank"]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            pass_fds=(to_chrome_r, from_chrome_w))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._writer = os.fdopen(to_chrome_w, "wb")
        self._reader = from_chrome_r
        self._lock = threading.Condition()
        self._replies: dict[int, dict] = {}
        self.events: list[dict] = []
        self._closed = False
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable", self.session)
        self.call("Emulation.setDeviceMetricsOverride", self.session, width=1200, height=900,
                  deviceScaleFactor=1, mobile=False)

    def _read(self) -> None:
        buffer = bytearray()
        while chunk := os.read(self._reader, 1 << 20):
            buffer += chunk
            while (end := buffer.find(b"\0")) >= 0:
                message = json.loads(buffer[:end])
                del buffer[:end + 1]
                with self._lock:
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self.events.append(message)
                    self._lock.notify_all()
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def call(self, method: str, session: str | None = None, **params) -> dict:
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._writer.write(json.dumps(message).encode() + b"\0")
        self._writer.flush()
        with self._lock:
            if not self._lock.wait_for(lambda: ident in self._replies or self._closed,
                                       TIMEOUT_S):
                raise TimeoutError(f"no reply to {method} in {TIMEOUT_S} s")
            if ident not in self._replies:
                raise RuntimeError(f"Chromium exited during {method}")
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def wait_event(self, method: str) -> dict:
        with self._lock:
            found = self._lock.wait_for(
                lambda: next((e for e in self.events if e["method"] == method), None),
                TIMEOUT_S)
        if not found:
            raise TimeoutError(f"no {method} in {TIMEOUT_S} s")
        return found

    def page(self, method: str, **params) -> dict:
        return self.call(method, self.session, **params)

    def evaluate(self, expression: str):
        """The expression's value (a promise's once it settles)."""
        result = self.page("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """The whole page (beyond the viewport) as a PNG at `path`, named on stdout so a
        failed test's picture is found."""
        size = self.page("Page.getLayoutMetrics")["cssContentSize"]
        whole = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"],
                                "height": size["height"], "scale": 1})
        path.write_bytes(base64.b64decode(whole["data"]))
        print(f"screenshot: {path}")
        return path

    def errors(self) -> list[str]:
        """Uncaught exceptions, console.error/assert calls and browser log errors so far."""
        with self._lock:
            events = list(self.events)
        found = []
        for event in events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description")
                             or details.get("text"))
            elif event["method"] == "Runtime.consoleAPICalled" \
                    and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description")))
                                      for a in params.get("args", [])))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"].get("text"))
        return found

    def block_network(self) -> None:
        """Every request leaving the machine fails (and is still counted by `requests`)."""
        self.page("Network.setBlockedURLs", urls=[f"{scheme}://*" for scheme in
                                                  ("http", "https", "ws", "wss", "ftp")])

    def requests(self) -> list[str]:
        with self._lock:
            return [e["params"]["request"]["url"] for e in self.events
                    if e["method"] == "Network.requestWillBeSent"]

    def mouse(self, kind: str, x: float, y: float, **extra) -> None:
        self.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def close(self) -> None:
        try:
            self.call("Browser.close")
            self.process.wait(timeout=10)
        except (RuntimeError, TimeoutError, subprocess.TimeoutExpired, BrokenPipeError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the group Chromium leads
            self.process.wait()
        finally:
            self._writer.close()


@contextmanager
def history_page_loaded(page: Path, work: Path) -> Iterator[DevTools]:
    """Chromium (its profile and log in `work`) with the history page `page` loaded and
    every chart drawn, every request leaving the page blocked (and counted)."""
    devtools = DevTools(work / "profile", work / "chromium.log")
    try:
        devtools.block_network()
        devtools.page("Page.navigate", url=page.as_uri())
        devtools.wait_event("Page.loadEventFired")
        devtools.evaluate("""new Promise(done => (function wait() {  // every chart drawn
            if (document.getElementById('history').dataset.drawn) done();
            else setTimeout(wait, 20); })())""")
        yield devtools
    finally:
        devtools.close()


def png_pixels(data: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, rows without filter bytes) of an 8-bit RGB/RGBA,
    non-interlaced PNG, as Chromium writes screenshots."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, bytearray(), None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(bytes(idat)), width * bpp
    out, previous = bytearray(), bytearray(stride)
    for row in range(height):
        kind = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        out += line
        previous = line
    return width, height, bpp, bytes(out)


def ink(data: bytes) -> float:
    """Share of coloured pixels (the plotted series; grid, frame and text are grey)."""
    width, height, bpp, pixels = png_pixels(data)
    coloured = sum(1 for i in range(0, len(pixels), bpp)
                   if max(pixels[i:i + 3]) - min(pixels[i:i + 3]) > 40)
    return coloured / (width * height)
