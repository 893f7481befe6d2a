// The account's events, live: GET /v1/events/stream answers Server-Sent
// Events, one per event, each with the event's id:
//
//   id: evt_…
//   event: task.created
//   data: {"id":"evt_…","object":"event","type":"task.created",…}
//
// in the catch-up order of GET /v1/events?order=asc&after=. A dropped
// stream resumes after the last event received with Last-Event-ID, so
// that no event is skipped or repeated.

import { AmsError, APIConnectionError } from "./errors.js";
import { backoff, DEFAULT_MAX_RETRY_AFTER, readRetryDelay, sleep } from "./core.js";
import { parseSSE } from "./streaming.js";
import type { Event } from "./types.js";

/** Opens GET /v1/events/stream after an event (undefined: only new events). */
export type EventStreamOpener = (lastEventId: string | undefined) => Promise<{ response: Response; controller: AbortController }>;

/** Lists the newest ("desc") or oldest ("asc") event of the stream's events, if any. */
export type EventLocator = (order: "asc" | "desc") => Promise<Event | undefined>;

/**
 * The account's events as they come (`client.events.stream()`): iterate
 * with `for await`; leave the loop to stop. It does not end by itself. A
 * dropped connection is resumed after the last event yielded
 * (`lastEventId`); after `maxRetries` failed resumptions in a row the
 * iteration throws an APIConnectionError. Errors when opening the stream
 * (a bad key, a cursor that is no event) are thrown as for any request.
 */
export class EventStream implements AsyncIterable<Event> {
  /** The id of the last event yielded: pass it to `stream()` to go on later. */
  lastEventId: string | undefined;

  constructor(
    private readonly open: EventStreamOpener,
    private readonly maxRetries: number,
    lastEventId?: string,
    private readonly signal?: AbortSignal,
    private readonly locate?: EventLocator,
    private readonly maxRetryAfter = DEFAULT_MAX_RETRY_AFTER,
  ) {
    this.lastEventId = lastEventId;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Event> {
    let failures = 0;
    if (this.lastEventId === undefined && this.locate) {
      // Start after the newest event listed now, as the server would, but
      // with the cursor known here: a connection dropped before the first
      // event resumes from it, not from the newest event of the moment of
      // the resumption.
      this.lastEventId = (await this.locate("desc"))?.id;
    }
    for (;;) {
      if (this.lastEventId === undefined && this.locate) {
        // The account had no event (of this type) when the iteration
        // began, so every event it has now is new: the oldest one, if any
        // (emitted while a connection was down), comes next, and is the
        // cursor to resume from.
        const oldest = await this.locate("asc");
        if (oldest) {
          this.lastEventId = oldest.id;
          yield oldest;
        }
      }
      let conn: Awaited<ReturnType<EventStreamOpener>> | undefined;
      let cause: unknown;
      let wait: number | undefined;
      try {
        conn = await this.open(this.lastEventId);
      } catch (e) {
        // A failed open is retried here, not by the transport: without a
        // cursor, the loop lists the events emitted meanwhile first.
        wait = readRetryDelay(e, failures, this.maxRetryAfter);
        if (this.signal?.aborted || wait === undefined) throw e;
        cause = e;
      }
      if (conn) {
        try {
          if (!conn.response.body) throw new APIConnectionError("ams: GET /v1/events/stream: the answer has no body");
          for await (const sse of parseSSE(conn.response.body)) {
            if (!sse.id) continue; // not an event of the account (a later version's)
            const ev = JSON.parse(sse.data) as Event;
            this.lastEventId = sse.id;
            failures = 0;
            yield ev;
          }
        } catch (e) {
          if (e instanceof AmsError || this.signal?.aborted) throw e;
          cause = e;
        } finally {
          conn.controller.abort();
        }
      }
      if (failures >= this.maxRetries) {
        if (cause instanceof AmsError) throw cause; // the server's answer (429, 5xx), as a request throws it
        throw new APIConnectionError(
          `ams: GET /v1/events/stream: the stream ended and could not be resumed${this.lastEventId ? ` after ${this.lastEventId}` : ""}`,
          { cause },
        );
      }
      await sleep(wait ?? backoff(failures), this.signal);
      failures++;
    }
  }
}
