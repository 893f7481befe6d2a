// The test command (npm test): builds the ams binary once, then runs every
// compiled test file with Node's test runner, each against its own
// `ams serve`. Arguments are passed to `node --test` (a file to run one).

import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildAms } from "./helpers.js";

const here = dirname(fileURLToPath(import.meta.url));
const given = process.env["AMS_BIN"];
const bin = given || buildAms();
const args = process.argv.slice(2);
const files = args.some((a) => !a.startsWith("-"))
  ? []
  : readdirSync(here)
      .filter((f) => f.endsWith(".test.js"))
      .sort()
      .map((f) => join(here, f));
// Two files at a time: each runs its own server, and the rate-limit test
// spends most of its time waiting for the next minute.
// (--test-concurrency is Node 20.10+; older runners use their default.)
const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
const concurrency = major > 20 || (major === 20 && minor >= 10) ? ["--test-concurrency=2"] : [];
const r = spawnSync(process.execPath, ["--test", ...concurrency, ...args, ...files], {
  stdio: "inherit",
  env: { ...process.env, AMS_BIN: bin },
});
if (!given) rmSync(dirname(bin), { recursive: true, force: true });
process.exit(r.status ?? 1);
