#!/usr/bin/env python3
"""cdp.py: drive headless Chromium through the DevTools protocol, with the
standard library only (a small WebSocket client), for the dashboard test:
load a page at a window size and pixel density, evaluate JavaScript in it
(click, read the DOM), wait for conditions, take PNG screenshots, and
collect the page's uncaught exceptions and console errors.

    with Browser(chromium_path, profile_dir) as b:   # extra=Browser.WEBGL for WebGL
        p = b.page()
        p.viewport(800, 900, dpr=2)
        p.goto("http://127.0.0.1:8080/#/jobs/ID")
        p.wait("document.querySelector('#plot').dataset.drawn === '1'")
        p.screenshot("shot.png")
        errors = p.errors
"""
import base64
import json
import os
import socket
import struct
import subprocess
import time
import urllib.request


class WebSocket:
    """A client WebSocket (RFC 6455): text frames out (masked), text or
    binary frames in, fragmented or not."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = self.s.recv(4096)
            if not d:
                raise OSError("websocket handshake: connection closed")
            head += d
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("websocket handshake: " + head.decode("latin-1"))

    def _read(self, n):
        while len(self.buf) < n:
            d = self.s.recv(1 << 20)
            if not d:
                raise OSError("websocket closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.s.sendall(head + mask + masked)

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            op = b0 & 0x0F
            if op == 0x8:
                raise OSError("websocket closed by the browser")
            if op in (0x9, 0xA):  # ping, pong: not used by DevTools
                continue
            msg += data
            if b0 & 0x80:
                return msg.decode("utf-8", "replace")

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Page:
    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 0
        self.errors = []  # uncaught exceptions and console errors
        self.call("Runtime.enable")
        self.call("Page.enable")

    def _event(self, m):
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: %s %s" % (d.get("text"), (d.get("exception") or {}).get("description", "")))
        elif meth == "Runtime.consoleAPICalled" and p.get("type") == "error":
            self.errors.append("console.error: %s" % [a.get("value", a.get("description")) for a in p.get("args", [])])

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == mid:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self._event(m)

    def eval(self, expr, await_promise=False):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=await_promise)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr[:80], r["exceptionDetails"].get("text")))
        return r.get("result", {}).get("value")

    def viewport(self, width, height, dpr=1):
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=dpr, mobile=False)

    def goto(self, url):
        self.call("Page.navigate", url=url)
        self.wait("document.readyState === 'complete'")

    def wait(self, expr, timeout=30):
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                if self.eval("!!(%s)" % expr):
                    return True
            except RuntimeError:
                pass
            time.sleep(0.1)
        raise TimeoutError("waited %d s for %s" % (timeout, expr))

    def screenshot(self, path, full=True):
        params = {"format": "png"}
        if full:
            m = self.call("Page.getLayoutMetrics")
            cs = m.get("cssContentSize") or m.get("contentSize")
            params["clip"] = {"x": 0, "y": 0, "width": cs["width"], "height": cs["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


class Browser:
    FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--remote-debugging-port=0", "--remote-allow-origins=*"]

    # software WebGL (SwiftShader), for pages that draw with it (the viewer)
    WEBGL = ["--use-gl=swiftshader", "--enable-unsafe-swiftshader"]

    def __init__(self, chromium, profile, log=None, extra=()):
        self.profile = profile
        os.makedirs(profile, exist_ok=True)
        self.log = open(log or os.devnull, "ab")
        self.p = subprocess.Popen([chromium] + self.FLAGS + list(extra) + ["--user-data-dir=" + profile, "about:blank"],
                                  stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        port_file = os.path.join(profile, "DevToolsActivePort")
        for _ in range(600):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            if self.p.poll() is not None:
                raise RuntimeError("chromium exited %s" % self.p.returncode)
            time.sleep(0.05)
        self.port = int(open(port_file).read().split()[0])

    def page(self):
        base = "http://127.0.0.1:%d" % self.port
        req = urllib.request.Request(base + "/json/new?about:blank", method="PUT")
        info = json.load(urllib.request.urlopen(req, timeout=30))
        return Page(info["webSocketDebuggerUrl"])

    def close(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()
