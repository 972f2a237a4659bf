"""Headless Chromium (Debian's `chromium`) driven through the DevTools protocol over
--remote-debugging-pipe (fd 3: commands in, fd 4: replies and events out, NUL-separated JSON):
no WebSocket and no package beyond the standard library."""
import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--remote-debugging-pipe"]


def _high_fd(fd):
    """fd moved to a number of 10 or more."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """One Chromium with one page showing `url`. Use as a context manager."""

    def __init__(self, url, width=1400, height=900, timeout=60):
        if not CHROMIUM:
            pytest.fail("chromium is not installed (make deps installs it)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="pp_chromium_")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Chromium's ends above fd 4, so that placing them at 3 and 4 overwrites neither.
        to_chrome_r, from_chrome_w = (_high_fd(to_chrome_r), _high_fd(from_chrome_w))
        # bash (dash takes one-digit fds only) puts the two pipe ends at fds 3 and 4 where Chromium expects them.
        cmd = (f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} '
               f'{to_chrome_r}<&- {from_chrome_w}>&-')
        self.proc = subprocess.Popen(
            ["bash", "-c", cmd, CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            pass_fds=(to_chrome_r, from_chrome_w), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=None if os.environ.get("PP_CHROMIUM_LOG") else subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._replies = {}
        self.events = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target,
                                     flatten=True)["sessionId"]
            self.page("Page.enable")
            self.page("Network.enable")
            self.page("Runtime.enable")
            self.page("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
            self.page("Page.navigate", url=url)
            self.wait_event("Page.loadEventFired")
        except BaseException:
            self.close()
            raise

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                m = json.loads(msg)
                with self._cond:
                    if "id" in m:
                        self._replies[m["id"]] = m
                    else:
                        self.events.append(m)
                    self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    _closed = False

    def _send(self, method, session=None, **params):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        with self._cond:
            while self._next_id not in self._replies:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    pytest.fail(f"chromium: no reply to {method}")
                self._cond.wait(left)
            reply = self._replies.pop(self._next_id)
        if "error" in reply:
            pytest.fail(f"chromium: {method} failed: {reply['error']}")
        return reply.get("result", {})

    def call(self, method, **params):
        """A command to the browser."""
        return self._send(method, None, **params)

    def page(self, method, **params):
        """A command to the page."""
        return self._send(method, self.session, **params)

    def wait_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while True:
                for e in self.events:
                    if e.get("method") == method:
                        return e
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    pytest.fail(f"chromium: no {method} event")
                self._cond.wait(left)

    def eval(self, expression):
        """The value of a JavaScript expression in the page (JSON-serializable values)."""
        r = self.page("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            pytest.fail(f"chromium: {expression!r} threw: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_js(self, expression, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.eval(expression)
            if v:
                return v
            time.sleep(0.1)
        pytest.fail(f"timed out waiting for {expression!r} in the page")

    def click(self, x, y):
        for kind in ("mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def move(self, x, y):
        self.page("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def type_text(self, text):
        self.page("Input.insertText", text=text)

    def key(self, key, code, keycode):
        for kind in ("keyDown", "keyUp"):
            self.page("Input.dispatchKeyEvent", type=kind, key=key, code=code,
                      windowsVirtualKeyCode=keycode)

    def screenshot(self, path):
        data = self.page("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def requested_urls(self):
        with self._cond:
            return [e["params"]["request"]["url"] for e in self.events
                    if e.get("method") == "Network.requestWillBeSent"]

    def close(self):
        try:
            self._next_id += 1
            os.write(self._to_chrome, json.dumps({"id": self._next_id,
                                                  "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            os.close(self._to_chrome)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(5)
        os.close(self._from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
