// OAuth helpers: PKCE, the authorization URL, the callback check, and the
// whole authorization-code flow against a real `ams serve` (sign-in and
// consent driven like a browser), with refresh, revocation and the token
// endpoint's errors.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { AuthenticationError, Client, OAuth, OAuthError, PermissionDeniedError, createPKCE, pkceChallenge, registerClient } from "@ams/sdk";
import { Browser } from "./browser.js";
import { startServe, type AmsServer } from "./helpers.js";

const redirectUri = "http://127.0.0.1:9999/callback";

describe("PKCE and URLs (no server)", () => {
  test("the S256 challenge of RFC 7636 appendix B", async () => {
    assert.equal(await pkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });

  test("createPKCE: a 43-character verifier and its challenge", async () => {
    const a = await createPKCE();
    const b = await createPKCE();
    assert.match(a.codeVerifier, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a.codeVerifier, b.codeVerifier);
    assert.equal(a.codeChallengeMethod, "S256");
    assert.equal(a.codeChallenge, createHash("sha256").update(a.codeVerifier).digest("base64url"));
  });

  test("authorizationURL carries the client, scope, state and S256 challenge", async () => {
    const oauth = new OAuth({ baseURL: "https://ams.example/", clientId: "cli_1", redirectUri });
    const req = await oauth.authorizationURL({ scope: ["read", "messages"] });
    const u = new URL(req.url);
    assert.equal(u.origin + u.pathname, "https://ams.example/oauth/authorize");
    assert.equal(u.searchParams.get("response_type"), "code");
    assert.equal(u.searchParams.get("client_id"), "cli_1");
    assert.equal(u.searchParams.get("redirect_uri"), redirectUri);
    assert.equal(u.searchParams.get("scope"), "read messages");
    assert.ok(u.search.includes("scope=read+messages"), "scopes joined by +");
    assert.equal(u.searchParams.get("state"), req.state);
    assert.ok(req.state.length >= 32);
    assert.equal(u.searchParams.get("code_challenge_method"), "S256");
    assert.equal(u.searchParams.get("code_challenge"), await pkceChallenge(req.codeVerifier));
    // Given state and verifier are used as they are.
    const fixed = await oauth.authorizationURL({ scope: "read", state: "s1", codeVerifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" });
    assert.equal(new URL(fixed.url).searchParams.get("code_challenge"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    assert.equal(fixed.state, "s1");
  });

  test("parseCallback: the code, a denial, a forged state", () => {
    const oauth = new OAuth({ baseURL: "https://ams.example", clientId: "cli_1", redirectUri });
    assert.equal(oauth.parseCallback(`${redirectUri}?code=ams_ac_1&state=st`, "st"), "ams_ac_1");
    assert.equal(oauth.parseCallback("/callback?code=c&state=st", "st"), "c");
    assert.throws(
      () => oauth.parseCallback(`${redirectUri}?error=access_denied&error_description=no&state=st`, "st"),
      (e: unknown) => e instanceof OAuthError && e.error === "access_denied" && e.errorDescription === "no",
    );
    assert.throws(() => oauth.parseCallback(`${redirectUri}?code=c&state=other`, "st"), (e: unknown) => e instanceof OAuthError && e.error === "invalid_state");
    assert.throws(() => oauth.parseCallback(`${redirectUri}?code=c`, ""), (e: unknown) => e instanceof OAuthError && e.error === "invalid_state");
    assert.throws(() => oauth.parseCallback(`${redirectUri}?state=st`, "st"), (e: unknown) => e instanceof OAuthError && e.error === "invalid_request");
  });
});

describe("the authorization-code flow against ams serve", () => {
  let srv: AmsServer;
  let clientId: string;
  let clientSecret: string;
  let oauth: OAuth;

  before(async () => {
    srv = await startServe();
    const out = await srv.cli("oauth-clients", "create", "--email", srv.email, "--name", "SDK test app", "--redirect-uri", redirectUri);
    clientId = /client_id (cli_\S+)/.exec(out)![1]!;
    clientSecret = /client_secret (ams_cs_\S+)/.exec(out)![1]!;
    oauth = new OAuth({ baseURL: srv.baseURL, clientId, clientSecret, redirectUri });
  });
  after(async () => {
    await srv?.stop();
  });

  async function authorize(o: OAuth, scope: Array<"read" | "write" | "messages">) {
    const req = await o.authorizationURL({ scope });
    const back = await new Browser(srv.baseURL).authorize(req.url, srv.email, srv.password);
    assert.ok(back.startsWith(redirectUri + "?"), back);
    return { code: o.parseCallback(back, req.state), codeVerifier: req.codeVerifier };
  }

  test("code → tokens → API calls with the token's scopes; refresh rotates; reuse revokes the grant", async () => {
    const { code, codeVerifier } = await authorize(oauth, ["read", "messages"]);
    const tokens = await oauth.exchangeCode({ code, codeVerifier });
    assert.match(tokens.access_token, /^ams_at_/);
    assert.match(tokens.refresh_token ?? "", /^ams_rt_/);
    assert.equal(tokens.token_type, "Bearer");
    assert.equal(tokens.expires_in, 3600);
    assert.deepEqual(tokens.scope?.split(" ").sort(), ["messages", "read"]);

    const api = new Client({ baseURL: srv.baseURL, accessToken: tokens.access_token });
    assert.ok((await api.assistants.list()).data.some((a) => a.id === srv.assistantId));
    const reply = await api.messages.send({ assistant_id: srv.assistantId, message: "Hello from OAuth" });
    assert.equal(reply.direction, "outbound");
    await assert.rejects(api.tasks.create({ assistant_id: srv.assistantId, title: "x" }), PermissionDeniedError);

    // Refresh: new tokens, the old refresh token is spent.
    const next = await oauth.refresh(tokens.refresh_token!);
    assert.notEqual(next.access_token, tokens.access_token);
    assert.notEqual(next.refresh_token, tokens.refresh_token);
    const api2 = new Client({ baseURL: srv.baseURL, accessToken: () => next.access_token });
    assert.ok(await api2.assistants.get(srv.assistantId));

    // Presenting the old refresh token again revokes the whole grant.
    await assert.rejects(oauth.refresh(tokens.refresh_token!), (e: unknown) => e instanceof OAuthError && e.error === "invalid_grant");
    await assert.rejects(api2.assistants.get(srv.assistantId), AuthenticationError);
  });

  test("registerClient (RFC 7591): a public client registers itself and runs the flow; bad metadata is refused", async () => {
    const reg = await registerClient(srv.baseURL, { client_name: "Registered by the SDK", redirect_uris: [redirectUri], token_endpoint_auth_method: "none" });
    assert.match(reg.client_id, /^cli_/);
    assert.equal(reg.client_secret, undefined);
    assert.equal(reg.token_endpoint_auth_method, "none");
    const pub = new OAuth({ baseURL: srv.baseURL, clientId: reg.client_id, redirectUri });
    const { code, codeVerifier } = await authorize(pub, ["read"]);
    const tokens = await pub.exchangeCode({ code, codeVerifier });
    assert.ok((await new Client({ baseURL: srv.baseURL, accessToken: tokens.access_token }).assistants.list()).data.length > 0);

    const conf = await registerClient(srv.baseURL + "/v1", { redirect_uris: [redirectUri], token_endpoint_auth_method: "client_secret_post" });
    assert.match(conf.client_secret ?? "", /^ams_cs_/);
    assert.equal(conf.client_secret_expires_at, 0);

    await assert.rejects(registerClient(srv.baseURL, { redirect_uris: ["http://example.com/cb"] }), (e: unknown) => e instanceof OAuthError && e.status === 400 && e.error === "invalid_redirect_uri");
    await assert.rejects(
      registerClient(srv.baseURL, { redirect_uris: [redirectUri], grant_types: ["refresh_token"] }),
      (e: unknown) => e instanceof OAuthError && e.status === 400 && e.error === "invalid_client_metadata",
    );
  });

  test("revoke: the token is refused from then on", async () => {
    const { code, codeVerifier } = await authorize(oauth, ["read"]);
    const tokens = await oauth.exchangeCode({ code, codeVerifier });
    const api = new Client({ baseURL: srv.baseURL, accessToken: tokens.access_token });
    await api.assistants.list();
    await oauth.revoke(tokens.access_token, { tokenTypeHint: "access_token" });
    await assert.rejects(api.assistants.list(), AuthenticationError);
    await oauth.revoke("ams_at_unknown"); // an unknown token is not an error
  });

  test("exchange errors: a bogus code, a wrong verifier, a wrong secret, a denial", async () => {
    await assert.rejects(oauth.exchangeCode({ code: "ams_ac_bogus", codeVerifier: "x".repeat(43) }), (e: unknown) => {
      assert.ok(e instanceof OAuthError);
      assert.equal(e.status, 400);
      assert.equal(e.error, "invalid_grant");
      assert.ok(e.errorDescription);
      return true;
    });

    const { code } = await authorize(oauth, ["read"]);
    await assert.rejects(oauth.exchangeCode({ code, codeVerifier: (await createPKCE()).codeVerifier }), (e: unknown) => e instanceof OAuthError && e.error === "invalid_grant");

    // A code is single-use (and its reuse revokes what it gave).
    const second = await authorize(oauth, ["read"]);
    const tokens = await oauth.exchangeCode(second);
    await assert.rejects(oauth.exchangeCode(second), (e: unknown) => e instanceof OAuthError && e.error === "invalid_grant" && e.status === 400);
    await assert.rejects(oauth.refresh(tokens.refresh_token!), (e: unknown) => e instanceof OAuthError && e.error === "invalid_grant");

    const wrong = new OAuth({ baseURL: srv.baseURL, clientId, clientSecret: "ams_cs_wrong", redirectUri, authMethod: "client_secret_post" });
    await assert.rejects(wrong.exchangeCode({ code: "ams_ac_x", codeVerifier: "y".repeat(43) }), (e: unknown) => {
      assert.ok(e instanceof OAuthError);
      assert.equal(e.status, 401);
      assert.equal(e.error, "invalid_client");
      return true;
    });

    const req = await oauth.authorizationURL({ scope: ["read"] });
    const back = await new Browser(srv.baseURL).authorize(req.url, srv.email, srv.password, "deny");
    assert.throws(() => oauth.parseCallback(back, req.state), (e: unknown) => e instanceof OAuthError && e.error === "access_denied");
  });

  test("a public client (no secret) with PKCE, client_secret_post style", async () => {
    const out = await srv.cli("oauth-clients", "create", "--email", srv.email, "--name", "Phone app", "--redirect-uri", redirectUri, "--public");
    const publicId = /client_id (cli_\S+)/.exec(out)![1]!;
    const pub = new OAuth({ baseURL: srv.baseURL, clientId: publicId, redirectUri });
    const { code, codeVerifier } = await authorize(pub, ["read", "write"]);
    const tokens = await pub.exchangeCode({ code, codeVerifier });
    const api = new Client({ baseURL: srv.baseURL, accessToken: tokens.access_token });
    const task = await api.tasks.create({ assistant_id: srv.assistantId, title: "Made with a token" });
    assert.equal(task.title, "Made with a token");
  });

  test("server metadata (RFC 8414)", async () => {
    const md = await oauth.metadata();
    assert.equal(md["token_endpoint"], `${srv.baseURL}/oauth/token`);
    assert.deepEqual(md["code_challenge_methods_supported"], ["S256"]);
  });
});
