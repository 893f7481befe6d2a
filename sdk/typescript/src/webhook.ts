// Verifying webhook deliveries. Every delivery carries two signatures:
//
//   X-Service-Signature: sha256=<hex HMAC-SHA256 of the body>, keyed with
//     the secret's UTF-8 bytes (the whole string, even a "whsec_" one);
//   Standard Webhooks: webhook-id, webhook-timestamp (Unix seconds) and
//     webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">,
//     keyed with the secret's bytes, except that a "whsec_<base64>" secret
//     is base64-decoded first.
//
// During a secret rotation webhook-signature lists one signature per
// secret still signing, while X-Service-Signature is only ever the newest
// secret's: so verifyWebhook decides on webhook-signature when it is
// present (any v1 entry, within the timestamp tolerance) and checks
// X-Service-Signature only when it is absent, as the Python and Go SDKs
// and the public Standard Webhooks libraries do
// (sdk/testdata/webhook-rotation.json holds the cases all of them agree on).

import { fromBase64, hmacSHA256, timingSafeEqual, toBase64, toBytes, toHex } from "./crypto.js";
import { WebhookVerificationError } from "./errors.js";
import type { Event } from "./types.js";

/** The default timestamp tolerance: 5 minutes either way. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** A request body: the exact bytes received (never a re-serialized object). */
export type WebhookPayload = string | Uint8Array | ArrayBuffer;

/** Request headers: a Headers object (fetch, Deno, Bun, Next.js) or Node's IncomingHttpHeaders. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** Options of the verification. */
export interface VerifyOptions {
  /** Seconds the timestamp may be away from now, either way. Default 300. */
  tolerance?: number;
  /** The receiver's clock: a Date, or Unix seconds. Default the current time. */
  now?: Date | number;
  /**
   * Whether the Standard Webhooks headers (and so a fresh timestamp) are
   * required. Default false: a delivery without webhook-signature is
   * checked with X-Service-Signature, which carries no timestamp and so
   * cannot be checked for replay; true refuses such a delivery.
   */
  requireTimestamp?: boolean;
}

/** The Standard Webhooks headers of a delivery. */
export interface StandardHeaders {
  id: string;
  timestamp: string;
  signature: string;
}

/** The Standard Webhooks HMAC key of a secret: "whsec_<base64>" decoded, else its UTF-8 bytes. */
export function standardKey(secret: string): Uint8Array {
  if (secret.startsWith("whsec_")) {
    const k = fromBase64(secret.slice("whsec_".length));
    if (k !== undefined) return k;
  }
  return toBytes(secret);
}

/** The X-Service-Signature of a body: "sha256=" and the lowercase hex HMAC-SHA256, keyed with the secret. */
export async function computeSignature(secret: string, payload: WebhookPayload): Promise<string> {
  return "sha256=" + toHex(await hmacSHA256(toBytes(secret), toBytes(payload)));
}

/** The Standard Webhooks webhook-signature of a delivery: "v1," and the base64 HMAC-SHA256 of "{id}.{timestamp}.{body}". */
export async function computeStandardSignature(secret: string, id: string, timestamp: string | number, payload: WebhookPayload): Promise<string> {
  const prefix = toBytes(`${id}.${timestamp}.`);
  const body = toBytes(payload);
  const msg = new Uint8Array(prefix.length + body.length);
  msg.set(prefix);
  msg.set(body, prefix.length);
  return "v1," + toBase64(await hmacSHA256(standardKey(secret), msg));
}

/** Whether header is the X-Service-Signature of payload under secret (compared in constant time). */
export async function verifySignature(secret: string, payload: WebhookPayload, header: string | null | undefined): Promise<boolean> {
  if (!header) return false;
  return timingSafeEqual(header, await computeSignature(secret, payload));
}

function nowSeconds(now: Date | number | undefined): number {
  if (now === undefined) return Date.now() / 1000;
  return now instanceof Date ? now.getTime() / 1000 : now;
}

/**
 * Checks the Standard Webhooks headers of a delivery; throws
 * WebhookVerificationError saying why they do not verify.
 */
