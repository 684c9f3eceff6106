// The task benchmark's scripted model: it runs whole tasks
// (testdata/site/tasks/tasks.json) through one MCP server, as a model
// would, and counts what it reads: every tool result's text, and what it
// reads of any file or resource a result points to.
//
//   node run.mjs SERVER SITE TASKS [FRAMEBUS_BINARY]
//
// SERVER is framebus (framebus mcp over stdio, its node found as the
// environment says), or playwright-read, playwright-find, playwright-none
// (Playwright MCP, headless on /usr/bin/chromium): its default mode
// writes each action's snapshot to a file the model then reads whole
// (read), or searches with Playwright's browser_find for what it looks
// for (find); with --snapshot-mode none the model asks browser_snapshot
// when it needs the page.
//
// It prints one JSON line per task: {task, server, ok, calls, bytes, ms,
// failed}.
import { readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [server, site, tasksFile, binary] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
const tasks = JSON.parse(readFileSync(tasksFile, "utf8"));
const playwright = server.startsWith("playwright");
const outDir = mkdtempSync(join(tmpdir(), "mcptasks-"));

function transport() {
  if (!playwright) {
    return new StdioClientTransport({ command: binary, args: ["mcp"], env: process.env, stderr: "ignore" });
  }
  const mode = server === "playwright-none" ? "none" : "full";
  return new StdioClientTransport({
    command: join(here, "node_modules", ".bin", "playwright-mcp"),
    args: ["--headless", "--isolated", "--no-sandbox", "--executable-path", "/usr/bin/chromium",
      "--output-dir", outDir, "--file-paths", "absolute", "--snapshot-mode", mode, "--viewport-size", "1280x720"],
    cwd: outDir, stderr: "ignore",
  });
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
// The ref of the element role "name" in a snapshot's text: both servers
// write `- role "name" ... [ref=eN]` (Playwright's YAML quotes the whole
// line when the name has a # or a colon: `- 'link "#25" [ref=e9]'`).
function refIn(text, role, name) {
  const m = text.match(new RegExp(`(?:^|\\n)\\s*- '?${escape(role)} "${escape(name)}"[^\\n]*?\\[ref=([A-Za-z0-9]+)\\]`));
  return m ? m[1] : null;
}

class Model {
  constructor(client) {
    this.client = client;
    this.calls = 0;
    this.bytes = 0;
    this.known = []; // what the model has read of the current page, newest first
    this.file = null; // Playwright: the snapshot file of the last action, not read yet
  }
  async call(name, args) {
    this.calls++;
    const res = await this.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    const text = (res.content || []).map((c) => c.text || "").join("\n");
    this.bytes += text.length;
    if (process.env.MCPTASKS_VERBOSE) process.stderr.write(`--- ${name} ${JSON.stringify(args)} (${text.length} bytes)\n${text.slice(0, Number(process.env.MCPTASKS_VERBOSE))}\n`);
    if (res.isError) throw new Error(`${name}: ${text.slice(0, 300)}`);
    return text;
  }
  // What a result says of the page, taken in.
  learn(text, newPage) {
    if (newPage) this.known = [];
    if (playwright) {
      const link = text.match(/\[Snapshot\]\(([^)]+)\)/);
      if (link) {
        this.file = link[1].startsWith("/") ? link[1] : join(outDir, link[1]);
        this.known = [];
      }
      const inline = text.indexOf("### Snapshot\n```yaml\n");
      if (inline >= 0) this.known = [text.slice(inline)];
      return;
    }
    if (/\npage \(snapshot [^)]+\)[^\n]*:\n/.test(text) || text.includes("too long to show")) this.known = [];
    this.known.unshift(text);
  }
  // Playwright: read the page the last action wrote, whole or the lines
  // that hold what is looked for.
  async readFile(looking) {
    if (!this.file) return;
    if (server === "playwright-find") {
      // Its own search of the page's snapshot, for what is looked for.
      this.known.unshift(await this.call("browser_find", { text: looking }));
      this.file = null;
      return;
    }
    const text = readFileSync(this.file, "utf8");
    this.bytes += text.length;
    this.known = [text];
    this.file = null;
  }
  async ref(role, name) {
    const look = `${role} "${name}"`;
    for (let attempt = 0; attempt < 3; attempt++) {
      for (const t of this.known) {
        const r = refIn(t, role, name);
        if (r) return r;
      }
      if (playwright && this.file) { await this.readFile(name); continue; }
      if (playwright) { this.learn(await this.call("browser_snapshot", {}), true); continue; }
      // framebus: the page it was shown is a summary, or the element came
      // after: search the page for it.
      this.known.unshift(await this.call("browser_snapshot", { search: name }));
    }
    throw new Error(`no ${look} on the page`);
  }
  async expect(text) {
    for (let attempt = 0; attempt < 4; attempt++) {
      // Each word of it in one page read: the servers split a sentence
      // into nodes differently (Playwright: "Your order number is" and
      // a strong "NW-403944"; framebus: one paragraph's name).
      const words = text.split(/\s+/).filter(Boolean);
      if (this.known.some((t) => t.includes(text) || words.every((w) => t.includes(w)))) return;
      // Not there yet: a model looks again after a moment.
      if (attempt > 0) await new Promise((r) => setTimeout(r, 500));
      if (playwright && this.file) { await this.readFile(text); continue; }
      if (playwright) { this.learn(await this.call("browser_snapshot", {}), true); continue; }
      this.known.unshift(await this.call("browser_snapshot", attempt === 0 ? {} : { search: text }));
    }
    throw new Error(`"${text}" is not on the page`);
  }
}

