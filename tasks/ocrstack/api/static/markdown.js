// ocrstack Markdown in the page: markdown-it (CommonMark + GFM tables) with three rules for what
// parsing/assembly writes, KaTeX for math, DOMPurify for the HTML tables. Vendored, served
// locally: /static/vendor/ (versions, licences and hashes in vendor/VENDORED.md).
//
// * Raw HTML stays inert (markdown-it `html: false`): a result may hold hostile text.
// * `<table>` blocks (parsing/assembly/otsl.py, or a recognizer's own HTML) are the one HTML that
//   renders, through DOMPurify with table tags and colspan/rowspan only.
// * `<!-- ... -->` lines (page markers, empty or failed blocks) are dropped, as a browser would.
// * `$$ ... $$` blocks (parsing/assembly/markdown.py `_formula`) are raw LaTeX: display math.
// * Inline math is found in the text *after* the Markdown escapes are undone, because the writer
//   escapes recognised text (`$x\_i$`, `\\(a\\)`): `$...$` (Pandoc's rule: no space inside the
//   dollars, no digit after the closing one), `\(...\)`, and `\[...\]` / `$$...$$` inline.
// * Images show their alt text: the figure files are in the zip download, not served.
"use strict";
(function (global) {
  const TABLE_TAGS = ["table", "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "th", "td"];
  const INLINE_MATH =
    /\\\((.+?)\\\)|\\\[(.+?)\\\]|\$\$(.+?)\$\$|\$(?=\S)((?:[^$\\]|\\.)*?\S)\$(?!\d)/g;

  function lineText(state, line) {
    return state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
  }

  // A block that starts with `open` on its first line and ends on the first line matching `close`.
  function fencedBlock(name, open, close) {
    return function (state, startLine, endLine, silent) {
      if (state.sCount[startLine] - state.blkIndent >= 4 || !open.test(lineText(state, startLine))) return false;
      let last = startLine;
      while (!close.test(last === startLine ? lineText(state, last).replace(open, "") : lineText(state, last))) {
        if (++last >= endLine) return false;
      }
      if (silent) return true;
      const token = state.push(name, "", 0);
      token.content = state.getLines(startLine, last + 1, state.sCount[startLine], false);
      token.map = [startLine, last + 1];
      token.block = true;
      state.line = last + 1;
      return true;
    };
  }

  function mathToken(state, tex, display) {
    const token = new state.Token("math_inline", "", 0);
    token.content = tex;
    token.meta = { display };
    return token;
  }

  // Split the text tokens of every inline run into text and math (after text_join, so the
  // backslash escapes are already undone and adjacent text is one token).
  function inlineMath(state) {
    for (const block of state.tokens) {
      if (block.type !== "inline" || !block.children) continue;
      const out = [];
      for (const tok of block.children) {
        if (tok.type !== "text" || !/[$\\]/.test(tok.content)) { out.push(tok); continue; }
        let last = 0;
        for (const m of tok.content.matchAll(INLINE_MATH)) {
          if (m.index > last) {
            const text = new state.Token("text", "", 0);
            text.content = tok.content.slice(last, m.index);
            out.push(text);
          }
          const tex = m[1] ?? m[2] ?? m[3] ?? m[4];
          out.push(mathToken(state, tex, m[1] === undefined && m[4] === undefined));
          last = m.index + m[0].length;
        }
        if (last === 0) { out.push(tok); continue; }
        if (last < tok.content.length) {
          const text = new state.Token("text", "", 0);
          text.content = tok.content.slice(last);
          out.push(text);
        }
      }
      block.children = out;
    }
  }

  function tex(source, display) {
    return global.katex.renderToString(source, { displayMode: display, throwOnError: false, trust: false });
  }

  function create() {
    const md = global.markdownit({ html: false, linkify: false, typographer: false });
    const alt = { alt: ["paragraph", "reference", "blockquote", "list"] };
    md.block.ruler.before("fence", "ocr_math", fencedBlock("ocr_math", /^\$\$/, /\$\$\s*$/), alt);
    md.block.ruler.before("fence", "ocr_table", fencedBlock("ocr_table", /^<table\b/i, /<\/table>/i), alt);
    md.block.ruler.before("fence", "ocr_comment", fencedBlock("ocr_comment", /^<!--/, /-->/), alt);
    md.core.ruler.after("text_join", "ocr_inline_math", inlineMath);
    md.renderer.rules.ocr_math = (tokens, i) => {
      const body = tokens[i].content.trim().replace(/^\$\$/, "").replace(/\$\$$/, "");
      return `<div class="math">${tex(body.trim(), true)}</div>\n`;
    };
    md.renderer.rules.ocr_table = (tokens, i) => {
      const clean = global.DOMPurify.sanitize(tokens[i].content, { ALLOWED_TAGS: TABLE_TAGS, ALLOWED_ATTR: ["colspan", "rowspan"] });
      return `<div class="table">${clean}</div>\n`;
    };
    md.renderer.rules.ocr_comment = () => "";
    md.renderer.rules.math_inline = (tokens, i) => tex(tokens[i].content, tokens[i].meta.display);
    md.renderer.rules.image = (tokens, i) => {
      const label = tokens[i].content;
      return `<em class="figure">[figure${label ? ": " + md.utils.escapeHtml(label) : ""}]</em>`;
    };
    return md;
  }

  let md = null;
  function render(source) {
    md = md || create();
    return md.render(source);
  }

  global.ocrstackMarkdown = { render };
})(window);
