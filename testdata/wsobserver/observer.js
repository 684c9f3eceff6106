// A browser-based framebus observer, knowing only the documented
// protocol: it logs in to the node's WebSocket listener with nats.ws (the
// NATS project's WebSocket client), subscribes to one tab's frame subject
// and lists every frame it receives, in order, in the page (#frames) and
// in window.observer, which the Go test reads. Optionally it then tries
// to send that tab a plan, as an attacker holding an observer credential
// would, and records how the bus answered.
//
// Everything comes in the URL fragment (never sent to the page's server):
//   server   the node's WebSocket URL (ws://127.0.0.1:PORT)
//   user, password, inboxPrefix   the credential (protocol.Credentials)
//   tabs     optional: the tab list's subject (<prefix>.tabs), asked first,
//            as a dashboard would to find its tabs
//   subject  the frame subject to follow (<prefix>.tab.<tab>.frame)
//   plan     optional: a subject to send a plan to, once subscribed
//   body     the plan's JSON
import { connect, JSONCodec } from "./node_modules/nats.ws/esm/nats.js";

const params = new URLSearchParams(location.hash.slice(1));
const jc = JSONCodec();
const observer = (window.observer = { state: "connecting", frames: [], statusErrors: [] });
const $ = (id) => document.getElementById(id);

function setState(state) {
  observer.state = state;
  $("state").textContent = state;
}

function fail(state, err) {
  observer.error = { code: err?.code ?? "", message: String(err?.message ?? err) };
  $("error").textContent = `${observer.error.code}: ${observer.error.message}`;
  setState(state);
}

// One frame, as received, if the node published it: a frame is a
// message on its tab's frame subject whose Nats-Msg-Id is <tab>.<sequence>
// of the frame it carries, and no JetStream answer (Nats-Stream). Anything
// else a user had the server send there (a service's answer aimed at the
// subject, a stored message) is counted in observer.skipped and not shown.
function record(m) {
  let f;
  try {
    f = jc.decode(m.data);
  } catch {
    f = null;
  }
  const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
  if (!f || m.subject !== params.get("subject") || !m.subject.endsWith(`.tab.${f.tab}.frame`) ||
      msgId !== `${f.tab}.${f.sequence}` || m.headers?.get("Nats-Stream")) {
    observer.skipped = (observer.skipped ?? 0) + 1;
    return;
  }
  const frame = {
    tab: f.tab,
    sequence: f.sequence,
    url: f.url,
    time: f.time, // when the node made it
    receivedAt: performance.timeOrigin + performance.now(), // when it got here: ms since the epoch, finer than Date's
    msgId,
  };
  observer.frames.push(frame);
  const li = document.createElement("li");
  li.dataset.sequence = String(frame.sequence);
  li.textContent = frame.url;
  $("frames").append(li);
}

// Sends a plan, first as a request (nats.ws fails it with the server's
// permission error) and then as a bare publish (reported on the
// connection's status stream). Either answer from a tab is a plan that ran.
// Then aims what an observer may send at the frame subject: micro pings
// whose answers go there, which frame readers must pass over.
async function tryPlan(nc, subject, body) {
  const plan = (observer.plan = { subject, request: null, publish: null });
  const show = () => ($("plan").textContent = JSON.stringify(plan));
  try {
    const reply = await nc.request(subject, new TextEncoder().encode(body), { timeout: 10000 });
    plan.request = { outcome: "answered", reply: new TextDecoder().decode(reply.data) };
  } catch (err) {
    plan.request = { outcome: "refused", code: err?.code ?? "", message: String(err?.message ?? err) };
  }
  show();
  const refused = new Promise((resolve) => {
    observer.onStatusError = (s) => {
      if (s.permissionContext?.operation === "publish" && s.permissionContext?.subject === subject) resolve(s);
    };
  });
  nc.publish(subject, new TextEncoder().encode(body));
  await nc.flush();
  const s = await Promise.race([refused, new Promise((r) => setTimeout(() => r(null), 10000))]);
  plan.publish = s
    ? { outcome: "refused", code: s.data, subject: s.permissionContext.subject }
    : { outcome: "no error within 10s" };
  show();
  for (let i = 0; i < 10; i++) nc.publish("$SRV.PING", undefined, { reply: params.get("subject") });
  await nc.flush();
}

async function main() {
  let nc;
  try {
    nc = await connect({
      servers: params.get("server"),
      user: params.get("user"),
      pass: params.get("password"),
      inboxPrefix: params.get("inboxPrefix"),
      reconnect: false,
      timeout: 10000,
    });
  } catch (err) {
    fail("refused", err);
    return;
  }
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "error") {
        observer.statusErrors.push({ code: s.data, permissionContext: s.permissionContext ?? null });
        observer.onStatusError?.(s);
      }
    }
  })();
  nc.closed().then((err) => {
    if (err) fail("closed", err);
    else if (observer.state !== "refused") setState("closed");
  });
  if (params.get("tabs")) {
    try {
      observer.tabs = jc.decode((await nc.request(params.get("tabs"), undefined, { timeout: 10000 })).data);
    } catch (err) {
      observer.tabs = { ok: false, code: err?.code ?? "", error: String(err?.message ?? err) };
    }
  }
  const sub = nc.subscribe(params.get("subject"), { callback: (err, m) => (err ? fail("subscription failed", err) : record(m)) });
  await nc.flush(); // the server has the subscription: frames from now on arrive
  if (sub.isClosed()) return;
  setState("subscribed");
  if (params.get("plan")) {
    await tryPlan(nc, params.get("plan"), params.get("body") ?? "{}");
    setState("subscribed, plan tried");
  }
}

main().catch((err) => fail("failed", err));
