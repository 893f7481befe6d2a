// The examples (examples/*.ts, compiled to build-test/examples/) run as
// programs against a real `ams serve`, as a developer would run them.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { Browser } from "./browser.js";
import { listen, startServe, type AmsServer } from "./helpers.js";

const examples = join(dirname(fileURLToPath(import.meta.url)), "..", "examples");

let srv: AmsServer;

before(async () => {
  srv = await startServe();
});
after(async () => {
  await srv?.stop();
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an example; onStdout sees the output as it comes. */
function runExample(name: string, env: Record<string, string>, onStdout?: (all: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(examples, name)], {
      env: { ...process.env, AMS_BASE_URL: srv.baseURL, AMS_API_KEY: srv.apiKey, AMS_ASSISTANT_ID: srv.assistantId, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`${name} did not finish in 30 s:\n${stdout}\n${stderr}`));
    }, 30_000);
    child.stdout.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
      onStdout?.(stdout);
    });
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function ok(r: Run): void {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
}

test("every example has a test here", () => {
  const names = readdirSync(examples).filter((f) => f.endsWith(".js")).sort();
  assert.deepEqual(names, ["oauth.js", "quickstart.js", "stream.js", "webhook-receiver.js"]);
});

test("quickstart.js", async () => {
  const r = await runExample("quickstart.js", {});
  ok(r);
  assert.match(r.stdout, /assistant: .*Ada/);
  assert.match(r.stdout, /you> Hello! My name is Ada\./);
  assert.match(r.stdout, /not found: resource_missing \(request req_/);
  assert.match(r.stdout, /quickstart done/);
});

test("stream.js", async () => {
  const r = await runExample("stream.js", {});
  ok(r);
  assert.match(r.stdout, /\(stored as msg_[A-Za-z0-9]+\)/);
});

test("webhook-receiver.js", async () => {
  const r = await runExample("webhook-receiver.js", {});
  ok(r);
  assert.match(r.stdout, /registered wh_/);
  assert.match(r.stdout, /verified message\.created evt_/);
  assert.match(r.stdout, /the assistant said: /);
});

test("oauth.js: the test plays the user in the browser", async () => {
  // A free port for the example's redirect URI.
  const probe = await listen(() => {});
  const port = new URL(probe.url).port;
  await probe.close();
  const redirectUri = `http://127.0.0.1:${port}/callback`;
  const out = await srv.cli("oauth-clients", "create", "--email", srv.email, "--name", "Example app", "--redirect-uri", redirectUri);
  const clientId = /client_id (cli_\S+)/.exec(out)![1]!;
  const clientSecret = /client_secret (ams_cs_\S+)/.exec(out)![1]!;

  let browsing: Promise<void> | undefined;
  const r = await runExample("oauth.js", { AMS_OAUTH_CLIENT_ID: clientId, AMS_OAUTH_CLIENT_SECRET: clientSecret, AMS_OAUTH_REDIRECT_URI: redirectUri }, (all) => {
    const m = /Open this URL in a browser: (\S+)/.exec(all);
    if (m && !browsing) {
      browsing = (async () => {
        const back = await new Browser(srv.baseURL).authorize(m[1]!, srv.email, srv.password);
        // The browser lands on the example's callback.
        const landing = await fetch(back);
        assert.equal(landing.status, 200, await landing.text());
      })();
      browsing.catch(() => {}); // awaited below, after the example exits
    }
  });
  await browsing;
  ok(r);
  assert.match(r.stdout, /got an access token for "(read messages|messages read)", valid 3600 s/);
  assert.match(r.stdout, /the user has \d+ assistant\(s\)/);
  assert.match(r.stdout, /refreshed: new refresh token issued/);
});
