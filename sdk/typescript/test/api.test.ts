// Every /v1 endpoint through the SDK, against a real `ams serve`.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  Client,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
  Page,
  type Assistant,
  type CalendarEvent,
  type Conversation,
  type Event,
  type EventDataMap,
  type EventType,
  type Message,
  type Metadata,
  type Task,
} from "@ams/sdk";
import { repoRoot, startServe, waitFor, type AmsServer } from "./helpers.js";

let srv: AmsServer;
let client: Client;

before(async () => {
  srv = await startServe();
  client = new Client({ apiKey: srv.apiKey, baseURL: srv.baseURL });
});
after(async () => {
  await srv?.stop();
});

describe("assistants", () => {
  test("create, get, update, list, delete", async () => {
    const a = await client.assistants.create({ name: "Travel helper", description: "Plans trips.", instructions: "Be brief." });
    assert.match(a.id, /^ast_/);
    assert.equal(a.object, "assistant");
    assert.equal(a.model, "builtin");
    assert.equal((await client.assistants.get(a.id)).name, "Travel helper");

    const u = await client.assistants.update(a.id, { name: "Trips", description: null });
    assert.equal(u.name, "Trips");
    assert.equal(u.description, "");

    const page = await client.assistants.list({ limit: 100 });
    assert.ok(page instanceof Page);
    assert.ok(page.data.some((x: Assistant) => x.id === a.id));
    assert.ok(page.data.some((x: Assistant) => x.id === srv.assistantId));
    assert.match(page.requestId ?? "", /^req_/);

    await client.assistants.delete(a.id);
    await assert.rejects(client.assistants.get(a.id), NotFoundError);
  });

  test("a base URL ending in /v1 and a trailing slash work too", async () => {
    const c = new Client({ apiKey: srv.apiKey, baseURL: srv.baseURL + "/v1/" });
    assert.equal((await c.assistants.get(srv.assistantId)).id, srv.assistantId);
    assert.equal(c.baseURL, srv.baseURL);
  });
});

describe("messages and conversations", () => {
  let reply: Message;

  test("send, continue, get", async () => {
    reply = await client.messages.send({ assistant_id: srv.assistantId, message: "Hello! My name is Ada." });
    assert.match(reply.id, /^msg_/);
    assert.equal(reply.direction, "outbound");
    assert.match(reply.conversation_id, /^conv_/);
    assert.ok(reply.content.length > 0);

    const again = await client.messages.send({ assistant_id: srv.assistantId, conversation_id: reply.conversation_id, message: "What's my name?" });
    assert.equal(again.conversation_id, reply.conversation_id);
    assert.match(again.content, /Ada/);

    assert.deepEqual(await client.messages.get(reply.id), reply);
  });

  test("conversations: list, get, messages", async () => {
    const convs = await client.conversations.list({ assistant_id: srv.assistantId, limit: 100 });
    assert.ok(convs.data.some((c: Conversation) => c.id === reply.conversation_id));
    const conv = await client.conversations.get(reply.conversation_id);
    assert.equal(conv.object, "conversation");
    assert.equal(conv.message_count, 4);
    assert.equal(conv.title, "Hello! My name is Ada.");

    const msgs = await client.conversations.listMessages(reply.conversation_id, { order: "asc" });
    assert.deepEqual(
      msgs.data.map((m: Message) => m.direction),
      ["inbound", "outbound", "inbound", "outbound"],
    );
    assert.equal(msgs.data[0]!.content, "Hello! My name is Ada.");
  });

  test("edit and delete an inbound message", async () => {
    const msgs = await client.conversations.listMessages(reply.conversation_id, { order: "asc", limit: 1 });
    const inbound = msgs.data[0]!;
    const edited = await client.messages.update(inbound.id, { content: "Hello! My name is Grace." });
    assert.equal(edited.content, "Hello! My name is Grace.");
    assert.equal((await client.messages.get(inbound.id)).content, "Hello! My name is Grace.");

    // The assistant's replies cannot be edited.
    await assert.rejects(client.messages.update(reply.id, { content: "x" }), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.status, 400);
      assert.equal(e.code, "message_not_editable");
      return true;
    });

    await client.messages.delete(inbound.id);
    await assert.rejects(client.messages.get(inbound.id), NotFoundError);

    const types = (await client.events.list({ limit: 100 })).data.map((e: Event) => e.type);
    assert.ok(types.includes("message.updated"));
    assert.ok(types.includes("message.deleted"));
  });

  test("an explicit idempotency key replays the first reply", async () => {
    const key = `test-${Date.now()}`;
    const a = await client.messages.send({ assistant_id: srv.assistantId, message: "Remember the number 7." }, { idempotencyKey: key });
    const b = await client.messages.send({ assistant_id: srv.assistantId, message: "Remember the number 7." }, { idempotencyKey: key });
    assert.equal(a.id, b.id);
    const r = await client.request<Message>("POST", "/messages", {
      body: { assistant_id: srv.assistantId, message: "Remember the number 7." },
      options: { idempotencyKey: key },
    });
    assert.equal(r.headers.get("idempotent-replayed"), "true");
    assert.equal(r.status, 201);
    assert.equal(r.data.id, a.id);
  });
});

