// Web Crypto helpers: HMAC-SHA256, SHA-256, random bytes, base64 and hex,
// constant-time comparison. Web Crypto is global in browsers and in
// Node 19+; Node 18 has it as node:crypto's webcrypto, loaded on first use.

let cryptoPromise: Promise<Crypto> | undefined;

/** Returns the Web Crypto implementation of the platform. */
export function getCrypto(): Promise<Crypto> {
  if (cryptoPromise === undefined) {
    const c = (globalThis as { crypto?: Crypto }).crypto;
    if (c?.subtle !== undefined && typeof c.getRandomValues === "function") {
      cryptoPromise = Promise.resolve(c);
    } else {
      // Node 18: globalThis.crypto is not there without a flag. The
      // specifier is a variable so that bundlers for browsers leave it.
      const specifier = "node:crypto";
      cryptoPromise = import(/* webpackIgnore: true */ /* @vite-ignore */ specifier).then(
        (m: { webcrypto?: Crypto }) => {
          if (m.webcrypto?.subtle === undefined) {
            throw new Error("ams: no Web Crypto implementation (crypto.subtle) on this platform");
          }
          return m.webcrypto;
        },
        () => {
          throw new Error("ams: no Web Crypto implementation (crypto.subtle) on this platform");
        },
      );
    }
  }
  return cryptoPromise;
}

const encoder = new TextEncoder();

/** UTF-8 bytes of a string; bytes are returned as they are. */
export function toBytes(data: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof data === "string") return encoder.encode(data);
  if (data instanceof Uint8Array) return data;
  return new Uint8Array(data);
}

/** The bytes on a plain ArrayBuffer, as Web Crypto takes them. */
function plain(b: Uint8Array): Uint8Array<ArrayBuffer> {
  return b.buffer instanceof ArrayBuffer ? (b as Uint8Array<ArrayBuffer>) : new Uint8Array(b);
}

/** HMAC-SHA256 of data keyed with key. */
export async function hmacSHA256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const c = await getCrypto();
  // An empty HMAC key is valid, but Web Crypto refuses to import one; a
  // one-byte zero key gives the same MAC (keys are zero-padded).
  const k = await c.subtle.importKey("raw", key.length === 0 ? new Uint8Array(1) : plain(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await c.subtle.sign("HMAC", k, plain(data)));
}

/** SHA-256 of data. */
export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  const c = await getCrypto();
  return new Uint8Array(await c.subtle.digest("SHA-256", plain(data)));
}

/** n random bytes from the platform's CSPRNG. */
export async function randomBytes(n: number): Promise<Uint8Array> {
  const c = await getCrypto();
  return c.getRandomValues(new Uint8Array(n));
}

/** Lowercase hex of bytes. */
export function toHex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}

const b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Standard base64 (with padding) of bytes. */
export function toBase64(b: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < b.length; i += 3) {
    const n = (b[i]! << 16) | (b[i + 1]! << 8) | b[i + 2]!;
    out += b64chars[(n >> 18) & 63]! + b64chars[(n >> 12) & 63]! + b64chars[(n >> 6) & 63]! + b64chars[n & 63]!;
  }
  if (i < b.length) {
    const rest = b.length - i;
    const n = (b[i]! << 16) | (rest === 2 ? b[i + 1]! << 8 : 0);
    out += b64chars[(n >> 18) & 63]! + b64chars[(n >> 12) & 63]!;
    out += rest === 2 ? b64chars[(n >> 6) & 63]! + "=" : "==";
  }
  return out;
}

/** base64url without padding (RFC 4648 section 5), as PKCE uses. */
export function toBase64URL(b: Uint8Array): string {
  return toBase64(b).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * Decodes standard padded base64, as Go's base64.StdEncoding (which the
 * server uses) does. Returns undefined when s is not that, so that callers
 * can fall back as the server does for a "whsec_" secret that does not
 * decode.
 */
export function fromBase64(s: string): Uint8Array | undefined {
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return undefined;
  const body = s.replace(/=+$/, "");
  const out = new Uint8Array(Math.floor((body.length * 3) / 4));
  let bits = 0;
  let acc = 0;
  let j = 0;
  for (const ch of body) {
    acc = ((acc << 6) | b64chars.indexOf(ch)) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (acc >> bits) & 0xff;
    }
  }
  // Like Go's base64.StdEncoding (not Strict), bits left over after the
  // last byte are ignored.
  return out;
}

/**
 * Compares two strings in time that depends only on their lengths, not on
 * where they differ. Lengths are not secret here (a signature's length is
 * public), so different lengths return false at once.
 */
export function timingSafeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const x = toBytes(a);
  const y = toBytes(b);
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}
