"""Every /v1 endpoint through the SDK, against a real `ams serve`."""

import datetime as dt
import json
import os
import re
import time
import unittest
import urllib.parse
import urllib.request

import ams

from . import helpers

# Each operation of openapi/openapi.json and the Client method that calls it.
OPERATIONS = {
    "submitToolOutputs": "submit_tool_outputs",
    "approveToolCalls": "approve_tool_calls",
    "listAssistants": "list_assistants",
    "createAssistant": "create_assistant",
    "getAssistant": "get_assistant",
    "updateAssistant": "update_assistant",
    "deleteAssistant": "delete_assistant",
    "runAction": "run_action",
    "listActions": "list_actions",
    "getAction": "get_action",
    "createMessage": "send_message",
    "getMessage": "get_message",
    "cancelMessage": "cancel_message",
    "listTurns": "list_turns",
    "getTurn": "get_turn",
    "streamTurnEvents": "follow_turn",
    "cancelTurn": "cancel_turn",
    "updateMessage": "update_message",
    "deleteMessage": "delete_message",
    "listConversations": "list_conversations",
    "createConversation": "create_conversation",
    "getConversation": "get_conversation",
    "updateConversation": "update_conversation",
    "deleteConversation": "delete_conversation",
    "listConversationMessages": "list_conversation_messages",
    "createTask": "create_task",
    "listTasks": "list_tasks",
    "getTask": "get_task",
    "updateTask": "update_task",
    "deleteTask": "delete_task",
    "completeTask": "complete_task",
    "createCalendarEvent": "create_calendar_event",
    "listCalendarEvents": "list_calendar_events",
    "getCalendarEvent": "get_calendar_event",
    "updateCalendarEvent": "update_calendar_event",
    "deleteCalendarEvent": "delete_calendar_event",
    "restoreCalendarEvent": "restore_calendar_event",
    "createIntegration": "create_integration",
    "listIntegrations": "list_integrations",
    "getIntegration": "get_integration",
    "deleteIntegration": "delete_integration",
    "syncIntegration": "sync_integration",
    "createCalendarFeed": "create_calendar_feed",
    "listEvents": "list_events",
    "getEvent": "get_event",
    "streamEvents": "follow_events",
    "triggerEvent": "trigger_event",
    "createWebhook": "create_webhook",
    "listWebhooks": "list_webhooks",
    "getWebhook": "get_webhook",
    "updateWebhook": "update_webhook",
    "deleteWebhook": "delete_webhook",
    "pingWebhook": "ping_webhook",
    "listWebhookDeliveries": "list_webhook_deliveries",
    "redeliverWebhookDelivery": "redeliver_webhook_delivery",
    "recoverWebhook": "recover_webhook",
    "getOpenAPIDocument": "get_openapi",
    "listAPIKeys": "list_api_keys",
    "createAPIKey": "create_api_key",
    "getAPIKey": "get_api_key",
    "revokeAPIKey": "revoke_api_key",
    "listOAuthClients": "list_oauth_clients",
    "createOAuthClient": "create_oauth_client",
    "getOAuthClient": "get_oauth_client",
    "rotateOAuthClientSecret": "rotate_oauth_client_secret",
    "deleteOAuthClient": "delete_oauth_client",
    "getAccount": "get_account",
    "updateAccount": "update_account",
}


class CoverageTest(unittest.TestCase):
    def test_every_operation_has_a_method(self):
        with open(os.path.join(helpers.REPO, "openapi", "openapi.json"), encoding="utf-8") as f:
            doc = json.load(f)
        ops = set()
        for path, item in doc["paths"].items():
            for method, op in item.items():
                if method in ("get", "post", "patch", "put", "delete"):
                    ops.add(op["operationId"])
        self.assertEqual(ops, set(OPERATIONS), "update OPERATIONS and the Client for the new or removed operations")
        for op, name in OPERATIONS.items():
            self.assertTrue(callable(getattr(ams.Client, name, None)), "%s: Client.%s is missing" % (op, name))

    def test_served_document_is_the_repository_one(self):
        doc = helpers.server().client().get_openapi()
        self.assertTrue(doc["openapi"].startswith("3.1"))
        self.assertIn("/v1/messages", doc["paths"])


class EndpointsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.c = cls.s.client()

    def test_assistants(self):
        c = self.c
        a = c.create_assistant("Planner", description="Plans things", instructions="Be brief.")
        self.assertIsInstance(a, ams.Assistant)
        self.assertTrue(a.id.startswith("ast_"))
        self.assertEqual((a.name, a.description, a.instructions, a.model), ("Planner", "Plans things", "Be brief.", "builtin"))
        self.assertEqual(c.get_assistant(a.id), a)
        u = c.update_assistant(a.id, name="Planner 2", description=None)
        self.assertEqual((u.name, u.description, u.instructions), ("Planner 2", "", "Be brief."))
        page = c.list_assistants(limit=100)
        self.assertIsInstance(page, ams.Page)
        self.assertIn(a.id, [x.id for x in page])
        self.assertIn(a.id, [x.id for x in c.iter_assistants(limit=1)])
        c.delete_assistant(a.id)
        with self.assertRaises(ams.NotFoundError):
            c.get_assistant(a.id)

    def test_messages_and_conversations(self):
        c, ast = self.c, self.s.assistant_id
        reply = c.send_message(ast, "Hello! My name is Ada.")
        self.assertIsInstance(reply, ams.Message)
        self.assertEqual(reply.direction, "outbound")
        self.assertTrue(reply.content)
        conv = reply.conversation_id
        again = c.send_message(ast, "What's my name?", conversation_id=conv)
        self.assertEqual(again.conversation_id, conv)
        self.assertIn("Ada", again.content)

        self.assertEqual(c.get_message(reply.id), reply)
        msgs = c.list_conversation_messages(conv, order="asc")
        self.assertEqual([m.direction for m in msgs], ["inbound", "outbound", "inbound", "outbound"])
        self.assertEqual(msgs.data[1].id, reply.id)
        self.assertEqual(len(list(c.iter_conversation_messages(conv, limit=1))), 4)

        inbound = msgs.data[0]
        edited = c.update_message(inbound.id, "Hello! My name is Ada Lovelace.")
        self.assertEqual(edited.content, "Hello! My name is Ada Lovelace.")
        self.assertNotEqual(edited.updated_at, inbound.updated_at)

        cv = c.get_conversation(conv)
        self.assertIsInstance(cv, ams.Conversation)
        self.assertEqual((cv.assistant_id, cv.message_count), (ast, 4))
        self.assertIn(conv, [x.id for x in c.list_conversations(assistant_id=ast, limit=100)])
        self.assertIn(conv, [x.id for x in c.iter_conversations(limit=1)])

        c.delete_message(msgs.data[2].id)
        with self.assertRaises(ams.NotFoundError):
            c.get_message(msgs.data[2].id)

        types = [e.type for e in c.list_events(type="message.created", limit=100)]
        self.assertTrue(types and set(types) == {"message.created"})
        self.assertIn("message.updated", [e.type for e in c.iter_events(limit=50)])

        newest = c.list_events(type="message.updated", limit=1).data[0]
        self.assertEqual(c.get_event(newest.id), newest)
        with self.assertRaises(ams.NotFoundError):
            c.get_event("evt_nothere")
        # created_after and created_before are strict, and take datetimes
        # or RFC 3339 strings.
        at = ams.parse_time(newest.created_at)
        for e in c.list_events(created_after=newest.created_at, limit=100):
            self.assertGreater(ams.parse_time(e.created_at), at)
        older = c.list_events(created_before=at, type="message.updated", limit=100)
        self.assertNotIn(newest.id, [e.id for e in older])
        since = [e.id for e in c.iter_events(created_after=at - dt.timedelta(milliseconds=1), limit=1, order="asc")]
        self.assertIn(newest.id, since)
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.list_events(created_after="yesterday")
        self.assertEqual(cm.exception.param, "created_after")

    def test_send_message_stream(self):
        c = self.c
        events = list(c.send_message_stream(self.s.assistant_id, "Hello! What can you do?"))
        self.assertGreaterEqual(len(events), 3)
        self.assertEqual(events[0].type, "turn.started")
        turn_id = events[0].turn_id
        self.assertTrue(turn_id.startswith("trn_"))
        self.assertEqual([e.id for e in events], [str(i + 1) for i in range(len(events))])
        deltas = [e for e in events[1:-1]]
        self.assertTrue(all(e.type == "message.delta" for e in deltas))
        self.assertGreater(len(deltas), 1, "the built-in engine streams word by word")
        last = events[-1]
        self.assertEqual(last.type, "message.completed")
        self.assertIsInstance(last.message, ams.Message)
        self.assertEqual("".join(e.delta for e in deltas), last.message.content)
        self.assertEqual(c.get_message(last.message.id).content, last.message.content)

        # The turn's record, and its stream again from an event.
        turn = c.get_turn(turn_id)
        self.assertIsInstance(turn, ams.Turn)
        self.assertEqual((turn.status, turn.reply_message_id), ("completed", last.message.id))
        self.assertIn(turn_id, [x.id for x in c.list_turns(conversation_id=turn.conversation_id)])
        self.assertIn(turn_id, [x.id for x in c.iter_turns(limit=1)])
        rest = list(c.follow_turn(turn_id, last_event_id=events[-3].id))
        self.assertEqual([e.id for e in rest], [events[-2].id, events[-1].id])
        self.assertEqual(c.cancel_turn(turn_id).status, "completed")
        self.assertEqual(c.cancel_message(turn.inbound_message_id).id, turn_id)

        # A replay with the same key sends the same events at once.
        key = "stream-replay-" + last.message.id
        first = list(c.send_message_stream(self.s.assistant_id, "Again", idempotency_key=key))
        second = list(c.send_message_stream(self.s.assistant_id, "Again", idempotency_key=key))
        self.assertEqual(first[-1].message.id, second[-1].message.id)

        with self.assertRaises(ams.NotFoundError):
            next(iter(c.send_message_stream("ast_doesnotexist000000000000", "Hi")))

    def test_tasks(self):
        c, ast = self.c, self.s.assistant_id
        due = dt.datetime(2030, 5, 1, 9, 0, tzinfo=dt.timezone.utc)
        t = c.create_task(ast, "Call Ana", notes="about the trip", due_at=due, remind_at="2030-05-01T08:30:00+00:00")
        self.assertIsInstance(t, ams.Task)
        self.assertEqual((t.title, t.notes, t.status), ("Call Ana", "about the trip", "open"))
        self.assertEqual(ams.parse_time(t.due_at), due)
        self.assertEqual(c.get_task(t.id), t)
        u = c.update_task(t.id, title="Call Ana back", remind_at=None)
        self.assertEqual((u.title, u.remind_at, u.notes), ("Call Ana back", None, "about the trip"))
        ids = [x.id for x in c.list_tasks(assistant_id=ast, status="open", due_after="2030-04-30T00:00:00Z", due_before=dt.datetime(2030, 5, 2))]
        self.assertIn(t.id, ids)
        done = c.complete_task(t.id)
        self.assertEqual(done.status, "completed")
        self.assertIsNotNone(done.completed_at)
        self.assertNotIn(t.id, [x.id for x in c.iter_tasks(status="open")])
        self.assertIn(t.id, [x.id for x in c.iter_tasks(status="completed", limit=2)])
        c.delete_task(t.id)
        with self.assertRaises(ams.NotFoundError):
            c.get_task(t.id)

    def test_calendar_events(self):
        c, ast = self.c, self.s.assistant_id
        start = dt.datetime(2030, 6, 1, 9, 0, tzinfo=dt.timezone.utc)
        e = c.create_calendar_event(ast, "Dentist", start, location="Main St 1", description="checkup")
        self.assertIsInstance(e, ams.CalendarEvent)
        self.assertEqual(ams.parse_time(e.ends_at) - ams.parse_time(e.starts_at), dt.timedelta(hours=1))
        self.assertEqual((e.title, e.location, e.description), ("Dentist", "Main St 1", "checkup"))
        self.assertEqual(c.get_calendar_event(e.id), e)
        moved = c.update_calendar_event(e.id, starts_at="2030-06-01T11:00:00+01:00", remind_at=dt.datetime(2030, 6, 1, 9, 30))
        self.assertEqual(ams.parse_time(moved.starts_at), dt.datetime(2030, 6, 1, 10, 0, tzinfo=dt.timezone.utc))
        self.assertEqual(ams.parse_time(moved.ends_at), dt.datetime(2030, 6, 1, 11, 0, tzinfo=dt.timezone.utc))
        self.assertIsNotNone(moved.remind_at)
        ids = [x.id for x in c.list_calendar_events(assistant_id=ast, starts_after="2030-06-01T00:00:00Z", starts_before="2030-06-02T00:00:00Z")]
        self.assertEqual(ids, [e.id])
        self.assertIn(e.id, [x.id for x in c.iter_calendar_events(limit=1)])
        c.delete_calendar_event(e.id)
        with self.assertRaises(ams.NotFoundError):
            c.get_calendar_event(e.id)
        self.assertNotIn(e.id, [x.id for x in c.list_calendar_events()])
        gone = [x for x in c.list_calendar_events(deleted=True) if x.id == e.id]
        self.assertEqual(len(gone), 1)
        self.assertEqual(gone[0].deleted_by, "api")
        self.assertIsNotNone(gone[0].deleted_at)
        back = c.restore_calendar_event(e.id)
        self.assertEqual((back.id, back.title, back.deleted_at, back.deleted_by), (e.id, "Dentist", None, None))
        self.assertEqual(c.get_calendar_event(e.id).id, e.id)
        with self.assertRaises(ams.ConflictError) as cm:
            c.restore_calendar_event(e.id)
        self.assertEqual(cm.exception.code, "calendar_event_not_deleted")

    def test_actions(self):
        c, ast = self.c, self.s.assistant_id
        a = c.run_action(ast, "create_task", {"title": "Water the plants"})
        self.assertIsInstance(a, ams.Action)
        self.assertEqual((a.type, a.status, a.error, a.conversation_id), ("create_task", "succeeded", None, ""))
        self.assertEqual(a.result["title"], "Water the plants")
        self.assertEqual(c.get_action(ast, a.id), a)
        listed = c.run_action(ast, "list_tasks")
        self.assertIn(a.result["id"], [t["id"] for t in listed.result["data"]])
        self.assertEqual([x.id for x in c.list_actions(ast, limit=2)], [listed.id, a.id])
        self.assertIn(a.id, [x.id for x in c.iter_actions(ast, limit=1)])
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.run_action(ast, "fly_to_the_moon")
        self.assertEqual((cm.exception.code, cm.exception.param), ("parameter_invalid", "type"))

    def test_webhooks_crud(self):
        c = self.c
        w = c.create_webhook("http://127.0.0.1:9/hooks/ams", ["message.created", "task.created"], "a-secret-of-16-chars+", active=False)
        self.assertIsInstance(w, ams.Webhook)
        self.assertEqual((w.url, w.events, w.active, w.status), ("http://127.0.0.1:9/hooks/ams", ["message.created", "task.created"], False, "active"))
        self.assertNotIn("secret", w.raw)
        # GET adds the 24 h summary, which the other answers leave null.
        self.assertEqual(dict(c.get_webhook(w.id).raw, summary=None), w.raw)
        self.assertIsNone(w.previous_secret_expires_at)
        u = c.update_webhook(w.id, events=["task.created"], active=True)
        self.assertEqual((u.events, u.active, u.ordered), (["task.created"], True, False))
        self.assertTrue(c.update_webhook(w.id, ordered=True).ordered)
        self.assertTrue(c.get_webhook(w.id).ordered)
        self.assertFalse(c.update_webhook(w.id, ordered=False).ordered)
        o = c.create_webhook("http://127.0.0.1:9/hooks/ordered", ["task.created"], "a-secret-of-16-chars+", ordered=True)
        self.assertTrue(o.ordered)
        c.delete_webhook(o.id)
        # A new secret: the replaced one keeps signing beside it for the
        # hour asked; 0 then stops it at once.
        before = dt.datetime.now(dt.timezone.utc)
        r = c.update_webhook(w.id, secret="another-secret-of-16+", previous_secret_expires_in=3600)
        expires = ams.parse_time(r.previous_secret_expires_at)
        self.assertIsNotNone(expires)
        self.assertLess(abs((expires - before).total_seconds() - 3600), 60, r.previous_secret_expires_at)
        self.assertEqual(c.get_webhook(w.id).previous_secret_expires_at, r.previous_secret_expires_at)
        self.assertIsNone(c.update_webhook(w.id, previous_secret_expires_in=0).previous_secret_expires_at)
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.update_webhook(w.id, secret="a-third-secret-of-16+", previous_secret_expires_in=604801)
        self.assertEqual(cm.exception.param, "previous_secret_expires_in")
        self.assertIn(w.id, [x.id for x in c.list_webhooks(limit=100)])
        self.assertIn(w.id, [x.id for x in c.iter_webhooks(limit=1)])
        self.assertEqual(list(c.list_webhook_deliveries(w.id)), [])
        c.delete_webhook(w.id)
        with self.assertRaises(ams.NotFoundError):
            c.get_webhook(w.id)

    def test_webhook_filter_payload_summary(self):
        c = self.c
        ast = c.list_assistants(limit=1).data[0].id
        w = c.create_webhook("http://127.0.0.1:9/hooks/f", ["*"], "a-secret-of-16-chars+", active=False,
                             filter={"assistant_id": ast, "metadata.team": "billing"}, payload="thin")
        self.assertEqual((w.filter, w.payload, w.summary), ({"assistant_id": ast, "metadata.team": "billing"}, "thin", None))
        g = c.get_webhook(w.id)
        self.assertIsInstance(g.summary, ams.WebhookSummary)
        assert g.summary is not None
        self.assertEqual((g.summary.window_hours, g.summary.attempts, g.summary.success_rate), (24, 0, None))
        u = c.update_webhook(w.id, filter=None, payload="full")
        self.assertEqual((u.filter, u.payload), ({}, "full"))
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.update_webhook(w.id, filter={"direction": "inbound"})
        self.assertEqual(cm.exception.param, "filter.direction")
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.update_webhook(w.id, payload="summary")
        self.assertEqual(cm.exception.param, "payload")
        c.delete_webhook(w.id)

    def test_calendar_feed_and_integrations(self):
        c = self.c
        feed = c.create_calendar_feed()
        self.assertIsInstance(feed, ams.CalendarFeed)
        self.assertTrue(feed.id.startswith("int_"))
        self.assertRegex(feed.url, r"/calendar/feed/ams_cf_\w+\.ics$")
        with urllib.request.urlopen(feed.url, timeout=10) as r:
            self.assertIn(b"BEGIN:VCALENDAR", r.read())
        integ = c.get_integration(feed.id)
        self.assertIsInstance(integ, ams.Integration)
        self.assertEqual((integ.provider, integ.status), ("ical_feed", "connected"))
        self.assertIn(feed.id, [x.id for x in c.list_integrations(limit=100)])
        self.assertIn(feed.id, [x.id for x in c.iter_integrations(limit=1)])

        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.create_integration("carrier-pigeon", {})
        self.assertEqual(cm.exception.param, "provider")

        # CalDAV: against the Radicale that .ci/run starts.
        cal = radicale_calendar(self)
        created = c.create_integration("caldav", {"url": cal["url"], "username": cal["user"]}, secrets={"password": cal["password"]})
        self.assertEqual((created.provider, created.status, created.last_error), ("caldav", "connected", None))
        self.assertNotIn(cal["password"], json.dumps(created.raw))
        synced = c.sync_integration(created.id)
        self.assertEqual(synced.status, "connected")
        c.delete_integration(created.id)
        self.assertEqual(c.get_integration(created.id).status, "disconnected")
        types = [e.type for e in c.list_events(limit=100)]
        self.assertIn("integration.connected", types)
        self.assertIn("integration.disconnected", types)


