// Test fixtures: a real `ams serve --dev` on a free port and a fresh data
// directory, the ams CLI on the same store, and small local HTTP servers.

import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execFileP = promisify(execFile);

/** The repository root: the nearest folder above this file with the service's go.mod. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "go.mod")) && existsSync(join(dir, "cmd", "ams"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error("repository root (go.mod with cmd/ams) not found above " + fileURLToPath(import.meta.url));
    dir = up;
  }
}

/** The SDK's folder (sdk/typescript). */
export function sdkRoot(): string {
  return resolve(repoRoot(), "sdk", "typescript");
}

let binary: string | undefined;

/**
 * The ams binary: AMS_BIN when set (test/run.ts builds it once per test
 * run), else built now with `go build -o <tmp>/ams ./cmd/ams`.
 */
export function amsBinary(): string {
  if (binary) return binary;
  if (process.env["AMS_BIN"]) return (binary = process.env["AMS_BIN"]);
  binary = buildAms();
  return binary;
}

/** Builds ./cmd/ams into a temporary folder and returns the binary's path. */
export function buildAms(): string {
  const dir = mkdtempSync(join(tmpdir(), "ams-ts-bin-"));
  const out = join(dir, "ams");
  execFileSync("go", ["build", "-o", out, "./cmd/ams"], { cwd: repoRoot(), stdio: ["ignore", "inherit", "inherit"] });
  return out;
}

/** A running `ams serve --dev`. */
export interface AmsServer {
  /** The server root, such as http://127.0.0.1:41234. */
  baseURL: string;
  /** The dev API key (read, write, messages, integrations). */
  apiKey: string;
  /** The dev assistant. */
  assistantId: string;
  /** The dev user's e-mail and password (for the sign-in page). */
  email: string;
  password: string;
  userId: string;
  dataDir: string;
  /** Runs an ams subcommand on the server's store and returns its stdout. */
  cli(...args: string[]): Promise<string>;
  /** What the server wrote to stderr so far (its logs). */
  logs(): string;
  /** Stops the server (SIGTERM, then SIGKILL) and removes its data. */
  stop(): Promise<void>;
}

export interface ServeOptions {
  /** Extra flags of ams serve. */
  args?: string[];
  /**
   * Lift the dev user to the enterprise plan with high limits, so that a
   * test file's many requests never meet the standard plan's 60 a minute.
   * Default true.
   */
  unlimited?: boolean;
}

/**
 * Starts `ams serve --dev --addr 127.0.0.1:0 --data-dir <tmp>
 * --webhook-retry-schedule 0s,1s` and reads the dev credentials it prints.
 */
export async function startServe(opts: ServeOptions = {}): Promise<AmsServer> {
  const bin = amsBinary();
  const dataDir = mkdtempSync(join(tmpdir(), "ams-ts-data-"));
  const env = { ...process.env, AMS_DATA_DIR: dataDir };
  const child: ChildProcess = spawn(
    bin,
    ["serve", "--dev", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--webhook-retry-schedule", "0s,1s", "--shutdown-timeout", "5s", ...(opts.args ?? [])],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  // However the test process ends, the server ends with it.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.removeListener("exit", killOnExit));
  let stdout = "";
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
  });
  const ready = new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`ams serve not ready after 30 s:\n${stdout}\n${stderr}`)), 30_000);
    child.stdout!.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
      if (stdout.includes('"message": "Hello! What can you do?"')) {
        clearTimeout(timer);
        resolveReady();
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`ams serve exited (${code}) before it was ready:\n${stdout}\n${stderr}`));
    });
  });
  await ready;
  const field = (re: RegExp): string => {
    const m = re.exec(stdout);
    if (!m) throw new Error(`${re} not found in the dev output:\n${stdout}`);
    return m[1]!;
  };
  const cli = async (...args: string[]): Promise<string> => {
    const { stdout: out } = await execFileP(bin, args, { env });
    return out;
  };
  const server: AmsServer = {
    baseURL: field(/ams is running in dev mode at (http:\/\/\S+)/),
    apiKey: field(/API key\s+(ams_sk_\S+)/),
    assistantId: field(/assistant\s+(ast_\S+)/),
    email: field(/user\s+(\S+@\S+) \(/),
    userId: field(/user\s+\S+ \((usr_[A-Za-z0-9]+)/),
    password: field(/password\s+(\S+)/),
    dataDir,
    cli,
    logs: () => stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((r) => child.once("exit", () => r()));
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 8_000);
        await exited;
        clearTimeout(t);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  if (opts.unlimited !== false) {
    await cli("users", "update", "--email", server.email, "--plan", "enterprise", "--rpm", "100000", "--rpd", "10000000");
  }
  return server;
}

/** A local HTTP server for a test: a webhook receiver, a stub API. */
export interface LocalServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Starts a node:http server on 127.0.0.1 with a free port. */
export async function listen(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>): Promise<LocalServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      Promise.resolve(handler(req, res, Buffer.concat(chunks))).catch((e) => {
        res.statusCode = 500;
        res.end(String(e));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections?.();
        server.close(() => r());
      }),
  };
}

