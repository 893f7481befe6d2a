// The package as shipped: no runtime dependency, nothing Node-only in what
// a browser loads, and Node 18's path to Web Crypto (no globalThis.crypto).

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { sdkRoot } from "./helpers.js";

test("package.json: ESM with types, no runtime dependency", () => {
  const pkg = JSON.parse(readFileSync(join(sdkRoot(), "package.json"), "utf8"));
  assert.equal(pkg.type, "module");
  assert.equal(pkg.exports["."].types, "./dist/index.d.ts");
  assert.equal(pkg.exports["."].import, "./dist/index.js");
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.peerDependencies, undefined);
  assert.match(pkg.engines.node, />=18/);
});

test("dist/ imports nothing but itself (no node: modules, no packages)", () => {
  const dist = join(sdkRoot(), "dist");
  const files = readdirSync(dist).filter((f) => f.endsWith(".js"));
  assert.ok(files.includes("index.js"));
  assert.ok(readdirSync(dist).includes("index.d.ts"));
  for (const f of files) {
    // Without comments (the doc comments show Node examples).
    const src = readFileSync(join(dist, f), "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/^\s*\/\/.*$/gm, "");
    for (const m of src.matchAll(/(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/g)) {
      assert.match(m[1]!, /^\.\/[a-z-]+\.js$/, `${f} imports ${m[1]}`);
    }
    assert.doesNotMatch(src, /\bprocess\.|\bBuffer\b|require\(/, `${f} uses a Node global`);
  }
});

test("without globalThis.crypto (Node 18) Web Crypto comes from node:crypto", () => {
  const out = execFileSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `delete globalThis.crypto;
       if (globalThis.crypto !== undefined) throw new Error("crypto still global");
       const { computeSignature, createPKCE, newIdempotencyKey, pkceChallenge } = await import("@ams/sdk");
       console.log(JSON.stringify({
         sig: await computeSignature("s3cr3t-webhook-signing-key", ""),
         pkce: await pkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
         verifier: (await createPKCE()).codeVerifier.length,
         key: await newIdempotencyKey(),
       }));`,
    ],
    { cwd: sdkRoot(), encoding: "utf8" },
  );
  const r = JSON.parse(out);
  assert.equal(r.sig, "sha256=efff34b0e3057718af0c985b6baa4ab5ecf6580b3a6a5613e18e330225a884e3");
  assert.equal(r.pkce, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  assert.equal(r.verifier, 43);
  assert.match(r.key, /^ams-ts-[0-9a-f]{32}$/);
});
