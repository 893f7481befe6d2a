// Streamed replies (SSE): from a real `ams serve`, and the parser's edge
// cases and failures against a local stub.

import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import { AmsError, APIConnectionError, APIError, Client, InvalidRequestError, NotFoundError, StreamEndedError, parseSSE, type MessageStreamEvent } from "@ams/sdk";
import { cutBetweenEvents, cutInsideChunk, cutMidEvent, cuttingProxy, dropTheAnswer, listen, startServe, type AmsServer, type Cut, type LocalServer } from "./helpers.js";

let srv: AmsServer;
let client: Client;

before(async () => {
  srv = await startServe();
  client = new Client({ apiKey: srv.apiKey, baseURL: srv.baseURL });
});
after(async () => {
  await srv?.stop();
});

test("a reply streams as deltas, then the stored message", async () => {
  const events: MessageStreamEvent[] = [];
  const stream = client.messages.stream({ assistant_id: srv.assistantId, message: "Hello! My name is Ada. What can you do?" });
  for await (const ev of stream) events.push(ev);
  assert.match(stream.requestId ?? "", /^req_/);
  const last = events.at(-1)!;
  assert.equal(last.type, "message.completed");
  const first = events[0]!;
  if (first.type !== "turn.started") throw new Error(`first event ${first.type}`);
  assert.match(first.turn.turn_id, /^trn_/);
  assert.equal(stream.turnId, first.turn.turn_id);
  assert.deepEqual(events.map((e) => e.id), events.map((_, i) => String(i + 1)));
  const deltas = events.slice(1, -1);
  assert.ok(deltas.length > 1, "the built-in engine streams word by word");
  for (const d of deltas) assert.equal(d.type, "message.delta");
  const text = deltas.map((d) => (d.type === "message.delta" ? d.delta : "")).join("");
  if (last.type !== "message.completed") throw new Error("unreachable");
  assert.equal(text, last.message.content);
  assert.equal(last.message.direction, "outbound");
  // Stored: the same record as a GET.
  assert.deepEqual(await client.messages.get(last.message.id), last.message);

  // The turn's record, and its stream again from an event.
  const turn = await client.turns.get(first.turn.turn_id);
  assert.equal(turn.status, "completed");
  assert.equal(turn.reply_message_id, last.message.id);
  const page = await client.turns.list({ conversation_id: turn.conversation_id });
  assert.deepEqual(page.data.map((t) => t.id), [turn.id]);
  const rest: MessageStreamEvent[] = [];
  for await (const ev of client.turns.events(turn.id, { lastEventId: events.at(-3)!.id })) rest.push(ev);
  assert.deepEqual(rest.map((e) => e.id), [events.at(-2)!.id, events.at(-1)!.id]);
  assert.equal((await client.turns.cancel(turn.id)).status, "completed");
  assert.equal((await client.messages.cancel(turn.inbound_message_id)).id, turn.id);

  // Continuing the conversation, with the helpers.
  let pieces = "";
  const next = await client.messages
    .stream({ assistant_id: srv.assistantId, conversation_id: last.message.conversation_id, message: "What's my name?" })
    .forEachDelta((d) => (pieces += d));
  assert.equal(pieces, next.content);
  assert.match(next.content, /Ada/);
  const fin = await client.messages.stream({ assistant_id: srv.assistantId, message: "Thanks!" }).finalMessage();
  assert.match(fin.id, /^msg_/);
});

