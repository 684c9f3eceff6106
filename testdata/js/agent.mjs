// An agent written with the npm NATS client, knowing only framebus's
// documented protocol: it sends a plan to a tab, reads the frames the plan
// made as they are published, then replays the tab's whole history from
// sequence 1 out of the frame stream (JetStream direct gets, through the
// API prefix its credentials name: a user's account has no consumers), and
// prints what it saw as one JSON line. The Go test checks that line.
//
// Environment: FRAMEBUS_CREDS (a credentials file), FRAMEBUS_TAB, and
// FRAMEBUS_PAGES (URLs to navigate to, space-separated).
import { readFileSync } from "node:fs";
import { connect, JSONCodec } from "nats";

const creds = JSON.parse(readFileSync(process.env.FRAMEBUS_CREDS, "utf8"));
const tab = process.env.FRAMEBUS_TAB;
const pages = process.env.FRAMEBUS_PAGES.split(" ").filter(Boolean);
const prefix = creds.prefix;
const stream = prefix.toUpperCase().replace(/[.-]/g, "_") + "_FRAMES";
const frameSubject = `${prefix}.tab.${tab}.frame`;
const jc = JSONCodec();

const nc = await connect({
  servers: creds.url,
  user: creds.user,
  pass: creds.password,
  inboxPrefix: creds.inboxPrefix,
  timeout: 10000,
});
const out = { live: [], replayed: [], errors: [] };
try {
  // Live frames, from before the plan is sent.
  const live = nc.subscribe(frameSubject);
  await nc.flush();
  const plan = {
    id: "npm-" + Date.now(),
    actions: pages.map((url) => ({ type: "navigate", url, wait: true })),
  };
  console.error("plan sent");
  const reply = await nc.request(`${prefix}.tab.${tab}.plan`, jc.encode(plan), { timeout: 60000 });
  out.plan = jc.decode(reply.data);
  console.error("plan answered", JSON.stringify(out.plan));
  const last = out.plan.sequence;
  const deadline = setTimeout(() => live.unsubscribe(), 20000);
  for await (const m of live) {
    const f = jc.decode(m.data);
    out.live.push({ sequence: f.sequence, url: f.url, content: !!(f.fullPage || f.fullPageRef) });
    if (f.sequence >= last) break;
  }
  clearTimeout(deadline);

  console.error("live frames", JSON.stringify(out.live));
  // The whole history, replayed from the stream: each direct get answers
  // with the tab's next stored frame from a stream position on.
  const jsm = await nc.jetstreamManager({ apiPrefix: creds.jsApiPrefix || undefined });
  let seq = 1;
  for (;;) {
    const m = await jsm.direct.getMessage(stream, { seq, next_by_subj: frameSubject });
    // Only the node's frames carry its message id <tab>.<sequence>.
    if (m.header.get("Nats-Msg-Id").startsWith(`${tab}.`)) {
      const f = m.json();
      out.replayed.push({ sequence: f.sequence, url: f.url, content: !!(f.fullPage || f.fullPageRef) });
      if (f.sequence >= last) break;
    }
    seq = m.seq + 1;
  }
} catch (err) {
  out.errors.push(String(err && err.message ? err.message : err));
} finally {
  await nc.close();
}
console.log(JSON.stringify(out));
