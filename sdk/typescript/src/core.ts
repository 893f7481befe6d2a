// The request machinery: URL and headers, per-attempt timeouts through
// AbortController, retries of 429 and 5xx honouring Retry-After (bounded),
// an Idempotency-Key on every POST kept across retries, typed errors.

import { randomBytes, toHex } from "./crypto.js";
import { APIConnectionError, APITimeoutError, AmsError, makeError } from "./errors.js";
import { VERSION } from "./version.js";

/** Options of a Client. */
export interface ClientOptions {
  /**
   * An API key (`ams_sk_…`). In Node, defaults to the AMS_API_KEY
   * environment variable. Give this or accessToken.
   */
  apiKey?: string;
  /**
   * An OAuth access token (`ams_at_…`), or a function that returns the
   * current one (called before every attempt, so it can refresh).
   */
  accessToken?: string | (() => string | Promise<string>);
  /**
   * The server root, such as "http://127.0.0.1:8080" (a URL ending in
   * "/v1" is accepted too). In Node, defaults to AMS_BASE_URL, else
   * "http://127.0.0.1:8080".
   */
  baseURL?: string;
  /** Milliseconds one attempt may take (for a stream: until its headers). Default 60000; 0 disables. */
  timeout?: number;
  /** Retries after the first attempt of a failed request. Default 3; 0 disables. */
  maxRetries?: number;
  /**
   * The longest Retry-After, in seconds, the client waits on its own
   * (default 60). Beyond it (a daily limit, say) the RateLimitError is
   * thrown at once with its retryAfter, for the caller to decide.
   */
  maxRetryAfter?: number;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string>;
}

/** Options of one call. */
export interface RequestOptions {
  /**
   * The Idempotency-Key of a POST; default a random one. Reuse a key only
   * to repeat the very same request: the server then replays the first
   * answer instead of acting twice (within 24 h).
   */
  idempotencyKey?: string;
  /** Aborts the call, retries included. */
  signal?: AbortSignal;
  /** Overrides the client's timeout for this call. */
  timeout?: number;
  /** Overrides the client's maxRetries for this call. */
  maxRetries?: number;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

/** What one call sends. */
export interface RequestInit_ {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Relative to /v1, such as "/tasks"; the caller escapes its parts. */
  path: string;
  query?: Record<string, unknown> | undefined;
  body?: unknown;
  options?: RequestOptions | undefined;
  /** Accept text/event-stream and return the open answer. */
  stream?: boolean;
}

/** A decoded answer. */
export interface APIResponse<T> {
  data: T;
  status: number;
  headers: Headers;
  requestId: string | undefined;
}

const DEFAULT_TIMEOUT = 60_000;
const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_MAX_RETRY_AFTER = 61; // the longest wait of the sliding minute window
const INITIAL_BACKOFF = 500;
const MAX_BACKOFF = 8_000;

/** How a failed attempt may be retried. */
const Retry = {
  /** A final answer. */
  No: 0,
  /** The server did not act on it: retry any request. */
  Unsent: 1,
  /** The server may have acted: retry only if repeating is safe. */
  IfRepeatable: 2,
} as const;
type Retry = (typeof Retry)[keyof typeof Retry];

class AttemptError extends Error {
  constructor(
    readonly err: unknown,
    readonly retry: Retry,
  ) {
    super("attempt failed");
  }
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = p?.env?.[name];
  return v === "" ? undefined : v;
}

const isBrowser = typeof (globalThis as { document?: unknown }).document !== "undefined";

/** Turns a time parameter into its RFC 3339 text. */
export function timeString(v: unknown): unknown {
  return v instanceof Date ? v.toISOString() : v;
}

/** A random Idempotency-Key: "ams-ts-" and 32 hex characters. */
export async function newIdempotencyKey(): Promise<string> {
  return "ams-ts-" + toHex(await randomBytes(16));
}

/**
 * Reads a Retry-After header: delay seconds or an HTTP date. Returns
 * seconds (fractional for a date), or undefined when absent or unreadable.
 */
export function parseRetryAfter(v: string | null | undefined, now: number = Date.now()): number | undefined {
  if (v == null) return undefined;
  v = v.trim();
  if (v === "") return undefined;
  if (/^\d+$/.test(v)) return Math.min(Number(v), 86400);
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, (t - now) / 1000);
}

/** The wait before retry number attempt+1: 0.5 s, 1 s, 2 s, … capped at 8 s, less up to 25 % jitter. */
export function backoff(attempt: number): number {
  const d = Math.min(INITIAL_BACKOFF * 2 ** Math.min(attempt, 10), MAX_BACKOFF);
  return d - Math.random() * (d / 4);
}

