// happy web: the page. No build step, no library. Everything shown is set with textContent.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "happy.token";
const LIST_EVERY = 3000; // ms between session-list refreshes while the page is visible
const SILENT_LIMIT = 45000; // no byte (not even a heartbeat) for this long: reconnect

const S = {
  token: localStorage.getItem(TOKEN_KEY),
  sessions: [],
  current: null, // happy session id shown
  facts: null,
  gen: 0, // bumped to stop a stream loop
  ctl: null, // AbortController of the open stream
  wake: null, // resolves the reconnect wait early
  lastSeq: 0,
  lastByte: 0,
  ended: false,
  pending: new Map(),
  queue: [],
  flushing: false,
  turns: new Map(),
  tools: new Map(),
  subagents: new Map(),
};
// For the tests and benchmarks: seqs in render order, and when each was rendered.
window.happy = { seqs: [], rendered: [], firstPaint: null };

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function newId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// ---- API -------------------------------------------------------------------------------------

class Unpaired extends Error {}

async function api(path, { method = "GET", body, headers = {}, signal } = {}) {
  const res = await fetch(path, {
    method,
    signal,
    cache: "no-store",
    headers: { authorization: `Bearer ${S.token}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 401) {
    unpair("This device is not paired (or its token was revoked). Open a new link from `happy web`.");
    throw new Unpaired();
  }
  return res;
}

// A command carries one id for all its attempts: a retry after a lost answer never acts twice.
async function command(type, fields) {
  const body = { id: newId(), type, ...fields };
  let lastError = "";
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const res = await api(`/api/sessions/${encodeURIComponent(S.current)}/command`, { method: "POST", body });
      const answer = await res.json().catch(() => ({}));
      if (res.ok) return { ok: true, ...answer };
      if (res.status < 500) return { ok: false, status: res.status, error: answer.error || res.statusText };
      lastError = answer.error || res.statusText;
    } catch (e) {
      if (e instanceof Unpaired) return { ok: false, error: "not paired" };
      lastError = String(e.message || e);
    }
    await new Promise((r) => setTimeout(r, 300 * 2 ** attempt));
  }
  return { ok: false, error: lastError };
}

// ---- pairing ---------------------------------------------------------------------------------

function unpair(message) {
  localStorage.removeItem(TOKEN_KEY);
  S.token = null;
  stopStream();
  $("pair-message").textContent = message;
  $("app").hidden = true;
  $("pair-view").hidden = false;
}

async function pairFromFragment() {
  const secret = new URLSearchParams(location.hash.slice(1)).get("k");
  if (!secret) return;
  history.replaceState(null, "", "/"); // the secret leaves the address bar (and the history)
  const name = `${navigator.platform || "browser"} ${navigator.userAgent.match(/(Chrome|Firefox|Safari)\/[\d.]+/)?.[0] || ""}`;
  const res = await fetch("/api/pair", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ secret, name }),
  });
  if (res.ok) {
    const { token } = await res.json();
    localStorage.setItem(TOKEN_KEY, token);
    S.token = token;
  } else if (!S.token) {
    const why = res.status === 429 ? "Too many pairing attempts: wait a minute." : "This pairing link was already used or has expired.";
    $("pair-message").textContent = `${why} Ask \`happy web\` (or a paired page) for a new one.`;
  }
}

async function pairAnother() {
  const res = await api("/api/pair/new", { method: "POST", body: {} });
  if (!res.ok) return;
  const { url, qr } = await res.json();
  $("pair-qr").src = qr;
  $("pair-url").textContent = url;
  $("pair-dialog").showModal();
}

// ---- session list ----------------------------------------------------------------------------

function ago(ms) {
  if (!ms) return "";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

function baseName(path) {
  return path.replace(/\/+$/, "").split("/").pop() || path;
}

async function refreshList() {
  if (!S.token) return;
  try {
    const res = await api("/api/sessions");
    if (!res.ok) return;
    S.sessions = await res.json();
  } catch {
    return;
  }
  const ul = $("sessions");
  ul.replaceChildren(...S.sessions.map(sessionItem));
  $("no-sessions").hidden = S.sessions.length > 0;
  showHeader();
}

function sessionItem(s) {
  const li = el("li", s.id === S.current ? "current" : "");
  li.dataset.id = s.id;
  li.append(el("div", "name", baseName(s.cwd)));
  const meta = el("div", "muted");
  meta.append(el("span", `badge ${s.state}`, s.state), el("span", "badge", s.mode || "-"));
  meta.append(document.createTextNode(ago(s.last_activity || s.started_at)));
  li.append(meta, el("div", "path muted", s.cwd));
  li.addEventListener("click", () => (location.hash = `#s=${encodeURIComponent(s.id)}`));
  return li;
}

function showHeader() {
  const s = S.sessions.find((x) => x.id === S.current);
  const running = s ? s.state === "running" && !S.ended : !!S.facts && !S.ended;
  const mode = (s && s.mode) || (S.facts && S.facts.mode) || "";
  const cwd = s ? s.cwd : S.facts ? S.facts.cwd : "";
  $("s-cwd").textContent = baseName(cwd);
  $("s-cwd").title = cwd;
  const state = running ? "running" : s ? s.state : "ended";
  $("s-meta").textContent = [state, mode && `${mode} mode`, cwd].filter(Boolean).join(" · ");
  $("switch").textContent = mode === "remote" ? "To local" : "To remote";
  $("switch").dataset.to = mode === "remote" ? "local" : "remote";
  for (const id of ["switch", "abort", "send"]) $(id).disabled = !running;
}

// ---- the stream: SSE over fetch (the token goes in a header, never in a URL) ------------------

function stopStream() {
  S.gen++;
  if (S.ctl) S.ctl.abort();
  S.ctl = null;
}

function setConn(text) {
  $("conn").textContent = text || "";
  $("conn").hidden = !text;
}

async function follow(id) {
  const gen = ++S.gen;
  let delay = 250;
  while (gen === S.gen) {
    let ended = false;
    try {
      ended = await readStream(id, gen);
      delay = 250;
    } catch (e) {
      if (e instanceof Unpaired || gen !== S.gen) return;
    }
    if (gen !== S.gen) return;
    if (ended) {
      S.ended = true;
      setConn("");
      showHeader();
      return;
    }
    setConn("Reconnecting…");
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, delay);
      S.wake = () => { clearTimeout(timer); resolve(); };
    });
    S.wake = null;
    delay = Math.min(delay * 2, 4000);
  }
}

