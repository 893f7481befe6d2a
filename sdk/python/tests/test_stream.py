"""Streamed replies: the real server's stream is in test_api; the failure
cases (an error event, a stream cut off, a 5xx before the stream) come from
a stub."""

import json
import unittest

import ams

from . import helpers

MSG = {"id": "msg_1", "object": "message", "assistant_id": "ast_1", "conversation_id": "conv_1",
       "direction": "outbound", "content": "Hello Ada!", "created_at": "2026-11-21T10:00:00Z", "updated_at": "2026-11-21T10:00:00Z"}


def sse(*events):
    body = "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(data)) for name, data in events)
    return 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Request-Id": "req_stream"}, body.encode()


def sse_ids(events, headers=None):
    body = "".join("id: %s\nevent: %s\ndata: %s\n\n" % (i, name, json.dumps(data)) for i, name, data in events)
    h = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Request-Id": "req_stream"}
    h.update(headers or {})
    return 200, h, body.encode()


class StreamTest(unittest.TestCase):
    def client(self, handle, **kw):
        srv = helpers.LocalServer(handle)
        self.addCleanup(srv.close)
        return srv, ams.Client(api_key="k", base_url=srv.url, sleep=lambda s: None, **kw)

    def test_events(self):
        srv, c = self.client(lambda rec: sse(("message.delta", {"delta": "Hello"}), ("future.event", {}), ("message.delta", {"delta": " Ada!"}), ("message.completed", MSG)))
        evs = list(c.send_message_stream("ast_1", "Hi", conversation_id="conv_1", idempotency_key="k1"))
        self.assertEqual([(e.type, e.delta) for e in evs[:2]], [("message.delta", "Hello"), ("message.delta", " Ada!")])
        self.assertEqual(evs[2].type, "message.completed")
        self.assertEqual(evs[2].message, ams.Message.from_dict(MSG))
        r = srv.requests[0]
        self.assertEqual(json.loads(r.body), {"assistant_id": "ast_1", "message": "Hi", "conversation_id": "conv_1", "stream": True})
        self.assertEqual((r.header("Accept"), r.header("Idempotency-Key")), ("text/event-stream", "k1"))

    def test_tool_events_and_resume_after_a_dropped_stream(self):
        started = {"turn_id": "trn_1", "inbound_message_id": "msg_0", "conversation_id": "conv_1", "assistant_id": "ast_1", "resumed": False}
        action = {"id": "act_1", "object": "action", "type": "create_task", "status": "succeeded", "turn_id": "trn_1", "call_seq": 1}

        def handle(rec):
            if rec.method == "POST":
                # The connection drops after the tool call.
                return sse_ids([(1, "turn.started", started), (2, "tool_call", {"turn_id": "trn_1", "call_seq": 1, "name": "create_task", "arguments": {"title": "x"}})],
                               {"X-Turn-Id": "trn_1"})
            self.assertEqual((rec.path, rec.header("Last-Event-ID")), ("/v1/turns/trn_1/events", "2"))
            return sse_ids([(3, "tool_result", {"turn_id": "trn_1", "call_seq": 1, "name": "create_task", "action": action, "replayed": False}),
                            (4, "message.delta", {"delta": "Done."}), (5, "message.completed", MSG)])

        srv, c = self.client(handle)
        evs = list(c.send_message_stream("ast_1", "Hi"))
        self.assertEqual([(e.id, e.type) for e in evs],
                         [("1", "turn.started"), ("2", "tool_call"), ("3", "tool_result"), ("4", "message.delta"), ("5", "message.completed")])
        self.assertEqual({e.turn_id for e in evs}, {"trn_1"})
        self.assertEqual(evs[1].data["name"], "create_task")
        self.assertEqual((evs[2].action.turn_id, evs[2].action.call_seq), ("trn_1", 1))
        self.assertEqual(len(srv.requests), 2)
        # follow_turn reads the same stream from an event.
        rest = list(c.follow_turn("trn_1", last_event_id="2"))
        self.assertEqual([e.id for e in rest], ["3", "4", "5"])

    def test_resume_gives_up(self):
        started = {"turn_id": "trn_1", "inbound_message_id": "msg_0", "conversation_id": "conv_1", "assistant_id": "ast_1", "resumed": False}
        srv, c = self.client(lambda rec: sse_ids([(1, "turn.started", started)], {"X-Turn-Id": "trn_1"}), max_retries=2)
        with self.assertRaises(ams.APIConnectionError) as cm:
            list(c.send_message_stream("ast_1", "Hi"))
        self.assertIn("follow_turn('trn_1', last_event_id='1')", str(cm.exception))
        self.assertEqual(len(srv.requests), 3)

    def test_error_event(self):
        err = {"error": {"type": "api_error", "code": "engine_error", "message": "the engine failed"}, "request_id": "req_e"}
        _, c = self.client(lambda rec: sse(("message.delta", {"delta": "Hel"}), ("error", err)))
        it = c.send_message_stream("ast_1", "Hi")
        self.assertEqual(next(it).delta, "Hel")
        with self.assertRaises(ams.APIError) as cm:
            next(it)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.request_id), (200, "engine_error", "req_e"))

    def test_cut_off(self):
        _, c = self.client(lambda rec: sse(("message.delta", {"delta": "Hel"})))
        with self.assertRaises(ams.APIConnectionError) as cm:
            list(c.send_message_stream("ast_1", "Hi"))
        self.assertIn("idempotency_key", str(cm.exception))

    def test_retried_before_the_stream(self):
        state = {"n": 0}

        def handle(rec):
            state["n"] += 1
            if state["n"] == 1:
                return helpers.json_answer(503, {"error": {"type": "api_error", "code": "unavailable", "message": "busy"}, "request_id": "req_1"})
            return sse(("message.completed", MSG))

        srv, c = self.client(handle)
        evs = list(c.send_message_stream("ast_1", "Hi"))
        self.assertEqual([e.type for e in evs], ["message.completed"])
        self.assertEqual(len(srv.requests), 2)
        self.assertEqual(srv.requests[0].header("Idempotency-Key"), srv.requests[1].header("Idempotency-Key"))

    def test_error_before_the_stream(self):
        _, c = self.client(lambda rec: helpers.json_answer(400, {"error": {"type": "invalid_request_error", "code": "parameter_invalid", "message": "bad", "param": "message"}, "request_id": "req_2"}))
        with self.assertRaises(ams.InvalidRequestError) as cm:
            list(c.send_message_stream("ast_1", " "))
        self.assertEqual(cm.exception.param, "message")


if __name__ == "__main__":
    unittest.main()
