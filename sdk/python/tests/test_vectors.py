"""The shared signature test vectors (sdk/testdata/webhook-signatures.json),
also checked by the Go service (webhook/vectors_test.go) and the TypeScript
SDK, and the secret-rotation vectors (sdk/testdata/webhook-rotation.json),
also checked by the Go client (client/webhook/rotation_test.go, with the
public standardwebhooks library) and the TypeScript SDK."""

import json
import os
import unittest

import ams

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "webhook-signatures.json")
ROTATION = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "webhook-rotation.json")


def load(path=VECTORS):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class SignatureVectorsTest(unittest.TestCase):
    def setUp(self):
        self.file = load()
        self.assertEqual(self.file["version"], 1)
        self.assertGreaterEqual(len(self.file["cases"]), 20)

    def test_signers_reproduce_signed_cases(self):
        n = 0
        for c in self.file["cases"]:
            if not c["signed"]:
                continue
            n += 1
            with self.subTest(c["name"]):
                body = c["body"].encode("utf-8")
                self.assertEqual(ams.compute_signature(c["secret"], body), c["x_service_signature"])
                self.assertEqual(
                    ams.compute_standard_signature(c["secret"], c["webhook_id"], int(c["webhook_timestamp"]), body),
                    c["webhook_signature"],
                )
        self.assertGreater(n, 5)

    def test_verify_signature(self):
        for c in self.file["cases"]:
            with self.subTest(c["name"]):
                body = c["body"].encode("utf-8")
                try:
                    ams.verify_signature(body, c["x_service_signature"], c["secret"])
                    ok = True
                except ams.WebhookVerificationError:
                    ok = False
                self.assertEqual(ok, c["valid_x_service_signature"])

    def test_verify_standard_webhook(self):
        tol = self.file["tolerance_seconds"]
        self.assertEqual(tol, ams.DEFAULT_TOLERANCE)
        for c in self.file["cases"]:
            with self.subTest(c["name"]):
                body = c["body"].encode("utf-8")
                # Header names as a real receiver sees them: any case.
                headers = {
                    "Webhook-Id": c["webhook_id"],
                    "webhook-timestamp": c["webhook_timestamp"],
                    "WEBHOOK-SIGNATURE": c["webhook_signature"],
                }
                try:
                    ams.verify_standard_webhook(body, headers, c["secret"], tolerance=tol, now=c["now"])
                    ok = True
                except ams.WebhookVerificationError:
                    ok = False
                self.assertEqual(ok, c["valid_standard"])

    def test_construct_event(self):
        c = next(c for c in self.file["cases"] if c["name"] == "whsec secret")
        headers = {
            "webhook-id": c["webhook_id"],
            "webhook-timestamp": c["webhook_timestamp"],
            "webhook-signature": c["webhook_signature"],
        }
        ev = ams.construct_event(c["body"], headers, c["secret"], now=c["now"])
        self.assertEqual(ev.id, c["webhook_id"])
        self.assertEqual(ev.type, "message.created")
        # X-Service-Signature alone.
        ev = ams.construct_event(c["body"].encode(), {"X-Service-Signature": c["x_service_signature"]}, c["secret"])
        self.assertEqual(ev.type, "message.created")
        # The real clock rejects the 2025 timestamp.
        with self.assertRaises(ams.WebhookVerificationError):
            ams.construct_event(c["body"], headers, c["secret"])
        with self.assertRaises(ams.WebhookVerificationError):
            ams.construct_event(c["body"], {}, c["secret"])

    def test_construct_event_verdicts(self):
        # construct_event decides on webhook-signature when present, else
        # on X-Service-Signature.
        for c in self.file["cases"]:
            with self.subTest(c["name"]):
                headers = {
                    k: v
                    for k, v in (
                        ("X-Service-Signature", c["x_service_signature"]),
                        ("webhook-id", c["webhook_id"]),
                        ("webhook-timestamp", c["webhook_timestamp"]),
                        ("webhook-signature", c["webhook_signature"]),
                    )
                    if v
                }
                try:
                    ams.construct_event(c["body"].encode("utf-8"), headers, c["secret"], tolerance=self.file["tolerance_seconds"], now=c["now"])
                    ok = True
                except ams.WebhookVerificationError as e:
                    ok = str(e) == "the body is not a JSON event"
                want = c["valid_standard"] if c["webhook_signature"] else c["valid_x_service_signature"]
                self.assertEqual(ok, want)


class RotationVectorsTest(unittest.TestCase):
    """Whole deliveries before, during and after a secret rotation."""

    def setUp(self):
        self.file = load(ROTATION)
        self.assertEqual(self.file["version"], 1)
        self.assertEqual(self.file["tolerance_seconds"], ams.DEFAULT_TOLERANCE)
        self.assertGreaterEqual(len(self.file["cases"]), 10)

    def test_construct_event(self):
        for c in self.file["cases"]:
            with self.subTest(c["name"]):
                # As a framework gives them (any case), and as bytes and str.
                for headers, body in ((c["headers"], c["body"].encode("utf-8")), ({k.upper(): v for k, v in c["headers"].items()}, c["body"])):
                    try:
                        ev = ams.construct_event(body, headers, c["secret"], tolerance=self.file["tolerance_seconds"], now=c["now"])
                        self.assertEqual(ev.type, "message.created")
                        ok = True
                    except ams.WebhookVerificationError:
                        ok = False
                    self.assertEqual(ok, c["valid"])


if __name__ == "__main__":
    unittest.main()