class MCPIntegrationTest(unittest.TestCase):
    """An MCP server as an integration: the reference server."""

    def test_mcp_integration(self):
        url = helpers.everything_server(self)
        srv = helpers.server()
        c = srv.client()
        name = "everything%d" % (int(time.time() * 1000) % 100000)
        integ = c.create_mcp_integration(name, url, headers={"Authorization": "Bearer py-secret-1"}, require_approval=["echo"])
        self.assertEqual((integ.provider, integ.status, integ.name, integ.url), ("mcp", "connected", name, url))
        self.assertNotIn("py-secret-1", json.dumps(integ.raw))
        self.assertEqual(integ.require_approval, ["echo"])
        tools = {t.name: t for t in c.get_integration(integ.id).tools or []}
        self.assertIn("get-sum", tools)
        self.assertIsInstance(tools["get-sum"], ams.IntegrationTool)
        self.assertIn("a", tools["get-sum"].input_schema.get("properties", {}))
        ast = srv.assistant_id
        act = c.run_action(ast, name + "__get-sum", {"a": 40, "b": 2})
        self.assertEqual(act.status, "succeeded")
        self.assertIn("42", json.dumps(act.result))
        self.assertGreaterEqual(act.duration_ms, 0)
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.run_action(ast, name + "__get-sum", {"a": "forty", "b": 2})
        self.assertEqual(cm.exception.param, "input.a")
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.create_mcp_integration(name, url)
        self.assertEqual(cm.exception.param, "name")
        self.assertEqual(c.sync_integration(integ.id).status, "connected")
        c.delete_integration(integ.id)
        self.assertEqual(c.get_integration(integ.id).status, "disconnected")


