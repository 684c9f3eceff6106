// framebus view: the page. Everything it shows comes from /events (a
// server-sent event stream) and /api; every text from the bus (titles,
// URLs, messages, page content) is set as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  conn: "",            // this page's connection id, for /api/watch
  by: "",
  tabs: new Map(),     // tab id -> TabInfo
  frames: new Map(),   // tab id -> Map(sequence -> frame)
  last: new Map(),     // tab id -> highest sequence seen
  selected: location.hash.startsWith("#tab=") ? location.hash.slice(5) : "",
  results: [],         // plan events, newest last
  meta: null,          // the selected tab's last picture's meta
  visible: new Set(),  // tabs whose list entry is in sight: their thumbnails are watched
  screens: 0,          // pictures shown, for tests and benchmarks
  live: false,
  busLive: true,
};

// ---- helpers ----

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function say(text) {
  $("message").textContent = text || "";
}

async function api(path, body) {
  const opts = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(path, opts);
  let data = {};
  try { data = await r.json(); } catch (e) { data = { ok: false, error: r.status + " " + r.statusText }; }
  if (!data.ok) {
    const err = new Error(data.error || "failed");
    err.code = data.code || "";
    throw err;
  }
  return data;
}

function shortTab(id) { return id.length > 8 ? id.slice(0, 8) : id; }

