// An MCP client written with the official TypeScript SDK, knowing only
// what framebus's MCP server publishes (its tools, their schemas, its
// resources): it runs issue 23's acceptance sequence and prints what it
// saw as one JSON line on stdout, which the Go test checks
// (cmd/framebus/mcp_test.go). Progress goes to stderr.
//
// Environment:
//   MCP_TRANSPORT   stdio or http
//   MCP_COMMAND     stdio: the framebus binary; MCP_ARGS its arguments (a
//                   JSON array, default ["mcp"]); it inherits this
//                   process's environment (FRAMEBUS_STATE and the like)
//   MCP_URL         http: the server's URL; MCP_TOKEN_FILE the file
//                   holding its bearer token (unreadable: none is sent)
//   MCP_SITE        the base URL of testdata/site
//   MCP_STEPS       "all" (default) or "connect": initialize and list the
//                   tools only (what another user's client gets)
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
const out = { initialized: false, errors: [], updates: [] };
const log = (...a) => console.error("acceptance:", ...a);

// Every wait has a deadline; the whole run has one too.
const overall = setTimeout(() => {
  out.errors.push("the acceptance sequence did not finish within 3 minutes");
  finish(1);
}, 180_000);

let finished = false;
function finish(code) {
  if (finished) return;
  finished = true;
  clearTimeout(overall);
  process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(code));
}

function transport() {
  if (env.MCP_TRANSPORT === "stdio") {
    return new StdioClientTransport({
      command: env.MCP_COMMAND,
      args: env.MCP_ARGS ? JSON.parse(env.MCP_ARGS) : ["mcp"],
      env: { ...env },
      stderr: "inherit",
    });
  }
  let headers = {};
  try {
    const token = readFileSync(env.MCP_TOKEN_FILE, "utf8").trim();
    headers = { Authorization: `Bearer ${token}` };
  } catch (e) {
    out.tokenError = String(e.message || e);
  }
  return new StreamableHTTPClientTransport(new URL(env.MCP_URL), { requestInit: { headers } });
}

// call calls a tool and keeps what the Go test checks: whether it is an
// error, the structured content, the text's first line, and the text.
async function call(name, args) {
  log("call", name, JSON.stringify(args));
  const res = await client.callTool({ name, arguments: args });
  const text = (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
  return {
    isError: !!res.isError,
    structured: res.structuredContent ?? null,
    head: text.split("\n")[0],
    text,
    images: (res.content || []).filter((c) => c.type === "image").length,
  };
}

// A ref is in the snapshot text as: link "Product 123" [ref=e5]
function refOf(text, role, name) {
  const m = text.match(new RegExp(`${role} "${name}" \\[ref=(e\\d+)\\]`));
  return m ? m[1] : null;
}

// waitUpdate waits, at most ms, for a resources/updated notification of
// uri received after index `from` of out.updates.
function waitUpdate(uri, from, ms) {
  return new Promise((resolve) => {
    const end = Date.now() + ms;
    const poll = () => {
      if (out.updates.slice(from).some((u) => u.uri === uri)) return resolve(true);
      if (Date.now() > end) return resolve(false);
      setTimeout(poll, 20);
    };
    poll();
  });
}

const client = new Client({ name: "framebus-acceptance", version: "1.0.0" });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  out.updates.push({ uri: n.params.uri, phase: out.phase });
});

try {
  out.phase = "connect";
  await client.connect(transport());
  out.initialized = true;
  out.server = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();
  out.instructions = client.getInstructions();
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  log("tools", out.tools.length);
  if ((env.MCP_STEPS || "all") === "all") await acceptance();
} catch (e) {
  out.errors.push(`${out.phase}: ${e.stack || e}`);
}
try {
  await client.close();
} catch (e) {
  out.errors.push(`close: ${e}`);
}
finish(0);

async function acceptance() {
  const site = env.MCP_SITE;
  const templates = await client.listResourceTemplates();
  out.templates = templates.resourceTemplates.map((t) => t.uriTemplate);

  out.phase = "status";
  out.statusBefore = await call("web", { resource: "browser", action: "status" });
  out.listPages = await call("web", { resource: "browser", action: "list_pages" });
  const tab = out.listPages.structured?.tabs?.[0]?.tab;
  if (!tab) throw new Error("list_pages lists no tab: " + out.listPages.text);
  out.tab = tab;

  // Subscribe to the tab's latest frame before the navigation.
  out.phase = "subscribe";
  const latest = `framebus://tabs/${tab}/frames/latest`;
  await client.subscribeResource({ uri: latest });
  out.subscribed = latest;

  out.phase = "navigate";
  const before = out.updates.length;
  out.navigate = await call("web", { resource: "browser", action: "navigate", url: site + "/index.html" });
  out.updatedAfterNavigate = await waitUpdate(latest, before, 15_000);

  // The navigation's result carries the page; a snapshot after it says
  // in a line that nothing changed, and a full one has it again.
  out.phase = "snapshot";
  out.snapshot = await call("web", { resource: "browser", action: "snapshot" });
  out.fullSnapshot = await call("browser_snapshot", { page: "full" });
  const ref = refOf(out.navigate.text, "link", "Product 123");
  out.ref = ref;
  if (!ref) throw new Error("no ref for the link Product 123 in the navigation's page:\n" + out.navigate.text);
  const seen = out.snapshot.structured?.sequence;

  // The tab moves on (another tool call makes a frame): an action based
  // on the frame the snapshot saw is refused, by both tool sets, and the
  // link is not clicked.
  out.phase = "stale";
  out.moveOn = await call("browser_eval", { expression: "1+1" });
  out.staleWeb = await call("web", { resource: "browser", action: "click", ref, based_on_sequence: seen });
  out.staleAction = await call("browser_click", { selector: ref, basedOnSequence: seen });
  out.urlAfterStale = await call("browser_url", {});

  out.phase = "click";
  out.click = await call("web", { resource: "browser", action: "click", ref, based_on_sequence: out.moveOn.structured?.sequence });
  const read = await client.readResource({ uri: latest });
  out.latest = JSON.parse(read.contents[0].text);

  out.phase = "status after";
  out.status = await call("web", { resource: "browser", action: "status" });
  out.phase = "close";
  out.close = await call("web", { resource: "browser", action: "close" });
  out.afterClose = await call("web", { resource: "browser", action: "click", ref });
  out.phase = "done";
}
