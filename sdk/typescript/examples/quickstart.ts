// Quick start: send a message, continue the conversation, read the
// history, keep tasks, and handle errors.
//
//   AMS_BASE_URL=http://127.0.0.1:8080 AMS_API_KEY=ams_sk_… AMS_ASSISTANT_ID=ast_… node build-test/examples/quickstart.js

import { Client, NotFoundError, RateLimitError } from "@ams/sdk";

const client = new Client({
  apiKey: process.env["AMS_API_KEY"],
  baseURL: process.env["AMS_BASE_URL"] ?? "http://127.0.0.1:8080",
});
const assistantId = process.env["AMS_ASSISTANT_ID"]!;

// Send a message: the answer is the assistant's reply.
const reply = await client.messages.send({ assistant_id: assistantId, message: "Hello! My name is Ada." });
console.log(`assistant: ${reply.content}`);

// Continue the same conversation: the assistant keeps context.
const next = await client.messages.send({
  assistant_id: assistantId,
  conversation_id: reply.conversation_id,
  message: "What's my name?",
});
console.log(`assistant: ${next.content}`);

// Read the history, oldest first. `for await` follows the cursors across pages.
for await (const m of client.conversations.listMessages(reply.conversation_id, { order: "asc", limit: 2 })) {
  console.log(`${m.direction === "inbound" ? "you" : "assistant"}> ${m.content}`);
}

// Tasks the assistant keeps.
const task = await client.tasks.create({
  assistant_id: assistantId,
  title: "Call Bob",
  due_at: new Date(Date.now() + 24 * 3600 * 1000),
});
await client.tasks.complete(task.id);
const open = await client.tasks.list({ status: "open", limit: 10 });
console.log(`open tasks on the first page: ${open.data.length}; completed "${task.title}"`);

// Errors are typed.
try {
  await client.tasks.get("task_doesnotexist");
} catch (e) {
  if (e instanceof NotFoundError) console.log(`not found: ${e.code} (request ${e.requestId})`);
  else if (e instanceof RateLimitError) console.log(`slow down: retry in ${e.retryAfter} s`);
  else throw e;
}
console.log("quickstart done");
