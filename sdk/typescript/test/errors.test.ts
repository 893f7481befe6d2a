// An error of each type from a real `ams serve`, as the SDK's classes.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  AmsError,
  APIConnectionError,
  AuthenticationError,
  Client,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
} from "@ams/sdk";
import { startServe, type AmsServer } from "./helpers.js";

let srv: AmsServer;
let client: Client;

before(async () => {
  srv = await startServe();
  client = new Client({ apiKey: srv.apiKey, baseURL: srv.baseURL });
});
after(async () => {
  await srv?.stop();
});

/** Asserts that p rejects with an error of cls with the given fields. */
async function rejectsWith(p: Promise<unknown>, cls: typeof AmsError, want: Partial<Pick<AmsError, "status" | "type" | "code" | "param">>): Promise<AmsError> {
  let caught: unknown;
  try {
    await p;
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof cls, `want ${cls.name}, got ${caught}`);
  assert.ok(caught instanceof AmsError);
  for (const [k, v] of Object.entries(want)) assert.equal(caught[k as keyof AmsError], v, `${k} of ${caught.message}`);
  assert.match(caught.requestId ?? "", /^req_/);
  assert.ok(caught.headers instanceof Headers);
  return caught;
}

test("400 invalid_request_error: a missing parameter names it", async () => {
  const e = await rejectsWith(client.messages.send({ assistant_id: srv.assistantId } as never), InvalidRequestError, {
    status: 400,
    type: "invalid_request_error",
    code: "parameter_missing",
    param: "message",
  });
  assert.match(e.message, /^ams: 400 parameter_missing: .* \(param message\) \(request req_/);
  assert.equal(e.name, "InvalidRequestError");
  assert.match(e.apiMessage, /message/);
});

test("400 unknown_parameter: a typo is refused, not ignored", async () => {
  await rejectsWith(client.tasks.create({ assistant_id: srv.assistantId, title: "x", dew_at: "2030-01-01T00:00:00Z" } as never), InvalidRequestError, {
    status: 400,
    code: "unknown_parameter",
    param: "dew_at",
  });
});

test("401 authentication_error: an unknown key", async () => {
  const bad = new Client({ apiKey: "ams_sk_" + "x".repeat(40), baseURL: srv.baseURL });
  const e = await rejectsWith(bad.assistants.list(), AuthenticationError, { status: 401, type: "authentication_error" });
  assert.match(e.headers!.get("www-authenticate") ?? "", /invalid_token/);
});

test("403 permission_error: a key without the permission (ams keys create)", async () => {
  const key = (await srv.cli("keys", "create", "--email", srv.email, "--name", "read-only", "--permissions", "read")).trim();
  assert.match(key, /^ams_sk_/);
  const ro = new Client({ apiKey: key, baseURL: srv.baseURL });
  // Reading works …
  assert.equal((await ro.assistants.get(srv.assistantId)).id, srv.assistantId);
  // … writing does not.
  const e = await rejectsWith(ro.tasks.create({ assistant_id: srv.assistantId, title: "Nope" }), PermissionDeniedError, {
    status: 403,
    type: "permission_error",
    code: "insufficient_scope",
  });
  assert.match(e.headers!.get("www-authenticate") ?? "", /insufficient_scope/);
});

test("404 resource_missing", async () => {
  await rejectsWith(client.tasks.get("task_doesnotexist"), NotFoundError, { status: 404, type: "invalid_request_error", code: "resource_missing" });
  await rejectsWith(client.messages.send({ assistant_id: "ast_doesnotexist", message: "Hi" }), NotFoundError, { status: 404, param: "assistant_id" });
});

test("409 idempotency_key_reused: the same key with another body", async () => {
  const key = `reuse-${Date.now()}`;
  await client.tasks.create({ assistant_id: srv.assistantId, title: "First" }, { idempotencyKey: key });
  await rejectsWith(client.tasks.create({ assistant_id: srv.assistantId, title: "Second" }, { idempotencyKey: key }), ConflictError, {
    status: 409,
    type: "invalid_request_error",
    code: "idempotency_key_reused",
  });
});

test("409 webhook_limit_reached: an account's webhook cap (ams users update --max-webhooks)", async () => {
  const email = "webhook-cap@example.com";
  await srv.cli("users", "create", "--email", email, "--plan", "enterprise");
  const key = (await srv.cli("keys", "create", "--email", email, "--name", "cap", "--permissions", "read,write")).trim();
  await srv.cli("users", "update", "--email", email, "--max-webhooks", "1");
  const capped = new Client({ apiKey: key, baseURL: srv.baseURL });
  await capped.webhooks.create({ url: "http://127.0.0.1:9/cap/1", events: ["task.created"], secret: "a-secret-of-16-chars+" });
  const e = await rejectsWith(
    capped.webhooks.create({ url: "http://127.0.0.1:9/cap/2", events: ["task.created"], secret: "a-secret-of-16-chars+" }),
    ConflictError,
    { status: 409, type: "invalid_request_error", code: "webhook_limit_reached" },
  );
  assert.ok(e instanceof InvalidRequestError);
  assert.match(e.apiMessage, /1 webhook/);
});

test("405 and 413 are invalid_request_error too", async () => {
  await rejectsWith(client.request("DELETE", "/events"), InvalidRequestError, { status: 405 });
  await rejectsWith(client.messages.send({ assistant_id: srv.assistantId, message: "x".repeat(1100 * 1024) }), InvalidRequestError, { status: 413 });
});

test("an empty id is refused before any request", async () => {
  await assert.rejects(client.tasks.get(""), TypeError);
});

test("a server that is not there: APIConnectionError after the retries", async () => {
  const gone = new Client({ apiKey: "k", baseURL: "http://127.0.0.1:9", maxRetries: 1 });
  await assert.rejects(gone.assistants.list(), APIConnectionError);
});