// Resolves true once the session has ended (`end` frame), false if the stream broke.
async function readStream(id, gen) {
  S.ctl = new AbortController();
  const res = await api(`/api/sessions/${encodeURIComponent(id)}/stream`, {
    method: "POST",
    headers: { "last-event-id": String(S.lastSeq) },
    signal: S.ctl.signal,
  });
  if (res.status === 404) {
    setConn("No such session.");
    return true;
  }
  if (!res.ok || !res.body) return false;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  S.lastByte = Date.now();
  for (;;) {
    const { value, done } = await reader.read();
    if (done || gen !== S.gen) return false;
    S.lastByte = Date.now();
    setConn("");
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (onFrame(block)) return true;
    }
  }
}

function onFrame(block) {
  let event = "message", data = "", id = null;
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue; // heartbeat
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data += value;
    else if (field === "id") id = Number(value);
  }
  if (!data) return false;
  const body = JSON.parse(data);
  if (event === "envelope") {
    if (id > S.lastSeq) { // never twice, whatever a reconnect replays
      S.lastSeq = id;
      S.queue.push([id, body]);
      if (!S.flushing) { S.flushing = true; requestAnimationFrame(flush); }
    }
  } else if (event === "state") {
    S.facts = body;
    S.pending.clear(); // open requests follow, one frame each: they are state
    renderPerms();
    showHeader();
  } else if (event === "permission-requested") {
    S.pending.set(body.id, body);
    renderPerms();
  } else if (event === "permission-settled") {
    S.pending.delete(body.request_id);
    renderPerms();
  } else if (event === "end") {
    S.pending.clear();
    renderPerms();
    return true;
  }
  return false;
}

// ---- the transcript --------------------------------------------------------------------------

