// Client tools and approvals through the SDK, against a real `ams serve`
// (issue 29): turns.run answers a client tool call with its callback;
// opts.approve decides on a built-in tool's call.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client, ConflictError, InvalidRequestError, type RequiredToolCall, type Turn } from "@ams/sdk";
import { startServe, type AmsServer } from "./helpers.js";

let srv: AmsServer;
let client: Client;

before(async () => {
  srv = await startServe();
  client = new Client({ apiKey: srv.apiKey, baseURL: srv.baseURL });
});
after(async () => {
  await srv?.stop();
});

describe("client tools", () => {
  test("turns.run answers a client tool call with its callback", async () => {
    const asst = await client.assistants.create({ name: "ts tools" });
    const seen: RequiredToolCall[] = [];
    const { turn, reply } = await client.turns.run(
      { assistant_id: asst.id, message: 'lookup_order {"id": 7}', tools: [{ type: "function", name: "lookup_order", parameters: { type: "object" } }] },
      (call) => {
        seen.push(call);
        return "shipped";
      },
    );
    assert.deepEqual(
      seen.map((c) => [c.name, c.arguments]),
      [["lookup_order", { id: 7 }]],
    );
    assert.equal(turn.status, "completed");
    assert.equal(turn.stop_reason, "end_turn");
    assert.equal(reply?.content, "lookup_order returned: shipped");
    assert.ok((turn.usage?.total_tokens ?? 0) > 0);
  });

  test("a waiting turn refuses bad outputs and approvals, then resumes", async () => {
    const asst = await client.assistants.create({ name: "ts waiting" });
    const { data: turn } = await client.request<Turn>("POST", "/messages", {
      body: { assistant_id: asst.id, message: "lookup_order", tools: [{ type: "function", name: "lookup_order" }] },
    });
    assert.equal(turn.status, "requires_action");
    assert.equal(turn.required_action?.type, "submit_tool_outputs");
    const call = turn.required_action!.tool_calls[0]!;
    await assert.rejects(client.turns.submitToolOutputs(turn.id, [{ tool_call_id: "call_nope", output: "x" }]), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.param, "tool_outputs[0].tool_call_id");
      return true;
    });
    await assert.rejects(client.turns.approveToolCalls(turn.id, [{ tool_call_id: call.id, approved: true }]), ConflictError);
    const done = await client.turns.submitToolOutputs(turn.id, [{ tool_call_id: call.id, output: "ok" }]);
    assert.equal(done.status, "completed");
  });

  test("approvals", async () => {
    const asst = await client.assistants.create({ name: "ts approvals" });
    const a = await client.assistants.update(asst.id, { require_approval: ["create_task"], multitask_strategy: "enqueue" });
    assert.deepEqual(a.require_approval, ["create_task"]);
    const { turn, reply } = await client.turns.run({ assistant_id: asst.id, message: "add a task: renew passport" }, () => "", {
      approve: () => [false, "not today"],
    });
    assert.equal(turn.status, "completed");
    assert.match(reply?.content ?? "", /did not approve/);
    assert.equal(turn.action_ids?.length, 1);
  });
});
