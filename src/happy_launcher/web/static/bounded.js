// The transcript's DOM holds a bounded window of envelopes, however long the session runs and
// however far back the reader loads: past LIMIT rendered envelopes, those at the end farther
// from what the reader sees are dropped, down to KEEP. The older end: "Load earlier" brings them
// back (from the oldest seq still shown). The newer end (the reader is up in older pages): live
// envelopes stop being shown and "Show newest" opens the session's newest window again.
import { $, S, el } from "./state.js";

export const LIMIT = 1000; // rendered envelopes in the DOM, at most
const KEEP = 700; // what a drop leaves: drops come every few hundred envelopes, not at each one

// Drops what is over the bound; true if the older end was dropped (S.earliest moved).
export function bound() {
  const box = $("transcript");
  const nodes = box.querySelectorAll("[data-seq]");
  if (nodes.length <= LIMIT) return false;
  const seqs = Array.from(nodes, seqOf).sort((a, b) => a - b);
  const below = box.scrollHeight - box.scrollTop - box.clientHeight;
  if (box.scrollTop >= below) {
    dropOlder(box, nodes, seqs[seqs.length - KEEP]);
    return true;
  }
  dropNewer(box, nodes, seqs[KEEP - 1]);
  return false;
}

const seqOf = (node) => Number(node.dataset.seq);

// Everything before seq `cut` goes; the reader's place stays put.
function dropOlder(box, nodes, cut) {
  const fromBottom = box.scrollHeight - box.scrollTop;
  for (const node of nodes) {
    if (seqOf(node) >= cut) continue;
    // A tool call whose end stays in the window: its start, loaded again, must show that end.
    if (node.dataset.end && Number(node.dataset.end) >= cut) {
      S.ends.set(node.dataset.call, { status: node.dataset.ended, seq: Number(node.dataset.end) });
    }
    node.remove();
  }
  for (const part of box.querySelectorAll(".turn, .subagent")) if (Number(part.dataset.to) < cut) part.remove();
  for (const [call, end] of S.ends) if (end.seq < cut) S.ends.delete(call); // loaded again with its start
  S.earliest = cut;
  tidy(box);
  box.scrollTop = box.scrollHeight - fromBottom;
}

// Everything after seq `last` goes, and with it the live end.
function dropNewer(box, nodes, last) {
  for (const node of nodes) if (seqOf(node) > last) node.remove();
  for (const part of box.querySelectorAll(".turn, .subagent")) if (Number(part.dataset.from) > last) part.remove();
  tidy(box);
  S.queue = [];
  if (!S.detached) {
    S.detached = true;
    const newest = el("button", "quiet newest", "Show newest");
    newest.id = "newest"; // app.js opens the session again
    newest.type = "button";
    box.append(newest);
  }
}

// Blocks left empty go, and the live view forgets its boxes that went.
function tidy(box) {
  for (const block of box.querySelectorAll(".earlier-block")) if (!block.firstChild) block.remove();
  for (const map of [S.turns, S.tools, S.subagents]) {
    for (const [key, node] of map) if (!node.isConnected) map.delete(key);
  }
}
