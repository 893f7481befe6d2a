// The package as npm ships it: `npm pack` holds the build, its types, the
// sources the maps point at, the README and the LICENSE, nothing else; and a fresh
// project installs the packed tarball offline and imports it from
// JavaScript (ESM and, where Node can require ES modules, CommonJS) and
// from TypeScript. Uses dist/ as `npm test` built it (pack runs with
// --ignore-scripts so nothing rebuilds while other test files run).

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@ams/sdk";
import { repoRoot, sdkRoot } from "./helpers.js";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const pkg = JSON.parse(readFileSync(join(sdkRoot(), "package.json"), "utf8")) as {
  name: string;
  version: string;
  license: string;
  private?: boolean;
  files: string[];
  exports: Record<string, unknown>;
};

// npm test exports npm_config_* (--prefix sdk/typescript among them): a
// child npm must not inherit them, or it installs into the SDK's folder.
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return env;
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = cleanEnv()): string {
  return execFileSync(cmd, args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

type Packed = { filename: string; files: Array<{ path: string }> };

test("package.json is publishable", () => {
  assert.equal(pkg.private, undefined, "a private package cannot be published");
  assert.match(pkg.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/);
  assert.match(pkg.version, /^\d+\.\d+\.\d+/);
  assert.deepEqual(pkg.files.sort(), ["LICENSE", "README.md", "dist", "src"]);
  // MIT, the repository's LICENSE (sdk/typescript/LICENSE is the same file).
  assert.equal(pkg.license, "MIT");
  const license = readFileSync(join(repoRoot(), "LICENSE"), "utf8");
  assert.match(license, /^MIT License\n\nCopyright \(c\) \d{4} the ams authors\n/);
  assert.equal(readFileSync(join(sdkRoot(), "LICENSE"), "utf8"), license, "sdk/typescript/LICENSE differs from the repository's LICENSE");
  assert.deepEqual(pkg.exports["."], { types: "./dist/index.d.ts", import: "./dist/index.js", default: "./dist/index.js" });
});

test("npm pack ships the build, its types, the mapped sources, the README and the LICENSE only", () => {
  const [packed] = JSON.parse(run(npm, ["pack", "--dry-run", "--json", "--ignore-scripts"], sdkRoot())) as Packed[];
  const paths = packed!.files.map((f) => f.path).sort();
  for (const want of ["package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts"]) assert.ok(paths.includes(want), `${want} is not in the tarball: ${paths.join(", ")}`);
  // Nothing else: no tests, examples, build-test, tsconfig or node_modules.
  const shipped = /^(package\.json|README\.md|LICENSE|dist\/[\w-]+\.(js|d\.ts|js\.map|d\.ts\.map)|src\/[\w-]+\.ts)$/;
  assert.deepEqual(paths.filter((p) => !shipped.test(p)), []);
  // Every source has its module and declarations (and the maps' targets ship).
  const sources = readdirSync(join(sdkRoot(), "src")).filter((f) => f.endsWith(".ts"));
  for (const f of sources) {
    const base = f.replace(/\.ts$/, "");
    for (const p of [`src/${f}`, `dist/${base}.js`, `dist/${base}.d.ts`]) assert.ok(paths.includes(p), `${p} is not in the tarball`);
  }
  assert.equal(paths.filter((p) => p.startsWith("src/")).length, sources.length);
});

test("the README lists every operation of the OpenAPI document, with a Client method that exists", () => {
  const doc = JSON.parse(readFileSync(join(repoRoot(), "openapi", "openapi.json"), "utf8")) as { paths: Record<string, Record<string, unknown>> };
  const readme = readFileSync(join(sdkRoot(), "README.md"), "utf8");
  // Its rows: | `GET /v1/keys` | `keys.list` |
  const rows = new Map<string, string>();
  for (const m of readme.matchAll(/^\| `((?:GET|POST|PUT|PATCH|DELETE) \/v1\S*)` \| (.*) \|$/gm)) rows.set(m[1]!, m[2]!);
  const client = new Client({ apiKey: "ams_sk_test", baseURL: "http://127.0.0.1:9" });
  let n = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      n++;
      const op = `${method.toUpperCase()} ${path}`;
      const cell = rows.get(op);
      assert.ok(cell, `the README's "Every endpoint" table lacks ${op}`);
      const names = [...cell.matchAll(/`([A-Za-z.]+)`/g)].map((x) => x[1]!).filter((x) => /^[a-z][A-Za-z]*(\.[a-z][A-Za-z]*)*$/.test(x));
      assert.ok(names.length > 0, `${op}: no method named`);
      const [first] = names;
      let target: unknown = client;
      for (const part of first!.split(".")) target = (target as Record<string, unknown>)[part];
      assert.equal(typeof target, "function", `${op}: client.${first} is not a method`);
      rows.delete(op);
    }
  }
  assert.ok(n >= 64, `${n} operations`);
  assert.deepEqual([...rows.keys()], [], "rows for operations the OpenAPI document does not have");
});

