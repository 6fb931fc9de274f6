"""A webhook receiver for the tests that checks signatures with the Standard Webhooks reference
implementation for Python (the `standardwebhooks` package from PyPI, installed by
scripts/ensure-mcp-servers.mjs), not with anything Keel ships.

Usage: python3 webhook_receiver.py PORT. Prints one JSON line per request received:
{"id", "type", "sessionId", "path", "status" (what it answered), "verified": [bool per secret], "body"}.
`POST /control` with {"secrets": [...], "status": 200} sets the secrets each request is checked
against and the status answered (a test sets 503 for an endpoint that is down). Every other POST
is a delivery: answered `status` when any of the secrets verifies it, else 401.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

state = {"secrets": [], "status": 200}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/control":
            state.update(json.loads(body))
            self.send_response(204)
            self.end_headers()
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        verified = []
        for secret in state["secrets"]:
            try:
                Webhook(secret).verify(body, headers)
                verified.append(True)
            except Exception:
                verified.append(False)
        status = state["status"] if any(verified) else 401
        event = json.loads(body)
        print(
            json.dumps(
                {
                    "id": headers.get("webhook-id"),
                    "type": event.get("type"),
                    "sessionId": event.get("data", {}).get("sessionId"),
                    "path": self.path,
                    "status": status,
                    "verified": verified,
                    "body": event,
                }
            ),
            flush=True,
        )
        self.send_response(status)
        self.send_header("content-type", "text/plain")
        self.end_headers()
        self.wfile.write(b"ok" if status < 300 else b"not now")


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(json.dumps({"listening": server.server_address[1]}), flush=True)
server.serve_forever()
