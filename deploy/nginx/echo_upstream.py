#!/usr/bin/env python3
"""A stand-in for the Messages API behind nginx (scripts/check nginx): answers every request with
JSON saying what arrived, above all the X-Workspace-Id nginx took from attestd.

    python3 deploy/nginx/echo_upstream.py [PORT]   # 127.0.0.1 only; PORT 0 (default) picks one

Prints `listening on 127.0.0.1:PORT` once it accepts connections. Each request is also appended
as one JSON line to the file named by $ECHO_UPSTREAM_LOG, if set (to count what got through).
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "echo-upstream"

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        seen = {
            "method": self.command,
            "path": self.path,
            "workspace_id": self.headers.get("X-Workspace-Id"),
            "workspace_id_headers": len(self.headers.get_all("X-Workspace-Id") or []),
            "client_id": self.headers.get("X-Client-Id"),
            "attest_debug": self.headers.get("Attest-Debug"),
            "authorization": self.headers.get("Authorization"),
            "body_bytes": len(body),
        }
        log = os.environ.get("ECHO_UPSTREAM_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as file:
                file.write(json.dumps(seen) + "\n")
        payload = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = answer

    def log_message(self, format, *args):  # quiet: the JSON lines are the log
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Echo)
    server.daemon_threads = True
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
