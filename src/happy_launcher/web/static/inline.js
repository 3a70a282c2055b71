// Markdown's inline parts (code spans, emphasis, links) as DOM nodes. Model text only ever
// becomes text nodes: raw HTML stays text, and a link is made only for http(s) and mailto.
import { el } from "./state.js";

const PUNCT = /[!-/:-@[-`{-~]/;
const MAX_DEPTH = 8; // emphasis inside emphasis: deeper nesting stays text
const BARE_URL = /^https?:\/\/[^\s<>]+/;
const AUTOLINK = /^<((?:https?|mailto):[^\s<>]+)>/i;
const EMPHASIS = [["**", "strong"], ["__", "strong"], ["~~", "del"], ["*", "em"], ["_", "em"]];

// The link's address when its scheme is allowed, else null (the link is then shown as text).
export function safeHref(url) {
  let parsed;
  try { parsed = new URL(url.trim()); } catch { return null; }
  return ["http:", "https:", "mailto:"].includes(parsed.protocol) ? parsed.href : null;
}

function anchor(href) {
  const a = el("a");
  a.href = href;
  a.target = "_blank"; // a new tab, which cannot reach back to this page
  a.rel = "noopener noreferrer";
  return a;
}

// [label](url "title") or ![alt](url) at `i`: {label, url, end}, or null.
function bracketed(text, i) {
  const open = text[i] === "!" ? i + 1 : i;
  let depth = 0, close = -1;
  for (let j = open; j < text.length; j++) {
    if (text[j] === "\\") { j++; continue; }
    if (text[j] === "[") depth++;
    else if (text[j] === "]" && --depth === 0) { close = j; break; }
  }
  if (close < 0 || text[close + 1] !== "(") return null;
  let parens = 0, end = -1;
  for (let j = close + 2; j < text.length; j++) {
    if (text[j] === "(") parens++;
    else if (text[j] === ")" && parens-- === 0) { end = j; break; }
  }
  if (end < 0) return null;
  let url = text.slice(close + 2, end).trim().split(/\s+/)[0] || "";
  if (url.startsWith("<") && url.endsWith(">")) url = url.slice(1, -1);
  return { label: text.slice(open + 1, close), url, end: end + 1 };
}

// The closing delimiter of an emphasis opened at `from`, or -1.
function closer(text, delim, from, misses) {
  if (from >= (misses.get(delim) ?? Infinity)) return -1;
  for (let j = text.indexOf(delim, from); j >= 0; j = text.indexOf(delim, j + 1)) {
    const inner = text.slice(from, j);
    const after = text[j + delim.length] || " ";
    if (inner.trim() && !/\s/.test(text[j - 1]) && (delim[0] !== "_" || !/\w/.test(after))) return j;
  }
  misses.set(delim, Math.min(from, misses.get(delim) ?? Infinity)); // none later either
  return -1;
}

// `inLink`: inside a link's label, where no other link may start.
export function inline(text, parent, depth = 0, inLink = false) {
  const misses = new Map();
  let buf = "";
  const flush = () => { if (buf) parent.append(document.createTextNode(buf)); buf = ""; };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i, i + 2048);
    if (c === "\\" && PUNCT.test(text[i + 1] || "")) { buf += text[i + 1]; i += 2; continue; }
    if (c === "`") {
      const run = rest.match(/^`+/)[0];
      const end = text.indexOf(run, i + run.length);
      if (end < 0 || text[end + run.length] === "`") { buf += run; i += run.length; continue; }
      flush();
      parent.append(el("code", "", text.slice(i + run.length, end).replace(/^ (.*) $/s, "$1")));
      i = end + run.length;
      continue;
    }
    if (!inLink && (c === "[" || (c === "!" && text[i + 1] === "["))) {
      const found = bracketed(text, i);
      const href = found && safeHref(found.url);
      if (found && href) {
        flush();
        const a = anchor(href);
        inline(found.label || found.url, a, depth + 1, true);
        parent.append(a);
        i = found.end;
      } else if (found) { buf += text.slice(i, found.end); i = found.end; } else { buf += c; i++; }
      continue;
    }
    const auto = !inLink && c === "<" && rest.match(AUTOLINK);
    const bare = !inLink && !auto && c === "h" && !/\w/.test(text[i - 1] || "") && rest.match(BARE_URL);
    const url = auto ? auto[1] : bare ? bare[0].replace(/[.,:;!?)'"]+$/, "") : "";
    const href = url && safeHref(url);
    if (href) {
      flush();
      parent.append(anchor(href));
      parent.lastChild.textContent = url;
      i += auto ? auto[0].length : url.length;
      continue;
    }
    const em = depth < MAX_DEPTH && "*_~".includes(c) && EMPHASIS.find(([d]) => rest.startsWith(d));
    if (em && !(c === "_" && /\w/.test(text[i - 1] || ""))) {
      const [delim, tag] = em;
      const end = closer(text, delim, i + delim.length, misses);
      if (end >= 0 && !/\s/.test(text[i + delim.length])) {
        flush();
        const node = el(tag);
        inline(text.slice(i + delim.length, end), node, depth + 1, inLink);
        parent.append(node);
        i = end + delim.length;
        continue;
      }
    }
    buf += c;
    i++;
  }
  flush();
}