describe("tasks", () => {
  test("create, get, update, complete, list with filters, delete", async () => {
    const due = new Date(Date.now() + 86400_000);
    const t = await client.tasks.create({ assistant_id: srv.assistantId, title: "Call Bob", notes: "About the offer.", due_at: due });
    assert.match(t.id, /^task_/);
    assert.equal(t.status, "open");
    assert.equal(new Date(t.due_at!).getTime(), Math.floor(due.getTime()));
    assert.equal((await client.tasks.get(t.id)).title, "Call Bob");

    const u = await client.tasks.update(t.id, { title: "Call Bob back", notes: "", remind_at: new Date(Date.now() + 3600_000) });
    assert.equal(u.title, "Call Bob back");
    assert.equal(u.notes, "");
    assert.notEqual(u.remind_at, null);
    assert.equal((await client.tasks.update(t.id, { remind_at: null })).remind_at, null);

    const open = await client.tasks.list({ status: "open", assistant_id: srv.assistantId, due_after: new Date(Date.now()), limit: 100 });
    assert.ok(open.data.some((x: Task) => x.id === t.id));

    const done = await client.tasks.complete(t.id);
    assert.equal(done.status, "completed");
    assert.notEqual(done.completed_at, null);
    const completed = await client.tasks.list({ status: "completed" });
    assert.ok(completed.data.some((x: Task) => x.id === t.id));
    assert.ok(!(await client.tasks.list({ status: "open", limit: 100 })).data.some((x: Task) => x.id === t.id));

    await client.tasks.delete(t.id);
    await assert.rejects(client.tasks.get(t.id), NotFoundError);
  });

  test("for await walks every page, following the cursors", async () => {
    const a = await client.assistants.create({ name: "Pager" });
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await client.tasks.create({ assistant_id: a.id, title: `Task ${i}` })).id);

    // Page by page.
    const first = await client.tasks.list({ assistant_id: a.id, limit: 2, order: "asc" });
    assert.equal(first.data.length, 2);
    assert.equal(first.has_more, true);
    assert.equal(first.hasNextPage(), true);
    const second = await first.nextPage();
    assert.deepEqual(second.params, { assistant_id: a.id, limit: 2, order: "asc", after: first.last_id });
    assert.deepEqual(
      [...first.data, ...second.data].map((t: Task) => t.id),
      made.slice(0, 4),
    );

    // Every record, in three requests of two.
    const seen: string[] = [];
    for await (const t of client.tasks.list({ assistant_id: a.id, limit: 2, order: "asc" })) seen.push(t.id);
    assert.deepEqual(seen, made);

    // Newest first (the default order), and toArray.
    const ids = (ts: Task[]) => ts.map((t) => t.id);
    assert.deepEqual(ids(await client.tasks.list({ assistant_id: a.id, limit: 2 }).toArray()), [...made].reverse());
    assert.deepEqual(ids(await client.tasks.list({ assistant_id: a.id, limit: 2 }).toArray(3)), [...made].reverse().slice(0, 3));

    // Backwards from a record: nearest to it first.
    const back: string[] = [];
    for await (const t of client.tasks.list({ assistant_id: a.id, limit: 2, order: "asc", before: made[4]! })) back.push(t.id);
    assert.deepEqual(back, [made[3], made[2], made[1], made[0]]);

    // Breaking out stops fetching.
    let n = 0;
    for await (const _ of client.tasks.list({ assistant_id: a.id, limit: 1 })) if (++n === 2) break;
    assert.equal(n, 2);
  });
});

describe("calendar", () => {
  test("events: create, get, update, list, delete", async () => {
    const starts = new Date(Date.UTC(2030, 0, 15, 15, 0, 0));
    const ev = await client.calendar.events.create({ assistant_id: srv.assistantId, title: "Dentist", location: "Main St 1", starts_at: starts });
    assert.match(ev.id, /^cev_/);
    assert.equal(ev.object, "calendar_event");
    const ms = (s: string) => new Date(s).getTime();
    assert.equal(ms(ev.starts_at), starts.getTime());
    assert.equal(ms(ev.ends_at), starts.getTime() + 3600_000); // one hour by default
    assert.equal((await client.calendar.events.get(ev.id)).location, "Main St 1");

    const moved = await client.calendar.events.update(ev.id, { starts_at: "2030-01-15T17:00:00Z", description: "Check-up" });
    assert.equal(ms(moved.starts_at), Date.UTC(2030, 0, 15, 17));
    assert.equal(ms(moved.ends_at), Date.UTC(2030, 0, 15, 18)); // keeps its length
    assert.equal(moved.description, "Check-up");

    const inJanuary = await client.calendar.events.list({ starts_after: "2030-01-01T00:00:00Z", starts_before: new Date(Date.UTC(2030, 1, 1)) });
    assert.deepEqual(
      inJanuary.data.map((e) => e.id),
      [ev.id],
    );
    assert.equal((await client.calendar.events.list({ starts_after: "2030-02-01T00:00:00Z" })).data.length, 0);

    await client.calendar.events.delete(ev.id);
    await assert.rejects(client.calendar.events.get(ev.id), NotFoundError);
    // Deleted, not gone: listed with deleted: true, and restorable.
    const gone = (await client.calendar.events.list({ deleted: true })).data.filter((e) => e.id === ev.id);
    assert.equal(gone.length, 1);
    assert.equal(gone[0].deleted_by, "api");
    assert.ok(gone[0].deleted_at);
    const back = await client.calendar.events.restore(ev.id);
    assert.equal(back.id, ev.id);
    assert.equal(back.deleted_at, null);
    assert.equal(back.deleted_by, null);
    assert.equal((await client.calendar.events.get(ev.id)).description, "Check-up");
    await assert.rejects(client.calendar.events.restore(ev.id), (err: unknown) => err instanceof ConflictError && err.code === "calendar_event_not_deleted");
  });

  test("feed: created once, listed as an integration", async () => {
    const feed = await client.calendar.createFeed();
    assert.equal(feed.object, "calendar_feed");
    assert.match(feed.url, /\/calendar\/feed\/ams_cf_[A-Za-z0-9_-]+\.ics$/);
    const ics = await fetch(feed.url);
    assert.equal(ics.status, 200);
    assert.match(await ics.text(), /BEGIN:VCALENDAR/);
    const integ = await client.integrations.get(feed.id);
    assert.equal(integ.provider, "ical_feed");
  });
});

