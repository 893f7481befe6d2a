"""Background turns against a real `ams serve` (issue 29):
send_message_background answers at once with the turn; following its
events waits for it to complete, and the turn and its reply are stored."""

from __future__ import annotations

import unittest

from tests import helpers

import ams


class BackgroundTest(unittest.TestCase):
    s: helpers.Server
    c: ams.Client
    asst: str

    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.c = cls.s.client()
        cls.asst = cls.c.create_assistant("py background").id

    def follow_to_end(self, turn: ams.Turn) -> ams.Message:
        """Wait for the turn's end on its stream; return its reply."""
        done = [ev for ev in self.c.follow_turn(turn.id) if ev.type == "message.completed"]
        self.assertEqual(len(done), 1)
        ev = done[0]
        assert isinstance(ev, ams.MessageCompletedEvent)
        return ev.message

    def test_send_message_background(self):
        turn = self.c.send_message_background(self.asst, "Hello there", metadata={"order": "7"})
        self.assertTrue(turn.id.startswith("trn_"))
        self.assertIn(turn.status, ("queued", "running", "completed"))
        self.assertTrue(turn.background)
        reply = self.follow_to_end(turn)
        self.assertTrue(reply.content)
        self.assertEqual(reply.conversation_id, turn.conversation_id)
        done = self.c.get_turn(turn.id)
        self.assertEqual((done.status, done.stop_reason, done.reply_message_id), ("completed", "end_turn", reply.id))
        self.assertTrue(done.background)
        self.assertIsNotNone(done.completed_at)
        self.assertEqual(self.c.get_message(done.inbound_message_id).metadata, {"order": "7"})

    def test_queued_behind_another(self):
        first = self.c.send_message_background(self.asst, "first")
        second = self.c.send_message_background(self.asst, "second", conversation_id=first.conversation_id)
        self.assertEqual(second.conversation_id, first.conversation_id)
        self.assertEqual(second.multitask_strategy, "enqueue")
        self.follow_to_end(first)
        self.follow_to_end(second)
        msgs = self.c.list_conversation_messages(first.conversation_id, limit=10, order="asc").data
        self.assertEqual([m.direction for m in msgs], ["inbound", "outbound", "inbound", "outbound"])
        self.assertEqual([msgs[0].content, msgs[2].content], ["first", "second"])


if __name__ == "__main__":
    unittest.main()
