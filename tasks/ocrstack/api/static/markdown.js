// A small Markdown renderer for ocrstack's assembled output (no build step, no CDN).
// Covers what parsing/assembly writes: ATX headings, paragraphs, - / 1. lists, fenced code,
// $$ display math (shown as code), pipe tables, images (alt text only), **bold**, *italic*, `code`.
// Everything from the document is escaped; HTML tables from a recognizer are rebuilt from
// table/tr/td/th elements only (attributes other than colspan/rowspan dropped): no script can run.
"use strict";
(function (global) {
  const esc = (s) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

  function inline(text) {
    let s = esc(text);
    s = s.replace(/!\[([^\]]*)\]\([^)]*\)/g, (_, alt) => `<em class="figure">[figure${alt ? ": " + alt : ""}]</em>`);
    s = s.replace(/`([^`]+)`/g, "<code>$1</code>");
    s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
    s = s.replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
    return s;
  }

  function safeTable(html) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const allowed = new Set(["TABLE", "THEAD", "TBODY", "TR", "TD", "TH"]);
    function copy(node) {
      if (node.nodeType === Node.TEXT_NODE) return esc(node.textContent);
      if (node.nodeType !== Node.ELEMENT_NODE) return "";
      const inner = Array.from(node.childNodes).map(copy).join("");
      if (!allowed.has(node.tagName)) return inner;
      const tag = node.tagName.toLowerCase();
      let attrs = "";
      for (const a of ["colspan", "rowspan"]) {
        const v = node.getAttribute(a);
        if (v && /^\d+$/.test(v)) attrs += ` ${a}="${v}"`;
      }
      return `<${tag}${attrs}>${inner}</${tag}>`;
    }
    return Array.from(doc.body.childNodes).map(copy).join("");
  }

  function pipeRow(line) {
    return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  }

  function render(md) {
    const lines = md.replace(/<!--[\s\S]*?-->/g, "").split("\n");
    const out = [];
    let para = [];
    const flush = () => { if (para.length) { out.push(`<p>${inline(para.join(" "))}</p>`); para = []; } };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      let m;
      if (/^\s*$/.test(line)) { flush(); continue; }
      if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) { flush(); out.push(`<h${m[1].length}>${inline(m[2])}</h${m[1].length}>`); continue; }
      if (/^```/.test(line) || /^\$\$/.test(line.trim())) {
        flush();
        const fence = /^```/.test(line) ? "```" : "$$";
        const body = [];
        if (fence === "$$" && line.trim().length > 2 && line.trim().endsWith("$$") && line.trim() !== "$$") {
          out.push(`<pre class="math">${esc(line.trim())}</pre>`); continue;
        }
        while (++i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i]);
        out.push(`<pre${fence === "$$" ? ' class="math"' : ""}><code>${esc(body.join("\n"))}</code></pre>`);
        continue;
      }
      if (/^\s*<table/i.test(line)) {
        flush();
        const body = [line];
        while (!/<\/table>/i.test(body[body.length - 1]) && i + 1 < lines.length) body.push(lines[++i]);
        out.push(safeTable(body.join("\n")));
        continue;
      }
      if (/^\s*\|/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{3,}/.test(lines[i + 1])) {
        flush();
        const head = pipeRow(line);
        i++;
        const rows = [];
        while (i + 1 < lines.length && /^\s*\|/.test(lines[i + 1])) rows.push(pipeRow(lines[++i]));
        out.push("<table><thead><tr>" + head.map((c) => `<th>${inline(c)}</th>`).join("") + "</tr></thead><tbody>" +
          rows.map((r) => "<tr>" + r.map((c) => `<td>${inline(c)}</td>`).join("") + "</tr>").join("") + "</tbody></table>");
        continue;
      }
      if ((m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line))) {
        flush();
        const ordered = /\d/.test(m[1]);
        const items = [m[2]];
        const itemRe = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
        const indented = (s) => /^\s+\S/.test(s);
        // an item's wrapped lines are indented; a blank line between items keeps the list going
        while (i + 1 < lines.length) {
          const next = lines[i + 1];
          if ((m = itemRe.exec(next))) { items.push(m[2]); i++; continue; }
          if (indented(next)) { items[items.length - 1] += " " + next.trim(); i++; continue; }
          if (next.trim() === "" && i + 2 < lines.length && itemRe.test(lines[i + 2])) { i++; continue; }
          break;
        }
        const tag = ordered ? "ol" : "ul";
        out.push(`<${tag}>` + items.map((t) => `<li>${inline(t)}</li>`).join("") + `</${tag}>`);
        continue;
      }
      para.push(line.trim());
    }
    flush();
    return out.join("\n");
  }

  global.ocrstackMarkdown = { render, escape: esc };
})(window);