describe("actions", () => {
  test("run, list, get", async () => {
    const act = await client.actions.run(srv.assistantId, { type: "create_task", input: { title: "Water the plants" } });
    assert.match(act.id, /^act_/);
    assert.equal(act.status, "succeeded");
    assert.equal(act.conversation_id, "");
    const task = act.result as Task;
    assert.equal(task.title, "Water the plants");

    const listed = await client.actions.run(srv.assistantId, { type: "list_tasks", input: {} });
    assert.equal((listed.result as { object: string }).object, "list");

    const page = await client.actions.list(srv.assistantId, { limit: 100 });
    assert.ok(page.data.some((a) => a.id === act.id));
    assert.deepEqual(await client.actions.get(srv.assistantId, act.id), act);

    await assert.rejects(client.actions.run(srv.assistantId, { type: "create_task", input: { title: "" } }), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.param, "input.title");
      return true;
    });
  });
});

describe("integrations", () => {
  test("the calendar feed: list, get, sync (not syncable), delete", async () => {
    const feed = await client.calendar.createFeed();
    const all = await client.integrations.list({ limit: 100 }).toArray();
    assert.ok(all.some((i) => i.id === feed.id));
    await assert.rejects(client.integrations.sync(feed.id), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.code, "integration_not_syncable");
      return true;
    });
    await client.integrations.delete(feed.id);
    assert.equal((await client.integrations.get(feed.id)).status, "disconnected");
  });

  test("an unreachable CalDAV server is refused", async () => {
    await assert.rejects(
      client.integrations.create({ provider: "caldav", config: { url: "http://127.0.0.1:9/nothing/", username: "u" }, secrets: { password: "p" } }, { maxRetries: 0 }),
      (e: unknown) => {
        assert.ok(e instanceof Error && "status" in e);
        assert.ok([400, 502].includes((e as { status: number }).status), String(e));
        return true;
      },
    );
  });

  test("CalDAV: create, get, list, sync, delete (a real Radicale)", async (t) => {
    const raw = process.env["AMS_TEST_CALDAV_URL"];
    if (!raw) {
      if (process.env["AMS_REQUIRE_CALDAV_TESTS"]) assert.fail("AMS_TEST_CALDAV_URL is not set but AMS_REQUIRE_CALDAV_TESTS is");
      t.skip("set AMS_TEST_CALDAV_URL (a Radicale collection URL with credentials; .ci/run starts one)");
      return;
    }
    const u = new URL(raw);
    const user = decodeURIComponent(u.username);
    const password = decodeURIComponent(u.password);
    u.username = "";
    u.password = "";
    u.pathname = u.pathname.replace(/\/?$/, "/") + `ts-${Date.now()}-${Math.random().toString(36).slice(2)}/`;
    const auth = "Basic " + Buffer.from(`${user}:${password}`).toString("base64");
    const mk = await fetch(u, { method: "MKCALENDAR", headers: { Authorization: auth } });
    assert.equal(mk.status, 201);
    try {
      const integ = await client.integrations.create({ provider: "caldav", config: { url: u.toString(), username: user }, secrets: { password } });
      assert.match(integ.id, /^int_/);
      assert.equal(integ.status, "connected");
      assert.ok(!JSON.stringify(integ).includes(password));
      assert.equal((await client.integrations.get(integ.id)).config["username"], user);
      assert.ok((await client.integrations.list()).data.some((i) => i.id === integ.id));
      assert.equal((await client.integrations.sync(integ.id)).status, "connected");
      await client.integrations.delete(integ.id);
      assert.equal((await client.integrations.get(integ.id)).status, "disconnected");
      const types = (await client.events.list({ limit: 100 })).data.map((e) => e.type);
      assert.ok(types.includes("integration.connected") && types.includes("integration.disconnected"));
    } finally {
      await fetch(u, { method: "DELETE", headers: { Authorization: auth } });
    }
  });
});