function time(t) {
  const d = new Date(t);
  return isNaN(d) ? "" : d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

// later draws fn in a moment (16 ms), once however often it is asked for
// meanwhile: agents racing make many frames and results a second, and
// the page must keep up with a person's input. (A timer, not an animation
// frame: a page out of sight still keeps its state.)
const pending = new Set();
function later(fn) {
  if (!pending.size) {
    setTimeout(() => {
      const fns = [...pending];
      pending.clear();
      for (const f of fns) f();
    }, 16);
  }
  pending.add(fn);
}

// ---- connection ----

function setConn() {
  const c = $("conn");
  const live = state.live && state.busLive;
  c.textContent = live ? "live" : "reconnecting";
  c.className = "conn " + (live ? "live" : "reconnecting");
  document.body.dataset.conn = live ? "live" : "reconnecting";
}

function connect() {
  const es = new EventSource("/events");
  es.addEventListener("hello", (e) => {
    const h = JSON.parse(e.data);
    state.conn = h.conn;
    state.by = h.by;
    state.user = h.user || "";
    $("who").textContent = "as " + h.by;
    state.live = true;
    setConn();
    catchUp();
    sendWatch();
  });
  es.addEventListener("bus", (e) => {
    const b = JSON.parse(e.data);
    const was = state.busLive;
    state.busLive = b.state === "live";
    setConn();
    if (!was && state.busLive) catchUp();
  });
  es.addEventListener("tabs", (e) => setTabs(JSON.parse(e.data)));
  es.addEventListener("frame", (e) => addFrame(JSON.parse(e.data), true));
  es.addEventListener("result", (e) => addResult(JSON.parse(e.data)));
  es.addEventListener("ask", () => later(renderAttention));
  es.addEventListener("answer", () => later(renderAttention));
  es.addEventListener("screen", (e) => showScreen(JSON.parse(e.data)));
  es.onerror = () => { state.live = false; setConn(); };
}

// catchUp reads from the history what was missed while disconnected: the
// frames after the last one seen of each tab.
async function catchUp() {
  for (const [tab, last] of state.last) {
    await loadFrames(tab, last + 1, 0);
  }
  if (state.selected && !state.last.has(state.selected)) await loadFrames(state.selected, 0, 0);
}

// loadFrames reads a tab's stored frames from..to (0: the last 200;
// to 0: up to its latest), as many requests as that takes.
async function loadFrames(tab, from, to) {
  let n = 0;
  try {
    for (;;) {
      const q = new URLSearchParams({ tab, from: String(from), to: String(to) });
      const data = await api("/api/frames?" + q);
      for (const f of data.frames) addFrame(f, false);
      n += data.frames.length;
      if (from === 0 || data.frames.length < 200 || n >= 5000) return n;
      from = data.frames[data.frames.length - 1].sequence + 1;
    }
  } catch (e) {
    return n;
  }
}

// ---- tabs ----

function setTabs(list) {
  state.tabs = new Map(list.map((t) => [t.tab, t]));
  if (!state.selected && list.length) select(list[0].tab);
  later(renderTabs);
  later(renderAttention);
  later(renderTab);
}

// renderTabs draws the tab list, keeping each tab's button (and so the
// keyboard's focus on it) from one drawing to the next.
function renderTabs() {
  const ul = $("tabs");
  const old = new Map([...ul.querySelectorAll("button.tab")].map((b) => [b.dataset.tab, b.parentElement]));
  const items = [];
  for (const t of state.tabs.values()) {
    let li = old.get(t.tab);
    if (!li) {
      li = el("li");
      const b = el("button", "tab");
      b.type = "button";
      b.dataset.tab = t.tab;
      b.addEventListener("click", () => select(t.tab));
      li.append(b);
      li.thumb = el("img", "thumb");
      li.thumb.alt = "";
      li.thumb.dataset.tab = t.tab;
      li.dataset.tab = t.tab;
      inSight.observe(li);
    }
    const b = li.firstElementChild;
    if (t.tab === state.selected) b.setAttribute("aria-current", "true");
    else b.removeAttribute("aria-current");
    const title = el("div", "t", t.title || "(no title)");
    if (t.control) title.append(el("span", "badge", t.control.kind === "handoff" && !t.control.by ? "handoff" : "person"));
    if (t.questions && t.questions.length) title.append(el("span", "badge", "question"));
    b.replaceChildren(li.thumb, title, el("div", "u", t.url), el("div", "m", "#" + (state.last.get(t.tab) || t.sequence) + " · " + (t.node || "") + " · " + (t.profile || "")));
    items.push(li);
  }
  const same = items.length === ul.children.length && items.every((li, i) => ul.children[i] === li);
  if (!same) {
    for (const li of ul.children) if (!state.tabs.has(li.dataset.tab)) inSight.unobserve(li);
    ul.replaceChildren(...items); // moving a button would take the focus off it
  }
}

// inSight follows which tabs' entries are in sight in the list: their
// thumbnails are watched (at a thumbnail's few pictures a second), the
// others' not.
const inSight = new IntersectionObserver((entries) => {
  for (const e of entries) {
    if (e.isIntersecting) state.visible.add(e.target.dataset.tab);
    else state.visible.delete(e.target.dataset.tab);
  }
  later(sendWatch);
});

function select(tab) {
  if (state.selected === tab && state.frames.has(tab)) return;
  state.selected = tab;
  history.replaceState(null, "", "#tab=" + tab);
  state.meta = null;
  loading = false;
  waiting = null;
  $("screen").classList.remove("shown");
  window.framebusScreen = null; // the big picture is no longer shown
  renderTabs();
  renderTab();
  renderTimeline();
  renderResults();
  sendWatch();
  loadFrames(tab, 0, 0);
}

// sendWatch tells the viewer which tab's pictures this page wants, one
// request after the other (two at once could arrive in either order).
let watching = Promise.resolve();
function sendWatch() {
  if (!state.conn) return;
  const thumbnails = [...state.visible].filter((t) => t !== state.selected && state.tabs.has(t)).slice(0, maxThumbnails);
  const body = state.pinned ? { conn: state.conn, ...state.pinned } : { conn: state.conn, tabs: state.selected ? [state.selected] : [], thumbnails };
  watching = watching.then(() => api("/api/watch", body)).catch((e) => say(e.message));
}

// controlled: this viewer's person has the selected tab (the tab says
// who, by bus user; a viewer of the node's own account cannot tell).
function controlled() {
  const t = state.tabs.get(state.selected);
  if (!(t && t.control && t.control.state === "person")) return false;
  return state.user ? t.control.holder === state.user : true;
}

function renderTab() {
  const t = state.tabs.get(state.selected);
  const mine = controlled();
  $("tabtitle").textContent = t ? t.title || "(no title)" : "Choose a tab";
  $("taburl").textContent = t ? t.url : "";
  let meta = "";
  if (t) {
    meta = "tab " + t.tab + " · frame " + (state.last.get(t.tab) || t.sequence) + " · node " + (t.node || "?") + " · profile " + (t.profile || "?");
    if (t.session) meta += " · session " + t.session + " (" + t.domain + ")";
    if (t.control) meta += " · a person has it" + (t.control.by ? " (" + t.control.by + ")" : "") + (t.control.message ? ": " + t.control.message : "");
  }
  $("tabmeta").textContent = meta;
  $("takeover").disabled = !t || mine;
  $("takeover").textContent = t && t.control && !t.control.holder && !t.control.by ? "Take the handoff" : "Take over";
  $("handback").disabled = !mine;
  for (const id of ["back", "forward", "reload", "address", "go"]) $(id).disabled = !mine;
  $("screenbox").classList.toggle("control", mine);
}

// ---- attention: handoffs and questions ----

// renderAttention keeps one item per open handoff and question: items
// already shown stay as they are (a person may be typing an answer), new
// ones are added, ended ones removed.
function renderAttention() {
  const box = $("attention");
  const want = new Map();
  for (const t of state.tabs.values()) {
    if (t.control && t.control.kind === "handoff" && t.control.state === "person") {
      want.set("h " + t.tab + " " + t.control.since + " " + (t.control.by || ""), () => handoffItem(t));
    }
    for (const q of t.questions || []) want.set("q " + q.id, () => questionItem(t, q));
  }
  for (const item of [...box.children]) {
    if (!want.has(item.dataset.key)) item.remove();
  }
  const have = new Set([...box.children].map((i) => i.dataset.key));
  for (const [key, make] of want) {
    if (have.has(key)) continue;
    const item = make();
    item.dataset.key = key;
    box.append(item);
  }
}

function handoffItem(t) {
  const item = el("div", "item handoff");
  item.dataset.tab = t.tab;
  item.append(el("strong", "", "Agent " + (t.control.agent || "(unnamed)") + " hands you tab " + shortTab(t.tab) + ":"), el("span", "", t.control.message || ""));
  const taken = t.control.holder || t.control.by;
  const open = el("button", "", taken ? "Open (" + taken + " has it)" : "Open and take it");
  open.type = "button";
  open.addEventListener("click", () => {
    select(t.tab);
    $("screenbox").focus(); // now: not after the answer, when the person may be elsewhere
    const cur = state.tabs.get(t.tab);
    if (cur && cur.control && !cur.control.holder && !cur.control.by) control("takeover");
  });
  item.append(open);
  return item;
}

function questionItem(t, q) {
  const item = el("div", "item question");
  item.dataset.id = q.id;
  item.append(el("strong", "", "Agent " + (q.agent || "(unnamed)") + " asks (tab " + shortTab(t.tab) + "):"), el("span", "", q.question));
  const send = (answer) => api("/api/answer", { tab: t.tab, id: q.id, answer }).then(() => say(""), (e) => say(e.message));
  if (q.choices && q.choices.length) {
    for (const c of q.choices) {
      const b = el("button", "choice", c);
      b.type = "button";
      b.addEventListener("click", () => send(c));
      item.append(b);
    }
  } else {
    const form = el("form");
    const input = el("input", "answer");
    input.setAttribute("aria-label", "Your answer");
    const b = el("button", "send", "Answer");
    form.append(input, b);
    form.addEventListener("submit", (e) => { e.preventDefault(); if (input.value) send(input.value); });
    item.append(form);
  }
  return item;
}

// ---- frames ----

function addFrame(f, live) {
  if (!f || !f.tab) return;
  let m = state.frames.get(f.tab);
  if (!m) state.frames.set(f.tab, (m = new Map()));
  if (m.has(f.sequence)) return;
  const last = state.last.get(f.tab) || 0;
  m.set(f.sequence, f);
  if (f.sequence > last) {
    state.last.set(f.tab, f.sequence);
    if (live && last > 0 && f.sequence > last + 1) loadFrames(f.tab, last + 1, f.sequence - 1); // a gap
    const t = state.tabs.get(f.tab);
    if (t) { t.url = f.url; t.title = f.title; t.sequence = f.sequence; }
  }
  if (f.tab === state.selected) {
    if (f.sequence > last && last > 0) {
      freshFrames.push(f); // the newest: on top, without drawing the rest again
      later(drawFreshFrames);
    } else {
      later(renderTimeline);
    }
    later(renderTab);
  }
  if (f.sequence > last) later(renderTabs);
}

function frameLine(f) {
  const li = el("li", "frame src-" + f.source + " act-" + f.action);
  li.dataset.seq = f.sequence;
  const b = el("button");
  b.type = "button";
  b.append(el("span", "seq", "#" + f.sequence + " "), el("span", "", time(f.time) + " "), el("span", "act", f.action + " "), el("span", "src", f.source));
  let who = [f.agent && "agent " + f.agent, f.planId && "plan " + f.planId, f.control && f.control.by && "by " + f.control.by, f.control && f.control.ended && "ended " + f.control.ended].filter(Boolean).join(" · ");
  if (who) b.append(el("div", "", who));
  b.append(el("div", "", f.url));
  if (f.control && f.control.message) b.append(el("div", "", "“" + f.control.message + "”"));
  if (f.note) b.append(el("div", "", f.note));
  b.addEventListener("click", () => showFrame(f.tab, f.sequence));
  li.append(b);
  return li;
}

let freshFrames = [];

function drawFreshFrames() {
  const ol = $("timeline");
  for (const f of freshFrames.splice(0)) {
    const top = ol.firstElementChild;
    if (!top || f.sequence > +top.dataset.seq) ol.prepend(frameLine(f));
    else { later(renderTimeline); return; }
  }
  while (ol.children.length > 500) ol.lastElementChild.remove();
}

function renderTimeline() {
  freshFrames = [];
  const ol = $("timeline");
  ol.replaceChildren();
  const m = state.frames.get(state.selected);
  if (!m) return;
  const seqs = [...m.keys()].sort((a, b) => b - a);
  for (const s of seqs.slice(0, 500)) ol.append(frameLine(m.get(s)));
}

async function older() {
  const m = state.frames.get(state.selected);
  if (!m || !m.size) return;
  const first = Math.min(...m.keys());
  if (first > 1) await loadFrames(state.selected, 0, first - 1);
}

async function showFrame(tab, seq) {
  try {
    const data = await api("/api/frame?" + new URLSearchParams({ tab, seq: String(seq) }));
    const f = data.frame;
    $("detailtitle").textContent = "Frame " + f.sequence + ": " + f.action + " by " + f.source;
    const meta = Object.assign({}, f);
    delete meta.fullPage;
    $("detailmeta").textContent = JSON.stringify(meta, null, 2);
    $("content").textContent = f.fullPage || "(this frame carries no content: the page's URL did not change)";
    $("change").textContent = data.change !== undefined ? "since frame " + data.since + ":\n" + data.change : "(none to show)";
    $("detail").showModal();
  } catch (e) {
    say(e.message);
  }
}

// ---- plans' results ----

let freshResults = []; // the selected tab's results not drawn yet

function addResult(r) {
  state.results.push(r);
  if (state.results.length > 1000) state.results.splice(0, 500);
  if (r.tab === state.selected) {
    freshResults.push(r);
    later(drawFreshResults);
  }
}

// drawFreshResults puts the newest results on top, and keeps 100.
function drawFreshResults() {
  const ol = $("results");
  for (const r of freshResults.splice(0).slice(-100)) ol.prepend(resultLine(r));
  while (ol.children.length > 100) ol.lastElementChild.remove();
}

function renderResults() {
  freshResults = [];
  const ol = $("results");
  ol.replaceChildren();
  const mine = state.results.filter((r) => r.tab === state.selected).slice(-100).reverse();
  for (const r of mine) ol.append(resultLine(r));
}

function resultLine(r) {
  const li = el("li", "result " + (r.ok ? "ok" : "failed"));
  li.dataset.plan = r.planId || "";
  li.dataset.code = r.code || "";
  let text = (r.agent ? "agent " + r.agent : "(no agent)") + (r.planId ? " · plan " + r.planId : "") + " · " + r.executed + " ran · frame " + r.sequence;
  if (!r.ok) {
    text += " · " + r.code;
    if (r.code === "stale_frame" && r.stopped) {
      li.classList.add("stale");
      text += ": planned on frame " + r.stopped.expected + ", the tab was at " + r.stopped.current;
    } else if (r.code === "user_control") {
      li.classList.add("refused");
    }
  }
  li.append(el("div", "", time(r.time) + " " + text));
  if (!r.ok && r.error) li.append(el("div", "", r.error));
  return li;
}

// ---- the page's pictures ----

// showScreen loads a tab's new picture as an image (the browser fetches
// and decodes it off the page's thread); one that comes while the last
// still loads waits, and only the latest is shown.
let loading = false;
let waiting = null;

function showScreen(s) {
  thumbnail(s.meta.tab, s.n);
  if (s.meta.tab !== state.selected) return;
  if (loading) { waiting = s; return; }
  loading = true;
  const img = $("screen");
  img.onload = img.onerror = (e) => {
    loading = false;
    if (e.type === "load" && s.meta.tab === state.selected) {
      state.meta = s.meta;
      img.classList.add("shown");
      state.screens++;
      document.body.dataset.screens = String(state.screens);
      window.framebusScreen = { meta: s.meta, at: Date.now() };
    }
    const next = waiting;
    waiting = null;
    if (next) showScreen(next);
  };
  img.src = "/api/screen?" + new URLSearchParams({ tab: s.meta.tab, n: String(s.n) });
}

// thumbnail shows tab's picture n in its list entry: at most one every
// thumbGap, the latest of those that came meanwhile, as an image the
// browser fetches and decodes off the page's thread.
const maxThumbnails = 24;
const thumbGap = 400;
const thumbs = new Map(); // tab -> {loading, at, next, timer}
function thumbnail(tab, n) {
  const img = document.querySelector('#tabs img.thumb[data-tab="' + CSS.escape(tab) + '"]');
  if (!img) return;
  let t = thumbs.get(tab);
  if (!t) thumbs.set(tab, (t = { loading: false, at: 0, next: 0, timer: 0 }));
  t.next = n;
  if (t.loading || t.timer) return;
  const wait = t.at + thumbGap - Date.now();
  if (wait > 0) {
    t.timer = setTimeout(() => { t.timer = 0; thumbnail(tab, t.next); }, wait);
    return;
  }
  t.loading = true;
  t.at = Date.now();
  const want = t.next;
  img.onload = img.onerror = (e) => {
    t.loading = false;
    if (e.type === "load") img.classList.add("shown");
    if (t.next !== want) thumbnail(tab, t.next);
  };
  img.src = "/api/screen?" + new URLSearchParams({ tab, n: String(want) });
}

// ---- taking over, and input ----

async function control(op) {
  try {
    await api("/api/control", { tab: state.selected, op });
    say("");
  } catch (e) {
    say(op + ": " + e.message);
  }
}

let inputs = Promise.resolve();
let moving = false;
let nextMove = null;

// send forwards one input, in order after the ones before it. A move is
// not waited for: one at a time, the latest of those that came meanwhile
// next, so a press never waits behind the moves that led to it.
function send(input) {
  if (!controlled()) return;
  const body = Object.assign({ tab: state.selected }, input);
  if (input.type === "mouse" && input.event === "move") {
    if (moving) { nextMove = body; return; }
    moving = true;
    api("/api/input", body).catch(() => {}).finally(() => {
      moving = false;
      const next = nextMove;
      nextMove = null;
      if (next) send(next);
    });
    return;
  }
  nextMove = null;
  inputs = inputs.then(() => api("/api/input", body)).catch((e) => say(e.message));
}

function pointAt(e) {
  const m = state.meta;
  if (!m) return null;
  const r = $("screen").getBoundingClientRect();
  if (!r.width || !r.height) return null;
  const x = ((e.clientX - r.left) / r.width) * m.deviceWidth;
  const y = ((e.clientY - r.top) / r.height) * m.deviceHeight;
  if (x < 0 || y < 0 || x > m.deviceWidth || y > m.deviceHeight) return null;
  return { x, y };
}

function modifiers(e) {
  return (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
}

const buttons = ["left", "middle", "right"];

// keyOK: the keys the tab can press (a character, or one it names);
// others (Dead, CapsLock, media keys) stay in the viewer.
const namedKeys = new Set(["Enter", "Tab", "Escape", "Backspace", "Delete", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
  "Home", "End", "PageUp", "PageDown", "Insert", "Shift", "Control", "Alt", "Meta",
  "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12"]);
function keyOK(key) { return [...key].length === 1 || namedKeys.has(key); }
let lastMove = 0;
let escapes = 0;

function wireInput() {
  const box = $("screenbox");
  const img = $("screen");
  img.addEventListener("mousedown", (e) => {
    const p = pointAt(e);
    if (!p || !controlled()) return;
    e.preventDefault();
    box.focus();
    send({ type: "mouse", event: "down", x: p.x, y: p.y, button: buttons[e.button] || "left", clickCount: e.detail || 1, modifiers: modifiers(e) });
  });
  img.addEventListener("mouseup", (e) => {
    const p = pointAt(e);
    if (!p || !controlled()) return;
    e.preventDefault();
    send({ type: "mouse", event: "up", x: p.x, y: p.y, button: buttons[e.button] || "left", clickCount: e.detail || 1, modifiers: modifiers(e) });
  });
  img.addEventListener("mousemove", (e) => {
    const now = Date.now();
    if (now - lastMove < 40 || !controlled()) return;
    const p = pointAt(e);
    if (!p) return;
    lastMove = now;
    send({ type: "mouse", event: "move", x: p.x, y: p.y, modifiers: modifiers(e) });
  });
  img.addEventListener("wheel", (e) => {
    const p = pointAt(e);
    if (!p || !controlled()) return;
    e.preventDefault();
    send({ type: "mouse", event: "wheel", x: p.x, y: p.y, deltaX: e.deltaX, deltaY: e.deltaY });
  }, { passive: false });
  img.addEventListener("contextmenu", (e) => { if (controlled()) e.preventDefault(); });
  box.addEventListener("keydown", (e) => {
    if (!controlled()) return;
    if (e.key === "Escape") {
      escapes++;
      if (escapes >= 2) { escapes = 0; box.blur(); return; }
    } else {
      escapes = 0;
    }
    if (!keyOK(e.key)) return;
    e.preventDefault();
    send({ type: "key", event: "down", key: e.key, modifiers: modifiers(e) });
  });
  box.addEventListener("keyup", (e) => {
    if (!controlled() || !keyOK(e.key)) return;
    e.preventDefault();
    send({ type: "key", event: "up", key: e.key, modifiers: modifiers(e) });
  });
  box.addEventListener("paste", (e) => {
    if (!controlled()) return;
    e.preventDefault();
    const text = e.clipboardData.getData("text");
    if (text) send({ type: "text", text });
  });
}

function wireControls() {
  $("takeover").addEventListener("click", () => control("takeover"));
  $("handback").addEventListener("click", () => control("handback"));
  $("back").addEventListener("click", () => send({ type: "back" }));
  $("forward").addEventListener("click", () => send({ type: "forward" }));
  $("reload").addEventListener("click", () => send({ type: "reload" }));
  $("addressbar").addEventListener("submit", (e) => {
    e.preventDefault();
    const url = $("address").value.trim();
    if (url) send({ type: "navigate", url });
  });
  $("older").addEventListener("click", older);
}

// For benchmarks and scripts: watch several tabs' pictures at once.
window.framebusWatch = (tabs, thumbnails) => {
  state.pinned = { tabs, thumbnails: thumbnails || [] }; // what the page watches from now on, whatever is in sight
  return (watching = watching.then(() => api("/api/watch", { conn: state.conn, ...state.pinned })));
};

wireInput();
wireControls();
setConn();
connect();
