// Older envelopes on demand: the stream starts with the newest WINDOW envelopes, so a long
// session opens as fast as a short one and the DOM holds what was asked for, not the history;
// "Load earlier" fetches the page before the oldest shown (web/history.py) into a block at the top.
import { $, S, el } from "./state.js";
import { api } from "./api.js";
import { note, render } from "./transcript.js";
import { bound } from "./bounded.js";

export const WINDOW = 300; // envelopes shown first, and fetched per "Load earlier"

export function showEarlier() {
  let button = $("earlier");
  if (S.earliest <= 1) {
    if (button) button.remove();
    return;
  }
  if (!button) {
    button = el("button", "quiet earlier", "Load earlier");
    button.id = "earlier";
    button.type = "button";
    button.addEventListener("click", loadEarlier);
    $("transcript").prepend(button);
  }
}

async function loadEarlier() {
  const id = S.current, before = S.earliest, button = $("earlier");
  button.disabled = true;
  try {
    const res = await api(`/api/sessions/${encodeURIComponent(id)}/envelopes?before=${before}&limit=${WINDOW}`);
    if (!res.ok || id !== S.current || before !== S.earliest) return; // another session, or asked twice
    const { envelopes } = await res.json();
    S.earliest = envelopes.length ? envelopes[0][0] : 1;
    prepend(envelopes); // after: a drop of the block's own oldest (bounded.js) moves S.earliest on
  } finally {
    button.disabled = false;
    showEarlier();
  }
}

function prepend(envelopes) {
  const box = $("transcript");
  const fromBottom = box.scrollHeight - box.scrollTop; // the reader's place stays put
  const block = el("div", "earlier-block");
  const view = { root: block, turns: new Map(), tools: new Map(), subagents: new Map() };
  for (const [seq, env] of envelopes) {
    try { render(seq, env, view); } catch (e) { console.error("envelope", seq, e); }
    note(window.happy.earlier, seq);
  }
  // A turn that goes on below this block (it has a box there) has its status line there, not here.
  for (const [turn, turnBox] of view.turns) {
    const status = turnBox.lastElementChild;
    const below = box.querySelector(`.turn[data-turn="${CSS.escape(turn)}"]`);
    if (status.textContent === "working…" && below) status.remove();
  }
  $("earlier").after(block);
  box.scrollTop = box.scrollHeight - fromBottom;
  bound(); // the reader is up here: the newer end goes, if any
}
