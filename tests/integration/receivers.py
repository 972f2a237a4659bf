"""Loopback stand-ins for the upload backends (standard library only).

StudioReceiver implements Performance Studio's agent-facing contract as
docs/uploads.md describes it (health check, POST /api/v2/profiles with
411/413/422/400/200, gzip, gpid) and records every request. PyroscopeReceiver records
POST /ingest requests. Both bind 127.0.0.1 only and can be told to fail in the ways the tests
need: forced status codes, a non-JSON reply, a reply that never comes.
"""
import gzip
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# AgentMetadata fields Performance Studio requires (backends.md §3.2)
REQUIRED_METADATA = [
    "current_time", "spawn_time", "spawn_uptime_ms", "private_ip", "hostname", "cloud_provider",
    "processors", "memory_capacity_mb", "system_name", "os_name", "os_release", "kernel_release",
    "kernel_version", "hardware_type", "pid", "mac_address", "agent_version", "libc_type",
    "libc_version", "python_version", "run_mode", "deployment_type", "run_arguments",
]

HANG_LIMIT_S = 30  # a "hanging" reply is held at most this long


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    errors = None

    def handle_error(self, request, client_address):
        import traceback
        (self.errors if self.errors is not None else []).append(traceback.format_exc())


class _Base:
    def __init__(self, port=0):
        self.lock = threading.Lock()
        self.requests = []
        self.forced = []          # statuses to answer the next uploads with, in order
        self.hang = False         # uploads get no reply
        self.not_json = False     # uploads get 200 with a non-JSON body
        self.release = threading.Event()
        self.stopped = False
        self.conns = set()
        self.server = _Server(("127.0.0.1", port), self._handler_class())
        self.server.errors = self.errors = []
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        """Closes the port and every open (keep-alive) connection: the backend is gone."""
        self.stopped = True
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def record(self, entry):
        with self.lock:
            self.requests.append(entry)

    def take_forced(self):
        with self.lock:
            return self.forced.pop(0) if self.forced else None

    def uploads(self):
        with self.lock:
            return [r for r in self.requests if r["method"] == "POST"]

    def _handler_class(self):
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):
                pass

            def setup(self):
                super().setup()
                with outer.lock:
                    outer.conns.add(self.connection)

            def finish(self):
                with outer.lock:
                    outer.conns.discard(self.connection)
                super().finish()

            def reply(self, status, obj=None, raw=None, ctype="application/json"):
                data = raw if raw is not None else (b"" if obj is None else
                                                    json.dumps(obj).encode())
                # recorded before the client can see the reply: no race with the test
                cur = getattr(self, "current", None)
                if cur is not None and "status" not in cur:
                    cur["status"] = status
                    outer.record(cur)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return status

            def do_GET(self):
                if outer.stopped:
                    self.close_connection = True
                    return
                outer.handle(self, "GET")

            def do_POST(self):
                if outer.stopped:
                    self.close_connection = True
                    return
                outer.handle(self, "POST")

        return H

    @staticmethod
    def parse(h, method):
        u = urlsplit(h.path)
        headers = {k.lower(): v for k, v in h.headers.items()}
        return {"method": method, "path": u.path, "raw_query": u.query,
                "query": {k: v[0] for k, v in parse_qs(u.query, keep_blank_values=True).items()},
                "headers": headers, "time": time.monotonic()}

    def read_body(self, h):
        n = int(h.headers.get("Content-Length", "0"))
        data = b""
        while len(data) < n:
            chunk = h.rfile.read(n - len(data))
            if not chunk:
                break
            data += chunk
        return data

    def hold(self, h):
        """Never answers: holds the connection until released or HANG_LIMIT_S."""
        self.release.wait(HANG_LIMIT_S)
        h.close_connection = True


