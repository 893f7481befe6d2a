"""The shared signature test vectors (sdk/testdata/webhook-signatures.json),
also checked by the Go service (webhook/vectors_test.go) and the TypeScript
SDK."""

import json
import os
import unittest

import ams

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "webhook-signatures.json")


def load():
    with open(VECTORS, encoding="utf-8") as f:
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


if __name__ == "__main__":
    unittest.main()
