// OAuth 2.0 helpers for a program acting for a user: the authorization
// URL with PKCE (S256) and state, the callback check, the code exchange,
// refresh, and revocation, against the server's /oauth endpoints.

import { randomBytes, sha256, timingSafeEqual, toBase64URL, toBytes } from "./crypto.js";
import { OAuthError } from "./errors.js";

/** The permissions a token may hold; OAuth scopes are the same words. */
export type Scope = "read" | "write" | "messages" | "integrations" | "admin";

/** The answer of POST /oauth/token. */
export interface TokenResponse {
  /** `ams_at_…`: pass it as Client({ accessToken }). */
  access_token: string;
  token_type: "Bearer" | string;
  /** Seconds the access token lasts (3600). */
  expires_in: number;
  /** `ams_rt_…`: lasts 30 days and rotates on every use. */
  refresh_token: string;
  /** The granted scopes, separated by spaces. */
  scope?: string;
  [extra: string]: unknown;
}

/** Options of an OAuth client. */
export interface OAuthOptions {
  /** The server root (where /oauth/authorize is), such as "https://ams.example". */
  baseURL: string;
  /** The client id (`cli_…`). */
  clientId: string;
  /** The client secret (`ams_cs_…`) of a confidential client; omit for a public client (PKCE). */
  clientSecret?: string;
  /** The redirect URI registered for the client. */
  redirectUri: string;
  /** How the client authenticates at the token endpoint; default "client_secret_basic". */
  authMethod?: "client_secret_basic" | "client_secret_post";
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
}

/** Client metadata to register (RFC 7591), as POST /oauth/register reads it. */
export interface ClientMetadata {
  /** 1 to 10 redirect URIs: https, or http on localhost or a loopback address. */
  redirect_uris: string[];
  /** The name the consent page shows (with a note that the app named itself). */
  client_name?: string;
  /** "none" for a public client (then PKCE S256 is required); default "client_secret_basic". */
  token_endpoint_auth_method?: "none" | "client_secret_basic" | "client_secret_post";
  /** A subset of "authorization_code" and "refresh_token" with "authorization_code". */
  grant_types?: Array<"authorization_code" | "refresh_token">;
  response_types?: Array<"code">;
  /** Scopes the client means to ask for, separated by spaces. */
  scope?: string;
  [extra: string]: unknown;
}

/** A registered client (RFC 7591 section 3.2.1). */
export interface ClientRegistration {
  client_id: string;
  /** Shown this once, for a confidential client only. */
  client_secret?: string;
  client_id_issued_at: number;
  /** 0: the secret does not expire. */
  client_secret_expires_at?: number;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: "none" | "client_secret_basic" | "client_secret_post";
  [extra: string]: unknown;
}

/**
 * Registers a client with the server (RFC 7591 dynamic client
 * registration, POST /oauth/register), without an account: the result's
 * client_id (and client_secret, for a confidential client) make an
 * OAuth. Invalid metadata throws OAuthError with error
 * "invalid_redirect_uri" or "invalid_client_metadata" (400); too many
 * registrations from one address, "too_many_requests" (429).
 */
