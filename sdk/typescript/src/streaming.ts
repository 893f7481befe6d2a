// Streamed replies: POST /v1/messages with "stream": true answers
// Server-Sent Events, each with an id (its number in the turn's stream):
//
//   id: 1
//   event: turn.started
//   data: {"turn_id":"trn_…","inbound_message_id":"msg_…",…}
//
//   id: 2
//   event: tool_call            (then tool_result, for each tool call)
//
//   id: 4
//   event: message.delta
//   data: {"delta":"Hello"}
//
//   id: 5
//   event: message.completed
//   data: {"id":"msg_…","object":"message",…}
//
// or one last `event: error` whose data is the API's error body. A
// dropped stream resumes with GET /v1/turns/{id}/events and Last-Event-ID. The parser below follows the WHATWG event-stream
// rules (any of CRLF, LF, CR ends a line; comments; multi-line data).

import { AmsError, StreamEndedError, makeError } from "./errors.js";
import type { Action, Message, MessageCompletedEvent, MessageStreamEvent } from "./types.js";

/** One Server-Sent Event. */
export interface ServerSentEvent {
  /** The event's name; "message" when it has none. */
  event: string;
  /** Its data lines joined with "\n". */
  data: string;
  /** Its last id field, if any. */
  id?: string;
}

/**
 * Decodes an event stream from a body of bytes. Events not ended by a
 * blank line when the body ends are dropped, as the standard says.
 */
export async function* parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buf = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  let seen = false;
  let first = true;
  // A CR at the end of a chunk may be the first half of a CRLF.
  let pendingCR = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      let text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      if (first && text.length > 0) {
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // a BOM
        first = false;
      }
      if (pendingCR && text.startsWith("\n")) text = text.slice(1);
      pendingCR = false;
      buf += text;
      let start = 0;
      for (;;) {
        let i = start;
        while (i < buf.length && buf[i] !== "\n" && buf[i] !== "\r") i++;
        if (i >= buf.length) break;
        const line = buf.slice(start, i);
        if (buf[i] === "\r") {
          if (i + 1 < buf.length) {
            if (buf[i + 1] === "\n") i++;
          } else {
            pendingCR = true;
          }
        }
        start = i + 1;
        // One line.
        if (line === "") {
          if (seen) {
            const ev: ServerSentEvent = { event: event || "message", data: data.join("\n") };
            if (id !== undefined) ev.id = id;
            yield ev;
          }
          event = "";
          data = [];
          seen = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        switch (field) {
          case "event":
            event = val;
            seen = true;
            break;
          case "data":
            data.push(val);
            seen = true;
            break;
          case "id":
            if (!val.includes("\0")) id = val;
            break;
          // retry and unknown fields: ignored
        }
      }
      buf = buf.slice(start);
      if (done) return;
    }
  } finally {
    // Ends the connection when the consumer stops early.
    reader.cancel().catch(() => {});
    reader.releaseLock?.();
  }
}

/** Opens the stream (with the client's retries before the first event). */
export type StreamOpener = () => Promise<{ response: Response; controller: AbortController }>;

/** Opens GET /v1/turns/{id}/events after the event lastEventId. */
export type StreamResumer = (turnId: string, lastEventId: string | undefined) => Promise<{ response: Response; controller: AbortController }>;

/**
 * A turn's stream: iterate it with `for await` for `turn.started`,
 * `tool_call` and `tool_result` events, `message.delta` events (pieces of
 * text) and then one `message.completed` event with the stored reply.
 * The request is sent when iteration starts.
 *
 * An error answer before the stream began is thrown as its AmsError
 * (after the client's retries); an `error` event is thrown as an AmsError
 * with status 200 (the turn failed, keeping what its tool calls did;
 * send again with the same idempotency key to resume it). A dropped
 * connection is resumed from the last event received (Last-Event-ID), up
 * to the client's maxRetries, so no event is lost or repeated; then
 * StreamEndedError. Breaking out of the loop closes the connection; the
 * turn runs on to its end on the server (turns.cancel stops it).
 */
export class MessageStream implements AsyncIterable<MessageStreamEvent> {
  readonly #open: StreamOpener;
  readonly #resume: StreamResumer | undefined;
  readonly #maxResumes: number;
  #started = false;
  #controller: AbortController | undefined;
  #response: Response | undefined;
  #turnId: string | undefined;
  #lastEventId: string | undefined;

