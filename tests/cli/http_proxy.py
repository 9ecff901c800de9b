#!/usr/bin/env python3
"""http_proxy.py: a small forwarding HTTP proxy for the client tests, so
that `clsolve` (libcurl) going through $http_proxy / $https_proxy can be
seen doing it: CONNECT HOST:PORT opens a tunnel (https), an absolute-form
request (GET http://HOST:PORT/path) is sent on with the path alone and
`Connection: close`. Every request line is appended to LOG.

  http_proxy.py PORT_FILE LOG        (listens on 127.0.0.1, a free port)
Runs until killed. Standard library only.
"""
import socket
import socketserver
import sys
import threading
import urllib.parse


def relay(a, b):
    def pump(src, dst):
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                dst.sendall(d)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
    t = threading.Thread(target=pump, args=(b, a), daemon=True)
    t.start()
    pump(a, b)
    t.join()


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        c = self.request
        head = b""
        while b"\r\n\r\n" not in head:
            d = c.recv(65536)
            if not d:
                return
            head += d
        head, rest = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        with open(sys.argv[2], "a") as log:
            log.write("%s %s\n" % (method, target))
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            try:
                up = socket.create_connection((host, int(port)))
            except OSError:
                c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                up.sendall(rest)
            relay(c, up)
            up.close()
            return
        u = urllib.parse.urlsplit(target)
        up = socket.create_connection((u.hostname, u.port or 80))
        path = u.path + ("?" + u.query if u.query else "")
        keep = [l for l in lines[1:] if not l.lower().startswith(("proxy-", "connection:"))]
        up.sendall(("%s %s %s\r\n" % (method, path, version) + "\r\n".join(keep) +
                    "\r\nConnection: close\r\n\r\n").encode("latin-1") + rest)
        relay(c, up)
        up.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()