export async function registerClient(baseURL: string, metadata: ClientMetadata, opts: { fetch?: typeof fetch } = {}): Promise<ClientRegistration> {
  const f = opts.fetch ?? (globalThis as { fetch?: typeof fetch }).fetch;
  if (typeof f !== "function") throw new Error("ams: no fetch on this platform; pass options.fetch");
  const base = baseURL.replace(/\/+$/, "").replace(/\/v1$/, "");
  let res: Response;
  try {
    res = await f(`${base}/oauth/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(metadata),
    });
  } catch (e) {
    throw new OAuthError(0, "connection_error", (e as Error)?.message ?? String(e));
  }
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const error = typeof json?.["error"] === "string" ? (json["error"] as string) : res.status >= 500 ? "server_error" : "invalid_request";
    const desc = typeof json?.["error_description"] === "string" ? (json["error_description"] as string) : undefined;
    throw new OAuthError(res.status, error, desc, res.headers);
  }
  return json as ClientRegistration;
}

/** A PKCE pair (RFC 7636): keep the verifier, send the challenge. */
export interface PKCE {
  codeVerifier: string;
  codeChallenge: string;
  codeChallengeMethod: "S256";
}

/** The S256 code challenge of a verifier: base64url(SHA-256(verifier)). */
export async function pkceChallenge(codeVerifier: string): Promise<string> {
  return toBase64URL(await sha256(toBytes(codeVerifier)));
}

/** A new PKCE pair: a 43-character random verifier and its S256 challenge. */
export async function createPKCE(): Promise<PKCE> {
  const codeVerifier = toBase64URL(await randomBytes(32));
  return { codeVerifier, codeChallenge: await pkceChallenge(codeVerifier), codeChallengeMethod: "S256" };
}

/** A random state value for the authorization request. */
export async function randomState(): Promise<string> {
  return toBase64URL(await randomBytes(24));
}

/** What authorizationURL returns: send the user to url, keep state and codeVerifier for the callback. */
export interface AuthorizationRequest {
  url: string;
  state: string;
  codeVerifier: string;
}

/**
 * An OAuth 2.0 client of the ams authorization server.
 *
 * ```ts
 * const oauth = new OAuth({ baseURL, clientId, clientSecret, redirectUri });
 * const { url, state, codeVerifier } = await oauth.authorizationURL({ scope: ["read", "messages"] });
 * // … redirect the user to url; at the redirect URI:
 * const code = oauth.parseCallback(callbackURL, state);
 * const tokens = await oauth.exchangeCode({ code, codeVerifier });
 * const client = new Client({ baseURL, accessToken: tokens.access_token });
 * ```
 */
export class OAuth {
  readonly baseURL: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly #clientSecret: string | undefined;
  readonly #authMethod: "client_secret_basic" | "client_secret_post";
  readonly #fetch: typeof fetch;

  constructor(opts: OAuthOptions) {
    this.baseURL = opts.baseURL.replace(/\/+$/, "").replace(/\/v1$/, "");
    this.clientId = opts.clientId;
    this.redirectUri = opts.redirectUri;
    this.#clientSecret = opts.clientSecret;
    this.#authMethod = opts.authMethod ?? "client_secret_basic";
    const f = opts.fetch ?? (globalThis as { fetch?: typeof fetch }).fetch;
    if (typeof f !== "function") throw new Error("ams: no fetch on this platform; pass options.fetch");
    this.#fetch = (input, init) => f(input, init);
  }

  /**
   * The URL of the consent page, with PKCE (S256) and state. Generates
   * the state and the code verifier unless given; keep both (in the
   * user's session) for parseCallback and exchangeCode.
   */
  async authorizationURL(opts: { scope: Scope[] | string; state?: string; codeVerifier?: string; redirectUri?: string }): Promise<AuthorizationRequest> {
    const state = opts.state ?? (await randomState());
    const codeVerifier = opts.codeVerifier ?? (await createPKCE()).codeVerifier;
    const q = new URLSearchParams({
      response_type: "code",
      client_id: this.clientId,
      redirect_uri: opts.redirectUri ?? this.redirectUri,
      scope: Array.isArray(opts.scope) ? opts.scope.join(" ") : opts.scope,
      state,
      code_challenge: await pkceChallenge(codeVerifier),
      code_challenge_method: "S256",
    });
    return { url: `${this.baseURL}/oauth/authorize?${q}`, state, codeVerifier };
  }

  /**
   * Reads the redirect back to the client: returns the code, or throws
   * OAuthError when the user denied (`access_denied`), the server sent
   * another error, or the state is not the one sent (`invalid_state`: a
   * forged callback).
   */
  parseCallback(callbackURL: string | URL, expectedState: string): string {
    const u = typeof callbackURL === "string" ? new URL(callbackURL, "http://callback.invalid") : callbackURL;
    const p = u.searchParams;
    const state = p.get("state") ?? "";
    if (!expectedState || !timingSafeEqual(state, expectedState)) {
      throw new OAuthError(400, "invalid_state", "The callback's state is not the one of the authorization request.");
    }
    const err = p.get("error");
    if (err) throw new OAuthError(400, err, p.get("error_description") ?? undefined);
    const code = p.get("code");
    if (!code) throw new OAuthError(400, "invalid_request", "The callback has no code.");
    return code;
  }

  /** Exchanges an authorization code (with its PKCE verifier) for tokens. */
  exchangeCode(opts: { code: string; codeVerifier?: string; redirectUri?: string }): Promise<TokenResponse> {
    const form: Record<string, string> = {
      grant_type: "authorization_code",
      code: opts.code,
      redirect_uri: opts.redirectUri ?? this.redirectUri,
    };
    if (opts.codeVerifier) form["code_verifier"] = opts.codeVerifier;
    return this.#post("/oauth/token", form) as Promise<TokenResponse>;
  }

  /**
   * Exchanges a refresh token for new tokens. Refresh tokens rotate: keep
   * the new one; presenting the old one again revokes the whole grant.
   */
  refresh(refreshToken: string, opts: { scope?: Scope[] | string } = {}): Promise<TokenResponse> {
    const form: Record<string, string> = { grant_type: "refresh_token", refresh_token: refreshToken };
    if (opts.scope !== undefined) form["scope"] = Array.isArray(opts.scope) ? opts.scope.join(" ") : opts.scope;
    return this.#post("/oauth/token", form) as Promise<TokenResponse>;
  }

  /** Revokes a token and every token of its grant (RFC 7009). An unknown token is not an error. */
  async revoke(token: string, opts: { tokenTypeHint?: "access_token" | "refresh_token" } = {}): Promise<void> {
    const form: Record<string, string> = { token };
    if (opts.tokenTypeHint) form["token_type_hint"] = opts.tokenTypeHint;
    await this.#post("/oauth/revoke", form);
  }

  /** The server's metadata (RFC 8414). */
  async metadata(): Promise<Record<string, unknown>> {
    const res = await this.#fetch(`${this.baseURL}/.well-known/oauth-authorization-server`, { headers: { Accept: "application/json" } });
    if (!res.ok) throw new OAuthError(res.status, "server_error", await res.text(), res.headers);
    return (await res.json()) as Record<string, unknown>;
  }

  async #post(path: string, form: Record<string, string>): Promise<unknown> {
    const headers: Record<string, string> = {
      "Content-Type": "application/x-www-form-urlencoded",
      Accept: "application/json",
    };
    const body = new URLSearchParams(form);
    if (this.#clientSecret !== undefined && this.#authMethod === "client_secret_basic") {
      // RFC 6749 section 2.3.1: both parts form-encoded, then base64.
      const user = encodeURIComponent(this.clientId).replace(/%20/g, "+");
      const pass = encodeURIComponent(this.#clientSecret).replace(/%20/g, "+");
      headers["Authorization"] = "Basic " + btoa(`${user}:${pass}`);
    } else {
      body.set("client_id", this.clientId);
      if (this.#clientSecret !== undefined) body.set("client_secret", this.#clientSecret);
    }
    let res: Response;
    try {
      res = await this.#fetch(this.baseURL + path, { method: "POST", headers, body: body.toString() });
    } catch (e) {
      throw new OAuthError(0, "connection_error", (e as Error)?.message ?? String(e));
    }
    const text = await res.text();
    let json: Record<string, unknown> | undefined;
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const error = typeof json?.["error"] === "string" ? (json["error"] as string) : res.status >= 500 ? "server_error" : "invalid_request";
      const desc = typeof json?.["error_description"] === "string" ? (json["error_description"] as string) : json ? undefined : text.slice(0, 200) || undefined;
      throw new OAuthError(res.status, error, desc, res.headers);
    }
    return json;
  }
}