export async function assertStandardSignature(secret: string, payload: WebhookPayload, h: Partial<StandardHeaders>, opts: VerifyOptions = {}): Promise<void> {
  const { id, timestamp, signature } = h;
  if (!id) throw new WebhookVerificationError("missing webhook-id header");
  if (!timestamp) throw new WebhookVerificationError("missing webhook-timestamp header");
  if (!signature) throw new WebhookVerificationError("missing webhook-signature header");
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not Unix seconds");
  const tolerance = opts.tolerance ?? DEFAULT_TOLERANCE_SECONDS;
  const age = nowSeconds(opts.now) - Number(timestamp);
  if (age > tolerance) throw new WebhookVerificationError(`webhook-timestamp is too old (${Math.round(age)} s, tolerance ${tolerance} s)`);
  if (-age > tolerance) throw new WebhookVerificationError(`webhook-timestamp is in the future (${Math.round(-age)} s, tolerance ${tolerance} s)`);
  const expected = await computeStandardSignature(secret, id, timestamp, payload);
  let match = false;
  for (const entry of signature.split(" ")) {
    // Each entry is "<version>,<signature>"; versions other than v1 are ignored.
    if (!entry.startsWith("v1,")) continue;
    if (timingSafeEqual(entry, expected)) match = true; // no early exit: every entry costs the same
  }
  if (!match) throw new WebhookVerificationError("no webhook-signature matches");
}

/** Whether the Standard Webhooks headers verify (signature and timestamp). */
export async function verifyStandardSignature(secret: string, payload: WebhookPayload, h: Partial<StandardHeaders>, opts: VerifyOptions = {}): Promise<boolean> {
  try {
    await assertStandardSignature(secret, payload, h, opts);
    return true;
  } catch (e) {
    if (e instanceof WebhookVerificationError) return false;
    throw e;
  }
}

/** Reads one header, case-insensitively, from either kind of headers. */
export function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const rec = headers as Record<string, string | string[] | undefined>;
  const lower = name.toLowerCase();
  for (const k of Object.keys(rec)) {
    if (k.toLowerCase() !== lower) continue;
    const v = rec[k];
    return Array.isArray(v) ? v.join(", ") : v;
  }
  return undefined;
}

/**
 * Verifies a webhook delivery and returns its event. With a
 * webhook-signature header, the Standard Webhooks headers decide: one
 * `v1` signature must match and the timestamp be within the tolerance;
 * X-Service-Signature is then not needed (during a secret rotation it is
 * only the new secret's, while webhook-signature carries the old one's
 * too). Without webhook-signature, X-Service-Signature must match, unless
 * `requireTimestamp: true` refuses such a delivery. Throws
 * WebhookVerificationError.
 *
 * Pass the raw body, exactly as received:
 *
 * ```ts
 * // Node http
 * const chunks = []; for await (const c of req) chunks.push(c);
 * const event = await verifyWebhook(Buffer.concat(chunks), req.headers, secret);
 * // fetch-style (Request)
 * const event = await verifyWebhook(await request.text(), request.headers, secret);
 * ```
 */
export async function verifyWebhook(payload: WebhookPayload, headers: WebhookHeaders, secret: string, opts: VerifyOptions = {}): Promise<Event> {
  if (!secret) throw new WebhookVerificationError("no webhook secret to verify with");
  const signature = headerValue(headers, "webhook-signature");
  if (signature) {
    const std = { id: headerValue(headers, "webhook-id"), timestamp: headerValue(headers, "webhook-timestamp"), signature };
    await assertStandardSignature(secret, payload, std, opts);
  } else if (opts.requireTimestamp) {
    throw new WebhookVerificationError("missing webhook-signature header (requireTimestamp)");
  } else {
    const xsig = headerValue(headers, "x-service-signature");
    if (!xsig) throw new WebhookVerificationError("no signature headers (X-Service-Signature, webhook-signature)");
    if (!(await verifySignature(secret, payload, xsig))) throw new WebhookVerificationError("X-Service-Signature does not match");
  }
  const text = typeof payload === "string" ? payload : new TextDecoder().decode(toBytes(payload));
  try {
    return JSON.parse(text) as Event;
  } catch {
    throw new WebhookVerificationError("the body is not JSON");
  }
}

/**
 * Signs a delivery as the service does: the headers for body at timestamp
 * (Unix seconds, default now) with event id. For testing receivers.
 */
export async function signWebhook(secret: string, id: string, payload: WebhookPayload, timestamp: number = Math.floor(Date.now() / 1000)): Promise<Record<string, string>> {
  return {
    "X-Service-Signature": await computeSignature(secret, payload),
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": await computeStandardSignature(secret, id, timestamp, payload),
  };
}
