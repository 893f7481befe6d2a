// Receive webhook deliveries and verify them: a small node:http receiver,
// registered as a webhook for message.created, then a message to trigger
// a delivery. (The server must reach the receiver: with `ams serve --dev`
// loopback http URLs are allowed; in production use https.)
//
//   AMS_BASE_URL=… AMS_API_KEY=… AMS_ASSISTANT_ID=… node build-test/examples/webhook-receiver.js

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { Client, WebhookVerificationError, verifyWebhook, type Event } from "@ams/sdk";

const client = new Client({ apiKey: process.env["AMS_API_KEY"], baseURL: process.env["AMS_BASE_URL"] });
// A Standard Webhooks style secret, so the public standardwebhooks libraries verify deliveries too.
const secret = "whsec_" + randomBytes(24).toString("base64");

let resolveFirst: (e: Event) => void;
const firstOutbound = new Promise<Event>((r) => (resolveFirst = r));

const server = createServer(async (req, res) => {
  // Verify the raw body, exactly as received.
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    const event = await verifyWebhook(Buffer.concat(chunks), req.headers, secret);
    res.writeHead(200).end(); // answer quickly; process asynchronously, deduplicating on event.id
    console.log(`verified ${event.type} ${event.id}`);
    if (event.type === "message.created" && event.data.direction === "outbound") resolveFirst(event);
  } catch (e) {
    if (!(e instanceof WebhookVerificationError)) throw e;
    console.log(`refused a delivery: ${e.message}`);
    res.writeHead(400).end();
  }
});
await new Promise<void>((r) => server.listen(Number(process.env["PORT"] ?? 0), "127.0.0.1", r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/ams`;

const webhook = await client.webhooks.create({ url, events: ["message.created"], secret });
console.log(`registered ${webhook.id} for ${url}`);
try {
  await client.messages.send({ assistant_id: process.env["AMS_ASSISTANT_ID"]!, message: "Ping me through the webhook" });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("no delivery within 15 s")), 15_000)));
  const event = await Promise.race([firstOutbound, timeout]);
  clearTimeout(timer);
  if (event.type === "message.created") console.log(`the assistant said: ${event.data.content}`);
} finally {
  await client.webhooks.delete(webhook.id);
  server.close();
}