describe("MCP integrations (the reference server-everything)", () => {
  test("create, list its tools, run one as an action, sync, delete", async (t) => {
    const dir = join(repoRoot(), "mcp", "testdata", "everything");
    const entry = join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
    if (!existsSync(entry)) {
      if (process.env["AMS_REQUIRE_NODE_TESTS"] === "1") assert.fail("run `npm ci --prefix mcp/testdata/everything`");
      t.skip("@modelcontextprotocol/server-everything is missing: run `npm ci --prefix mcp/testdata/everything`");
      return;
    }
    // Bound to 127.0.0.1 by its preload, which prints the port it got.
    const child = spawn(process.execPath, ["--require", join(dir, "bind-localhost.cjs"), entry, "streamableHttp"], {
      cwd: dir,
      env: { PATH: process.env["PATH"] ?? "", PORT: "0" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let buf = "";
        child.stderr!.on("data", (d: Buffer) => {
          buf += d.toString();
          const m = /AMS_LISTENING \S+ (\d+)/.exec(buf);
          if (m) resolve(Number(m[1]));
        });
        child.on("exit", () => reject(new Error("the reference MCP server exited: " + buf)));
      });
      const url = `http://127.0.0.1:${port}/mcp`;
      const name = `everything${Date.now() % 100000}`;
      const integ = await client.integrations.create({ provider: "mcp", name, url, headers: { Authorization: "Bearer ts-secret-1" }, require_approval: ["echo"] });
      assert.equal(integ.status, "connected");
      assert.equal(integ.name, name);
      assert.ok(!JSON.stringify(integ).includes("ts-secret-1"));
      const tools = (await client.integrations.get(integ.id)).tools ?? [];
      const sum = tools.find((x) => x.name === "get-sum");
      assert.ok(sum && "properties" in sum.input_schema);
      const act = await client.actions.run(srv.assistantId, { type: `${name}__get-sum`, input: { a: 40, b: 2 } });
      assert.equal(act.status, "succeeded");
      assert.ok(JSON.stringify(act.result).includes("42"));
      assert.ok(act.duration_ms >= 0);
      await assert.rejects(client.actions.run(srv.assistantId, { type: `${name}__get-sum`, input: { a: "forty", b: 2 } }), (e: unknown) => {
        assert.ok(e instanceof InvalidRequestError);
        assert.equal(e.param, "input.a");
        return true;
      });
      assert.equal((await client.integrations.sync(integ.id)).status, "connected");
      await client.integrations.delete(integ.id);
      assert.equal((await client.integrations.get(integ.id)).status, "disconnected");
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("events", () => {
  test("list with a type filter, narrowed by type", async () => {
    const page = await client.events.list({ type: "message.created", limit: 3 });
    assert.ok(page.data.length > 0);
    for (const e of page.data) {
      assert.equal(e.type, "message.created");
      if (e.type === "message.created") assert.match(e.data.message_id, /^msg_/);
    }
    let n = 0;
    for await (const e of client.events.list({ limit: 5 })) {
      assert.match(e.id, /^evt_/);
      n++;
    }
    assert.ok(n > 5);
  });

  test("get one, and the created_after / created_before filters", async () => {
    const newest = (await client.events.list({ limit: 1 })).data[0]!;
    assert.deepEqual(await client.events.get(newest.id), newest);
    await assert.rejects(client.events.get("evt_nothere"), NotFoundError);
    const at = new Date(newest.created_at);
    // Strict bounds; a Date or an RFC 3339 string.
    for (const e of (await client.events.list({ created_after: newest.created_at, limit: 100 })).data) {
      assert.ok(new Date(e.created_at) > at, `${e.created_at} is not after ${newest.created_at}`);
    }
    const older = await client.events.list({ created_before: at, limit: 100 });
    assert.ok(!older.data.some((e) => e.id === newest.id));
    const since = await client.events.list({ created_after: new Date(at.getTime() - 1), order: "asc", limit: 100 });
    assert.ok(since.data.some((e) => e.id === newest.id));
    await assert.rejects(
      client.events.list({ created_after: "yesterday" }),
      (err: unknown) => err instanceof InvalidRequestError && err.param === "created_after",
    );
  });
});

describe("webhooks (records; deliveries are in webhook.test)", () => {
  test("filter, payload and summary; a triggered event says test", async () => {
    const wh = await client.webhooks.create({
      url: "http://127.0.0.1:9/hooks/f",
      events: ["*"],
      secret: "a-secret-of-16-chars+",
      active: false,
      filter: { assistant_id: srv.assistantId, "metadata.team": "billing" },
      payload: "thin",
    });
    assert.deepEqual(wh.filter, { assistant_id: srv.assistantId, "metadata.team": "billing" });
    assert.equal(wh.payload, "thin");
    assert.equal(wh.summary, null);
    const g = await client.webhooks.get(wh.id);
    assert.equal(g.summary?.window_hours, 24);
    assert.equal(g.summary?.attempts, 0);
    assert.equal(g.summary?.success_rate, null);
    const u = await client.webhooks.update(wh.id, { filter: null, payload: "full" });
    assert.deepEqual(u.filter, {});
    assert.equal(u.payload, "full");
    await assert.rejects(
      client.webhooks.update(wh.id, { filter: { "metadata.": "x" } }),
      (err: unknown) => err instanceof InvalidRequestError && err.status === 400 && err.param === "filter.metadata.",
    );
    await client.webhooks.delete(wh.id);
    const ev = await client.events.trigger("webhook.recovered");
    assert.equal(ev.test, true);
    if (ev.type === "webhook.recovered") {
      assert.equal(ev.data.status_code, 200);
      assert.equal(ev.data.error, null);
    }
  });

  test("create, get, update, list, delete", async () => {
    const wh = await client.webhooks.create({ url: "http://127.0.0.1:9/hook", events: ["task.created"], secret: "whsec_c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Ng==" });
    assert.match(wh.id, /^wh_/);
    assert.equal(wh.active, true);
    assert.equal(wh.status, "active");
    assert.ok(!("secret" in wh));
    assert.equal(wh.previous_secret_expires_at, null);
    assert.equal(wh.ordered, false);
    assert.equal((await client.webhooks.update(wh.id, { ordered: true })).ordered, true);
    assert.equal((await client.webhooks.get(wh.id)).ordered, true);
    assert.equal((await client.webhooks.update(wh.id, { ordered: false })).ordered, false);
    const ordered = await client.webhooks.create({ url: "http://127.0.0.1:9/ordered", events: ["task.created"], secret: "a-secret-of-16-chars+", ordered: true });
    assert.equal(ordered.ordered, true);
    await client.webhooks.delete(ordered.id);
    assert.deepEqual((await client.webhooks.get(wh.id)).events, ["task.created"]);
    const u = await client.webhooks.update(wh.id, { events: ["task.created", "task.completed"], active: false });
    assert.deepEqual(u.events, ["task.created", "task.completed"]);
    assert.equal(u.active, false);
    // A new secret: the replaced one keeps signing beside it for the hour
    // asked; 0 then stops it at once; more than 7 days is refused.
    const t0 = Date.now();
    const r = await client.webhooks.update(wh.id, { secret: "whsec_YW5vdGhlci1zaWduaW5nLWtleS0xMjM0NTY=", previous_secret_expires_in: 3600 });
    assert.ok(r.previous_secret_expires_at, "previous_secret_expires_at is set");
    const left = Date.parse(r.previous_secret_expires_at) - t0;
    assert.ok(Math.abs(left - 3600_000) < 60_000, r.previous_secret_expires_at);
    assert.equal((await client.webhooks.get(wh.id)).previous_secret_expires_at, r.previous_secret_expires_at);
    assert.equal((await client.webhooks.update(wh.id, { previous_secret_expires_in: 0 })).previous_secret_expires_at, null);
    await assert.rejects(
      client.webhooks.update(wh.id, { secret: "a-third-secret-of-16+", previous_secret_expires_in: 604801 }),
      (err: unknown) => err instanceof InvalidRequestError && err.status === 400 && err.param === "previous_secret_expires_in",
    );
    assert.ok((await client.webhooks.list()).data.some((w) => w.id === wh.id));
    assert.deepEqual((await client.webhooks.listDeliveries(wh.id)).data, []);
    await client.webhooks.delete(wh.id);
    await assert.rejects(client.webhooks.get(wh.id), NotFoundError);
  });
});

test("the OpenAPI document", async () => {
  const doc = await client.openapi();
  assert.equal(doc["openapi"], "3.1.0");
  const paths = Object.keys(doc["paths"] as object);
  assert.ok(paths.includes("/v1/messages"));
});

// Each operation of openapi/openapi.json and the method that calls it.
const OPERATIONS: Record<string, (c: Client) => unknown> = {
  listAssistants: (c) => c.assistants.list,
  createAssistant: (c) => c.assistants.create,
  getAssistant: (c) => c.assistants.get,
  updateAssistant: (c) => c.assistants.update,
  deleteAssistant: (c) => c.assistants.delete,
  runAction: (c) => c.actions.run,
  listActions: (c) => c.actions.list,
  getAction: (c) => c.actions.get,
  createMessage: (c) => c.messages.send,
  getMessage: (c) => c.messages.get,
  cancelMessage: (c) => c.messages.cancel,
  listTurns: (c) => c.turns.list,
  getTurn: (c) => c.turns.get,
  streamTurnEvents: (c) => c.turns.events,
  cancelTurn: (c) => c.turns.cancel,
  submitToolOutputs: (c) => c.turns.submitToolOutputs,
  approveToolCalls: (c) => c.turns.approveToolCalls,
  updateMessage: (c) => c.messages.update,
  deleteMessage: (c) => c.messages.delete,
  listConversations: (c) => c.conversations.list,
  createConversation: (c) => c.conversations.create,
  getConversation: (c) => c.conversations.get,
  updateConversation: (c) => c.conversations.update,
  deleteConversation: (c) => c.conversations.delete,
  listConversationMessages: (c) => c.conversations.listMessages,
  createTask: (c) => c.tasks.create,
  listTasks: (c) => c.tasks.list,
  getTask: (c) => c.tasks.get,
  updateTask: (c) => c.tasks.update,
  deleteTask: (c) => c.tasks.delete,
  completeTask: (c) => c.tasks.complete,
  createCalendarEvent: (c) => c.calendar.events.create,
  listCalendarEvents: (c) => c.calendar.events.list,
  getCalendarEvent: (c) => c.calendar.events.get,
  updateCalendarEvent: (c) => c.calendar.events.update,
  deleteCalendarEvent: (c) => c.calendar.events.delete,
  restoreCalendarEvent: (c) => c.calendar.events.restore,
  createIntegration: (c) => c.integrations.create,
  listIntegrations: (c) => c.integrations.list,
  getIntegration: (c) => c.integrations.get,
  deleteIntegration: (c) => c.integrations.delete,
  syncIntegration: (c) => c.integrations.sync,
  createCalendarFeed: (c) => c.calendar.createFeed,
  listEvents: (c) => c.events.list,
  getEvent: (c) => c.events.get,
  streamEvents: (c) => c.events.stream,
  triggerEvent: (c) => c.events.trigger,
  createWebhook: (c) => c.webhooks.create,
  listWebhooks: (c) => c.webhooks.list,
  getWebhook: (c) => c.webhooks.get,
  updateWebhook: (c) => c.webhooks.update,
  deleteWebhook: (c) => c.webhooks.delete,
  pingWebhook: (c) => c.webhooks.ping,
  listWebhookDeliveries: (c) => c.webhooks.listDeliveries,
  redeliverWebhookDelivery: (c) => c.webhooks.redeliver,
  recoverWebhook: (c) => c.webhooks.recover,
  getOpenAPIDocument: (c) => c.openapi,
  listAPIKeys: (c) => c.keys.list,
  createAPIKey: (c) => c.keys.create,
  getAPIKey: (c) => c.keys.get,
  revokeAPIKey: (c) => c.keys.revoke,
  listOAuthClients: (c) => c.oauthClients.list,
  createOAuthClient: (c) => c.oauthClients.create,
  getOAuthClient: (c) => c.oauthClients.get,
  rotateOAuthClientSecret: (c) => c.oauthClients.rotateSecret,
  deleteOAuthClient: (c) => c.oauthClients.delete,
  getAccount: (c) => c.account.get,
  updateAccount: (c) => c.account.update,
};

// Every EventType once: the compiler refuses a missing or unknown one.
const EVENT_TYPES: Record<EventType, true> = {
  "message.created": true,
  "message.updated": true,
  "message.deleted": true,
  "task.created": true,
  "task.completed": true,
  "task.updated": true,
  "task.reminder": true,
  "task.deleted": true,
  "event.created": true,
  "event.updated": true,
  "event.reminder": true,
  "event.deleted": true,
  "event.restored": true,
  "integration.connected": true,
  "integration.disconnected": true,
  "integration.error": true,
  "webhook.ping": true,
  "webhook.failing": true,
  "webhook.enabled": true,
  "webhook.degraded": true,
  "webhook.recovered": true,
  "api_key.created": true,
  "api_key.revoked": true,
  "oauth_client.created": true,
  "oauth_client.secret_rotated": true,
  "oauth_client.deleted": true,
  "account.updated": true,
  "assistant.created": true,
  "assistant.updated": true,
  "assistant.deleted": true,
  "conversation.created": true,
  "conversation.updated": true,
  "conversation.deleted": true,
  "turn.requires_action": true,
  "turn.completed": true,
  "turn.failed": true,
  "turn.cancelled": true,
};

describe("coverage of the OpenAPI document", () => {
  const doc = JSON.parse(readFileSync(join(repoRoot(), "openapi", "openapi.json"), "utf8")) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
    components: { schemas: Record<string, { enum?: string[] }> };
  };

  test("every operation has a method", () => {
    const ops = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!["get", "post", "patch", "put", "delete"].includes(method)) continue;
        assert.ok(op.operationId, `${method.toUpperCase()} ${path} has no operationId`);
        ops.add(op.operationId);
      }
    }
    assert.deepEqual([...ops].sort(), Object.keys(OPERATIONS).sort(), "update OPERATIONS and the Client for the new or removed operations");
    for (const [op, method] of Object.entries(OPERATIONS)) assert.equal(typeof method(client), "function", `${op}: no method`);
  });

  test("EventType is the document's event types", () => {
    assert.deepEqual(Object.keys(EVENT_TYPES).sort(), [...(doc.components.schemas["EventType"]!.enum ?? [])].sort());
  });
});

/** The newest event of the type whose data pred accepts, once it is listed. */
async function eventWhere<T extends EventType>(type: T, pred: (data: EventDataMap[T]) => boolean): Promise<Event & { type: T; data: EventDataMap[T] }> {
  return waitFor(
    `a matching ${type} event`,
    async () => {
      const page = await client.events.list({ type, limit: 100 });
      return (page.data as Array<Event & { type: T; data: EventDataMap[T] }>).find((e) => pred(e.data));
    },
    5_000,
  );
}

describe("conversations as resources", () => {
  test("create, send into, update, filter actions, delete", async () => {
    const conv = await client.conversations.create({ assistant_id: srv.assistantId, title: "Trip", metadata: { crm: "T-1" } });
    assert.match(conv.id, /^conv_/);
    assert.equal(conv.object, "conversation");
    assert.equal(conv.title, "Trip");
    assert.equal(conv.message_count, 0);
    assert.deepEqual(conv.metadata, { crm: "T-1" });
    assert.deepEqual(await client.conversations.get(conv.id), conv);

    // The same idempotency key replays the first conversation.
    const key = `conv-${conv.id}`;
    const first = await client.conversations.create({ assistant_id: srv.assistantId }, { idempotencyKey: key });
    assert.equal((await client.conversations.create({ assistant_id: srv.assistantId }, { idempotencyKey: key })).id, first.id);
    assert.equal(first.title, "");
    assert.deepEqual(first.metadata, {});

    // metadata on send is the inbound message's; the reply has none.
    const reply = await client.messages.send({ assistant_id: srv.assistantId, conversation_id: conv.id, message: "Remind me to call Bob tomorrow at 9", metadata: { source: "sms" } });
    assert.equal(reply.conversation_id, conv.id);
    assert.deepEqual(reply.metadata, {});
    const msgs = (await client.conversations.listMessages(conv.id, { order: "asc" })).data;
    assert.deepEqual(
      msgs.map((m: Message) => [m.direction, m.metadata]),
      [
        ["inbound", { source: "sms" }],
        ["outbound", {}],
      ],
    );
    const inbound = msgs[0]!;
    const created = await eventWhere("message.created", (d) => d.message_id === inbound.id);
    assert.deepEqual(created.data.metadata, { source: "sms" });

    // A reply's metadata can change (merged), its text cannot.
    const rated = await client.messages.update(reply.id, { metadata: { rating: "good" } });
    assert.deepEqual(rated.metadata, { rating: "good" });
    assert.equal(rated.content, reply.content);
    await assert.rejects(client.messages.update(reply.id, { content: "edited" }), (e: unknown) => e instanceof InvalidRequestError && e.code === "message_not_editable");
    const both = await client.messages.update(inbound.id, { content: "Remind me to call Bob tomorrow at 10", metadata: { edited: "yes" } });
    assert.equal(both.content, "Remind me to call Bob tomorrow at 10");
    assert.deepEqual(both.metadata, { source: "sms", edited: "yes" });

    // PATCH: the title, and metadata merged (null and "" remove a key).
    await client.conversations.update(conv.id, { metadata: { owner: "ana" } });
    const u = await client.conversations.update(conv.id, { title: "Lisbon", metadata: { crm: null, owner: "", stage: "2" } });
    assert.equal(u.title, "Lisbon");
    assert.deepEqual(u.metadata, { stage: "2" });
    assert.equal(u.message_count, 2);
    assert.equal((await client.conversations.update(conv.id, { title: "" })).title, "");
    assert.deepEqual((await client.conversations.get(conv.id)).metadata, { stage: "2" });

    // The actions list filtered by conversation: the task the reply made.
    const run = await client.actions.run(srv.assistantId, { type: "list_tasks" });
    const acts = (await client.actions.list(srv.assistantId, { conversation_id: conv.id })).data;
    assert.deepEqual(
      acts.map((a) => [a.conversation_id, a.type]),
      [[conv.id, "create_task"]],
    );
    assert.ok((await client.actions.list(srv.assistantId, { limit: 100 })).data.some((a) => a.id === run.id));
    const taskId = (acts[0]!.result as Task).id;

    // Deleting it deletes its messages (message.deleted for each); the
    // actions and the task stay.
    await client.conversations.delete(conv.id);
    await assert.rejects(client.conversations.get(conv.id), NotFoundError);
    await assert.rejects(client.messages.get(inbound.id), NotFoundError);
    for (const m of msgs) await eventWhere("message.deleted", (d) => d.message_id === m.id);
    assert.equal((await client.actions.list(srv.assistantId, { conversation_id: conv.id })).data[0]!.id, acts[0]!.id);
    assert.equal((await client.tasks.get(taskId)).id, taskId);
    await assert.rejects(client.conversations.delete(conv.id), NotFoundError);
    await assert.rejects(client.conversations.create({ assistant_id: "ast_doesnotexist000000000000" }), NotFoundError);
  });

  test("stream with metadata: on the inbound message", async () => {
    const message = await client.messages.stream({ assistant_id: srv.assistantId, message: "Hello!", metadata: { channel: "web" } }).finalMessage();
    assert.deepEqual(message.metadata, {});
    const inbound = (await client.conversations.listMessages(message.conversation_id, { order: "asc" })).data[0]!;
    assert.equal(inbound.direction, "inbound");
    assert.deepEqual(inbound.metadata, { channel: "web" });
  });
});

describe("metadata and deletion events", () => {
  test("assistants, tasks, calendar events, webhooks; task.deleted and event.deleted", async () => {
    const a = await client.assistants.create({ name: "Tagged", metadata: { team: "ops" } });
    assert.deepEqual(a.metadata, { team: "ops" });
    const a2 = await client.assistants.update(a.id, { metadata: { tier: "gold" } });
    assert.deepEqual(a2.metadata, { team: "ops", tier: "gold" });
    assert.equal(a2.name, "Tagged");
    assert.deepEqual((await client.assistants.create({ name: "Plain" })).metadata, {});

    const t = await client.tasks.create({ assistant_id: srv.assistantId, title: "Tagged task", metadata: { order_id: "A-17" } });
    assert.deepEqual(t.metadata, { order_id: "A-17" });
    assert.deepEqual((await client.tasks.update(t.id, { metadata: { order_id: null, k: "v" } })).metadata, { k: "v" });
    assert.deepEqual((await client.tasks.update(t.id, { title: "Renamed" })).metadata, { k: "v" });
    await client.tasks.delete(t.id);
    const td = await eventWhere("task.deleted", (d: Task) => d.id === t.id);
    assert.equal(td.data.title, "Renamed");
    assert.deepEqual(td.data.metadata, { k: "v" });

    const ev = await client.calendar.events.create({ assistant_id: srv.assistantId, title: "Tagged event", starts_at: "2031-01-02T09:00:00Z", metadata: { room: "4" } });
    assert.deepEqual(ev.metadata, { room: "4" });
    const md: Metadata = { room: "5", host: "ana" };
    assert.deepEqual((await client.calendar.events.update(ev.id, { metadata: md })).metadata, md);
    assert.deepEqual((await client.calendar.events.get(ev.id)).metadata, md);
    await client.calendar.events.delete(ev.id);
    const ed = await eventWhere("event.deleted", (d: CalendarEvent) => d.id === ev.id);
    assert.equal(ed.data.title, "Tagged event");
    assert.deepEqual(ed.data.metadata, md);

    const wh = await client.webhooks.create({
      url: "http://127.0.0.1:9/hooks/md",
      events: ["task.deleted", "event.deleted"],
      secret: "a-secret-of-16-chars+",
      active: false,
      metadata: { env: "test" },
    });
    assert.deepEqual(wh.events, ["task.deleted", "event.deleted"]);
    assert.deepEqual(wh.metadata, { env: "test" });
    const w2 = await client.webhooks.update(wh.id, { metadata: { env: null } });
    assert.deepEqual(w2.metadata, {});
    assert.deepEqual(w2.events, ["task.deleted", "event.deleted"]);
    await client.webhooks.delete(wh.id);

    // The limits: 400 naming the parameter, nothing stored.
    const cases: Array<[Record<string, string>, string]> = [
      [Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])), "metadata"],
      [{ ["k".repeat(41)]: "v" }, "metadata." + "k".repeat(41)],
      [{ long: "v".repeat(501) }, "metadata.long"],
    ];
    for (const [metadata, param] of cases) {
      await assert.rejects(client.assistants.update(a.id, { metadata }), (e: unknown) => e instanceof InvalidRequestError && e.status === 400 && e.param === param);
      await assert.rejects(
        client.conversations.create({ assistant_id: srv.assistantId, title: "never stored", metadata }),
        (e: unknown) => e instanceof InvalidRequestError && e.param === param,
      );
    }
    assert.deepEqual((await client.assistants.get(a.id)).metadata, { team: "ops", tier: "gold" });
    const titles = (await client.conversations.list({ assistant_id: srv.assistantId, limit: 100 }).toArray()).map((c: Conversation) => c.title);
    assert.ok(!titles.includes("never stored"));
  });
});