class StudioReceiver(_Base):
    def __init__(self, tokens=("secret-token-123",), port=0, max_content_len=4 << 20):
        self.tokens = set(tokens)
        self.max_content_len = max_content_len
        self.next_gpid = 1000
        self.gpids = set()
        super().__init__(port)

    def handle(self, h, method):
        r = self.parse(h, method)
        h.current = r
        status = self._handle(h, method, r)
        if "status" not in r:  # no reply was sent
            r["status"] = status
            self.record(r)

    def _handle(self, h, method, r):
        hd = r["headers"]
        if method == "GET" and r["path"] in ("/api/v1/health_check", "/api/v2/health_check"):
            if ("gprofiler-api-key" in hd and "gprofiler-service-name" in hd
                    and hd["gprofiler-api-key"] not in self.tokens):
                return h.reply(400, {"message": "Invalid API key"})
            return h.reply(200, {"message": "ok"})
        if method != "POST" or r["path"] != "/api/v2/profiles":
            return h.reply(404, {"detail": "Not Found"})
        if "content-length" not in hd:
            h.close_connection = True
            return h.reply(411, "Length Required")
        if int(hd["content-length"]) > self.max_content_len:
            self.read_body(h)
            return h.reply(413, "Request Entity Too Large")
        raw = self.read_body(h)
        r["raw_len"] = len(raw)
        if self.hang:
            self.hold(h)
            return 0
        forced = self.take_forced()
        if forced:
            return h.reply(forced, {"message": f"forced {forced}"})
        body = gzip.decompress(raw) if "gzip" in hd.get("content-encoding", "") else raw
        try:
            data = json.loads(body.decode("utf-8"))
        except ValueError:
            return h.reply(422, {"detail": [{"msg": "invalid json"}]})
        r["json"] = data
        missing = [k for k in ("gprofiler-api-key", "gprofiler-service-name") if k not in hd]
        missing += [k for k in ("start_time", "profile", "gpid") if k not in data]
        if missing:
            return h.reply(422, {"detail": [{"loc": m, "msg": "field required"} for m in missing]})
        if hd["gprofiler-api-key"] not in self.tokens:
            return h.reply(400, {"message": "Invalid GPROFILER-SERVICE-NAME header"})
        profile = data["profile"]
        try:
            assert profile.startswith("#")
            header = json.loads(profile.split("\n", 1)[0][1:])
            md = header["metadata"]
            assert all(k in md for k in REQUIRED_METADATA)
            assert isinstance(md["run_arguments"], dict)
            gpid = data["gpid"]
            if gpid:
                assert int(gpid) in self.gpids
        except (AssertionError, ValueError, KeyError, TypeError):
            return h.reply(400, {"message": "Failed to parse v2 metadata"})
        if self.not_json:
            return h.reply(200, raw=b"<html>stored</html>", ctype="text/html")
        if gpid:
            new = int(gpid)
        else:
            self.next_gpid += 1
            new = self.next_gpid
            self.gpids.add(new)
        r["gpid_reply"] = new
        return h.reply(200, {"message": "ok", "gpid": new})

    def ok_uploads(self):
        return [r for r in self.uploads() if r["status"] == 200]


class PyroscopeReceiver(_Base):
    def handle(self, h, method):
        r = self.parse(h, method)
        h.current = r
        if method != "POST" or r["path"] != "/ingest":
            h.reply(404, {"code": "not_found", "message": "404"})
            return
        r["raw_body"] = self.read_body(h)
        r["body"] = r["raw_body"].decode("utf-8", "replace")
        forced = self.take_forced()
        if self.hang:
            self.hold(h)
            r["status"] = 0
            self.record(r)
        elif forced:
            h.reply(forced, {"code": "unknown", "message": f"forced {forced}"})
        else:
            h.reply(200, raw=b"")


def parse_pyroscope_name(name):
    """'app.cpu{k=v,k2=v2}' -> ('app.cpu', {k: v}) as Pyroscope's labelset.Parse reads it."""
    if "{" not in name:
        return name.strip(), {}
    app, rest = name.split("{", 1)
    assert rest.endswith("}"), name
    labels = {}
    for kv in rest[:-1].split(","):
        if not kv.strip():
            continue
        k, v = kv.split("=", 1)
        labels[k.strip()] = v.strip()
    return app.strip(), labels
