// The official MCP TypeScript SDK as a client of ams's /mcp, driven by
// oauth/mcp_sdk_test.go. Every answer is one JSON line on stdout; the
// OAuth mode reads the authorization code from stdin once the Go test has
// been through the login and consent pages.
//
//   node client.mjs apikey <mcp url> <full key> <read-only key>
//   node client.mjs oauth  <mcp url> <redirect uri>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError, discoverOAuthProtectedResourceMetadata, discoverAuthorizationServerMetadata } from "@modelcontextprotocol/sdk/client/auth.js";
import readline from "node:readline";

const [mode, url, ...args] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function connect(transport) {
  const client = new Client({ name: "ams-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

// exercise lists the tools, reads the assistants and tasks, and creates a
// task (refused when the credential may not write).
async function exercise(client) {
  const tools = await client.listTools();
  const assistants = await client.callTool({ name: "list_assistants", arguments: {} });
  const assistant = assistants.structuredContent.data[0].id;
  const created = await client.callTool({ name: "create_task", arguments: { assistant_id: assistant, title: "From the TypeScript SDK" } });
  const tasks = await client.callTool({ name: "list_tasks", arguments: {} });
  return {
    tools: tools.tools.map((t) => t.name).sort(),
    read_only: Object.fromEntries(tools.tools.map((t) => [t.name, t.annotations?.readOnlyHint === true])),
    assistants: assistants.structuredContent,
    created: { isError: created.isError === true, structuredContent: created.structuredContent },
    tasks: tasks.structuredContent,
  };
}

function bearer(key) {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
}

if (mode === "apikey") {
  const [full, readOnly] = args;
  const c = await connect(bearer(full));
  const withFull = await exercise(c);
  await c.close();
  const r = await connect(bearer(readOnly));
  const withRead = await exercise(r);
  await r.close();
  out({ full: withFull, read: withRead });
} else if (mode === "oauth") {
  const [redirect] = args;
  // The SDK's own discovery functions, as a client without a 401 would use them.
  const prm = await discoverOAuthProtectedResourceMetadata(new URL(url));
  const asm = await discoverAuthorizationServerMetadata(new URL(prm.authorization_servers[0]));
  let clientInformation, tokens, verifier, authorizationUrl;
  const provider = {
    get redirectUrl() { return redirect; },
    get clientMetadata() {
      return { client_name: "TypeScript SDK test", redirect_uris: [redirect], grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    clientInformation() { return clientInformation; },
    saveClientInformation(i) { clientInformation = i; },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; },
    redirectToAuthorization(u) { authorizationUrl = u; },
    saveCodeVerifier(v) { verifier = v; },
    codeVerifier() { return verifier; },
  };
  // Connecting without a token: 401 with resource_metadata, then the SDK
  // discovers, registers and starts the authorization (PKCE S256).
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await connect(first);
    out({ error: "connected without a token" });
    process.exit(1);
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  out({ protected_resource: prm, authorization_server: asm, client: clientInformation, authorization_url: authorizationUrl.toString() });
  const rl = readline.createInterface({ input: process.stdin });
  const code = (await rl[Symbol.asyncIterator]().next()).value.trim();
  rl.close();
  await first.finishAuth(code); // the token request, with the verifier and the resource
  const c = await connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  const result = await exercise(c);
  await c.close();
  out({ tokens: { token_type: tokens.token_type, scope: tokens.scope, has_refresh: !!tokens.refresh_token }, ...result });
} else {
  throw new Error(`unknown mode ${mode}`);
}