describe("management (permission admin)", () => {
  let admin: Client;
  before(async () => {
    admin = new Client({ apiKey: await srv.cli("keys", "create", "--email", srv.email, "--name", "ts admin", "--permissions", "admin"), baseURL: srv.baseURL });
  });

  test("a key without admin is refused", async () => {
    await assert.rejects(client.keys.list(), (e: unknown) => e instanceof PermissionDeniedError && e.code === "insufficient_scope");
  });

  test("API keys: create (secret once), get, list, revoke; no escalation", async () => {
    const k = await admin.keys.create({ name: "ts export", permissions: ["read", "messages"], expires_at: new Date("2030-01-31T00:00:00Z") });
    assert.match(k.id, /^key_/);
    assert.match(k.secret, /^ams_sk_/);
    assert.equal(k.last4, k.secret.slice(-4));
    assert.deepEqual(k.permissions, ["read", "messages"]);
    assert.equal(k.expires_at, "2030-01-31T00:00:00.000Z");
    assert.equal("secret" in (await admin.keys.get(k.id)), false);
    const page = await admin.keys.list({ limit: 100 });
    assert.ok(page.data.some((x) => x.id === k.id));
    await new Client({ apiKey: k.secret, baseURL: srv.baseURL }).assistants.list();
    await assert.rejects(admin.keys.create({ name: "bad", permissions: ["root" as "read"] }), (e: unknown) => e instanceof InvalidRequestError && e.param === "permissions");
    const r = await admin.keys.revoke(k.id);
    assert.equal(r.status, "revoked");
    assert.equal((await admin.keys.revoke(k.id)).revoked_at, r.revoked_at);
    const short = await admin.keys.create({ name: "short", permissions: ["admin"], expires_at: "2030-01-01T00:00:00Z" });
    await assert.rejects(
      new Client({ apiKey: short.secret, baseURL: srv.baseURL }).keys.create({ name: "forever", permissions: ["read"] }),
      (e: unknown) => e instanceof PermissionDeniedError && e.code === "lifetime_not_held" && e.param === "expires_at",
    );
  });

  test("OAuth clients: create, list, get, rotate, delete", async () => {
    const c = await admin.oauthClients.create({ name: "TS App", redirect_uris: ["https://ts.example/cb"] });
    assert.match(c.id, /^cli_/);
    assert.match(c.client_secret ?? "", /^ams_cs_/);
    const pub = await admin.oauthClients.create({ name: "TS Phone", redirect_uris: ["http://localhost:9/cb"], public: true });
    assert.equal(pub.client_secret, null);
    assert.ok((await admin.oauthClients.list({ limit: 100 })).data.some((x) => x.id === c.id));
    assert.equal((await admin.oauthClients.get(c.id)).name, "TS App");
    const rot = await admin.oauthClients.rotateSecret(c.id);
    assert.notEqual(rot.client_secret, c.client_secret);
    await assert.rejects(admin.oauthClients.rotateSecret(pub.id), ConflictError);
    await admin.oauthClients.delete(pub.id);
    await assert.rejects(admin.oauthClients.get(pub.id), NotFoundError);
    const evs = await admin.events.list({ type: "oauth_client.deleted", limit: 100 });
    assert.ok(evs.data.some((e) => e.type === "oauth_client.deleted" && e.data.id === pub.id));
  });

  test("account: get and update", async () => {
    const a = await admin.account.get();
    assert.equal(a.object, "account");
    assert.equal(a.email, srv.email);
    await assert.rejects(admin.account.update({ timezone: "Mars/Base" }), (e: unknown) => e instanceof InvalidRequestError && e.param === "timezone");
    const u = await admin.account.update({ timezone: "Asia/Tokyo", email_notifications: { key_reminders: false } });
    assert.equal(u.timezone, "Asia/Tokyo");
    assert.equal(u.email_notifications.key_reminders, false);
    assert.equal(u.email_notifications.webhook_failing, true);
    await admin.account.update({ timezone: a.timezone, email_notifications: { key_reminders: true } });
    const evs = await admin.events.list({ type: "account.updated", limit: 100 });
    assert.ok(evs.data.length >= 2);
  });
});