test("a dropped stream resumes from the last event id, with tool events", async () => {
  const started = { turn_id: "trn_1", inbound_message_id: "msg_0", conversation_id: "conv_1", assistant_id: "ast_1", resumed: false };
  const action = { id: "act_1", object: "action", type: "create_task", status: "succeeded", turn_id: "trn_1", call_seq: 1 };
  const msg = { id: "msg_1", object: "message", assistant_id: "ast_1", conversation_id: "conv_1", direction: "outbound", content: "Done.",
    metadata: {}, created_at: "2026-11-21T10:00:00Z", updated_at: "2026-11-21T10:00:00Z" };
  const ev = (id: number, name: string, data: unknown) => `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  const seen: Array<[string, string | undefined]> = [];
  const stub = await listen((req, res) => {
    seen.push([`${req.method} ${req.url}`, req.headers["last-event-id"] as string | undefined]);
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Turn-Id": "trn_1", "X-Request-Id": "req_s" });
    if (req.method === "POST") {
      // Cut after the tool call.
      res.end(ev(1, "turn.started", started) + ev(2, "tool_call", { turn_id: "trn_1", call_seq: 1, name: "create_task", arguments: { title: "x" } }));
      return;
    }
    res.end(ev(3, "tool_result", { turn_id: "trn_1", call_seq: 1, name: "create_task", action, replayed: false }) +
      ev(4, "message.delta", { delta: "Done." }) + ev(5, "message.completed", msg));
  });
  try {
    const c = new Client({ apiKey: "k", baseURL: stub.url });
    const events: MessageStreamEvent[] = [];
    for await (const e of c.messages.stream({ assistant_id: "ast_1", message: "Hi" })) events.push(e);
    assert.deepEqual(events.map((e) => `${e.id} ${e.type}`), ["1 turn.started", "2 tool_call", "3 tool_result", "4 message.delta", "5 message.completed"]);
    const r = events[2]!;
    if (r.type !== "tool_result") throw new Error("unreachable");
    assert.equal(r.result.action.turn_id, "trn_1");
    assert.deepEqual(seen, [["POST /v1/messages", undefined], ["GET /v1/turns/trn_1/events", "2"]]);
  } finally {
    await stub.close();
  }
});

// A TCP proxy in front of the real server cuts the streams wherever a
// network may: inside an HTTP chunk (mid-line), between two events, and
// mid-event (after the event's name, before its data).
const cutKinds: Array<[string, (n: number) => Cut]> = [
  ["inside a chunk", cutInsideChunk],
  ["between events", cutBetweenEvents],
  ["mid-event", cutMidEvent],
];

for (const [kind, cut] of cutKinds) {
  test(`a stream cut ${kind} resumes without losing or repeating an event`, async () => {
    // The POST's stream is cut, then the first resumed one.
    const proxy = await cuttingProxy(srv.baseURL, [cut(3), cut(2)]);
    try {
      const c = new Client({ apiKey: srv.apiKey, baseURL: proxy.url });
      const events: MessageStreamEvent[] = [];
      for await (const ev of c.messages.stream({ assistant_id: srv.assistantId, message: "Hello! My name is Ada. What can you do?" })) events.push(ev);
      assert.equal(proxy.cutsDone(), 2);
      assert.ok(events.length > 6, `${events.length} events`);
      assert.deepEqual(events.map((e) => e.id), events.map((_, i) => String(i + 1)));
      assert.equal(events[0]!.type, "turn.started");
      const last = events.at(-1)!;
      if (last.type !== "message.completed") throw new Error(`last event ${last.type}`);
      assert.equal(events.map((e) => (e.type === "message.delta" ? e.delta : "")).join(""), last.message.content);
      // turns.events resumes the same way.
      const proxy2 = await cuttingProxy(srv.baseURL, [cut(1)]);
      try {
        const rest: MessageStreamEvent[] = [];
        const c2 = new Client({ apiKey: srv.apiKey, baseURL: proxy2.url });
        for await (const ev of c2.turns.events(events[0]!.turn_id!, { lastEventId: "1" })) rest.push(ev);
        assert.equal(proxy2.cutsDone(), 1);
        assert.deepEqual(rest.map((e) => e.id), events.slice(1).map((e) => e.id));
      } finally {
        await proxy2.close();
      }
    } finally {
      await proxy.close();
    }
  });

  test(`a stream cut ${kind} more often than the retries allow is StreamEndedError`, async () => {
    const proxy = await cuttingProxy(srv.baseURL, Array.from({ length: 10 }, () => cut(1)));
    try {
      const c = new Client({ apiKey: srv.apiKey, baseURL: proxy.url, maxRetries: 2 });
      const seen: string[] = [];
      await assert.rejects(
        (async () => {
          for await (const ev of c.messages.stream({ assistant_id: srv.assistantId, message: "Hello! My name is Ada. What can you do?" })) seen.push(ev.id ?? "");
        })(),
        (e: unknown) => e instanceof StreamEndedError && e instanceof APIConnectionError && /last event/.test(e.message),
      );
      assert.equal(proxy.cutsDone(), 3); // the POST and two resumes
      assert.deepEqual(seen, seen.map((_, i) => String(i + 1)));
    } finally {
      await proxy.close();
    }
  });
}

test("a resume whose answer never comes is retried", async () => {
  // The stream is cut, and the first resume's answer never comes.
  const proxy = await cuttingProxy(srv.baseURL, [cutBetweenEvents(3), dropTheAnswer]);
  try {
    const c = new Client({ apiKey: srv.apiKey, baseURL: proxy.url });
    const events: MessageStreamEvent[] = [];
    for await (const ev of c.messages.stream({ assistant_id: srv.assistantId, message: "Hello! My name is Ada. What can you do?" })) events.push(ev);
    assert.equal(proxy.cutsDone(), 2);
    assert.deepEqual(events.map((e) => e.id), events.map((_, i) => String(i + 1)));
    assert.equal(events.at(-1)!.type, "message.completed");
  } finally {
    await proxy.close();
  }
});

test("an error before the stream begins is thrown as usual", async () => {
  await assert.rejects(client.messages.stream({ assistant_id: "ast_doesnotexist", message: "Hi" }).finalMessage(), NotFoundError);
  await assert.rejects(client.messages.stream({ assistant_id: srv.assistantId, message: " " }).finalMessage(), (e: unknown) => {
    assert.ok(e instanceof InvalidRequestError);
    assert.equal(e.param, "message");
    return true;
  });
});

test("a stream is iterated once", async () => {
  const s = client.messages.stream({ assistant_id: srv.assistantId, message: "Hi" });
  await s.finalMessage();
  await assert.rejects(s.finalMessage(), /once/);
});

test("an idempotency key replays a completed stream", async () => {
  const key = `stream-${Date.now()}`;
  const a = await client.messages.stream({ assistant_id: srv.assistantId, message: "Hello again" }, { idempotencyKey: key }).finalMessage();
  const b = await client.messages.stream({ assistant_id: srv.assistantId, message: "Hello again" }, { idempotencyKey: key }).finalMessage();
  assert.equal(a.id, b.id);
});

/** A ReadableStream of the given chunks. */
function chunks(...parts: Array<string | Uint8Array>): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(typeof p === "string" ? enc.encode(p) : p);
      c.close();
    },
  });
}

async function collect(body: ReadableStream<Uint8Array>) {
  const out = [];
  for await (const ev of parseSSE(body)) out.push(ev);
  return out;
}

test("the SSE parser: line endings, split chunks, comments, multi-line data, BOM", async () => {
  assert.deepEqual(await collect(chunks("event: a\ndata: 1\n\n", "event: b\r\ndata: 2\r\n\r\n", "event: c\rdata: 3\r\r")), [
    { event: "a", data: "1" },
    { event: "b", data: "2" },
    { event: "c", data: "3" },
  ]);
  // A CRLF split across chunks is one line end.
  assert.deepEqual(await collect(chunks("data: x\r", "\n\r", "\n")), [{ event: "message", data: "x" }]);
  // Events and UTF-8 characters split anywhere.
  const bytes = new TextEncoder().encode('event: message.delta\ndata: {"delta":"Grüße 🎉"}\n\n');
  const split = Array.from(bytes, (b) => new Uint8Array([b]));
  assert.deepEqual(await collect(chunks(...split)), [{ event: "message.delta", data: '{"delta":"Grüße 🎉"}' }]);
  // Comments, unknown fields, multi-line data, no space after the colon, id, BOM.
  assert.deepEqual(await collect(chunks("\uFEFF: keep-alive\n\nretry: 10\nfoo: bar\nid: 7\ndata:a\ndata: b\n\n")), [{ event: "message", data: "a\nb", id: "7" }]);
  // An event without its blank line at the end of the body is dropped.
  assert.deepEqual(await collect(chunks("data: done\n\ndata: cut")), [{ event: "message", data: "done" }]);
});

let stub: LocalServer;
let script: (res: ServerResponse) => void = () => {};

before(async () => {
  stub = await listen((_req, res) => script(res));
});
after(async () => {
  await stub.close();
});

function sse(res: ServerResponse, body: string, end = true): void {
  res.writeHead(200, { "Content-Type": "text/event-stream", "X-Request-Id": "req_stub" });
  res.write(body);
  if (end) res.end();
}

test("a stream cut off before message.completed is StreamEndedError", async () => {
  script = (res) => sse(res, 'event: message.delta\ndata: {"delta":"Hel"}\n\n');
  const c = new Client({ apiKey: "k", baseURL: stub.url });
  const seen: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const ev of c.messages.stream({ assistant_id: "ast_1", message: "Hi" })) if (ev.type === "message.delta") seen.push(ev.delta);
    })(),
    (e: unknown) => e instanceof StreamEndedError && /req_stub/.test(e.message),
  );
  assert.deepEqual(seen, ["Hel"]);
});

test("an error event after the stream began is thrown as its AmsError (status 200)", async () => {
  script = (res) =>
    sse(
      res,
      'event: message.delta\ndata: {"delta":"Hel"}\n\nevent: error\ndata: {"error":{"type":"api_error","code":"engine_error","message":"The model failed."},"request_id":"req_stub"}\n\n',
    );
  const c = new Client({ apiKey: "k", baseURL: stub.url });
  await assert.rejects(c.messages.stream({ assistant_id: "ast_1", message: "Hi" }).finalMessage(), (e: unknown) => {
    assert.ok(e instanceof APIError && e instanceof AmsError);
    assert.equal(e.status, 200);
    assert.equal(e.code, "engine_error");
    assert.equal(e.requestId, "req_stub");
    return true;
  });
});

test("breaking out of the loop closes the connection", async () => {
  let closed!: () => void;
  const wasClosed = new Promise<void>((r) => (closed = r));
  script = (res) => {
    res.on("close", () => closed());
    sse(res, 'event: message.delta\ndata: {"delta":"a"}\n\n', false); // and never ends
  };
  const c = new Client({ apiKey: "k", baseURL: stub.url });
  for await (const ev of c.messages.stream({ assistant_id: "ast_1", message: "Hi" })) {
    assert.equal(ev.type, "message.delta");
    break;
  }
  await wasClosed;
});

test("an answer that is not an event stream is refused", async () => {
  script = (res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end("{}");
  };
  const c = new Client({ apiKey: "k", baseURL: stub.url });
  await assert.rejects(c.messages.stream({ assistant_id: "ast_1", message: "Hi" }).finalMessage(), /not an event stream/);
});

test("the stream request: POST /v1/messages with stream true, Accept text/event-stream, an Idempotency-Key", async () => {
  let got: { headers: Record<string, unknown>; body: string } | undefined;
  const s2 = await listen((req, res, body) => {
    got = { headers: req.headers, body: body.toString() };
    sse(res, 'event: message.delta\ndata: {"delta":"ok"}\n\nevent: message.completed\ndata: {"id":"msg_1","object":"message","content":"ok"}\n\n');
  });
  try {
    const m = await new Client({ apiKey: "k", baseURL: s2.url }).messages.stream({ assistant_id: "ast_1", message: "Hi" }).finalMessage();
    assert.equal(m.id, "msg_1");
    assert.deepEqual(JSON.parse(got!.body), { assistant_id: "ast_1", message: "Hi", stream: true });
    assert.equal(got!.headers["accept"], "text/event-stream");
    assert.match(String(got!.headers["idempotency-key"]), /^ams-ts-/);
  } finally {
    await s2.close();
  }
});
