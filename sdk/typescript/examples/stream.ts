// Stream a reply as it is produced (Server-Sent Events).
//
//   AMS_BASE_URL=… AMS_API_KEY=… AMS_ASSISTANT_ID=… node build-test/examples/stream.js

import { Client } from "@ams/sdk";

const client = new Client({ apiKey: process.env["AMS_API_KEY"], baseURL: process.env["AMS_BASE_URL"] });

const stream = client.messages.stream({
  assistant_id: process.env["AMS_ASSISTANT_ID"]!,
  message: "Hello! What can you do?",
});
for await (const event of stream) {
  if (event.type === "message.delta") {
    process.stdout.write(event.delta); // the next piece of text
  } else if (event.type === "tool_result") {
    process.stdout.write(`[${event.result.name}: ${event.result.action.status}] `); // a tool call's action
  } else if (event.type === "message.completed") {
    console.log(`\n(stored as ${event.message.id})`); // the stored reply, the last event
  }
}
