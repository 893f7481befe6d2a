// Act for a user with OAuth 2.0: send them to the consent page (with PKCE
// and state), take the code at the redirect URI, exchange it for tokens,
// call the API with the access token, and refresh it.
//
// Register the client first (its redirect URI must match):
//   ams oauth-clients create --email you@example.com --name "My app" --redirect-uri http://127.0.0.1:9999/callback
//   AMS_BASE_URL=… AMS_OAUTH_CLIENT_ID=cli_… AMS_OAUTH_CLIENT_SECRET=ams_cs_… node build-test/examples/oauth.js

import { createServer } from "node:http";
import { Client, OAuth, OAuthError } from "@ams/sdk";

const baseURL = process.env["AMS_BASE_URL"] ?? "http://127.0.0.1:8080";
const redirectUri = process.env["AMS_OAUTH_REDIRECT_URI"] ?? "http://127.0.0.1:9999/callback";
const oauth = new OAuth({
  baseURL,
  clientId: process.env["AMS_OAUTH_CLIENT_ID"]!,
  clientSecret: process.env["AMS_OAUTH_CLIENT_SECRET"], // omit for a public client
  redirectUri,
});

// 1. The URL of the consent page; keep state and codeVerifier (in the user's session).
const { url, state, codeVerifier } = await oauth.authorizationURL({ scope: ["read", "messages"] });
console.log(`Open this URL in a browser: ${url}`);

// 2. The browser comes back to the redirect URI with ?code=…&state=….
const callback = new URL(redirectUri);
const code = await new Promise<string>((resolve, reject) => {
  const server = createServer((req, res) => {
    const here = new URL(req.url ?? "/", redirectUri);
    if (here.pathname !== callback.pathname) return void res.writeHead(404).end();
    try {
      const c = oauth.parseCallback(here, state); // checks state; throws OAuthError on a denial
      res.writeHead(200, { "Content-Type": "text/plain" }).end("Signed in. You can close this tab.");
      resolve(c);
    } catch (e) {
      res.writeHead(400, { "Content-Type": "text/plain" }).end(String(e));
      reject(e);
    } finally {
      server.close();
    }
  });
  server.listen(Number(callback.port || 80), callback.hostname);
});

// 3. Exchange the code (with the PKCE verifier) for tokens.
const tokens = await oauth.exchangeCode({ code, codeVerifier });
console.log(`got an access token for "${tokens.scope}", valid ${tokens.expires_in} s`);

// 4. Call the API as the user.
const client = new Client({ baseURL, accessToken: tokens.access_token });
const assistants = await client.assistants.list();
console.log(`the user has ${assistants.data.length} assistant(s)`);

// 5. Refresh before it expires (refresh tokens rotate: keep the new one).
try {
  const fresh = await oauth.refresh(tokens.refresh_token!);
  console.log(`refreshed: new refresh token ${fresh.refresh_token !== tokens.refresh_token ? "issued" : "missing"}`);
} catch (e) {
  if (e instanceof OAuthError) console.log(`refresh failed: ${e.error}`);
  else throw e;
}