describe("a fresh project installs the tarball offline", () => {
  let dir: string;
  let app: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "ams-sdk-pack-"));
    const [packed] = JSON.parse(run(npm, ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], sdkRoot())) as Packed[];
    app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }));
    // --offline: from the tarball alone (it has no dependency), with an
    // empty cache of its own.
    run(npm, ["install", "--offline", "--no-audit", "--no-fund", "--cache", join(dir, "cache"), join(dir, packed!.filename)], app);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("installed as a dependency, without dev dependencies", () => {
    const manifest = JSON.parse(readFileSync(join(app, "package.json"), "utf8"));
    assert.match(manifest.dependencies[pkg.name], /^file:/);
    const installed = readdirSync(join(app, "node_modules"));
    assert.deepEqual(installed.sort(), [".package-lock.json", pkg.name.split("/")[0]!].sort());
  });

  test("import() from an ES module", () => {
    const out = run(process.execPath, [
      "--input-type=module",
      "-e",
      `import { Client, VERSION, verifyWebhook } from "${pkg.name}";
       const c = new Client({ apiKey: "ams_sk_test", baseURL: "http://127.0.0.1:1" });
       console.log(JSON.stringify({ VERSION, send: typeof c.messages.send, verify: typeof verifyWebhook }));`,
    ], app);
    assert.deepEqual(JSON.parse(out), { VERSION: pkg.version, send: "function", verify: "function" });
  });

  test("require() from CommonJS, where Node can require ES modules", (t) => {
    if (!(process.features as { require_module?: boolean }).require_module) {
      t.skip(`Node ${process.versions.node} cannot require() an ES module (20.19+ and 22.12+ can); CommonJS code uses import()`);
      return;
    }
    const out = run(process.execPath, ["-e", `const { Client, VERSION } = require("${pkg.name}"); console.log(VERSION, typeof Client);`], app);
    assert.equal(out.trim(), `${pkg.version} function`);
  });

  for (const resolution of ["NodeNext", "Bundler"]) {
    test(`TypeScript finds the types (moduleResolution ${resolution})`, () => {
      const project = join(app, resolution);
      mkdirSync(project);
      writeFileSync(
        join(project, "main.ts"),
        `import { Client, type Assistant } from "${pkg.name}";
         const c = new Client({ apiKey: "ams_sk_test" });
         export async function names(): Promise<string[]> { const page = await c.assistants.list(); return page.data.map((a: Assistant) => a.name); }
         // @ts-expect-error: the types are real, not any
         export const wrong: number = c.assistants;
        `,
      );
      const module = resolution === "NodeNext" ? "NodeNext" : "ESNext";
      writeFileSync(
        join(project, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { target: "ES2022", module, moduleResolution: resolution, lib: ["ES2022", "DOM"], types: [], strict: true, noEmit: true }, files: ["main.ts"] }),
      );
      const tsc = join(sdkRoot(), "node_modules", "typescript", "bin", "tsc");
      try {
        run(process.execPath, [tsc, "-p", project], project);
      } catch (e) {
        const err = e as { stdout?: string; stderr?: string };
        assert.fail(`tsc failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
      }
    });
  }
});
