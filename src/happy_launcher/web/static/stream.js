// The session stream: SSE read over fetch (so the token can go in a header), resumed from the
// last seq after any break.
import { $, S } from "./state.js";
import { api, Unpaired } from "./api.js";
import { showHeader } from "./list.js";
import { renderPerms } from "./perms.js";
import { flush } from "./transcript.js";
import { tell } from "./notify.js";
import { WINDOW, showEarlier } from "./earlier.js";
import { LIMIT, bound } from "./bounded.js";

export function stopStream() {
  S.gen++;
  if (S.ctl) S.ctl.abort();
  S.ctl = null;
}

export function setConn(text) {
  $("conn").textContent = text || "";
  $("conn").hidden = !text;
}

export async function follow(id) {
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
    if (S.now) { S.now = false; continue; } // asked for (the page became visible): no wait
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
  const tail = S.lastSeq === 0 ? `?tail=${WINDOW}` : ""; // a first look: the newest envelopes only
  const res = await api(`/api/sessions/${encodeURIComponent(id)}/stream${tail}`, {
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

function frame() {
  flush();
  if (bound()) showEarlier();
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
    if (id > S.lastSeq && !S.detached) { // never twice, whatever a reconnect replays
      S.lastSeq = id;
      if (!S.earliest) { S.earliest = id; showEarlier(); }
      S.queue.push([id, body]);
      // No animation frame comes while the page is hidden: the queue is rendered (and bounded) anyway.
      if (S.queue.length >= LIMIT) frame();
      else if (!S.flushing) { S.flushing = true; requestAnimationFrame(frame); }
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
  } else if (event === "attention") {
    tell(body);
  } else if (event === "end") {
    S.pending.clear();
    renderPerms();
    return true;
  }
  return false;
}

