// The peer's side of BenchmarkFirstSnapshot (cmd/framebus): Playwright's
// first read of a page after its load, as its users and Playwright MCP
// get it: page.goto (waits for the load event), then the body's
// ariaSnapshot. One Chromium (the first argument, else /usr/bin/chromium;
// headless, 1280×720),
// one page; a URL per line on stdin, a JSON line per URL on stdout:
// {"url","loadMs","readMs","ms","inPageMs","bytes","text"}.
import { chromium } from "playwright-core";
import readline from "node:readline";

const browser = await chromium.launch({ executablePath: process.argv[2] || "/usr/bin/chromium", headless: true });
const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
const lines = readline.createInterface({ input: process.stdin });
for await (const url of lines) {
  if (!url) continue;
  const t0 = performance.now();
  await page.goto(url);
  const t1 = performance.now();
  const text = await page.locator("body").ariaSnapshot();
  const t2 = performance.now();
  // The page's own load time (navigation start to the load event's end),
  // read after the timing: what is left of loadMs is the driver's.
  const inPageMs = await page.evaluate(() => performance.timing.loadEventEnd - performance.timing.navigationStart);
  process.stdout.write(JSON.stringify({ url, loadMs: t1 - t0, readMs: t2 - t1, ms: t2 - t0, inPageMs, bytes: Buffer.byteLength(text), text }) + "\n");
}
await browser.close();
