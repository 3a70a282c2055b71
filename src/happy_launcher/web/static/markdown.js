// Agent text as Markdown: paragraphs, headings, lists, quotes, fenced code, tables, rules. Built
// with createElement and textContent only (never innerHTML): raw HTML in the text stays text.
import { el } from "./state.js";
import { inline } from "./inline.js";

const MAX_DEPTH = 12; // lists and quotes nested deeper than this are shown as plain text
const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?: *\1){2,} *$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])( {1,4}|$)(.*)$/;
const DIVIDER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

export function markdown(text) {
  const root = el("div", "md");
  blocks(text.split(/\r?\n/), root, 0);
  return root;
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function blocks(lines, parent, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    if (depth >= MAX_DEPTH) { i = paragraph(lines, i, parent, () => false); continue; }
    let m;
    if ((m = line.match(FENCE)) && !(m[2][0] === "`" && m[3].includes("`"))) i = fence(lines, i, m, parent);
    else if ((m = line.match(HEADING))) {
      const h = el(`h${Math.min(6, m[1].length + 2)}`);
      inline(m[2] || "", h);
      parent.append(h);
      i++;
    } else if (RULE.test(line)) { parent.append(el("hr")); i++; }
    else if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ""));
      const quote = el("blockquote");
      blocks(body, quote, depth + 1);
      parent.append(quote);
    } else if (ITEM.test(line)) i = list(lines, i, parent, depth);
    else if (line.includes("|") && DIVIDER.test(lines[i + 1] || "") && lines[i + 1].includes("-")) i = table(lines, i, parent);
    else i = paragraph(lines, i, parent, startsBlock);
  }
}

function paragraph(lines, i, parent, ends) {
  const p = el("p");
  let first = true;
  while (i < lines.length && lines[i].trim() && (first || !ends(lines[i]))) {
    if (!first) p.append(el("br"));
    inline(lines[i].trim(), p);
    first = false;
    i++;
  }
  parent.append(p);
  return i;
}

// A fenced code block; an unclosed fence runs to the end of the text.
function fence(lines, i, m, parent) {
  const [, indent, marks, info] = m;
  const end = new RegExp(`^ {0,3}${marks[0] === "`" ? "`" : "~"}{${marks.length},}\\s*$`);
  const body = [];
  for (i++; i < lines.length && !end.test(lines[i]); i++) {
    body.push(lines[i].replace(new RegExp(`^ {0,${indent.length}}`), ""));
  }
  const pre = el("pre", "code");
  const code = el("code", "", body.join("\n"));
  const lang = info.trim().split(/\s+/)[0];
  if (lang) code.dataset.lang = lang;
  pre.append(code);
  parent.append(pre);
  return i + 1;
}

function list(lines, i, parent, depth) {
  const first = lines[i].match(ITEM);
  const ordered = /\d/.test(first[2]);
  const box = el(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) box.start = parseInt(first[2], 10);
  const kind = (marker) => (ordered ? /\d/.test(marker) : marker === first[2]);
  while (i < lines.length) {
    const m = lines[i].match(ITEM);
    if (!m || !kind(m[2])) break;
    const width = m[1].length + m[2].length + Math.max(1, m[3].length);
    const body = [m[4]];
    for (i++; i < lines.length; i++) {
      const line = lines[i];
      const indented = line.length - line.trimStart().length >= width;
      if (!line.trim()) {
        const next = lines.slice(i + 1).find((l) => l.trim());
        if (next === undefined || next.length - next.trimStart().length < width) break;
        body.push("");
      } else if (indented) body.push(line.slice(width));
      else if (!startsBlock(line) && body[body.length - 1].trim()) body.push(line.trim()); // lazy
      else break;
    }
    const li = el("li");
    blocks(body, li, depth + 1);
    box.append(li);
    while (i < lines.length && !lines[i].trim()) i++;
  }
  parent.append(box);
  return i;
}

function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split(/(?<!\\)\|/).map((c) => c.trim());
}

function table(lines, i, parent) {
  const wrap = el("div", "table");
  const t = el("table");
  const head = el("tr");
  for (const c of cells(lines[i])) { const th = el("th"); inline(c, th); head.append(th); }
  t.append(head);
  for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++) {
    const tr = el("tr");
    for (const c of cells(lines[i])) { const td = el("td"); inline(c, td); tr.append(td); }
    t.append(tr);
  }
  wrap.append(t);
  parent.append(wrap);
  return i;
}