  constructor(open: StreamOpener, resume?: StreamResumer, maxResumes = 0, turnId?: string, lastEventId?: string) {
    this.#open = open;
    this.#resume = resume;
    this.#maxResumes = maxResumes;
    this.#turnId = turnId;
    this.#lastEventId = lastEventId;
  }

  /** The X-Request-Id of the answer, once the stream is open. */
  get requestId(): string | undefined {
    return this.#response?.headers.get("x-request-id") ?? undefined;
  }

  /** The answer's headers, once the stream is open. */
  get headers(): Headers | undefined {
    return this.#response?.headers;
  }

  /** The turn, once known (X-Turn-Id, or the turn.started event). */
  get turnId(): string | undefined {
    return this.#turnId;
  }

  /** The id of the last event received: a stream resumes after it. */
  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  /** Closes the stream. */
  abort(): void {
    this.#controller?.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<MessageStreamEvent> {
    if (this.#started) throw new Error("ams: a MessageStream can be iterated once");
    this.#started = true;
    let opened = await this.#open();
    let resumes = 0;
    for (;;) {
      const { response, controller } = opened;
      this.#response = response;
      this.#controller = controller;
      this.#turnId ??= response.headers.get("x-turn-id") ?? undefined;
      const requestId = response.headers.get("x-request-id") ?? "?";
      let failure: unknown;
      try {
        if (!response.body) throw new StreamEndedError(`ams: the turn's stream has no body (request ${requestId})`);
        for await (const ev of parseSSE(response.body)) {
          const base = { ...(ev.id !== undefined ? { id: ev.id } : {}), ...(this.#turnId ? { turn_id: this.#turnId } : {}) };
          let out: MessageStreamEvent | undefined;
          switch (ev.event) {
            case "turn.started": {
              const turn = JSON.parse(ev.data) as { turn_id: string; inbound_message_id: string; conversation_id: string; assistant_id: string; resumed: boolean };
              this.#turnId = turn.turn_id;
              out = { type: "turn.started", ...base, turn_id: turn.turn_id, turn };
              break;
            }
            case "tool_call":
              out = { type: "tool_call", ...base, call: JSON.parse(ev.data) as { turn_id: string; call_seq: number; name: string; arguments: unknown } };
              break;
            case "tool_result":
              out = {
                type: "tool_result",
                ...base,
                result: JSON.parse(ev.data) as { turn_id: string; call_seq: number; name: string; action: Action; replayed: boolean },
              };
              break;
            case "message.delta": {
              const d = JSON.parse(ev.data) as { delta?: unknown };
              out = { type: "message.delta", ...base, delta: typeof d.delta === "string" ? d.delta : "" };
              break;
            }
            case "message.completed":
              out = { type: "message.completed", ...base, message: JSON.parse(ev.data) as Message };
              break;
            case "error":
              if (ev.id !== undefined) this.#lastEventId = ev.id;
              throw makeError(200, response.headers, ev.data);
            // Other events are for later versions: skipped.
          }
          if (ev.id !== undefined) this.#lastEventId = ev.id;
          if (out) {
            yield out;
            if (out.type === "message.completed") return;
          }
        }
      } catch (e) {
        if (e instanceof AmsError || e instanceof SyntaxError || controller.signal.aborted) throw e;
        failure = e;
      } finally {
        controller.abort();
      }
      if (!this.#resume || !this.#turnId || resumes >= this.#maxResumes) {
        const why = failure === undefined ? "ended" : `failed (${(failure as Error)?.message ?? failure})`;
        throw new StreamEndedError(
          `ams: the stream ${why} before the reply was complete (request ${requestId}${this.#turnId ? `, turn ${this.#turnId}, last event ${this.#lastEventId ?? "none"}` : ""})`,
          failure === undefined ? undefined : { cause: failure },
        );
      }
      await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** resumes, 2000)));
      resumes++;
      opened = await this.#resume(this.#turnId, this.#lastEventId);
    }
  }

  /** Reads the whole stream and returns the stored reply. */
  async finalMessage(): Promise<Message> {
    let last: MessageCompletedEvent | undefined;
    for await (const ev of this) if (ev.type === "message.completed") last = ev;
    return last!.message;
  }

  /**
   * Reads the whole stream, calling onDelta with each piece of text, and
   * returns the stored reply.
   */
  async forEachDelta(onDelta: (delta: string) => void): Promise<Message> {
    let last: MessageCompletedEvent | undefined;
    for await (const ev of this) {
      if (ev.type === "message.delta") onDelta(ev.delta);
      else if (ev.type === "message.completed") last = ev;
    }
    return last!.message;
  }
}