def wait_for_event(c: ams.Client, type: str, pred, timeout: float = 5.0) -> ams.Event:
    """The newest event of the type for which pred(data) holds, waiting a
    moment for it to be listed (the list shows an event once the changes
    that began writing before it have finished)."""
    deadline = time.monotonic() + timeout
    while True:
        for e in c.list_events(type=type, limit=100):
            if pred(e.data):
                return e
        if time.monotonic() > deadline:
            raise AssertionError("no %s event matched" % type)
        time.sleep(0.02)


class ConversationsAndMetadataTest(unittest.TestCase):
    """Conversations as resources, metadata on the six records that carry
    it, the actions' conversation_id filter and the deletion events."""

    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.c = cls.s.client()

    def test_conversation_lifecycle(self):
        c, ast = self.c, self.s.assistant_id
        conv = c.create_conversation(ast, title="Trip", metadata={"crm": "T-1"})
        self.assertIsInstance(conv, ams.Conversation)
        self.assertTrue(conv.id.startswith("conv_"))
        self.assertEqual((conv.assistant_id, conv.title, conv.message_count, conv.metadata), (ast, "Trip", 0, {"crm": "T-1"}))
        self.assertEqual(c.get_conversation(conv.id), conv)
        self.assertIn(conv.id, [x.id for x in c.list_conversations(assistant_id=ast, limit=100)])

        # The same idempotency key replays the first conversation.
        key = "conv-replay-" + conv.id
        first = c.create_conversation(ast, idempotency_key=key)
        self.assertEqual(c.create_conversation(ast, idempotency_key=key).id, first.id)
        self.assertEqual((first.title, first.metadata), ("", {}))

        # Metadata on send_message is the inbound message's; the reply has none.
        reply = c.send_message(ast, "Remind me to call Bob tomorrow at 9", conversation_id=conv.id, metadata={"source": "sms"})
        self.assertEqual((reply.conversation_id, reply.metadata), (conv.id, {}))
        inbound, outbound = c.list_conversation_messages(conv.id, order="asc").data
        self.assertEqual((inbound.direction, inbound.metadata), ("inbound", {"source": "sms"}))
        self.assertEqual(outbound.id, reply.id)
        created = wait_for_event(c, "message.created", lambda d: d.get("message_id") == inbound.id)
        self.assertEqual(created.data["metadata"], {"source": "sms"})

        # A reply's content cannot change, its metadata can; PATCH merges.
        rated = c.update_message(reply.id, metadata={"rating": "good"})
        self.assertEqual((rated.metadata, rated.content), ({"rating": "good"}, reply.content))
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.update_message(reply.id, "edited")
        self.assertEqual(cm.exception.code, "message_not_editable")
        both = c.update_message(inbound.id, "Remind me to call Bob tomorrow at 10", metadata={"edited": "yes"})
        self.assertEqual((both.content, both.metadata), ("Remind me to call Bob tomorrow at 10", {"source": "sms", "edited": "yes"}))

        # PATCH: the title, and metadata merged (None and "" remove a key).
        c.update_conversation(conv.id, metadata={"owner": "ana"})
        u = c.update_conversation(conv.id, title="Lisbon", metadata={"crm": None, "owner": "", "stage": "2"})
        self.assertEqual((u.title, u.metadata, u.message_count), ("Lisbon", {"stage": "2"}, 2))
        self.assertEqual(c.update_conversation(conv.id, title="").title, "")
        self.assertEqual(c.get_conversation(conv.id).metadata, {"stage": "2"})

        # The actions list filtered by conversation: the task the reply made.
        run = c.run_action(ast, "list_tasks")
        acts = c.list_actions(ast, conversation_id=conv.id)
        self.assertEqual([(a.conversation_id, a.type) for a in acts], [(conv.id, "create_task")])
        self.assertNotIn(run.id, [a.id for a in c.iter_actions(ast, conversation_id=conv.id, limit=1)])
        self.assertIn(run.id, [a.id for a in c.list_actions(ast, limit=100)])
        task_id = acts.data[0].result["id"]

        # Deleting it deletes its messages (message.deleted for each); the
        # actions and the task stay.
        c.delete_conversation(conv.id)
        with self.assertRaises(ams.NotFoundError):
            c.get_conversation(conv.id)
        with self.assertRaises(ams.NotFoundError):
            c.get_message(inbound.id)
        for m in (inbound, outbound):
            wait_for_event(c, "message.deleted", lambda d, m=m: d.get("message_id") == m.id)
        self.assertEqual(c.list_actions(ast, conversation_id=conv.id).data[0].id, acts.data[0].id)
        self.assertEqual(c.get_task(task_id).id, task_id)
        with self.assertRaises(ams.NotFoundError):
            c.delete_conversation(conv.id)
        with self.assertRaises(ams.NotFoundError):
            c.create_conversation("ast_doesnotexist000000000000")

    def test_metadata_on_records_and_deletion_events(self):
        c, ast = self.c, self.s.assistant_id
        a = c.create_assistant("Tagged", metadata={"team": "ops"})
        self.assertEqual(a.metadata, {"team": "ops"})
        a2 = c.update_assistant(a.id, metadata={"tier": "gold"})
        self.assertEqual((a2.metadata, a2.name), ({"team": "ops", "tier": "gold"}, "Tagged"))
        self.assertEqual(c.get_assistant(a.id).metadata, {"team": "ops", "tier": "gold"})
        # Records made without metadata read {}.
        self.assertEqual(c.create_assistant("Plain").metadata, {})

        t = c.create_task(ast, "Tagged task", metadata={"order_id": "A-17"})
        self.assertEqual(t.metadata, {"order_id": "A-17"})
        t2 = c.update_task(t.id, metadata={"order_id": None, "k": "v"})
        self.assertEqual(t2.metadata, {"k": "v"})
        self.assertEqual(c.update_task(t.id, title="Renamed").metadata, {"k": "v"})
        c.delete_task(t.id)
        ev = wait_for_event(c, "task.deleted", lambda d: d.get("id") == t.id)
        self.assertEqual((ev.data["title"], ev.data["metadata"]), ("Renamed", {"k": "v"}))

        e = c.create_calendar_event(ast, "Tagged event", "2031-01-02T09:00:00Z", metadata={"room": "4"})
        self.assertEqual(e.metadata, {"room": "4"})
        e2 = c.update_calendar_event(e.id, metadata={"room": "5", "host": "ana"})
        self.assertEqual(e2.metadata, {"room": "5", "host": "ana"})
        self.assertEqual(c.get_calendar_event(e.id).metadata, {"room": "5", "host": "ana"})
        c.delete_calendar_event(e.id)
        ev = wait_for_event(c, "event.deleted", lambda d: d.get("id") == e.id)
        self.assertEqual((ev.data["title"], ev.data["metadata"]), ("Tagged event", {"room": "5", "host": "ana"}))

        w = c.create_webhook("http://127.0.0.1:9/hooks/md", ["task.deleted", "event.deleted"], "a-secret-of-16-chars+", active=False, metadata={"env": "test"})
        self.assertEqual((w.events, w.metadata), (["task.deleted", "event.deleted"], {"env": "test"}))
        w2 = c.update_webhook(w.id, metadata={"env": None})
        self.assertEqual((w2.metadata, w2.events), ({}, ["task.deleted", "event.deleted"]))
        self.assertEqual(c.get_webhook(w.id).metadata, {})
        c.delete_webhook(w.id)

        # The limits: 400 naming the parameter, nothing stored.
        cases = [
            ({"k%d" % i: "v" for i in range(51)}, "metadata"),
            ({"k" * 41: "v"}, "metadata." + "k" * 41),
            ({"long": "v" * 501}, "metadata.long"),
        ]
        for md, param in cases:
            with self.subTest(param=param[:20]):
                with self.assertRaises(ams.InvalidRequestError) as cm:
                    c.update_assistant(a.id, metadata=md)
                self.assertEqual((cm.exception.status, cm.exception.param), (400, param))
                with self.assertRaises(ams.InvalidRequestError) as cm:
                    c.create_conversation(ast, title="never stored", metadata=md)
                self.assertEqual(cm.exception.param, param)
        self.assertEqual(c.get_assistant(a.id).metadata, {"team": "ops", "tier": "gold"})
        self.assertNotIn("never stored", [x.title for x in c.iter_conversations(assistant_id=ast, limit=100)])

    def test_stream_with_metadata(self):
        c, ast = self.c, self.s.assistant_id
        last = list(c.send_message_stream(ast, "Hello!", metadata={"channel": "web"}))[-1]
        self.assertEqual((last.type, last.message.metadata), ("message.completed", {}))
        inbound = c.list_conversation_messages(last.message.conversation_id, order="asc").data[0]
        self.assertEqual((inbound.direction, inbound.metadata), ("inbound", {"channel": "web"}))

    def test_metadata_in_records_built_by_hand(self):
        # Older servers omit metadata, or a record may carry null: both read {}.
        self.assertEqual(ams.Task.from_dict({"id": "task_1"}).metadata, {})
        self.assertEqual(ams.Message.from_dict({"id": "msg_1", "metadata": None}).metadata, {})
        m = ams.Conversation.from_dict({"id": "conv_1", "metadata": {"a": "b"}})
        m.metadata["c"] = "d"
        self.assertEqual(m.raw["metadata"], {"a": "b"})


