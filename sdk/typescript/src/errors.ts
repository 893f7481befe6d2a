// Errors thrown by the SDK.

/** The error classes of the API's error body (`error.type`). */
export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "rate_limit_error"
  | "api_error";

/** The API's error body, the body of every non-2xx answer of /v1. */
export interface ErrorBody {
  error: {
    type: ErrorType | string;
    code: string;
    message: string;
    param?: string;
  };
  request_id: string;
}

/** What an AmsError is made of. */
export interface AmsErrorInit {
  status: number;
  type: string;
  code: string;
  message: string;
  param?: string | undefined;
  requestId?: string | undefined;
  headers?: Headers | undefined;
  retryAfter?: number | undefined;
  body?: unknown;
}

/**
 * A non-2xx answer of the API (or an `error` event of a streamed reply).
 * Its subclass says the type: InvalidRequestError (with NotFoundError and
 * ConflictError), AuthenticationError, PermissionDeniedError,
 * RateLimitError, APIError.
 *
 * ```ts
 * try { await client.tasks.get("task_nope") }
 * catch (e) { if (e instanceof NotFoundError) ...; else throw e }
 * ```
 */
export class AmsError extends Error {
  /** HTTP status of the answer; 200 for an `error` event of a stream that had begun. */
  readonly status: number;
  /** Error class: `invalid_request_error`, `authentication_error`, `permission_error`, `rate_limit_error` or `api_error`. */
  readonly type: string;
  /** Machine-readable reason, such as `resource_missing`, `parameter_invalid`, `rate_limit_exceeded`; "" when the answer had no error body. */
  readonly code: string;
  /** The offending parameter or header, when there is one. */
  readonly param: string | undefined;
  /** The request's id (`req_…`): quote it to support. */
  readonly requestId: string | undefined;
  /** The answer's headers (WWW-Authenticate, Allow, X-RateLimit-*, …). */
  readonly headers: Headers | undefined;
  /** Seconds the server asked to wait (Retry-After), when it said. */
  readonly retryAfter: number | undefined;
  /** The parsed error body, or the raw text when it was not JSON. */
  readonly body: unknown;

  constructor(init: AmsErrorInit) {
    let text = `ams: ${init.status} ${init.code || init.type}: ${init.message}`;
    if (init.param) text += ` (param ${init.param})`;
    if (init.requestId) text += ` (request ${init.requestId})`;
    super(text);
    this.name = new.target.name;
    this.status = init.status;
    this.type = init.type;
    this.code = init.code;
    this.param = init.param || undefined;
    this.requestId = init.requestId || undefined;
    this.headers = init.headers;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }

  /** The error's message as the server wrote it (without status, code, param, request id). */
  get apiMessage(): string {
    const b = this.body as Partial<ErrorBody> | undefined;
    return typeof b === "object" && b !== null && typeof b.error?.message === "string" ? b.error.message : this.message;
  }
}

/** `invalid_request_error`: 400, 404, 405, 409, 413, 415. */
export class InvalidRequestError extends AmsError {}
/** `invalid_request_error` with status 404: the record does not exist (or belongs to another account). */
export class NotFoundError extends InvalidRequestError {}
/** `invalid_request_error` with status 409: a conflict, such as an Idempotency-Key reused with another body, or a cap reached (`webhook_limit_reached`, `api_key_limit_reached`, `oauth_client_limit_reached`). */
export class ConflictError extends InvalidRequestError {}
/** `authentication_error`, 401: no, unknown, revoked or expired credential. */
export class AuthenticationError extends AmsError {}
/** `permission_error`, 403: the key or token lacks the permission (scope) the endpoint needs. */
export class PermissionDeniedError extends AmsError {}
/** `rate_limit_error`, 429: the account's per-minute or per-day limit is reached (`rate_limit_exceeded`), or it has as many turns and streams in progress as it may (`concurrent_turns_exceeded`); see `retryAfter`. */
export class RateLimitError extends AmsError {}
/** `api_error`, 5xx (and answers without an error body): the server failed. */
export class APIError extends AmsError {}

/** The request did not get an answer: the connection failed or was cut. */
export class APIConnectionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An attempt ran out of the client's `timeout`. */
export class APITimeoutError extends APIConnectionError {}

/**
 * A streamed reply ended before its `message.completed` event. Retry with
 * the same `idempotencyKey`: if the reply was stored, the server replays it.
 */
export class StreamEndedError extends APIConnectionError {}

/** An answer of /oauth/token or /oauth/revoke that is an error (RFC 6749 section 5.2). */
export class OAuthError extends Error {
  /** HTTP status of the answer. */
  readonly status: number;
  /** RFC 6749 error code: `invalid_grant`, `invalid_client`, `invalid_request`, `unsupported_grant_type`, `invalid_scope`, … */
  readonly error: string;
  /** The server's explanation. */
  readonly errorDescription: string | undefined;
  /** The answer's headers. */
  readonly headers: Headers | undefined;

  constructor(status: number, error: string, errorDescription?: string, headers?: Headers) {
    super(`ams oauth: ${status} ${error}${errorDescription ? `: ${errorDescription}` : ""}`);
    this.name = "OAuthError";
    this.status = status;
    this.error = error;
    this.errorDescription = errorDescription;
    this.headers = headers;
  }
}

/** A webhook delivery whose signature or timestamp does not verify. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

/** The class of an error of type and status. */
export function errorClass(type: string, status: number): typeof AmsError {
  switch (type) {
    case "invalid_request_error":
      if (status === 404) return NotFoundError;
      if (status === 409) return ConflictError;
      return InvalidRequestError;
    case "authentication_error":
      return AuthenticationError;
    case "permission_error":
      return PermissionDeniedError;
    case "rate_limit_error":
      return RateLimitError;
    case "api_error":
      return APIError;
  }
  // An unknown type (a later server version): by status.
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionDeniedError;
  if (status === 429) return RateLimitError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status >= 400 && status < 500) return InvalidRequestError;
  if (status >= 500) return APIError;
  return AmsError;
}

/** Default texts of statuses, for answers without an error body. */
const statusText: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/**
 * Builds the AmsError of an answer with status, headers and body text
 * raw. An answer without an error body (a proxy's 502 page) is an
 * `api_error` for 5xx, else by status.
 */
export function makeError(status: number, headers: Headers | undefined, raw: string, retryAfter?: number): AmsError {
  let body: unknown = raw;
  let type = "";
  let code = "";
  let message = "";
  let param: string | undefined;
  let requestId = headers?.get("x-request-id") ?? undefined;
  try {
    const parsed = JSON.parse(raw) as Partial<ErrorBody>;
    body = parsed;
    if (parsed && typeof parsed === "object" && parsed.error && typeof parsed.error === "object") {
      type = String(parsed.error.type ?? "");
      code = String(parsed.error.code ?? "");
      message = String(parsed.error.message ?? "");
      param = parsed.error.param ? String(parsed.error.param) : undefined;
      if (parsed.request_id) requestId = String(parsed.request_id);
    }
  } catch {
    // not JSON: body stays the text
  }
  if (!type) {
    type = status >= 500 || status < 400 ? "api_error" : status === 401 ? "authentication_error" : status === 403 ? "permission_error" : status === 429 ? "rate_limit_error" : "invalid_request_error";
  }
  if (!message) message = statusText[status] ?? `HTTP status ${status}`;
  const Cls = errorClass(type, status);
  return new Cls({ status, type, code, message, param, requestId, headers, retryAfter, body });
}