/** Waits ms milliseconds, or rejects when signal aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(t);
      reject(abortReason(signal!));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function abortReason(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const e = new Error("This operation was aborted");
  e.name = "AbortError";
  return e;
}

/** The transport: every resource sends its requests through it. */
export class Transport {
  readonly baseURL: string;
  readonly timeout: number;
  readonly maxRetries: number;
  readonly maxRetryAfter: number;
  private readonly credential: string | (() => string | Promise<string>) | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly defaultHeaders: Record<string, string>;

  constructor(opts: ClientOptions = {}) {
    let base = (opts.baseURL ?? env("AMS_BASE_URL") ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    if (base.endsWith("/v1")) base = base.slice(0, -3);
    this.baseURL = base;
    this.credential = opts.accessToken ?? opts.apiKey ?? env("AMS_API_KEY");
    this.timeout = opts.timeout ?? DEFAULT_TIMEOUT;
    this.maxRetries = Math.max(0, opts.maxRetries ?? DEFAULT_MAX_RETRIES);
    this.maxRetryAfter = opts.maxRetryAfter ?? DEFAULT_MAX_RETRY_AFTER;
    const f = opts.fetch ?? (globalThis as { fetch?: typeof fetch }).fetch;
    if (typeof f !== "function") {
      throw new Error("ams: no fetch on this platform (Node 18+ and browsers have one); pass options.fetch");
    }
    // Called unbound: browsers refuse fetch called with `this` other than window.
    this.fetchImpl = (input, init) => f(input, init);
    this.defaultHeaders = opts.defaultHeaders ?? {};
  }

  /** The absolute URL of an API path with its query. */
  url(path: string, query?: Record<string, unknown>): string {
    if (!path.startsWith("/")) path = "/" + path;
    let url = path === "/v1" || path.startsWith("/v1/") || path.startsWith("/v1?") ? this.baseURL + path : this.baseURL + "/v1" + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined || v === null || v === "") continue;
        q.set(k, String(timeString(v)));
      }
      const s = q.toString();
      if (s) url += (url.includes("?") ? "&" : "?") + s;
    }
    return url;
  }

  /** Sends a request (with retries) and decodes its JSON answer. */
  async request<T>(init: RequestInit_): Promise<APIResponse<T>> {
    const res = await this.send(init);
    const status = res.status;
    const headers = res.headers;
    const requestId = headers.get("x-request-id") ?? undefined;
    return { data: res.data as T, status, headers, requestId };
  }

  /**
   * Sends a request and returns the open answer of a stream (the caller
   * reads and closes its body) or the decoded JSON.
   */
  async send(init: RequestInit_): Promise<{ status: number; headers: Headers; data: unknown; response: Response; controller: AbortController }> {
    const opts = init.options ?? {};
    const method = init.method;
    const url = this.url(init.path, init.query);
    const headers: Record<string, string> = {
      Accept: init.stream ? "text/event-stream" : "application/json",
      ...this.defaultHeaders,
    };
    if (!isBrowser) headers["User-Agent"] = `ams-typescript/${VERSION}`;
    let payload: string | undefined;
    if (init.body !== undefined) {
      payload = JSON.stringify(init.body);
      headers["Content-Type"] = "application/json";
    }
    Object.assign(headers, opts.headers ?? {});
    // Settled once, so that every attempt sends the same key.
    if (method === "POST" && !hasHeader(headers, "idempotency-key")) {
      headers["Idempotency-Key"] = opts.idempotencyKey || (await newIdempotencyKey());
    }
    // A request the server may have seen can be sent again only if
    // repeating it cannot act twice.
    const repeatable = hasHeader(headers, "idempotency-key") || method === "GET" || method === "DELETE";
    const maxRetries = Math.max(0, opts.maxRetries ?? this.maxRetries);
    const timeout = opts.timeout ?? this.timeout;

    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(method, url, headers, payload, timeout, opts.signal, !!init.stream);
      } catch (e) {
        if (!(e instanceof AttemptError)) throw e;
        const err = e.err;
        if (attempt >= maxRetries || e.retry === Retry.No || (e.retry === Retry.IfRepeatable && !repeatable)) throw err;
        const wait = retryWait(err, attempt, this.maxRetryAfter);
        if (wait === undefined) throw err;
        await sleep(wait, opts.signal);
      }
    }
  }

  private async attempt(
    method: string,
    url: string,
    headers: Record<string, string>,
    payload: string | undefined,
    timeout: number,
    signal: AbortSignal | undefined,
    stream: boolean,
  ) {
    if (signal?.aborted) throw abortReason(signal);
    const h = { ...headers };
    const cred = typeof this.credential === "function" ? await this.credential() : this.credential;
    if (cred) h["Authorization"] = `Bearer ${cred}`;

    const controller = new AbortController();
    let timedOut = false;
    const timer =
      timeout > 0
        ? setTimeout(() => {
            timedOut = true;
            controller.abort();
          }, timeout)
        : undefined;
    const onAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const fail = (e: unknown, what: string): never => {
      done();
      if (signal?.aborted) throw abortReason(signal);
      if (timedOut) {
        throw new AttemptError(new APITimeoutError(`ams: ${method} ${url}: no answer within ${timeout} ms`, { cause: e }), Retry.IfRepeatable);
      }
      throw new AttemptError(new APIConnectionError(`ams: ${method} ${url}: ${what}: ${(e as Error)?.message ?? e}`, { cause: e }), Retry.IfRepeatable);
    };

    let res: Response;
    try {
      const init: RequestInit = { method, headers: h, signal: controller.signal };
      if (payload !== undefined) init.body = payload;
      res = await this.fetchImpl(url, init);
    } catch (e) {
      return fail(e, "connection failed");
    }
    if (res.status < 200 || res.status > 299) {
      let raw: string;
      try {
        raw = await res.text();
      } catch (e) {
        return fail(e, "read error answer");
      }
      done();
      const err = makeError(res.status, res.headers, raw, parseRetryAfter(res.headers.get("retry-after")));
      throw new AttemptError(err, errorRetry(err));
    }
    if (stream) {
      clearTimeout(timer); // the stream may last longer than the timeout
      const ct = (res.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (ct !== "text/event-stream") {
        done();
        controller.abort();
        throw new AttemptError(
          new APIConnectionError(`ams: ${method} ${url}: answer is ${JSON.stringify(ct)}, not an event stream (request ${res.headers.get("x-request-id") ?? "?"})`),
          Retry.No,
        );
      }
      // The caller's signal keeps aborting the stream through controller.
      return { status: res.status, headers: res.headers, data: undefined, response: res, controller };
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      return fail(e, "read answer");
    }
    done();
    let data: unknown = undefined;
    if (text.trim() !== "") {
      try {
        data = JSON.parse(text);
      } catch (e) {
        throw new AttemptError(
          new APIConnectionError(`ams: ${method} ${url}: answer (status ${res.status}, request ${res.headers.get("x-request-id") ?? "?"}) is not JSON`, { cause: e }),
          Retry.No,
        );
      }
    }
    return { status: res.status, headers: res.headers, data, response: res, controller };
  }
}