def radicale_calendar(t: unittest.TestCase):
    """A new calendar collection on the test Radicale (AMS_TEST_CALDAV_URL);
    skips the test when there is none, unless AMS_REQUIRE_CALDAV_TESTS."""
    raw = os.environ.get("AMS_TEST_CALDAV_URL", "")
    if not raw:
        if os.environ.get("AMS_REQUIRE_CALDAV_TESTS"):
            t.fail("AMS_TEST_CALDAV_URL is not set but AMS_REQUIRE_CALDAV_TESTS is")
        t.skipTest("CalDAV part skipped: set AMS_TEST_CALDAV_URL (.ci/run starts a Radicale)")
    u = urllib.parse.urlsplit(raw)
    user, password = urllib.parse.unquote(u.username or ""), urllib.parse.unquote(u.password or "")
    netloc = u.hostname + (":%d" % u.port if u.port else "")
    import secrets as _s

    path = u.path.rstrip("/") + "/pysdk-" + _s.token_hex(6) + "/"
    url = urllib.parse.urlunsplit((u.scheme, netloc, path, "", ""))
    import base64

    auth = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
    req = urllib.request.Request(url, method="MKCALENDAR", headers={"Authorization": auth})
    with urllib.request.urlopen(req, timeout=10) as r:
        t.assertEqual(r.status, 201)

    def cleanup():
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="DELETE", headers={"Authorization": auth}), timeout=10).close()
        except OSError:
            pass

    t.addCleanup(cleanup)
    return {"url": url.rstrip("/"), "user": user, "password": password}


