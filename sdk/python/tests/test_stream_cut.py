"""Streams of a real `ams serve` cut by a TCP proxy (helpers.CuttingProxy)
wherever a network may cut them: inside an HTTP chunk (mid-line), between
two events, and mid-event (after the event's name, before its data). The
client resumes from the last event it received (GET /v1/turns/{id}/events
with Last-Event-ID) and yields every event exactly once; when the cuts
outlast its retries it raises ams.APIConnectionError, never a raw
http.client error."""

import http.client
import unittest

import ams

from . import helpers

PROMPT = "Hello! My name is Ada. What can you do?"


class CutStreamTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = helpers.server()

    def proxy(self, cuts):
        p = helpers.CuttingProxy(self.srv.base_url, cuts)
        self.addCleanup(p.close)
        return p

    def check_whole(self, evs):
        # Every event once, in order: ids 1..n without a gap or a repeat.
        self.assertEqual([e.id for e in evs], [str(i) for i in range(1, len(evs) + 1)])
        self.assertEqual(evs[0].type, "turn.started")
        self.assertEqual(evs[-1].type, "message.completed")
        text = "".join(e.delta or "" for e in evs if e.type == "message.delta")
        self.assertEqual(text, evs[-1].message.content)
        self.assertEqual({e.turn_id for e in evs}, {evs[0].turn_id})

    def test_resumes_whatever_the_cut(self):
        for name, cut in (
            ("inside a chunk", helpers.cut_inside_chunk),
            ("between events", helpers.cut_between_events),
            ("mid-event", helpers.cut_mid_event),
        ):
            with self.subTest(name):
                # The POST's stream is cut, then the first resumed one.
                p = self.proxy([cut(3), cut(2)])
                c = ams.Client(api_key=self.srv.key, base_url=p.url, sleep=lambda s: None)
                evs = list(c.send_message_stream(self.srv.assistant_id, PROMPT))
                self.assertEqual(p.cuts_done, 2)
                self.check_whole(evs)
                self.assertGreater(len(evs), 6)
                # follow_turn resumes the same way.
                p2 = self.proxy([cut(1)])
                c2 = ams.Client(api_key=self.srv.key, base_url=p2.url, sleep=lambda s: None)
                rest = list(c2.follow_turn(evs[0].turn_id, last_event_id="1"))
                self.assertEqual(p2.cuts_done, 1)
                self.assertEqual([e.id for e in rest], [e.id for e in evs[1:]])

    def test_a_failed_resume_is_retried(self):
        # The stream is cut, and the first resume's answer never comes.
        p = self.proxy([helpers.cut_between_events(3), helpers.drop_the_answer])
        c = ams.Client(api_key=self.srv.key, base_url=p.url, sleep=lambda s: None)
        evs = list(c.send_message_stream(self.srv.assistant_id, PROMPT))
        self.assertEqual(p.cuts_done, 2)
        self.check_whole(evs)

    def test_cut_every_time_is_a_connection_error(self):
        for name, cut in (
            ("inside a chunk", helpers.cut_inside_chunk),
            ("between events", helpers.cut_between_events),
            ("mid-event", helpers.cut_mid_event),
        ):
            with self.subTest(name):
                p = self.proxy([cut(1)] * 10)
                c = ams.Client(api_key=self.srv.key, base_url=p.url, sleep=lambda s: None, max_retries=2)
                seen = []
                with self.assertRaises(ams.APIConnectionError) as cm:
                    for ev in c.send_message_stream(self.srv.assistant_id, PROMPT):
                        seen.append(ev.id)
                self.assertEqual(p.cuts_done, 3)  # the POST and two resumes
                self.assertIn("follow_turn(", str(cm.exception))
                self.assertNotIsInstance(cm.exception, http.client.HTTPException)
                # What was yielded before the error came once each.
                self.assertEqual(seen, [str(i) for i in range(1, len(seen) + 1)])


if __name__ == "__main__":
    unittest.main()