function flush() {
  S.flushing = false;
  const box = $("transcript");
  const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const batch = S.queue;
  S.queue = [];
  for (const [seq, env] of batch) {
    try { render(seq, env); } catch (e) { console.error("envelope", seq, e); }
    window.happy.seqs.push(seq);
  }
  if (stick) box.scrollTop = box.scrollHeight;
  const now = performance.timeOrigin + performance.now();
  for (const [seq] of batch) window.happy.rendered.push([seq, now]);
  if (window.happy.rendered.length > 5000) window.happy.rendered.splice(0, 2500);
  if (window.happy.firstPaint === null && batch.length) window.happy.firstPaint = performance.now();
}

function container(env) {
  if (env.subagent) {
    let sub = S.subagents.get(env.subagent);
    if (!sub) {
      sub = el("details", "subagent");
      sub.open = true;
      sub.append(el("summary", "", "Subagent"), el("div", "body"));
      put(containerOf(env.turn), sub);
      S.subagents.set(env.subagent, sub);
    }
    return sub;
  }
  return containerOf(env.turn);
}

function containerOf(turn) {
  if (!turn) return $("transcript");
  let box = S.turns.get(turn);
  if (!box) {
    box = el("div", "turn");
    box.append(el("div", "turn-status", "working…"));
    $("transcript").append(box);
    S.turns.set(turn, box);
  }
  return box;
}

function put(parent, node) {
  // A turn's status line stays last; a subagent's items go in its body.
  if (parent.classList.contains("subagent")) parent.querySelector(".body").append(node);
  else if (parent.classList.contains("turn")) parent.insertBefore(node, parent.lastElementChild);
  else parent.append(node);
}

function render(seq, env) {
  const ev = env.ev;
  const parent = container(env);
  let node = null;
  switch (ev.t) {
    case "text":
      if (ev.thinking) {
        node = el("details", "thinking");
        node.append(el("summary", "", "Thinking"), el("pre", "", ev.text));
      } else {
        node = el("div", `msg ${env.role}`, ev.text);
      }
      break;
    case "service":
      node = el("div", "service", ev.text);
      break;
    case "tool-call-start": {
      node = el("details", "tool");
      const summary = el("summary");
      summary.append(el("span", "status", "running"), el("b", "", ev.title || ev.name));
      node.append(summary, el("pre", "", JSON.stringify(ev.args, null, 2)));
      node.dataset.tool = ev.name;
      S.tools.set(ev.call, node);
      break;
    }
    case "tool-call-end": {
      const tool = S.tools.get(ev.call);
      if (tool) { tool.classList.add("done"); tool.querySelector(".status").textContent = "done"; }
      return;
    }
    case "file":
      node = el("div", "file", `📎 ${ev.name} (${ev.size} bytes)`);
      break;
    case "turn-start":
      return; // the turn's box is made by container()
    case "turn-end": {
      const status = S.turns.get(env.turn)?.querySelector(".turn-status");
      if (status) { status.textContent = `turn ${ev.status}`; status.className = `turn-status ${ev.status}`; }
      return;
    }
    case "start":
      if (env.subagent) { parent.querySelector("summary").textContent = ev.title || "Subagent"; return; }
      node = el("div", "service", ev.title ? `started: ${ev.title}` : "session started");
      break;
    case "stop":
      if (env.subagent) { parent.querySelector("summary").textContent += " (done)"; return; }
      node = el("div", "service", "session stopped");
      break;
    default:
      return;
  }
  node.dataset.seq = String(seq);
  put(parent, node);
}

// ---- permission requests ---------------------------------------------------------------------

function renderPerms() {
  const box = $("perms");
  const shown = new Map([...box.children].map((c) => [c.dataset.id, c]));
  for (const [id, node] of shown) if (!S.pending.has(id)) node.remove();
  for (const [id, req] of S.pending) if (!shown.has(id)) box.append(permCard(req));
}

