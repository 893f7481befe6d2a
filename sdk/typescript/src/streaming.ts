// Streamed replies: POST /v1/messages with "stream": true answers
// Server-Sent Events:
//
//   event: message.delta
//   data: {"delta":"Hello"}
//
//   event: message.completed
//   data: {"id":"msg_…","object":"message",…}
//
// or, after the first event, one last `event: error` whose data is the
// API's error body. The parser below follows the WHATWG event-stream
// rules (any of CRLF, LF, CR ends a line; comments; multi-line data).

import { AmsError, StreamEndedError, makeError } from "./errors.js";
import type { Message, MessageCompletedEvent, MessageStreamEvent } from "./types.js";

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

/**
 * A streamed reply: iterate it with `for await` for `message.delta`
 * events (pieces of text) and then one `message.completed` event with the
 * stored reply. The request is sent when iteration starts.
 *
 * An error answer before the stream began is thrown as its AmsError
 * (after the client's retries); an `error` event after it began is thrown
 * as an AmsError with status 200 (nothing was stored); a stream cut off
 * before `message.completed` throws StreamEndedError. Breaking out of the
 * loop closes the connection, and the server then stores nothing unless
 * the reply was already complete.
 */
export class MessageStream implements AsyncIterable<MessageStreamEvent> {
  readonly #open: StreamOpener;
  #started = false;
  #controller: AbortController | undefined;
  #response: Response | undefined;

  constructor(open: StreamOpener) {
    this.#open = open;
  }

  /** The X-Request-Id of the answer, once the stream is open. */
  get requestId(): string | undefined {
    return this.#response?.headers.get("x-request-id") ?? undefined;
  }

  /** The answer's headers, once the stream is open. */
  get headers(): Headers | undefined {
    return this.#response?.headers;
  }

  /** Closes the stream. */
  abort(): void {
    this.#controller?.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<MessageStreamEvent> {
    if (this.#started) throw new Error("ams: a MessageStream can be iterated once");
    this.#started = true;
    const { response, controller } = await this.#open();
    this.#response = response;
    this.#controller = controller;
    const requestId = response.headers.get("x-request-id") ?? "?";
    if (!response.body) throw new StreamEndedError(`ams: POST /v1/messages: the answer has no body (request ${requestId})`);
    try {
      for await (const ev of parseSSE(response.body)) {
        switch (ev.event) {
          case "message.delta": {
            const d = JSON.parse(ev.data) as { delta?: unknown };
            yield { type: "message.delta", delta: typeof d.delta === "string" ? d.delta : "" };
            break;
          }
          case "message.completed": {
            const message = JSON.parse(ev.data) as Message;
            yield { type: "message.completed", message };
            return;
          }
          case "error":
            throw makeError(200, response.headers, ev.data);
          // Other events are for later versions: skipped.
        }
      }
    } catch (e) {
      if (e instanceof AmsError || e instanceof SyntaxError || controller.signal.aborted) throw e;
      throw new StreamEndedError(`ams: POST /v1/messages: the stream failed before the reply was complete (request ${requestId}): ${(e as Error)?.message ?? e}`, {
        cause: e,
      });
    } finally {
      controller.abort();
    }
    throw new StreamEndedError(`ams: POST /v1/messages: the stream ended before the reply was complete (request ${requestId})`);
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
      else last = ev;
    }
    return last!.message;
  }
}
