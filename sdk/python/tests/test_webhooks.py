"""Real webhook deliveries from `ams serve`, received by a local
http.server and verified with the SDK's verifiers."""

import base64
import datetime as dt
import json
import os
import time
import unittest

import ams

from . import helpers


class WebhookDeliveryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.c = cls.s.client()

    def receiver(self, handle=None):
        rc = helpers.LocalServer(handle or (lambda rec: (200, {"Content-Type": "text/plain"}, b"ok")))
        self.addCleanup(rc.close)
        return rc

    def verify(self, rec, secret):
        """Verify a recorded delivery both ways; return its event."""
        ams.verify_signature(rec.body, rec.header("X-Service-Signature"), secret)
        ams.verify_standard_webhook(rec.body, rec.headers, secret)
        return ams.construct_event(rec.body, rec.headers, secret)

    def test_delivery_received_and_verified(self):
        secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        rc = self.receiver()
        wh = self.c.create_webhook(rc.url + "/hook", ["message.created"], secret)
        self.addCleanup(self.c.delete_webhook, wh.id)

        reply = self.c.send_message(self.s.assistant_id, "Deliver me")
        got = rc.wait_for(lambda rs: len(rs) >= 2)
        events = {}
        for rec in got:
            self.assertEqual((rec.method, rec.path), ("POST", "/hook"))
            self.assertEqual(rec.header("X-Service-Event"), "message.created")
            self.assertTrue(rec.header("X-Service-Delivery").startswith("dlv_"))
            ev = self.verify(rec, secret)
            self.assertEqual(ev.id, rec.header("webhook-id"))
            self.assertEqual(ev.type, "message.created")
            events[ev.data["direction"]] = ev
            # Tampered body, wrong secret, the plain-text secret as a
            # Standard Webhooks key: all rejected.
            with self.assertRaises(ams.WebhookVerificationError):
                ams.verify_signature(rec.body + b" ", rec.header("X-Service-Signature"), secret)
            with self.assertRaises(ams.WebhookVerificationError):
                ams.verify_standard_webhook(rec.body.replace(b"Deliver", b"Deliber"), rec.headers, secret)
            with self.assertRaises(ams.WebhookVerificationError):
                ams.construct_event(rec.body, rec.headers, "whsec_" + base64.b64encode(os.urandom(32)).decode())
            # A replay ten minutes later is refused.
            with self.assertRaises(ams.WebhookVerificationError):
                ams.verify_standard_webhook(rec.body, rec.headers, secret, now=time.time() + 600)
        self.assertEqual(events["outbound"].data["message_id"], reply.id)
        self.assertEqual(events["inbound"].data["content"], "Deliver me")

        # The attempts are listed; redelivering one sends the event again,
        # with the same webhook-id.
        dl = self.wait_deliveries(wh.id, 2)
        self.assertTrue(all(d.success and d.status_code == 200 for d in dl))
        self.assertIsInstance(dl[0], ams.WebhookDelivery)
        target = next(d for d in dl if d.event_id == events["outbound"].id)
        self.assertEqual([d.id for d in self.c.list_webhook_deliveries(wh.id, event_id=target.event_id)], [target.id])
        red = self.c.redeliver_webhook_delivery(wh.id, target.id)
        self.assertIsInstance(red, ams.WebhookRedelivery)
        self.assertEqual((red.status, red.event_id, red.delivery_id), ("queued", target.event_id, target.id))
        got = rc.wait_for(lambda rs: len(rs) >= 3)
        self.assertEqual(self.verify(got[2], secret).id, target.event_id)

        # A ping reaches the webhook whatever its events.
        ping = self.c.ping_webhook(wh.id)
        self.assertIsInstance(ping, ams.Event)
        self.assertEqual((ping.type, ping.data["webhook_id"]), ("webhook.ping", wh.id))
        got = rc.wait_for(lambda rs: len(rs) >= 4)
        ev = self.verify(got[3], secret)
        self.assertEqual((ev.id, ev.type), (ping.id, "webhook.ping"))

    def test_plain_secret_and_retry(self):
        """A plain secret; the receiver fails the first attempt, and the
        server retries after the schedule's second step (1 s in the tests)."""
        secret = "plain-secret-for-python-sdk-tests"
        state = {"n": 0}

        def handle(rec):
            state["n"] += 1
            return (500, {}, b"not yet") if state["n"] == 1 else (200, {}, b"ok")

        rc = self.receiver(handle)
        wh = self.c.create_webhook(rc.url, ["task.created"], secret)
        self.addCleanup(self.c.delete_webhook, wh.id)
        task = self.c.create_task(self.s.assistant_id, "Deliver twice")
        got = rc.wait_for(lambda rs: len(rs) >= 2)
        first, second = (self.verify(r, secret) for r in got[:2])
        self.assertEqual(first.id, second.id)
        self.assertEqual(first.data["id"], task.id)
        dl = self.wait_deliveries(wh.id, 2, order="asc")
        self.assertEqual([(d.attempt, d.success, d.status_code) for d in dl], [(1, False, 500), (2, True, 200)])
        self.assertEqual(dl[0].response_body, "not yet")

    def test_recover_missed_events(self):
        """An event emitted while the webhook is off is not sent; once it
        is back on, recover_webhook queues it, and it is delivered."""
        secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
        rc = self.receiver()
        wh = self.c.create_webhook(rc.url + "/recover", ["task.created"], secret, active=False)
        self.addCleanup(self.c.delete_webhook, wh.id)
        task = self.c.create_task(self.s.assistant_id, "Missed while off")

        # Off: recovery is refused.
        with self.assertRaises(ams.ConflictError) as cm:
            self.c.recover_webhook(wh.id, wh.created_at)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "webhook_inactive"))

        self.c.update_webhook(wh.id, active=True)
        rec = self.c.recover_webhook(wh.id, wh.created_at)
        self.assertIsInstance(rec, ams.WebhookRecovery)
        self.assertEqual((rec.object, rec.webhook_id, rec.queued), ("webhook_recovery", wh.id, 1))
        self.assertEqual(ams.parse_time(rec.since), ams.parse_time(wh.created_at))
        self.assertGreater(ams.parse_time(rec.until), ams.parse_time(rec.since))
        got = rc.wait_for(lambda rs: len(rs) >= 1)
        ev = self.verify(got[0], secret)
        self.assertEqual((ev.type, ev.data["id"]), ("task.created", task.id))

        # Asking again (times as datetimes) queues only what is still missing: nothing.
        since = ams.parse_time(wh.created_at)
        again = self.c.recover_webhook(wh.id, since, until=since + dt.timedelta(hours=1))
        self.assertEqual(again.queued, 0)
        self.assertEqual(ams.parse_time(again.until), since + dt.timedelta(hours=1))

        # A bad time is a 400 naming it.
        with self.assertRaises(ams.InvalidRequestError) as cm:
            self.c.recover_webhook(wh.id, "yesterday")
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.param), (400, "parameter_invalid", "since"))
        with self.assertRaises(ams.InvalidRequestError) as cm:
            self.c.recover_webhook(wh.id, since, until=since)
        self.assertEqual((cm.exception.status, cm.exception.param), (400, "until"))

    def wait_deliveries(self, webhook_id, n, **kw):
        deadline = time.monotonic() + 15
        while True:
            dl = list(self.c.iter_webhook_deliveries(webhook_id, **kw))
            if len(dl) >= n or time.monotonic() > deadline:
                return dl
            time.sleep(0.1)


if __name__ == "__main__":
    unittest.main()