function permCard(req) {
  const card = el("div", "perm");
  card.dataset.id = req.id;
  const reason = el("input");
  reason.placeholder = "Reason (optional, for deny)";
  reason.setAttribute("aria-label", "Reason");
  const error = el("div", "error");
  const allow = el("button", "", "Allow");
  const deny = el("button", "danger", "Deny");
  const abort = el("button", "quiet", "Abort turn");
  allow.dataset.act = "allow";
  deny.dataset.act = "deny";
  const actions = el("div", "actions");
  actions.append(allow, deny, abort);
  card.append(el("h3", "", `${req.tool}: ${req.title}`), el("pre", "", JSON.stringify(req.input, null, 2)), reason, actions, error);
  const answer = async (allowIt) => {
    for (const b of actions.children) b.disabled = true;
    const done = await command("answer", { request_id: req.id, allow: allowIt, message: allowIt ? null : reason.value || null });
    if (done.ok || done.status === 409) { // 409: already settled elsewhere; the stream says how
      if (!done.ok) error.textContent = done.error;
      S.pending.delete(req.id);
      setTimeout(renderPerms, done.ok ? 0 : 1500);
    } else {
      error.textContent = done.error;
      for (const b of actions.children) b.disabled = false;
    }
  };
  allow.addEventListener("click", () => answer(true));
  deny.addEventListener("click", () => answer(false));
  abort.addEventListener("click", () => command("abort", {}));
  return card;
}

// ---- composer, buttons, routing --------------------------------------------------------------

async function send(event) {
  event.preventDefault();
  const text = $("text").value;
  if (!text.trim() || !S.current) return;
  $("send").disabled = true;
  const done = await command("send", { text });
  $("send").disabled = false;
  if (done.ok) { $("text").value = ""; grow(); } else alert(`Not sent: ${done.error}`);
}

function grow() {
  const t = $("text");
  t.style.height = "auto";
  t.style.height = `${t.scrollHeight}px`;
}

function open(id) {
  stopStream();
  S.current = id;
  S.facts = null;
  S.lastSeq = 0;
  S.ended = false;
  S.pending.clear();
  S.queue = [];
  S.turns.clear();
  S.tools.clear();
  S.subagents.clear();
  window.happy.seqs = [];
  $("transcript").replaceChildren();
  renderPerms();
  document.body.classList.toggle("in-session", !!id);
  for (const node of ["transcript", "composer", "perms"]) $(node).hidden = !id;
  $("pick").hidden = !!id;
  for (const li of $("sessions").children) li.classList.toggle("current", li.dataset.id === id);
  setConn(id ? "Connecting…" : "");
  showHeader();
  if (id) follow(id);
}

function route() {
  const id = new URLSearchParams(location.hash.slice(1)).get("s");
  if (id !== S.current) open(id);
}

function onVisible() {
  if (document.visibilityState !== "visible" || !S.token) return;
  refreshList();
  if (!S.current || S.ended) return;
  // After a sleep the connection may be dead without a word: start again from the last seq.
  if (S.wake) S.wake();
  else if (Date.now() - S.lastByte > 2000) { if (S.ctl) S.ctl.abort(); }
}

async function main() {
  await pairFromFragment();
  if (!S.token) { $("pair-view").hidden = false; return; }
  $("app").hidden = false;
  $("composer").addEventListener("submit", send);
  $("text").addEventListener("input", grow);
  $("text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && matchMedia("(pointer: fine)").matches) send(e);
  });
  $("switch").addEventListener("click", async () => {
    const done = await command("switch", { to: $("switch").dataset.to });
    if (!done.ok) alert(`Cannot switch: ${done.error}`);
    refreshList();
  });
  $("abort").addEventListener("click", () => command("abort", {}));
  $("back").addEventListener("click", () => (location.hash = ""));
  $("pair-new").addEventListener("click", pairAnother);
  $("pair-close").addEventListener("click", () => $("pair-dialog").close());
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", onVisible);
  window.addEventListener("online", onVisible);
  setInterval(() => { if (document.visibilityState === "visible") refreshList(); }, LIST_EVERY);
  setInterval(() => { if (S.ctl && Date.now() - S.lastByte > SILENT_LIMIT) S.ctl.abort(); }, 5000);
  await refreshList();
  route();
  if (S.current === null) open(null);
}

main();