async function step(m, s) {
  if (s.expect !== undefined) return m.expect(s.expect);
  const tool = (name, args) => m.call(name, args);
  let text;
  switch (s.do) {
    case "navigate":
      text = await tool("browser_navigate", { url: site + s.value });
      m.learn(text, true);
      return;
    case "click":
    case "check": {
      const ref = await m.ref(s.role, s.name);
      text = await tool("browser_click", playwright ? { element: s.name, target: ref } : { selector: ref });
      break;
    }
    case "fill": {
      const ref = await m.ref(s.role, s.name);
      text = await tool(playwright ? "browser_type" : "browser_fill", playwright ? { element: s.name, target: ref, text: s.value } : { selector: ref, text: s.value });
      break;
    }
    case "select": {
      const ref = await m.ref(s.role, s.name);
      text = await tool(playwright ? "browser_select_option" : "browser_select", playwright ? { element: s.name, target: ref, values: [s.value] } : { selector: ref, value: s.value });
      break;
    }
    case "press":
      text = await tool(playwright ? "browser_press_key" : "browser_key", { key: s.value });
      break;
    case "scroll":
      if (playwright) {
        text = await tool("browser_evaluate", { function: "() => window.scrollTo(0, document.body.scrollHeight)" });
      } else {
        text = await tool("browser_scroll", s.name ? { selector: await m.ref(s.role, s.name), by: "0,100000" } : { by: "0,100000" });
      }
      break;
    default:
      throw new Error(`step ${JSON.stringify(s)}: no such step`);
  }
  m.learn(text, false);
}

const client = new Client({ name: "task-model", version: "1" });
await client.connect(transport());
if (!playwright) {
  // A tab of the session's own.
  await client.callTool({ name: "browser_tab_new", arguments: {} });
}
for (const task of tasks) {
  const m = new Model(client);
  const t0 = Date.now();
  let failed = null;
  try {
    await step(m, { do: "navigate", value: task.start });
    for (const s of task.steps) await step(m, s);
  } catch (e) {
    failed = String(e.message || e).slice(0, 300);
  }
  console.log(JSON.stringify({ task: task.name, server, ok: !failed, calls: m.calls, bytes: m.bytes, ms: Date.now() - t0, failed }));
}
if (!playwright) await client.callTool({ name: "browser_tab_close", arguments: {} });
await client.close();
