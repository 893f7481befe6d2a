"""Typed errors of each type from the real server, and the retry
mechanics (429 with Retry-After, 5xx, timeouts) through local stubs."""

import json
import os
import sqlite3
import threading
import time
import unittest

import ams

from . import helpers


class ErrorTypesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.c = cls.s.client()

    def check(self, e, cls, status, etype, code, param=None):
        self.assertIsInstance(e, cls)
        self.assertIsInstance(e, ams.AmsError)
        self.assertEqual((e.status, e.type, e.code, e.param), (status, etype, code, param))
        self.assertRegex(e.request_id or "", r"^req_\w+$")
        self.assertTrue(e.message)
        self.assertIn(e.request_id, str(e))

    def test_400_invalid_request(self):
        with self.assertRaises(ams.InvalidRequestError) as cm:
            self.c.create_assistant("   ")
        self.check(cm.exception, ams.InvalidRequestError, 400, "invalid_request_error", "parameter_invalid", "name")
        with self.assertRaises(ams.InvalidRequestError) as cm:
            self.c.list_assistants(limit=1000)
        self.assertEqual(cm.exception.param, "limit")

    def test_401_authentication(self):
        c = self.s.client("ams_sk_" + "x" * 40)
        with self.assertRaises(ams.AuthenticationError) as cm:
            c.list_assistants()
        self.check(cm.exception, ams.AuthenticationError, 401, "authentication_error", cm.exception.code)
        self.assertTrue(cm.exception.code)
        self.assertIn("Bearer", cm.exception.headers.get("Www-Authenticate", ""))

    def test_403_permission(self):
        c = self.s.client(self.s.read_key)
        self.assertTrue(c.list_assistants().data)  # read works
        with self.assertRaises(ams.PermissionError_) as cm:
            c.create_assistant("Not allowed")
        self.check(cm.exception, ams.PermissionError_, 403, "permission_error", "insufficient_scope")
        self.assertIs(ams.PermissionDeniedError, ams.PermissionError_)

    def test_404_not_found(self):
        with self.assertRaises(ams.NotFoundError) as cm:
            self.c.get_task("task_doesnotexist00000000000")
        self.check(cm.exception, ams.InvalidRequestError, 404, "invalid_request_error", "resource_missing")

    def test_409_idempotency_key_reused(self):
        key = "pysdk-conflict-" + str(time.time())
        a = self.c.create_assistant("Idempotent", idempotency_key=key)
        # The same request again replays the first answer.
        self.assertEqual(self.c.create_assistant("Idempotent", idempotency_key=key).id, a.id)
        # Another request with the same key is a conflict.
        with self.assertRaises(ams.ConflictError) as cm:
            self.c.create_assistant("Something else", idempotency_key=key)
        self.check(cm.exception, ams.InvalidRequestError, 409, "invalid_request_error", "idempotency_key_reused", cm.exception.param)

    def account(self, email, *create_flags):
        """A new enterprise account of the test server and its key (read,write)."""
        self.s.cli("users", "create", "--email", email, "--plan", "enterprise", *create_flags)
        return self.s.client(self.s.cli("keys", "create", "--email", email, "--name", "errors", "--permissions", "read,write"))

    def test_409_webhook_limit_reached(self):
        c = self.account("webhook-cap@example.com")
        self.s.cli("users", "update", "--email", "webhook-cap@example.com", "--max-webhooks", "1")
        c.create_webhook("http://127.0.0.1:9/cap/1", ["task.created"], "a-secret-of-16-chars+")
        with self.assertRaises(ams.ConflictError) as cm:
            c.create_webhook("http://127.0.0.1:9/cap/2", ["task.created"], "a-secret-of-16-chars+")
        self.check(cm.exception, ams.InvalidRequestError, 409, "invalid_request_error", "webhook_limit_reached")
        self.assertIn("1 webhook", cm.exception.message)

    def test_403_account_on_waitlist(self):
        # The API offers no way back onto the waitlist (keys are made for
        # approved accounts only): clear approved_at in the server's SQLite
        # store, as an account made before its approval would have it.
        email = "waitlisted@example.com"
        c = self.account(email)
        wh = c.create_webhook("http://127.0.0.1:9/waitlist", ["task.created"], "a-secret-of-16-chars+")
        db = sqlite3.connect(os.path.join(self.s.data_dir, "ams.db"), timeout=30)
        try:
            with db:
                db.execute("UPDATE users SET approved_at = NULL WHERE email = ?", (email,))
        finally:
            db.close()
        for call in (
            lambda: c.create_webhook("http://127.0.0.1:9/waitlist/2", ["task.created"], "a-secret-of-16-chars+"),
            lambda: c.ping_webhook(wh.id),
            lambda: c.recover_webhook(wh.id, wh.created_at),
        ):
            with self.assertRaises(ams.PermissionError_) as cm:
                call()
            self.check(cm.exception, ams.PermissionDeniedError, 403, "permission_error", "account_on_waitlist")

    def test_generated_idempotency_keys(self):
        # Two POSTs without a key are two requests.
        a = self.c.create_assistant("Twin")
        b = self.c.create_assistant("Twin")
        self.assertNotEqual(a.id, b.id)

    def test_429_rate_limit(self):
        # limited@example.com is on the standard plan: no 60 seconds admit
        # more than 60 requests, so 61 quick ones reach the limit (125
        # leave room for other tests' requests).
        c = self.s.client(self.s.limited_key, max_retries=0)
        err = None
        for i in range(125):
            try:
                c.list_assistants(limit=1)
            except ams.RateLimitError as e:
                err = e
                break
        self.assertIsNotNone(err, "no 429 after 125 requests")
        self.check(err, ams.RateLimitError, 429, "rate_limit_error", "rate_limit_exceeded")
        self.assertTrue(0 < err.retry_after <= 61)
        self.assertEqual(err.headers.get("X-Ratelimit-Remaining") or err.headers.get("X-RateLimit-Remaining"), "0")

    def test_connection_error(self):
        c = ams.Client(api_key="k", base_url="http://127.0.0.1:%d" % helpers.free_port_closed(), max_retries=2, sleep=lambda s: None)
        with self.assertRaises(ams.APIConnectionError) as cm:
            c.list_assistants()
        self.assertIsNone(cm.exception.status)


