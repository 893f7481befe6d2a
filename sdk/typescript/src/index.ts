/**
 * The TypeScript/JavaScript SDK of the ams v1 API (Node 18+ and browsers,
 * no runtime dependency).
 *
 * ```ts
 * import { Client } from "@ams/sdk";
 * const client = new Client({ apiKey: process.env.AMS_API_KEY, baseURL: "http://127.0.0.1:8080" });
 * const reply = await client.messages.send({ assistant_id: "ast_…", message: "Hello!" });
 * ```
 *
 * @module
 */

export { Client, Assistants, Messages, Turns, Conversations, Tasks, Calendar, CalendarEvents, Actions, Integrations, Events, Webhooks, Keys, OAuthClients, AccountResource } from "./client.js";
export { backoff, newIdempotencyKey, parseRetryAfter, type APIResponse, type ClientOptions, type RequestOptions } from "./core.js";
export {
  AmsError,
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  OAuthError,
  PermissionDeniedError,
  RateLimitError,
  StreamEndedError,
  WebhookVerificationError,
  type AmsErrorInit,
  type ErrorBody,
  type ErrorType,
} from "./errors.js";
export { Page, PagePromise, type PageFetcher } from "./pagination.js";
export { EventStream, type EventLocator, type EventStreamOpener } from "./events-stream.js";
export { MessageStream, parseSSE, type ServerSentEvent, type StreamOpener, type StreamResumer } from "./streaming.js";
export { OAuth, createPKCE, pkceChallenge, randomState, registerClient, type AuthorizationRequest, type ClientMetadata, type ClientRegistration, type OAuthOptions, type PKCE, type Scope, type TokenResponse } from "./oauth.js";
export {
  DEFAULT_TOLERANCE_SECONDS,
  assertStandardSignature,
  computeSignature,
  computeStandardSignature,
  signWebhook,
  standardKey,
  verifySignature,
  verifyStandardSignature,
  verifyWebhook,
  type StandardHeaders,
  type VerifyOptions,
  type WebhookHeaders,
  type WebhookPayload,
} from "./webhook.js";
export { VERSION } from "./version.js";
export type * from "./types.js";
