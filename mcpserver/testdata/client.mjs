// A scripted MCP client on the official TypeScript SDK, driven by
// mcpserver/node_test.go and server/oauth_e2e_test.go: it connects to the
// URL in MCP_URL with the bearer token in MCP_TOKEN or, when MCP_TOKEN is
// empty, through the SDK's own OAuth support (discovery, dynamic client
// registration, PKCE), then reads one JSON command per line on stdin and
// answers one JSON line on stdout:
//
//   {"op":"list"}                              → {"tools":[{name,description,inputSchema}]}
//   {"op":"call","name":…,"arguments":{…}}     → {"result":{content,isError}}
//   {"op":"wait_list_changed","timeout_ms":N}  → {"changed":true|false}
//   {"op":"close"}                             → {"closed":true}, then exit
//
// In OAuth mode, whenever the SDK sends the person to the authorization
// page it prints {"authorize":url} and waits for {"op":"code","code":…}
// (what the redirect brought back), finishes the flow and connects again:
// {"connected":true,…}. Failures answer {"error":"…"}.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function nextCommand() {
  for (;;) {
    const { value, done } = await lines.next();
    if (done) process.exit(0);
    if (value.trim()) return JSON.parse(value);
  }
}

// An OAuth client as an app holds it: registration, tokens and the PKCE
// verifier in memory; the redirect URI a loopback address (RFC 8252).
class MemoryProvider {
  constructor() { this.client = undefined; this.saved = undefined; this.verifier = ""; this.redirects = 0; }
  get redirectUrl() { return "http://127.0.0.1:33418/callback"; }
  get clientMetadata() {
    return {
      client_name: "xiaozhi-hub-node-test", redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none",
    };
  }
  state() { return "state-" + Math.random().toString(36).slice(2); }
  clientInformation() { return this.client; }
  saveClientInformation(c) { this.client = c; }
  tokens() { return this.saved; }
  saveTokens(t) { this.saved = t; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  redirectToAuthorization(url) { this.redirects++; out({ authorize: url.toString() }); }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "client") this.client = undefined;
    if (scope === "all" || scope === "tokens") this.saved = undefined;
  }
}

const oauth = !process.env.MCP_TOKEN;
const provider = oauth ? new MemoryProvider() : undefined;
const newTransport = () => new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), oauth
  ? { authProvider: provider }
  : { requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } } });
let transport = newTransport();

let changes = 0;
let waiters = [];
const client = new Client({ name: "xiaozhi-hub-node-test", version: "1.0.0" });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes++;
  for (const w of waiters) w();
  waiters = [];
});

// connect connects, going through the OAuth flow as often as the hub
// asks for it: each time, the test plays the person at the browser.
async function connect() {
  for (;;) {
    try {
      await client.connect(transport);
      out({ connected: true, server: client.getServerVersion(), instructions: client.getInstructions(), oauth });
      return;
    } catch (e) {
      if (!(oauth && e instanceof UnauthorizedError)) throw e;
      const cmd = await nextCommand();
      if (cmd.op !== "code") throw new Error("expected the authorization code, got " + JSON.stringify(cmd));
      await transport.finishAuth(cmd.code);
      await client.close().catch(() => {});
      transport = newTransport();
    }
  }
}

try {
  await connect();
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
for (;;) {
  const cmd = await nextCommand();
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
      case "reconnect": { // after the hub revoked us: authorize again
        await client.close().catch(() => {});
        transport = newTransport();
        await connect();
        break;
      }
      default:
        out({ error: "unknown op " + cmd.op });
    }
  } catch (e) {
    out({ error: e.message, unauthorized: e instanceof UnauthorizedError || /401|nauthorized/.test(e.message) });
  }
}