class RetryTest(unittest.TestCase):
    """The retry mechanics, through a stub in front of the real server."""

    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()

    def stub(self, handle):
        srv = helpers.LocalServer(handle)
        self.addCleanup(srv.close)
        return srv

    def test_429_retried_after_retry_after(self):
        """The stub answers 429 with Retry-After: 1 once, then forwards to
        the real server: the SDK waits a second and the POST goes through
        with the same Idempotency-Key."""
        state = {"n": 0}

        def handle(rec):
            state["n"] += 1
            if state["n"] == 1:
                return helpers.json_answer(
                    429,
                    {"error": {"type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "slow down"}, "request_id": "req_stub1"},
                    {"Retry-After": "1"},
                )
            return helpers.proxy_to(self.s.base_url, rec)

        srv = self.stub(handle)
        c = ams.Client(api_key=self.s.key, base_url=srv.url)
        t0 = time.monotonic()
        reply = c.send_message(self.s.assistant_id, "Hello through the stub")
        elapsed = time.monotonic() - t0
        self.assertEqual(reply.direction, "outbound")
        self.assertGreaterEqual(elapsed, 1.0)
        self.assertEqual(len(srv.requests), 2)
        keys = [r.header("Idempotency-Key") for r in srv.requests]
        self.assertTrue(keys[0].startswith("ams-py-"))
        self.assertEqual(keys[0], keys[1])
        self.assertEqual(srv.requests[0].body, srv.requests[1].body)
        self.assertTrue(srv.requests[0].header("User-Agent").startswith("ams-python/"))

    def test_real_429_is_retried(self):
        """A real 429 from the server: the SDK honours Retry-After (until
        the first requests leave the sliding minute) when the caller allows
        it."""
        waits = []
        c = self.s.client(self.s.limited_key, max_retries=1, sleep=waits.append)
        for _ in range(125):  # exhaust the minute (other tests may have done it)
            try:
                c.list_assistants(limit=1)
            except ams.RateLimitError:
                break
        self.assertTrue(waits, "the 429 was not retried")
        self.assertTrue(all(0 < w <= 61 for w in waits))

    def test_retry_after_too_long_raises_at_once(self):
        srv = self.stub(lambda rec: helpers.json_answer(429, {"error": {"type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "daily"}, "request_id": "req_x"}, {"Retry-After": "3600"}))
        waits = []
        c = ams.Client(api_key="k", base_url=srv.url, sleep=waits.append)
        with self.assertRaises(ams.RateLimitError) as cm:
            c.list_tasks()
        self.assertEqual(cm.exception.retry_after, 3600)
        self.assertEqual((len(srv.requests), waits), (1, []))

    def test_5xx_retried_with_backoff(self):
        state = {"n": 0}

        def handle(rec):
            state["n"] += 1
            if state["n"] <= 2:
                return helpers.json_answer(503, {"error": {"type": "api_error", "code": "unavailable", "message": "busy"}, "request_id": "req_5"})
            return helpers.proxy_to(self.s.base_url, rec)

        srv = self.stub(handle)
        waits = []
        c = ams.Client(api_key=self.s.key, base_url=srv.url, sleep=waits.append)
        t = c.create_task(self.s.assistant_id, "Retried task")
        self.assertEqual(t.title, "Retried task")
        self.assertEqual(len(srv.requests), 3)
        self.assertEqual(len({r.header("Idempotency-Key") for r in srv.requests}), 1)
        self.assertEqual(len(waits), 2)
        self.assertTrue(0.375 <= waits[0] <= 0.5 and 0.75 <= waits[1] <= 1.0, waits)

    def test_5xx_gives_up_with_api_error(self):
        srv = self.stub(lambda rec: (500, {"Content-Type": "text/plain"}, b"oops"))
        c = ams.Client(api_key="k", base_url=srv.url, max_retries=2, sleep=lambda s: None)
        with self.assertRaises(ams.APIError) as cm:
            c.get_assistant("ast_1")
        self.assertEqual((cm.exception.status, cm.exception.type), (500, "api_error"))
        self.assertEqual(len(srv.requests), 3)

    def test_patch_not_retried_after_5xx(self):
        srv = self.stub(lambda rec: helpers.json_answer(502, {}))
        c = ams.Client(api_key="k", base_url=srv.url, sleep=lambda s: None)
        with self.assertRaises(ams.APIError):
            c.update_task("task_1", title="x")
        self.assertEqual(len(srv.requests), 1)

    def test_max_retries_zero(self):
        srv = self.stub(lambda rec: helpers.json_answer(429, {}, {"Retry-After": "1"}))
        c = ams.Client(api_key="k", base_url=srv.url, max_retries=0)
        with self.assertRaises(ams.RateLimitError):
            c.list_events()
        self.assertEqual(len(srv.requests), 1)

    def test_timeout(self):
        release = threading.Event()
        self.addCleanup(release.set)

        def slow(rec):
            release.wait(5)
            return helpers.json_answer(200, {"object": "list", "data": [], "has_more": False})

        srv = self.stub(slow)
        c = ams.Client(api_key="k", base_url=srv.url, timeout=0.3, max_retries=1, sleep=lambda s: None)
        t0 = time.monotonic()
        with self.assertRaises(ams.APIConnectionError):
            c.list_webhooks()
        self.assertLess(time.monotonic() - t0, 3)
        self.assertEqual(len(srv.requests), 2)  # a GET is retried after a timeout

    def test_request_shape(self):
        srv = self.stub(lambda rec: helpers.json_answer(200, {"object": "list", "data": [], "first_id": None, "last_id": None, "has_more": False}))
        c = ams.Client(access_token="ams_at_tok", base_url=srv.url + "/v1/", user_agent="myapp/1.2")
        page = c.list_tasks(assistant_id="ast_1", status="open", limit=5, due_after="2030-01-01T00:00:00Z")
        self.assertEqual(page.data, [])
        r = srv.requests[0]
        self.assertEqual(r.method, "GET")
        self.assertEqual(r.path, "/v1/tasks?limit=5&assistant_id=ast_1&status=open&due_after=2030-01-01T00%3A00%3A00Z")
        self.assertEqual(r.header("Authorization"), "Bearer ams_at_tok")
        self.assertTrue(r.header("User-Agent").startswith("myapp/1.2 ams-python/"))
        self.assertEqual(r.header("Idempotency-Key"), "")
        c.update_task("task_1", title="t", due_at=None)
        self.assertEqual(json.loads(srv.requests[1].body), {"title": "t", "due_at": None})
        self.assertEqual(srv.requests[1].header("Content-Type"), "application/json")


if __name__ == "__main__":
    unittest.main()
