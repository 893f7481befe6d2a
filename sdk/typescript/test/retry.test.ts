// Retry mechanics, timeouts and aborts against a tiny local stub that
// answers what each test scripts (ams itself cannot be made to fail on
// cue): 429 with Retry-After once, 5xx, hangs, non-JSON errors.

import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import { after, before, beforeEach, test } from "node:test";
import { APIConnectionError, APIError, APITimeoutError, Client, ConflictError, PermissionDeniedError, RateLimitError, parseRetryAfter } from "@ams/sdk";
import { listen, type LocalServer } from "./helpers.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
  at: number;
}

let stub: LocalServer;
let seen: Seen[] = [];
let script: Array<(res: ServerResponse) => void> = [];

before(async () => {
  stub = await listen((req, res, body) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: body.toString(), at: Date.now() });
    const next = script.shift();
    if (next) next(res);
    else json(res, 200, { ok: true });
  });
});
after(async () => {
  await stub.close();
});
beforeEach(() => {
  seen = [];
  script = [];
});

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "Content-Type": "application/json", "X-Request-Id": `req_stub${seen.length}`, ...headers });
  res.end(JSON.stringify(body));
}

function apiError(status: number, type: string, code: string, headers: Record<string, string> = {}) {
  return (res: ServerResponse) => json(res, status, { error: { type, code, message: `stub ${code}` }, request_id: `req_stub${seen.length}` }, headers);
}

function client(opts: ConstructorParameters<typeof Client>[0] = {}): Client {
  return new Client({ apiKey: "ams_sk_stub", baseURL: stub.url, ...opts });
}

test("a 429 with Retry-After: 1 is retried after a second with the same Idempotency-Key", async () => {
  script = [apiError(429, "rate_limit_error", "rate_limit_exceeded", { "Retry-After": "1" }), (res) => json(res, 201, { id: "task_1", object: "task", title: "Call Bob" })];
  const t0 = Date.now();
  const task = await client().tasks.create({ assistant_id: "ast_1", title: "Call Bob" });
  assert.equal(task.id, "task_1");
  assert.equal(seen.length, 2);
  assert.ok(seen[1]!.at - seen[0]!.at >= 950, `waited ${seen[1]!.at - seen[0]!.at} ms`);
  assert.ok(Date.now() - t0 < 5000);
  const k0 = seen[0]!.headers["idempotency-key"];
  assert.match(String(k0), /^ams-ts-[0-9a-f]{32}$/);
  assert.equal(seen[1]!.headers["idempotency-key"], k0);
  assert.equal(seen[0]!.body, seen[1]!.body);
  assert.deepEqual(JSON.parse(seen[0]!.body), { assistant_id: "ast_1", title: "Call Bob" });
  assert.equal(seen[0]!.headers["authorization"], "Bearer ams_sk_stub");
  assert.equal(seen[0]!.headers["content-type"], "application/json");
  assert.match(String(seen[0]!.headers["user-agent"]), /^ams-typescript\//);
});

test("a caller's Idempotency-Key is sent as given", async () => {
  await client().messages.send({ assistant_id: "ast_1", message: "Hi" }, { idempotencyKey: "my-key-1" });
  assert.equal(seen[0]!.headers["idempotency-key"], "my-key-1");
  // GET, PATCH and DELETE carry none.
  await client().tasks.get("task_1");
  await client().request("PATCH", "/tasks/task_1", { body: {} });
  await client().tasks.delete("task_1");
  for (const s of seen.slice(1)) assert.equal(s.headers["idempotency-key"], undefined, s.method);
});

test("5xx is retried with backoff, then thrown as APIError", async () => {
  script = [apiError(503, "api_error", "unavailable"), apiError(500, "api_error", "internal_error")];
  const page = await client({ maxRetries: 3 }).assistants.list();
  assert.equal(seen.length, 3);
  assert.ok(page);
  const gap = seen[1]!.at - seen[0]!.at;
  assert.ok(gap >= 300 && gap < 2000, `backoff ${gap} ms`);

  seen = [];
  script = Array.from({ length: 5 }, () => apiError(500, "api_error", "internal_error"));
  await assert.rejects(client({ maxRetries: 1 }).assistants.list(), (e: unknown) => {
    assert.ok(e instanceof APIError);
    assert.equal(e.status, 500);
    assert.equal(e.code, "internal_error");
    return true;
  });
  assert.equal(seen.length, 2);
});

test("a PATCH that got a 5xx is not repeated (it may have acted); a POST is (it has a key)", async () => {
  script = [apiError(500, "api_error", "internal_error")];
  await assert.rejects(client().tasks.update("task_1", { title: "x" }), APIError);
  assert.equal(seen.length, 1);

  seen = [];
  script = [apiError(502, "api_error", "engine_error")];
  await client().tasks.complete("task_1");
  assert.equal(seen.length, 2);
});

test("400-class answers are not retried", async () => {
  script = [apiError(409, "invalid_request_error", "idempotency_key_reused")];
  await assert.rejects(client().tasks.create({ assistant_id: "ast_1", title: "x" }), ConflictError);
  assert.equal(seen.length, 1);
});

test("409 idempotency_key_in_use is retried: the first request still runs", async () => {
  script = [apiError(409, "invalid_request_error", "idempotency_key_in_use")];
  await client().messages.send({ assistant_id: "ast_1", message: "Hi" });
  assert.equal(seen.length, 2);
  assert.equal(seen[1]!.headers["idempotency-key"], seen[0]!.headers["idempotency-key"]);
});

test("Retry-After as an HTTP date; beyond maxRetryAfter it is thrown at once", async () => {
  const soon = new Date(Date.now() + 1500).toUTCString();
  script = [apiError(429, "rate_limit_error", "rate_limit_exceeded", { "Retry-After": soon })];
  await client().assistants.list();
  assert.equal(seen.length, 2);

  seen = [];
  script = [apiError(429, "rate_limit_error", "rate_limit_exceeded", { "Retry-After": "3600" })];
  const t0 = Date.now();
  await assert.rejects(client().assistants.list(), (e: unknown) => {
    assert.ok(e instanceof RateLimitError);
    assert.equal(e.retryAfter, 3600);
    return true;
  });
  assert.equal(seen.length, 1);
  assert.ok(Date.now() - t0 < 1000);

  assert.equal(parseRetryAfter("120"), 120);
  assert.equal(parseRetryAfter(""), undefined);
  assert.equal(parseRetryAfter("soon"), undefined);
  assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 0), 10);
});

