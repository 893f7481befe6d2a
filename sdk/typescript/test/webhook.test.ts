// Webhooks: real deliveries from `ams serve` to a local receiver, verified
// with the SDK; ping, retry, deliveries, redelivery, recovery; and the shared
// signature vectors (sdk/testdata/webhook-signatures.json).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  Client,
  ConflictError,
  InvalidRequestError,
  WebhookVerificationError,
  computeSignature,
  computeStandardSignature,
  signWebhook,
  verifySignature,
  verifyStandardSignature,
  verifyWebhook,
  type Event,
} from "@ams/sdk";
import { listen, repoRoot, startServe, waitFor, type AmsServer, type LocalServer } from "./helpers.js";

describe("deliveries from a real ams serve", () => {
  const secret = "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng==";
  let srv: AmsServer;
  let client: Client;
  let receiver: LocalServer;
  const received: Array<{ headers: IncomingHttpHeaders; body: Buffer; event?: Event; error?: unknown }> = [];
  // Event ids the receiver fails once (answers 500) before accepting.
  const failOnce = new Set<string>();

  before(async () => {
    srv = await startServe();
    client = new Client({ apiKey: srv.apiKey, baseURL: srv.baseURL });
    receiver = await listen(async (req, res, body) => {
      const r: (typeof received)[number] = { headers: req.headers, body };
      received.push(r);
      try {
        r.event = await verifyWebhook(body, req.headers, secret);
      } catch (e) {
        r.error = e;
        res.writeHead(400).end("bad signature");
        return;
      }
      if (failOnce.delete(r.event.id)) {
        res.writeHead(500).end("try again");
        return;
      }
      res.writeHead(200).end("ok");
    });
  });
  after(async () => {
    await srv?.stop();
    await receiver?.close();
  });

  test("message.created deliveries verify with the SDK", async () => {
    const wh = await client.webhooks.create({ url: receiver.url + "/hook", events: ["message.created"], secret });
    const reply = await client.messages.send({ assistant_id: srv.assistantId, message: "Hello, webhook!" });
    const got = await waitFor("two message.created deliveries", () => (received.filter((r) => r.event).length >= 2 ? received : undefined));
    for (const r of got) {
      assert.equal(r.error, undefined, String(r.error));
      assert.equal(r.headers["x-service-event"], "message.created");
      assert.match(String(r.headers["x-service-delivery"]), /^dlv_/);
      assert.equal(r.headers["webhook-id"], r.event!.id);
      assert.match(String(r.headers["user-agent"]), /^ams-webhooks\//);
      // Each signature alone verifies too.
      assert.ok(await verifySignature(secret, r.body, String(r.headers["x-service-signature"])));
      assert.ok(
        await verifyStandardSignature(secret, r.body, {
          id: String(r.headers["webhook-id"]),
          timestamp: String(r.headers["webhook-timestamp"]),
          signature: String(r.headers["webhook-signature"]),
        }),
      );
      // With Headers too (fetch-style receivers).
      const h = new Headers();
      for (const [k, v] of Object.entries(r.headers)) if (typeof v === "string") h.set(k, v);
      assert.equal((await verifyWebhook(r.body.toString("utf8"), h, secret)).id, r.event!.id);
      // The wrong secret, or a changed body, does not.
      await assert.rejects(verifyWebhook(r.body, r.headers, "whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldA=="), WebhookVerificationError);
      await assert.rejects(verifyWebhook(Buffer.concat([r.body, Buffer.from(" ")]), r.headers, secret), WebhookVerificationError);
    }
    const events = got.map((r) => r.event!);
    const outbound = events.find((e) => e.type === "message.created" && e.data.direction === "outbound");
    assert.ok(outbound && outbound.type === "message.created");
    assert.equal(outbound.data.message_id, reply.id);
    assert.equal(outbound.data.content, reply.content);

    const deliveries = await client.webhooks.listDeliveries(wh.id);
    assert.equal(deliveries.data.length, 2);
    for (const d of deliveries.data) {
      assert.equal(d.success, true);
      assert.equal(d.status_code, 200);
      assert.equal(d.attempt, 1);
    }
    await client.webhooks.update(wh.id, { active: false });
    received.length = 0;
  });

  test("ping, a failed attempt retried a second later, redelivery", async () => {
    const wh = await client.webhooks.create({ url: receiver.url + "/ping", events: ["task.created"], secret });
    const ping = await client.webhooks.ping(wh.id);
    assert.equal(ping.type, "webhook.ping");
    assert.equal(ping.data.webhook_id, wh.id);
    // (The first attempt may already be under way: fail the redelivery's instead.)
    const first = await waitFor("the ping", () => received.find((r) => r.event?.id === ping.id));
    assert.equal(first.event!.type, "webhook.ping");

    const attempts = await waitFor("the ping's delivery record", async () => {
      const page = await client.webhooks.listDeliveries(wh.id, { event_id: ping.id });
      return page.data.length >= 1 ? page.data : undefined;
    });
    assert.equal(attempts[0]!.success, true);

    // Redeliver: the same event id comes again; the receiver fails it
    // once, and the schedule (0s,1s) retries it a second later.
    failOnce.add(ping.id);
    const re = await client.webhooks.redeliver(wh.id, attempts[0]!.id);
    assert.equal(re.status, "queued");
    assert.equal(re.event_id, ping.id);
    const all = await waitFor(
      "the redelivery's two attempts",
      async () => {
        const page = await client.webhooks.listDeliveries(wh.id, { event_id: ping.id, order: "asc" });
        return page.data.length >= 3 ? page.data : undefined;
      },
      20_000,
    );
    assert.deepEqual(
      all.map((d) => [d.attempt, d.success, d.status_code]),
      [
        [1, true, 200],
        [1, false, 500],
        [2, true, 200],
      ],
    );
    assert.equal(all[1]!.response_body, "try again");
    assert.equal(received.filter((r) => r.event?.id === ping.id).length, 3);
    const gap = Date.parse(all[2]!.created_at) - Date.parse(all[1]!.created_at);
    assert.ok(gap >= 900, `retried after ${gap} ms`);
    await client.webhooks.delete(wh.id);
  });

  test("recover: an event missed while the webhook was off is queued again and delivered", async () => {
    const wh = await client.webhooks.create({ url: receiver.url + "/recover", events: ["task.created"], secret, active: false });
    const task = await client.tasks.create({ assistant_id: srv.assistantId, title: "Missed while off" });
    // Off: recovery is refused.
    await assert.rejects(
      client.webhooks.recover(wh.id, { since: wh.created_at }),
      (err: unknown) => err instanceof ConflictError && err.status === 409 && err.code === "webhook_inactive",
    );

    await client.webhooks.update(wh.id, { active: true });
    const rec = await client.webhooks.recover(wh.id, { since: wh.created_at });
    assert.equal(rec.object, "webhook_recovery");
    assert.equal(rec.webhook_id, wh.id);
    assert.equal(rec.queued, 1);
    assert.equal(Date.parse(rec.since), Date.parse(wh.created_at));
    assert.ok(Date.parse(rec.until) > Date.parse(rec.since));
    const got = await waitFor("the recovered task.created", () => received.find((r) => r.event?.type === "task.created" && r.event.data.id === task.id));
    assert.equal(got.error, undefined);

    // Asking again (Dates this time) queues only what is still missing: nothing.
    const since = new Date(wh.created_at);
    const until = new Date(since.getTime() + 3600_000);
    const again = await client.webhooks.recover(wh.id, { since, until });
    assert.equal(again.queued, 0);
    assert.equal(Date.parse(again.until), until.getTime());

    // A bad time is a 400 naming it.
    await assert.rejects(
      client.webhooks.recover(wh.id, { since: "yesterday" }),
      (err: unknown) => err instanceof InvalidRequestError && err.status === 400 && err.code === "parameter_invalid" && err.param === "since",
    );
    await assert.rejects(
      client.webhooks.recover(wh.id, { since, until: since }),
      (err: unknown) => err instanceof InvalidRequestError && err.status === 400 && err.param === "until",
    );
    await client.webhooks.delete(wh.id);
  });

  test("a replayed delivery (old timestamp) is refused; X-Service-Signature alone decides unless requireTimestamp", async () => {
    const r = received.find((x) => x.event)!;
    const later = Number(r.headers["webhook-timestamp"]) + 301;
    await assert.rejects(verifyWebhook(r.body, r.headers, secret, { now: later }), /too old/);
    const { ["webhook-id"]: _a, ["webhook-timestamp"]: _b, ["webhook-signature"]: _c, ...onlyX } = r.headers;
    assert.equal((await verifyWebhook(r.body, onlyX, secret)).id, r.event!.id);
    await assert.rejects(verifyWebhook(r.body, onlyX, secret, { requireTimestamp: true }), /missing webhook-signature/);
    await assert.rejects(verifyWebhook(r.body, {}, secret), /no signature headers/);
    // With webhook-signature present, X-Service-Signature is not needed.
    const { ["x-service-signature"]: _d, ...noX } = r.headers;
    assert.equal((await verifyWebhook(r.body, noX, secret)).id, r.event!.id);
  });
});

interface Vector {
  name: string;
  secret: string;
  body: string;
  now: number;
  x_service_signature: string;
  webhook_id: string;
  webhook_timestamp: string;
  webhook_signature: string;
  valid_x_service_signature: boolean;
  valid_standard: boolean;
  signed: boolean;
}

describe("shared signature vectors (sdk/testdata/webhook-signatures.json)", () => {
  const file = JSON.parse(readFileSync(join(repoRoot(), "sdk", "testdata", "webhook-signatures.json"), "utf8")) as {
    version: number;
    tolerance_seconds: number;
    cases: Vector[];
  };

  test("the file is the version this SDK reads, with cases", () => {
    assert.equal(file.version, 1);
    assert.equal(file.tolerance_seconds, 300);
    assert.ok(file.cases.length >= 10);
  });

  for (const c of file.cases) {
    test(c.name, async () => {
      const opts = { tolerance: file.tolerance_seconds, now: c.now };
      if (c.signed) {
        assert.equal(await computeSignature(c.secret, c.body), c.x_service_signature, "X-Service-Signature");
        assert.equal(await computeStandardSignature(c.secret, c.webhook_id, c.webhook_timestamp, c.body), c.webhook_signature, "webhook-signature");
        const headers = await signWebhook(c.secret, c.webhook_id, c.body, Number(c.webhook_timestamp));
        assert.equal(headers["X-Service-Signature"], c.x_service_signature);
        assert.equal(headers["webhook-signature"], c.webhook_signature);
      }
      // As a string and as the exact bytes.
      for (const body of [c.body, new TextEncoder().encode(c.body)]) {
        assert.equal(await verifySignature(c.secret, body, c.x_service_signature), c.valid_x_service_signature, "verifySignature");
        const std = { id: c.webhook_id, timestamp: c.webhook_timestamp, signature: c.webhook_signature };
        assert.equal(await verifyStandardSignature(c.secret, body, std, opts), c.valid_standard, "verifyStandardSignature");
      }
      // verifyWebhook takes the headers as received ("" = missing): the
      // Standard Webhooks verdict when webhook-signature is present, else
      // X-Service-Signature's (the body need not be JSON for the verdict).
      const headers: Record<string, string> = {};
      if (c.x_service_signature) headers["X-Service-Signature"] = c.x_service_signature;
      if (c.webhook_id) headers["webhook-id"] = c.webhook_id;
      if (c.webhook_timestamp) headers["webhook-timestamp"] = c.webhook_timestamp;
      if (c.webhook_signature) headers["webhook-signature"] = c.webhook_signature;
      let ok = true;
      try {
        await verifyWebhook(c.body, headers, c.secret, opts);
      } catch (e) {
        ok = !(e instanceof WebhookVerificationError) || e.message === "the body is not JSON";
        if (!(e instanceof WebhookVerificationError)) throw e;
      }
      assert.equal(ok, c.webhook_signature ? c.valid_standard : c.valid_x_service_signature, "verifyWebhook");
    });
  }
});

interface RotationVector {
  name: string;
  secret: string;
  body: string;
  now: number;
  headers: Record<string, string>;
  valid: boolean;
}

describe("shared secret-rotation vectors (sdk/testdata/webhook-rotation.json)", () => {
  const file = JSON.parse(readFileSync(join(repoRoot(), "sdk", "testdata", "webhook-rotation.json"), "utf8")) as {
    version: number;
    tolerance_seconds: number;
    cases: RotationVector[];
  };

  test("the file is the version this SDK reads, with cases", () => {
    assert.equal(file.version, 1);
    assert.equal(file.tolerance_seconds, 300);
    assert.ok(file.cases.length >= 10);
  });

  for (const c of file.cases) {
    test(c.name, async () => {
      const opts = { tolerance: file.tolerance_seconds, now: c.now };
      // As Node gives them (a plain object) and as fetch does (Headers).
      for (const headers of [c.headers, new Headers(c.headers)]) {
        let ok = true;
        try {
          const ev = await verifyWebhook(new TextEncoder().encode(c.body), headers, c.secret, opts);
          assert.equal(ev.type, "message.created");
        } catch (e) {
          if (!(e instanceof WebhookVerificationError)) throw e;
          ok = false;
        }
        assert.equal(ok, c.valid, "verifyWebhook");
      }
    });
  }
});
