// The account's event stream (events.stream) and test events
// (events.trigger) against a real `ams serve`, resumed through a proxy
// that cuts the connection.

import assert from "node:assert/strict";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { Client, InvalidRequestError, type Event, type EventType } from "@ams/sdk";
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

/**
 * Forwards TCP connections to the server until cut() closes every one
 * open. `dropStreams` requests for GET /v1/events/stream are dropped
 * (their connection closed before the server sees them); the requests
 * after a drop wait for `afterDrop` before they are forwarded.
 */
class CutProxy {
  sockets: Socket[] = [];
  accepted = 0;
  /** How many requests for GET /v1/events/stream were seen. */
  streams = 0;
  /** New connections wait for it before they are forwarded. */
  gate: Promise<void> = Promise.resolve();
  dropStreams = 0;
  dropped = 0;
  afterDrop: Promise<void> = Promise.resolve();
  private onDrop: (() => void)[] = [];
  private constructor(readonly server: Server, readonly url: string) {}

  static async start(target: string): Promise<CutProxy> {
    const u = new URL(target);
    const server = createServer();
    const url = await new Promise<string>((resolve) =>
      server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)),
    );
    const p = new CutProxy(server, url);
    server.on("connection", async (c) => {
      p.accepted++;
      c.pause();
      await p.gate;
      const up = createConnection({ host: u.hostname, port: Number(u.port) });
      c.on("data", (b: Buffer) => {
        const stream = b.toString("latin1").includes("/v1/events/stream");
        if (stream) p.streams++;
        if (stream && p.dropStreams > 0) {
          p.dropStreams--;
          p.dropped++;
          c.destroy();
          up.destroy();
          for (const f of p.onDrop.splice(0)) f();
          return;
        }
        if (p.dropped > 0) {
          c.pause();
          void p.afterDrop.then(() => {
            up.write(b);
            c.resume();
          });
          return;
        }
        up.write(b);
      });
      c.on("end", () => up.end());
      up.pipe(c);
      c.on("error", () => up.destroy());
      up.on("error", () => c.destroy());
      p.sockets.push(c, up);
      c.resume();
    });
    return p;
  }

  /** Resolves once a request for the stream was dropped. */
  waitDropped(): Promise<void> {
    if (this.dropped > 0) return Promise.resolve();
    return new Promise((resolve) => this.onDrop.push(resolve));
  }

  cut(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets = [];
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/**
 * Follows the events of `type`, of which the account has none yet,
 * through a CutProxy. `outage` (called as the stream starts) breaks the
 * stream and resolves, holding the reconnection, with the function that
 * lets it go; an event of `type` is emitted meanwhile, and must be the
 * first event the stream yields.
 */
async function firstEventAcrossAnOutage(type: EventType, outage: (proxy: CutProxy) => Promise<() => void>): Promise<void> {
  assert.equal((await client.events.list({ type, limit: 1 })).data.length, 0);
  const proxy = await CutProxy.start(srv.baseURL);
  try {
    const pc = new Client({ apiKey: srv.apiKey, baseURL: proxy.url });
    const it = pc.events.stream({ type })[Symbol.asyncIterator]();
    const first = it.next();
    const release = await outage(proxy);
    const e = await client.events.trigger(type);
    release();
    const r = await first;
    assert.ok(!r.done);
    assert.equal(r.value.id, e.id);
    await it.return?.(undefined);
  } finally {
    await proxy.close();
  }
}

describe("events stream", () => {
  test("trigger, then stream resumed after a cut: every event once, in order", async () => {
    const e0 = await client.events.trigger("task.created");
    assert.equal(e0.type, "task.created");
    assert.equal(e0.test, true);
    assert.equal((e0.data as { object: string }).object, "task");
    const e1 = await client.events.trigger("task.updated");
    const e2 = await client.events.trigger("message.created");
    const proxy = await CutProxy.start(srv.baseURL);
    try {
      const pc = new Client({ apiKey: srv.apiKey, baseURL: proxy.url });
      const stream = pc.events.stream({ lastEventId: e0.id });
      const it = stream[Symbol.asyncIterator]();
      const next = async (): Promise<Event> => {
        const r = await it.next();
        assert.ok(!r.done);
        return r.value;
      };
      assert.equal((await next()).id, e1.id);
      proxy.cut();
      const e3 = await client.events.trigger("task.deleted");
      const got = [await next(), await next()];
      assert.deepEqual(got.map((e) => e.id), [e2.id, e3.id]);
      assert.equal(got[1]!.type, "task.deleted");
      assert.equal(stream.lastEventId, e3.id);
      assert.ok(proxy.accepted >= 2, "the stream was not resumed on a new connection");
      await it.return?.(undefined);
    } finally {
      await proxy.close();
    }
  });

  test("an account without events: a first connection dropped before any event loses none", { timeout: 60_000 }, async () => {
    await firstEventAcrossAnOutage("webhook.degraded", async (proxy) => {
      while (proxy.streams < 1) await new Promise((r) => setTimeout(r, 20));
      // Cut the stream (whether or not its answer has begun), and hold
      // the reconnection.
      let release: () => void = () => {};
      proxy.gate = new Promise<void>((r) => (release = r));
      proxy.cut();
      return release;
    });
  });

  test("an account without events: an event emitted after the stream's open failed is not skipped", { timeout: 60_000 }, async () => {
    await firstEventAcrossAnOutage("webhook.recovered", async (proxy) => {
      // The request that opens the stream is dropped before the server
      // sees it, and the requests after it wait. Opening the stream again
      // as if following began then would skip the event.
      proxy.dropStreams = 1;
      let release: () => void = () => {};
      proxy.afterDrop = new Promise<void>((r) => (release = r));
      await proxy.waitDropped();
      return release;
    });
  });

  test("errors", async () => {
    const it = client.events.stream({ lastEventId: "evt_nosuchevent" })[Symbol.asyncIterator]();
    await assert.rejects(it.next(), (e: unknown) => e instanceof InvalidRequestError && e.param === "Last-Event-ID");
    await assert.rejects(client.events.trigger("nope" as "task.created"), (e: unknown) => e instanceof InvalidRequestError && e.param === "type");
  });
});
