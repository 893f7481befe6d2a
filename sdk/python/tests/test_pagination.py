"""Lists over more than one page: the iter_... generators follow
after=last_id while has_more."""

import unittest

import ams

from . import helpers


class PaginationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = helpers.server()
        cls.c = cls.s.client()
        # An assistant of its own, so the counts are exact.
        cls.ast = cls.c.create_assistant("Paginated").id
        cls.titles = ["task %d" % i for i in range(7)]
        cls.ids = [cls.c.create_task(cls.ast, t).id for t in cls.titles]

    def test_pages_by_hand(self):
        c = self.c
        seen = []
        page = c.list_tasks(assistant_id=self.ast, limit=2, order="asc")
        pages = 1
        seen += [t.id for t in page]
        while page.has_more:
            self.assertEqual(page.last_id, page.data[-1].id)
            page = c.list_tasks(assistant_id=self.ast, limit=2, order="asc", after=page.last_id)
            pages += 1
            seen += [t.id for t in page]
        self.assertEqual(pages, 4)
        self.assertEqual(seen, self.ids)
        # before= walks back.
        back = c.list_tasks(assistant_id=self.ast, limit=2, order="asc", before=self.ids[4])
        self.assertEqual([t.id for t in back], self.ids[2:4])

    def test_iterator_walks_every_page(self):
        calls = []
        c = self.s.client()
        orig = c._t.request

        def counting(method, path, **kw):
            calls.append((path, dict(kw.get("query") or {})))
            return orig(method, path, **kw)

        c._t.request = counting
        got = list(c.iter_tasks(assistant_id=self.ast, limit=2, order="asc"))
        self.assertEqual([t.id for t in got], self.ids)
        self.assertEqual([t.title for t in got], self.titles)
        self.assertTrue(all(isinstance(t, ams.Task) for t in got))
        self.assertEqual(len(calls), 4)
        self.assertEqual([q.get("after") for _, q in calls], [None, self.ids[1], self.ids[3], self.ids[5]])
        # Newest first by default.
        self.assertEqual([t.id for t in c.iter_tasks(assistant_id=self.ast, limit=3)], self.ids[::-1])

    def test_iterator_is_lazy(self):
        it = self.c.iter_tasks(assistant_id=self.ast, limit=2, order="asc")
        self.assertEqual(next(it).id, self.ids[0])
        self.assertEqual(next(it).id, self.ids[1])
        self.assertEqual(next(it).id, self.ids[2])

    def test_messages_over_pages(self):
        c = self.c
        first = c.send_message(self.ast, "one")
        conv = first.conversation_id
        c.send_message(self.ast, "two", conversation_id=conv)
        c.send_message(self.ast, "three", conversation_id=conv)
        msgs = list(c.iter_conversation_messages(conv, limit=2, order="asc"))
        self.assertEqual(len(msgs), 6)
        self.assertEqual([m.content for m in msgs if m.direction == "inbound"], ["one", "two", "three"])


if __name__ == "__main__":
    unittest.main()