test("maxRetries: 0 sends once", async () => {
  script = [apiError(429, "rate_limit_error", "rate_limit_exceeded", { "Retry-After": "1" })];
  await assert.rejects(client({ maxRetries: 0 }).assistants.list(), RateLimitError);
  assert.equal(seen.length, 1);
});

test("an answer without an error body is an APIError with the status's text", async () => {
  script = Array.from({ length: 2 }, () => (res: ServerResponse) => {
    res.writeHead(502, { "Content-Type": "text/html" });
    res.end("<html>Bad gateway</html>");
  });
  await assert.rejects(client({ maxRetries: 1 }).assistants.list(), (e: unknown) => {
    assert.ok(e instanceof APIError);
    assert.equal(e.status, 502);
    assert.equal(e.type, "api_error");
    assert.equal(e.code, "");
    assert.equal(e.body, "<html>Bad gateway</html>");
    assert.match(e.message, /Bad Gateway/);
    return true;
  });
});

test("timeout: each attempt is aborted after `timeout` ms and retried", async () => {
  const hang = (_res: ServerResponse) => {
    /* never answers */
  };
  script = [hang, hang];
  const t0 = Date.now();
  await assert.rejects(client({ timeout: 200, maxRetries: 1 }).assistants.list(), APITimeoutError);
  assert.equal(seen.length, 2);
  assert.ok(Date.now() - t0 >= 400);

  // Per call, and a success after a timed-out attempt.
  seen = [];
  script = [hang];
  const page = await client().assistants.list({}, { timeout: 200 });
  assert.ok(page);
  assert.equal(seen.length, 2);
});

test("an AbortSignal cancels the call, retries included", async () => {
  script = [apiError(429, "rate_limit_error", "rate_limit_exceeded", { "Retry-After": "30" })];
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(new Error("stop")), 200);
  const t0 = Date.now();
  await assert.rejects(client().assistants.list({}, { signal: ctl.signal }), /stop/);
  assert.ok(Date.now() - t0 < 2000);
});

test("a connection refused is an APIConnectionError", async () => {
  const c = new Client({ apiKey: "k", baseURL: "http://127.0.0.1:9", maxRetries: 0 });
  await assert.rejects(c.assistants.list(), (e: unknown) => e instanceof APIConnectionError && !(e instanceof APITimeoutError));
});

test("an access token function is called for every attempt", async () => {
  let n = 0;
  const c = new Client({ baseURL: stub.url, accessToken: async () => `ams_at_${++n}` });
  script = [apiError(503, "api_error", "unavailable")];
  await c.assistants.list();
  assert.deepEqual(
    seen.map((s) => s.headers["authorization"]),
    ["Bearer ams_at_1", "Bearer ams_at_2"],
  );
});

test("recover: the body (Dates as RFC 3339) and a 403 account_on_waitlist, not retried", async () => {
  // (ams cannot put an account that has a key back on the waitlist: a stub answers.)
  script = [(res) => json(res, 200, { object: "webhook_recovery", webhook_id: "wh_1", since: "2030-01-01T00:00:00.000Z", until: "2030-01-02T00:00:00Z", queued: 3 })];
  const rec = await client().webhooks.recover("wh_1", { since: new Date(Date.UTC(2030, 0, 1)), until: "2030-01-02T00:00:00Z" });
  assert.equal(rec.queued, 3);
  assert.equal(seen[0]!.method, "POST");
  assert.equal(seen[0]!.url, "/v1/webhooks/wh_1/recover");
  assert.deepEqual(JSON.parse(seen[0]!.body), { since: "2030-01-01T00:00:00.000Z", until: "2030-01-02T00:00:00Z" });
  assert.match(String(seen[0]!.headers["idempotency-key"]), /^ams-ts-/);

  seen = [];
  script = [apiError(403, "permission_error", "account_on_waitlist")];
  await assert.rejects(client().webhooks.recover("wh_1", { since: "2030-01-01T00:00:00Z" }), (e: unknown) => {
    assert.ok(e instanceof PermissionDeniedError);
    assert.equal(e.status, 403);
    assert.equal(e.code, "account_on_waitlist");
    return true;
  });
  assert.equal(seen.length, 1);
});

test("query parameters: Dates as RFC 3339, empty ones left out", async () => {
  await client().tasks.list({ status: "open", due_after: new Date(Date.UTC(2030, 0, 1)), limit: 5, assistant_id: "" });
  const u = new URL(seen[0]!.url, stub.url);
  assert.equal(u.pathname, "/v1/tasks");
  assert.deepEqual(Object.fromEntries(u.searchParams), { status: "open", due_after: "2030-01-01T00:00:00.000Z", limit: "5" });
  // Ids are escaped into the path.
  await client().tasks.get("task_a/b");
  assert.equal(seen[1]!.url, "/v1/tasks/task_a%2Fb");
});