function hasHeader(h: Record<string, string>, name: string): boolean {
  return Object.keys(h).some((k) => k.toLowerCase() === name && h[k] !== "");
}

/**
 * How long (ms) to wait before a GET that failed with err is sent again
 * as retry number attempt (from 0), or undefined when it is not: the
 * transport's rule (a connection failure or timeout, a 429 or a 5xx is
 * retried; see retryWait), for a caller that retries one attempt itself.
 */
export function readRetryDelay(err: unknown, attempt: number, maxRetryAfter: number): number | undefined {
  const retryable = err instanceof AmsError ? errorRetry(err) !== Retry.No : err instanceof APIConnectionError;
  return retryable ? retryWait(err, attempt, maxRetryAfter) : undefined;
}

/**
 * The wait (ms) before retry number attempt of a request that failed with
 * err and may be retried: its Retry-After, or undefined when that is
 * longer than maxRetryAfter seconds; else backoff(attempt).
 */
function retryWait(err: unknown, attempt: number, maxRetryAfter: number): number | undefined {
  if (err instanceof AmsError && err.retryAfter !== undefined && err.retryAfter > 0) {
    return err.retryAfter > maxRetryAfter ? undefined : err.retryAfter * 1000;
  }
  return backoff(attempt);
}

/** Classifies an API error answer. */
function errorRetry(e: AmsError): Retry {
  if (e.status === 429) return Retry.Unsent; // refused before it ran
  if (e.status === 409 && e.code === "idempotency_key_in_use") return Retry.Unsent; // the retry replays the first's answer
  if (e.status >= 500) return Retry.IfRepeatable;
  return Retry.No;
}
