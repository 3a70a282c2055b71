// State shared by the page's modules, and small DOM helpers.

export const $ = (id) => document.getElementById(id);
export const TOKEN_KEY = "happy.token";
export const LIST_EVERY = 3000; // ms between session-list refreshes while the page is visible
export const SILENT_LIMIT = 45000; // no byte (not even a heartbeat) for this long: reconnect

export const S = {
  token: localStorage.getItem(TOKEN_KEY),
  sessions: [],
  current: null, // happy session id shown
  facts: null,
  gen: 0, // bumped to stop a stream loop
  ctl: null, // AbortController of the open stream
  wake: null, // resolves the reconnect wait early
  now: false, // the open stream was ended on purpose, to reconnect at once
  lastSeq: 0,
  lastByte: 0,
  ended: false,
  pending: new Map(),
  queue: [],
  flushing: false,
  turns: new Map(),
  tools: new Map(),
  subagents: new Map(),
  earliest: 0, // the seq of the oldest envelope shown (1: the whole history is)
  ends: new Map(), // tool call -> {status, seq} of its end, while its start is not shown (yet)
  detached: false, // the newest envelopes were dropped (bounded.js): live ones are not shown
  told: new Set(), // attention keys already told (web/notify.py)
};
// For the tests and benchmarks: seqs in render order, and when each was rendered.
window.happy = { seqs: [], rendered: [], firstPaint: null, earlier: [] };

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function newId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

export function ago(ms) {
  if (!ms) return "";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

export function baseName(path) {
  return path.replace(/\/+$/, "").split("/").pop() || path;
}