/** Polls check until it returns a value other than undefined, or fails after timeout ms. */
export async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeout = 15_000): Promise<T> {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Where a CuttingProxy cuts a stream: an offset into the stream's body (chunk framing included), or undefined while it cannot tell yet. */
export type Cut = (body: Buffer) => number | undefined;

function nth(body: Buffer, pattern: string, n: number): number {
  let i = -1;
  for (let k = 0; k < n; k++) {
    i = body.indexOf(pattern, i + 1);
    if (i < 0) return -1;
  }
  return i;
}

/** Cuts one byte into the text of the n-th message.delta: inside an HTTP chunk, mid-line (the server writes each event as one chunk). */
export function cutInsideChunk(n: number): Cut {
  return (body) => {
    const i = nth(body, '"delta":"', n);
    const pos = i + '"delta":"'.length + 1;
    return i >= 0 && pos <= body.length ? pos : undefined;
  };
}

/** Cuts after the n-th event and its chunk: between two events, on a chunk boundary. */
export function cutBetweenEvents(n: number): Cut {
  return (body) => {
    const i = nth(body, "\n\n\r\n", n);
    return i >= 0 ? i + 4 : undefined;
  };
}

/** Cuts after the event line of the n-th message.delta: its id and name arrived, its data did not. */
export function cutMidEvent(n: number): Cut {
  return (body) => {
    const p = "\nevent: message.delta\n";
    const i = nth(body, p, n);
    return i >= 0 ? i + p.length : undefined;
  };
}

/** Returned by a cut: close the connection before any byte of the answer (the request was sent, its answer never came). */
export const DROP_ANSWER = -2;

/** Drops the whole answer. */
export const dropTheAnswer: Cut = () => DROP_ANSWER;

/** A TCP proxy that cuts event streams (see cuttingProxy). */
export interface CuttingProxy {
  url: string;
  /** How many streams were cut so far. */
  cutsDone(): number;
  close(): Promise<void>;
}

/**
 * Starts a TCP proxy on 127.0.0.1 in front of upstream (an http:// URL).
 * Each answer that is an event stream takes the next of cuts: its bytes
 * (status line, headers, chunk framing and all) are forwarded up to the
 * offset in its body that the cut names, then both connections are
 * destroyed, as a dropped network would. Once the cuts are used up,
 * streams pass whole.
 */
export async function cuttingProxy(upstream: string, cuts: Cut[]): Promise<CuttingProxy> {
  const target = new URL(upstream);
  const left = [...cuts];
  let done = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((client) => {
    const up = connect(Number(target.port), target.hostname);
    sockets.add(client).add(up);
    const kill = () => {
      client.destroy();
      up.destroy();
    };
    client.on("close", () => sockets.delete(client) && up.end());
    up.on("close", () => sockets.delete(up) && client.end());
    client.on("error", kill);
    up.on("error", kill);
    client.pipe(up);
    let buf = Buffer.alloc(0);
    let sent = 0;
    let start = -1;
    let cut: Cut | undefined;
    up.on("data", (data: Buffer) => {
      buf = Buffer.concat([buf, data]);
      if (start < 0) {
        const i = buf.toString("latin1").toLowerCase().indexOf("content-type: text/event-stream");
        const j = i >= 0 ? buf.indexOf("\r\n\r\n", i) : -1;
        if (j >= 0) {
          start = j + 4;
          cut = left.shift();
        }
      }
      if (cut && start >= 0) {
        const pos = cut(buf.subarray(start));
        if (pos !== undefined) {
          done++;
          if (pos === DROP_ANSWER) kill();
          else client.write(buf.subarray(sent, start + pos), () => kill());
          up.removeAllListeners("data");
          up.pause();
          return;
        }
      }
      client.write(buf.subarray(sent));
      sent = buf.length;
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    cutsDone: () => done,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
