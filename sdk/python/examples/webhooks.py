"""Webhooks: register an endpoint, receive a delivery and verify it.

Starts a receiver on 127.0.0.1 (http:// and loopback URLs are allowed by
`ams serve --dev`; in production a webhook URL must be https), registers it
for message.created, sends a message, and prints the first verified
delivery. Run with AMS_API_KEY and AMS_ASSISTANT_ID set (see quickstart.py).
"""

import base64
import os
import queue
import threading
import time
from typing import Any
from http.server import BaseHTTPRequestHandler, HTTPServer

import ams

# Keep the secret: it verifies every delivery. A whsec_<base64> secret also
# works with the public Standard Webhooks libraries.
SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
received: "queue.Queue[ams.Event]" = queue.Queue()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))  # the raw bytes
        try:
            # Checks webhook-signature and webhook-timestamp (5 minutes'
            # tolerance); ams.verify_signature checks X-Service-Signature.
            event = ams.construct_event(body, self.headers, SECRET)
        except ams.WebhookVerificationError as e:
            self.send_response(400)
            self.end_headers()
            print("rejected:", e)
            return
        self.send_response(200)  # answer 2xx within 5 s; work later
        self.end_headers()
        received.put(event)

    def log_message(self, format: str, *args: Any) -> None:
        pass


server = HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Receiver)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d/webhook" % server.server_address[1]

client = ams.Client()
webhook = client.create_webhook(url, ["message.created"], SECRET)
print("registered", webhook.id, "for", url)
try:
    client.send_message(os.environ["AMS_ASSISTANT_ID"], "Hello, webhook!")
    event = received.get(timeout=30)
    print("verified %s %s: %s (%s)" % (event.type, event.id, event.data["content"], event.data["direction"]))
    # ams records an attempt just after the receiver answers: the log may
    # lag the arrival by a moment.
    for _ in range(50):
        deliveries = list(client.list_webhook_deliveries(webhook.id, limit=5))
        if deliveries:
            break
        time.sleep(0.1)
    for d in deliveries:
        print("  delivery", d.id, "attempt", d.attempt, "status", d.status_code)
finally:
    client.delete_webhook(webhook.id)
    server.shutdown()
