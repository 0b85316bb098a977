// A scripted MCP client on the official TypeScript SDK, driven by
// mcpserver/node_test.go: it connects to the URL in MCP_URL with the bearer
// token in MCP_TOKEN, then reads one JSON command per line on stdin and
// answers one JSON line on stdout:
//
//   {"op":"list"}                              → {"tools":[{name,description,inputSchema}]}
//   {"op":"call","name":…,"arguments":{…}}     → {"result":{content,isError}}
//   {"op":"wait_list_changed","timeout_ms":N}  → {"changed":true|false}
//   {"op":"close"}                             → {"closed":true}, then exit
//
// Failures answer {"error":"…"}.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

let changes = 0;
let waiters = [];
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
});
const client = new Client({ name: "xiaozhi-hub-node-test", version: "1.0.0" });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes++;
  for (const w of waiters) w();
  waiters = [];
});

try {
  await client.connect(transport);
  out({ connected: true, server: client.getServerVersion(), instructions: client.getInstructions() });
} catch (e) {
  out({ error: "connect: " + e.message });
  process.exit(1);
}

function waitChange(seen, timeoutMs) {
  if (changes > seen) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), timeoutMs);
    waiters.push(() => { clearTimeout(t); resolve(true); });
  });
}

let seen = 0;
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  try {
    switch (cmd.op) {
      case "list": {
        const { tools } = await client.listTools();
        seen = changes;
        out({ tools });
        break;
      }
      case "call": {
        const result = await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} });
        out({ result });
        break;
      }
      case "wait_list_changed": {
        out({ changed: await waitChange(seen, cmd.timeout_ms ?? 5000) });
        seen = changes;
        break;
      }
      case "close": {
        await transport.terminateSession().catch(() => {});
        await client.close();
        out({ closed: true });
        process.exit(0);
      }
      default:
        out({ error: "unknown op " + cmd.op });
    }
  } catch (e) {
    out({ error: e.message });
  }
}
