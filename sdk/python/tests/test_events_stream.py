"""The account's event stream (follow_events) and test events
(trigger_event) against the real server, resumed through a proxy that cuts
the connection."""

import socket
import threading
import unittest
from typing import List

import ams

from . import helpers


class CutProxy:
    """Forwards TCP connections to the server until cut() closes every one
    open; later connections are forwarded again."""

    def __init__(self, target_url: str) -> None:
        host, port = target_url.split("//", 1)[1].split(":")
        self.target = (host, int(port))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.conns: List[socket.socket] = []
        self.accepted = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            up = socket.create_connection(self.target)
            with self.lock:
                self.conns += [c, up]
                self.accepted += 1
            threading.Thread(target=self._pipe, args=(c, up), daemon=True).start()
            threading.Thread(target=self._pipe, args=(up, c), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self.lock:
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
        s = helpers.server()
        c = s.client()
        typ = "webhook.degraded"
        self.assertEqual(c.list_events(type=typ, limit=1).data, [])
        proxy = CutProxy(s.base_url)
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
        deadline = threading.Event()
        for _ in range(600):  # two lists (newest, oldest), then the stream: cut it
            if proxy.accepted >= 3:
                break
            deadline.wait(0.05)
        proxy.cut()
        reader.join(30)
        self.assertEqual(len(emitted), 1, "the stream was not cut")
        self.assertEqual([e.id for e in got], [emitted[0].id])

    def test_errors(self):
        c = helpers.server().client()
        with self.assertRaises(ams.InvalidRequestError) as cm:
            next(c.follow_events(last_event_id="evt_nosuchevent"))
        self.assertEqual(cm.exception.param, "Last-Event-ID")
        with self.assertRaises(ams.InvalidRequestError) as cm:
            c.trigger_event("nope")
        self.assertEqual(cm.exception.param, "type")
