"""The account's event stream (follow_events) and test events
(trigger_event) against the real server, resumed through a proxy that cuts
the connection."""

import socket
import threading
import unittest
from typing import List, Sequence, Tuple

import ams

from . import helpers


class CutProxy:
    """Forwards TCP connections to the server until cut() closes every one
    open; later connections are forwarded again. Connections are numbered
    from 1 as accepted; those numbered in ``drop`` are closed at once,
    before their request reaches the server. ``answered`` counts the
    connections on which the server has begun to answer."""

    def __init__(self, target_url: str, drop: Sequence[int] = ()) -> None:
        host, port = target_url.split("//", 1)[1].split(":")
        self.target = (host, int(port))
        self.drop = set(drop)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.conns: List[socket.socket] = []
        self.accepted = 0
        self.answered = 0
        self.changed = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.changed:
                self.accepted += 1
                n = self.accepted
                self.changed.notify_all()
            if n in self.drop:
                c.close()
                continue
            up = socket.create_connection(self.target)
            with self.changed:
                self.conns += [c, up]
            threading.Thread(target=self._pipe, args=(c, up, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(up, c, True), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, answer: bool) -> None:
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
                if answer:
                    answer = False
                    with self.changed:
                        self.answered += 1
                        self.changed.notify_all()
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def wait_answered(self, n: int) -> None:
        """Wait until the server has begun to answer on n connections."""
        with self.changed:
            if not self.changed.wait_for(lambda: self.answered >= n, timeout=120):
                raise AssertionError("the server answered %d connections, not %d" % (self.answered, n))

    def cut(self) -> None:
        with self.changed:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns = []

    def close(self) -> None:
        self.sock.close()
        self.cut()


class EventStreamTest(unittest.TestCase):
    def test_follow_events_resumes_after_a_cut(self):
        s = helpers.server()
        c = s.client()
        e0 = c.trigger_event("task.created")
        self.assertIsInstance(e0, ams.Event)
        self.assertEqual((e0.type, e0.test, e0.data["object"]), ("task.created", True, "task"))
        e1, e2 = c.trigger_event("task.updated"), c.trigger_event("message.created")
        proxy = CutProxy(s.base_url)
        self.addCleanup(proxy.close)
        pc = ams.Client(api_key=s.key, base_url=proxy.url, sleep=lambda _: None)
        it = pc.follow_events(last_event_id=e0.id)
        self.addCleanup(it.close)
        self.assertEqual(next(it).id, e1.id)
        proxy.cut()
        e3 = c.trigger_event("task.deleted")
        got = [next(it), next(it)]
        self.assertEqual([e.id for e in got], [e2.id, e3.id])
        self.assertEqual(got[1].type, "task.deleted")
        self.assertGreaterEqual(proxy.accepted, 2, "the stream was not resumed on a new connection")

    def test_follow_events_of_an_empty_account_resumes_from_its_start(self):
        # No event of this type yet: the first connection has no cursor.
        # It drops, and an event is emitted before the stream reconnects
        # (in the client's back-off): the resumed stream still yields it.
        proxy, emitted, got, reader = self.follow_first_event("webhook.degraded")
        # Two lists (newest, oldest), then the stream: cut it once its
        # answer has begun (the stream is open, with no cursor).
        proxy.wait_answered(3)
        proxy.cut()
        reader.join(120)
        self.assertFalse(reader.is_alive(), "the resumed stream yielded nothing")
        self.assertEqual(len(emitted), 1, "the stream was not cut")
        self.assertEqual([e.id for e in got], [emitted[0].id])

    def test_follow_events_without_a_cursor_lists_what_a_failed_open_missed(self):
        # No event of this type yet, and the connection that opens the
        # stream is dropped before the server sees it. An event is emitted
        # in the back-off: the stream must not be opened again as if
        # following began then (which would skip the event), but list it
        # first and resume after it.
        _, emitted, got, reader = self.follow_first_event("webhook.recovered", drop=[3])  # 1, 2: the lists; 3: the stream
        reader.join(120)
        self.assertFalse(reader.is_alive(), "the event emitted while the stream was down was skipped")
        self.assertEqual(len(emitted), 1, "the stream's connection was not dropped")
        self.assertEqual([e.id for e in got], [emitted[0].id])

    def follow_first_event(
        self, typ: str, drop: Sequence[int] = ()
    ) -> Tuple[CutProxy, List[ams.Event], List[ams.Event], threading.Thread]:
        """Follows the events of typ, of which the account has none yet,
        through a CutProxy (dropping the connections numbered in drop), in
        a thread that appends the first event yielded to got. The client's
        first back-off emits one event of typ (into emitted)."""
        s = helpers.server()
        c = s.client()
        self.assertEqual(c.list_events(type=typ, limit=1).data, [])
        proxy = CutProxy(s.base_url, drop=drop)
        self.addCleanup(proxy.close)
        emitted: List[ams.Event] = []

        def sleep(_: float) -> None:
            if not emitted:
                emitted.append(c.trigger_event(typ))

        pc = ams.Client(api_key=s.key, base_url=proxy.url, sleep=sleep)
        it = pc.follow_events(type=typ)
        self.addCleanup(it.close)
        got: List[ams.Event] = []
        reader = threading.Thread(target=lambda: got.append(next(it)), daemon=True)
        reader.start()
        return proxy, emitted, got, reader

    def test_errors(self):
        c = helpers.server().client()
        with self.assertRaises(ams.InvalidRequestError) as cm:
            next(c.follow_events(last_event_id="evt_nosuchevent"))
        self.assertEqual(cm.exception.param, "Last-Event-ID")
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.trigger_event("nope")
        self.assertEqual(cm.exception.param, "type")