if __name__ == "__main__":
    unittest.main()


class ManagementTest(unittest.TestCase):
    """The management API (permission admin): keys, OAuth clients, account."""

    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.admin = cls.s.client(cls.s.cli("keys", "create", "--email", helpers.EMAIL, "--name", "py admin", "--permissions", "admin"))

    def test_needs_admin(self):
        with self.assertRaises(ams.PermissionDeniedError) as cm:
            self.s.client().list_api_keys()
        self.assertEqual(cm.exception.code, "insufficient_scope")

    def test_api_keys(self):
        c = self.admin
        k = c.create_api_key("py export", ["read", "messages"], expires_at=dt.datetime(2030, 1, 31, tzinfo=dt.timezone.utc))
        self.assertIsInstance(k, ams.APIKey)
        self.assertTrue(k.id.startswith("key_") and k.secret and k.secret.startswith("ams_sk_"))
        self.assertEqual((k.name, k.permissions, k.status, k.last4), ("py export", ["read", "messages"], "active", k.secret[-4:]))
        self.assertEqual(k.expires_at, "2030-01-31T00:00:00.000Z")
        self.assertIsNone(c.get_api_key(k.id).secret)
        self.assertTrue(self.s.client(k.secret).list_assistants().data is not None)
        self.assertIn(k.id, [x.id for x in c.list_api_keys(limit=100)])
        self.assertIn(k.id, [x.id for x in c.iter_api_keys(limit=1)])
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.create_api_key("bad", ["root"])
        self.assertEqual(cm.exception.param, "permissions")
        r = c.revoke_api_key(k.id)
        self.assertEqual(r.status, "revoked")
        self.assertEqual(c.revoke_api_key(k.id).revoked_at, r.revoked_at)
        with self.assertRaises(ams.AuthenticationError):
            self.s.client(k.secret).list_assistants()
        # An expiring key cannot create a key that outlives it.
        short = c.create_api_key("short", ["admin"], expires_at=dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc))
        with self.assertRaises(ams.PermissionDeniedError) as cm:
            self.s.client(short.secret).create_api_key("forever", ["read"])
        self.assertEqual((cm.exception.code, cm.exception.param), ("lifetime_not_held", "expires_at"))
        types = [e.type for e in c.list_events(type="api_key.revoked", limit=100)]
        self.assertEqual(types.count("api_key.revoked"), 1)

    def test_oauth_clients(self):
        c = self.admin
        cl = c.create_oauth_client("Py App", ["https://py.example/cb"])
        self.assertIsInstance(cl, ams.OAuthClient)
        self.assertTrue(cl.id.startswith("cli_") and cl.client_secret and cl.client_secret.startswith("ams_cs_"))
        self.assertFalse(cl.public)
        pub = c.create_oauth_client("Py Phone", ["http://localhost:9/cb"], public=True)
        self.assertIsNone(pub.client_secret)
        self.assertIsNone(c.get_oauth_client(cl.id).client_secret)
        self.assertIn(cl.id, [x.id for x in c.list_oauth_clients(limit=100)])
        self.assertIn(pub.id, [x.id for x in c.iter_oauth_clients(limit=1)])
        rot = c.rotate_oauth_client_secret(cl.id)
        self.assertTrue(rot.client_secret and rot.client_secret != cl.client_secret)
        with self.assertRaises(ams.ConflictError):
            c.rotate_oauth_client_secret(pub.id)
        c.delete_oauth_client(pub.id)
        with self.assertRaises(ams.NotFoundError):
            c.get_oauth_client(pub.id)
        deleted = [e.data["id"] for e in c.list_events(type="oauth_client.deleted", limit=100)]
        self.assertIn(pub.id, deleted)

    def test_account(self):
        c = self.admin
        a = c.get_account()
        self.assertIsInstance(a, ams.Account)
        self.assertEqual((a.email, a.object), (helpers.EMAIL, "account"))
        self.assertIn("key_reminders", a.email_notifications)
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.update_account(timezone="Mars/Base")
        self.assertEqual(cm.exception.param, "timezone")
        u = c.update_account(timezone="Asia/Tokyo", webhook_failing=False)
        self.assertEqual((u.timezone, u.email_notifications["webhook_failing"]), ("Asia/Tokyo", False))
        u = c.update_account(timezone=a.timezone, webhook_failing=True)
        self.assertEqual((u.timezone, u.email_notifications["webhook_failing"]), (a.timezone, True))
        self.assertGreaterEqual(len(c.list_events(type="account.updated", limit=100).data), 2)
