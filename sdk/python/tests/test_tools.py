"""Client tools and approvals against a real `ams serve` (issue 29):
run_turn answers a client tool call with its callback; approve decides on
a built-in tool's call."""

from __future__ import annotations

import unittest

from tests import helpers

import ams


class RunTurnTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.c = cls.s.client()
        cls.asst = cls.c.create_assistant("py tools").id

    def test_client_tool(self):
        seen = []

        def lookup(call: ams.RequiredToolCall) -> str:
            seen.append(call)
            return "shipped"

        tools = [{"type": "function", "name": "lookup_order", "parameters": {"type": "object"}}]
        turn, reply = self.c.run_turn(self.asst, 'lookup_order {"id": 7}', lookup, tools=tools)
        self.assertEqual([(c.name, c.arguments) for c in seen], [("lookup_order", {"id": 7})])
        self.assertEqual((turn.status, turn.stop_reason), ("completed", "end_turn"))
        self.assertIsNotNone(reply)
        self.assertEqual(reply.content, "lookup_order returned: shipped")
        self.assertGreater(turn.usage["total_tokens"], 0)

    def test_waiting_turn_and_bad_outputs(self):
        tools = [{"type": "function", "name": "lookup_order"}]
        data = self.c.request("POST", "/messages", body={"assistant_id": self.asst, "message": "lookup_order", "tools": tools})
        turn = ams.Turn.from_dict(data)
        self.assertEqual(turn.status, "requires_action")
        self.assertEqual(turn.required_action.type, "submit_tool_outputs")
        with self.assertRaises(ams.InvalidRequestError) as e:
            self.c.submit_tool_outputs(turn.id, [{"tool_call_id": "call_nope", "output": "x"}])
        self.assertEqual(e.exception.param, "tool_outputs[0].tool_call_id")
        with self.assertRaises(ams.ConflictError):
            self.c.approve_tool_calls(turn.id, [{"tool_call_id": turn.required_action.tool_calls[0].id, "approved": True}])
        done = self.c.submit_tool_outputs(turn.id, [{"tool_call_id": turn.required_action.tool_calls[0].id, "output": "ok"}])
        self.assertEqual(done.status, "completed")

    def test_approval(self):
        other = self.c.create_assistant("py approvals").id
        a = self.c.update_assistant(other, require_approval=["create_task"], multitask_strategy="enqueue")
        self.assertEqual((a.require_approval, a.multitask_strategy), (["create_task"], "enqueue"))
        turn, reply = self.c.run_turn(other, "add a task: renew passport", lambda c: "", approve=lambda c: (False, "not today"))
        self.assertEqual(turn.status, "completed")
        self.assertIn("did not approve", reply.content)
        self.assertEqual(len(turn.action_ids), 1)


if __name__ == "__main__":
    unittest.main()
