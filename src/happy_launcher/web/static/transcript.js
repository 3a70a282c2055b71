// The transcript: envelopes rendered in batches, one animation frame at a time. A view is where
// envelopes go: the live one (the transcript's end), or a block of earlier ones (earlier.js).
import { $, S, el } from "./state.js";
import { markdown } from "./markdown.js";

// How a tool call ended (`tool-call-end.status`, absent when it succeeded).
const TOOL_ENDS = { failed: "failed", denied: "denied", cancelled: "cancelled" };

export function liveView() {
  return { root: $("transcript"), turns: S.turns, tools: S.tools, subagents: S.subagents };
}

// The test hooks keep the last NOTED seqs: they do not grow with history either.
const NOTED = 5000;
export function note(seqs, seq) {
  seqs.push(seq);
  if (seqs.length > NOTED) seqs.splice(0, NOTED / 2);
}

export function flush() {
  S.flushing = false;
  const box = $("transcript");
  const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const batch = S.queue;
  S.queue = [];
  const view = liveView();
  for (const [seq, env] of batch) {
    try { render(seq, env, view); } catch (e) { console.error("envelope", seq, e); }
    note(window.happy.seqs, seq);
  }
  if (stick) box.scrollTop = box.scrollHeight;
  const now = performance.timeOrigin + performance.now();
  for (const [seq] of batch) window.happy.rendered.push([seq, now]);
  if (window.happy.rendered.length > NOTED) window.happy.rendered.splice(0, NOTED / 2);
  if (window.happy.firstPaint === null && batch.length) window.happy.firstPaint = performance.now();
}

// Each turn and subagent box knows the seqs of its first and last envelopes (bounded.js drops a
// box once all of them are out of the window).
function container(env, view, seq) {
  if (env.subagent) {
    let sub = view.subagents.get(env.subagent);
    if (!sub) {
      sub = el("details", "subagent");
      sub.dataset.from = String(seq);
      sub.open = true;
      sub.append(el("summary", "", "Subagent"), el("div", "body"));
      put(containerOf(env.turn, view, seq), sub);
      view.subagents.set(env.subagent, sub);
    }
    sub.dataset.to = String(seq);
    const turnBox = sub.closest(".turn");
    if (turnBox) turnBox.dataset.to = String(seq);
    return sub;
  }
  return containerOf(env.turn, view, seq);
}

function containerOf(turn, view, seq) {
  if (!turn) return view.root;
  let box = view.turns.get(turn);
  if (!box) {
    box = el("div", "turn");
    box.dataset.turn = turn;
    box.dataset.from = String(seq);
    box.append(el("div", "turn-status", "working…"));
    view.root.append(box);
    view.turns.set(turn, box);
  }
  box.dataset.to = String(seq);
  return box;
}

function put(parent, node) {
  // A turn's status line stays last; a subagent's items go in its body.
  if (parent.classList.contains("subagent")) parent.querySelector(".body").append(node);
  else if (parent.classList.contains("turn")) parent.insertBefore(node, parent.lastElementChild);
  else parent.append(node);
}

// `status`: the envelope's, or a name this gave before ("done", "failed", ...); `seq`: the end's.
function toolEnded(tool, status, seq) {
  const end = TOOL_ENDS[status] || "done";
  tool.classList.add(end);
  tool.querySelector(".status").textContent = end;
  tool.dataset.ended = end;
  tool.dataset.end = String(seq);
}

// A tool call shown outside this view: in an earlier block, when its end comes live.
function shownTool(call) {
  return $("transcript").querySelector(`.tool[data-call="${CSS.escape(call)}"]`);
}

export function render(seq, env, view) {
  const ev = env.ev;
  const parent = container(env, view, seq);
  let node = null;
  switch (ev.t) {
    case "text":
      if (ev.thinking) {
        node = el("details", "thinking");
        node.append(el("summary", "", "Thinking"), el("pre", "", ev.text));
      } else if (env.role === "agent") {
        node = markdown(ev.text);
        node.classList.add("msg", "agent");
      } else {
        node = el("div", `msg ${env.role}`, ev.text); // what the user typed, as typed
      }
      break;
    case "service":
      node = markdown(ev.text);
      node.classList.add("service");
      break;
    case "tool-call-start": {
      node = el("details", "tool");
      const summary = el("summary");
      summary.append(el("span", "status", "running"), el("b", "", ev.title || ev.name));
      node.append(summary, el("pre", "", JSON.stringify(ev.args, null, 2)));
      node.dataset.tool = ev.name;
      node.dataset.call = ev.call;
      view.tools.set(ev.call, node);
      const ended = S.ends.get(ev.call);
      if (ended) { toolEnded(node, ended.status, ended.seq); S.ends.delete(ev.call); }
      break;
    }
    case "tool-call-end": {
      const tool = view.tools.get(ev.call) || shownTool(ev.call);
      if (tool) toolEnded(tool, ev.status, seq);
      else S.ends.set(ev.call, { status: ev.status, seq });
      return;
    }
    case "file":
      node = el("div", "file", `📎 ${ev.name} (${ev.size} bytes)`);
      break;
    case "turn-start":
      return; // the turn's box is made by container()
    case "turn-end": {
      const status = view.turns.get(env.turn)?.querySelector(".turn-status");
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

