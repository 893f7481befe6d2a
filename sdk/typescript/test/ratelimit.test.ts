// 429 from a real `ams serve`: a standard-plan account (60 requests a
// minute, made with `ams users create`) runs out, gets RateLimitError with
// Retry-After, and a client that may wait that long retries and succeeds
// once the minute turns.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Client, RateLimitError } from "@ams/sdk";
import { startServe, type AmsServer } from "./helpers.js";

let srv: AmsServer;
let key: string;
let assistantId: string;

before(async () => {
  srv = await startServe();
  const email = "standard@example.com";
  await srv.cli("users", "create", "--email", email, "--plan", "standard");
  key = (await srv.cli("keys", "create", "--email", email, "--name", "limited", "--permissions", "read,write")).trim();
  assistantId = (await srv.cli("assistants", "create", "--email", email, "--name", "Limited")).trim();
});
after(async () => {
  await srv?.stop();
});

test("429 rate_limit_error with Retry-After, then retried after the wait", async () => {
  // The minute window slides: the 61st quick request is refused, whatever
  // the clock's second.
  const noRetry = new Client({ apiKey: key, baseURL: srv.baseURL, maxRetries: 0 });
  // Use up the minute (60 on the standard plan).
  let limited: unknown;
  for (let i = 0; i < 70 && limited === undefined; i++) {
    try {
      await noRetry.assistants.list({ limit: 1 });
    } catch (e) {
      limited = e;
    }
  }
  assert.ok(limited instanceof RateLimitError, String(limited));
  assert.equal(limited.status, 429);
  assert.equal(limited.type, "rate_limit_error");
  assert.equal(limited.code, "rate_limit_exceeded");
  assert.ok(limited.retryAfter !== undefined && limited.retryAfter >= 1 && limited.retryAfter <= 61, `retryAfter ${limited.retryAfter}`);
  assert.equal(limited.headers!.get("x-ratelimit-limit"), "60");
  assert.equal(limited.headers!.get("x-ratelimit-remaining"), "0");

  // A wait longer than maxRetryAfter is not waited for: thrown at once.
  const impatient = new Client({ apiKey: key, baseURL: srv.baseURL, maxRetries: 3, maxRetryAfter: 0.5 });
  let t0 = Date.now();
  await assert.rejects(impatient.assistants.list(), RateLimitError);
  assert.ok(Date.now() - t0 < 1000, "thrown without waiting");

  // The default client waits Retry-After (at most 61 s) and succeeds
  // once the first requests have left the sliding minute window.
  const statuses: number[] = [];
  const keys: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    keys.push(new Headers(init?.headers).get("idempotency-key") ?? "");
    const res = await fetch(input, init);
    statuses.push(res.status);
    return res;
  };
  const patient = new Client({ apiKey: key, baseURL: srv.baseURL, maxRetries: 2, maxRetryAfter: 61, fetch: recording });
  t0 = Date.now();
  const task = await patient.tasks.create({ assistant_id: assistantId, title: "After the wait" });
  const waited = (Date.now() - t0) / 1000;
  assert.equal(task.title, "After the wait");
  assert.deepEqual(statuses, [429, 201]);
  // The retry carried the first attempt's Idempotency-Key.
  assert.equal(keys.length, 2);
  assert.match(keys[0]!, /^ams-ts-[0-9a-f]{32}$/);
  assert.equal(keys[1], keys[0]);
  assert.ok(waited >= 0.5, `waited ${waited} s`);
});
