// happy web: the page. No build step, no library; everything shown is set with textContent.
import { $, S, TOKEN_KEY, LIST_EVERY, SILENT_LIMIT } from "./state.js";
import { api, command } from "./api.js";
import { refreshList, showHeader } from "./list.js";
import { follow, setConn, stopStream } from "./stream.js";
import { renderPerms } from "./perms.js";
import { openNewSession, resumeSession, startNewSession } from "./spawn.js";
import { setUpNotifications } from "./notify.js";

// ---- pairing ---------------------------------------------------------------------------------

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
  S.earliest = 0;
  S.ends.clear();
  S.detached = false;
  window.happy.seqs = [];
  window.happy.earlier = [];
  $("transcript").replaceChildren();
  $("s-error").hidden = true;
  renderPerms();
  document.body.classList.toggle("in-session", !!id);
  for (const node of ["transcript", "composer", "perms"]) $(node).hidden = !id;
  $("pick").hidden = !!id;
  for (const li of document.querySelectorAll("#list li")) li.classList.toggle("current", li.dataset.id === id);
  setConn(id ? "Connecting…" : "");
  showHeader();
  if (id) follow(id);
}

// A session started or resumed here: the page follows it (again, if it is the one shown).
function go(id) {
  if (!id) return;
  refreshList();
  if (id === S.current) open(id);
  else location.hash = `#s=${encodeURIComponent(id)}`;
}

function route() {
  const id = new URLSearchParams(location.hash.slice(1)).get("s");
  if (id !== S.current) open(id);
}

function onVisible() {
  if (document.visibilityState !== "visible" || !S.token) return;
  refreshList();
  if (!S.current || S.ended) return;
  // After a sleep the connection may be dead without a word: start again from the last seq
  // (cheap: only what came after it is sent).
  if (S.wake) S.wake();
  else if (S.ctl) { S.now = true; S.ctl.abort(); }
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
  $("transcript").addEventListener("click", (e) => { if (e.target.id === "newest") open(S.current); });
  $("pair-new").addEventListener("click", pairAnother);
  $("pair-close").addEventListener("click", () => $("pair-dialog").close());
  $("new-session").addEventListener("click", openNewSession);
  $("new-cancel").addEventListener("click", () => $("new-dialog").close());
  $("new-form").addEventListener("submit", async (e) => { e.preventDefault(); go(await startNewSession()); });
  $("resume").addEventListener("click", async () => go(await resumeSession(S.current)));
  setUpNotifications();
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", onVisible);
  window.addEventListener("online", onVisible);
  setInterval(() => { if (document.visibilityState === "visible") refreshList(); }, LIST_EVERY);
  setInterval(() => { if (S.ctl && Date.now() - S.lastByte > SILENT_LIMIT) S.ctl.abort(); }, 5000);
  route(); // the stream opens at once; the list comes beside it
  if (S.current === null) open(null);
  await refreshList();
}

main();

