// Streamed replies (SSE): from a real `ams serve`, and the parser's edge
// cases and failures against a local stub.

import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import { AmsError, APIError, Client, InvalidRequestError, NotFoundError, StreamEndedError, parseSSE, type MessageStreamEvent } from "@ams/sdk";
import { listen, startServe, type AmsServer, type LocalServer } from "./helpers.js";

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
  const deltas = events.slice(0, -1);
  assert.ok(deltas.length >= 1);
  for (const d of deltas) assert.equal(d.type, "message.delta");
  const text = deltas.map((d) => (d.type === "message.delta" ? d.delta : "")).join("");
  if (last.type !== "message.completed") throw new Error("unreachable");
  assert.equal(text, last.message.content);
  assert.equal(last.message.direction, "outbound");
  // Stored: the same record as a GET.
  assert.deepEqual(await client.messages.get(last.message.id), last.message);

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
