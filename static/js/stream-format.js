// A reply formatted while it streams: the common markdown (paragraphs, line breaks, headings, lists,
// quotes, fenced code, **bold**, *emphasis*, `code`) built as DOM nodes from text. Never HTML: every
// piece of the reply goes in through createElement and text nodes, so nothing it says can become
// markup. Links stay text. When the reply is stored, the server's sanitized HTML replaces all of it.

const FENCE = /^\s{0,3}(```|~~~)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*)$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
// Inline: `code`, **strong** (or __strong__), *em* (or _em_); the first that opens wins.
const INLINE = /`([^`\n]+)`|\*\*(?=\S)([^*\n]*?\S)\*\*|__(?=\S)([^_\n]*?\S)__|\*(?=[^\s*])([^*\n]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\w])/g;

function node(tag, ...children) {
  const element = document.createElement(tag);
  element.append(...children);
  return element;
}

/** Text with inline code, strong and emphasis, as nodes. */
function inline(text) {
  const parts = [];
  let at = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > at) parts.push(document.createTextNode(text.slice(at, match.index)));
    const [, code, strong, strong2, em, em2] = match;
    if (code !== undefined) parts.push(node("code", code));
    else if (strong !== undefined || strong2 !== undefined) parts.push(node("strong", ...inline(strong ?? strong2)));
    else parts.push(node("em", ...inline(em ?? em2)));
    at = match.index + match[0].length;
  }
  if (at < text.length) parts.push(document.createTextNode(text.slice(at)));
  return parts;
}

/** Lines joined by <br>, as the server renders a chat message's single line breaks. */
function withBreaks(lines) {
  const parts = [];
  lines.forEach((line, i) => {
    if (i) parts.push(document.createElement("br"));
    parts.push(...inline(line));
  });
  return parts;
}

/** The reply so far as a fragment of formatted nodes. An unclosed fence is code to the end. */
export function formatStreaming(text) {
  const out = document.createDocumentFragment();
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let paragraph = [];
  let list = null; // {element, ordered}
  let quote = [];

  const flushParagraph = () => {
    if (paragraph.length) out.append(node("p", ...withBreaks(paragraph)));
    paragraph = [];
  };
  const flushList = () => {
    if (list) out.append(list.element);
    list = null;
  };
  const flushQuote = () => {
    if (quote.length) out.append(node("blockquote", node("p", ...withBreaks(quote))));
    quote = [];
  };
  const flushAll = () => {
    flushParagraph();
    flushList();
    flushQuote();
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (FENCE.test(line)) {
      flushAll();
      const mark = FENCE.exec(line)[1];
      const code = [];
      for (i += 1; i < lines.length && !lines[i].trimStart().startsWith(mark); i++) code.push(lines[i]);
      out.append(node("pre", node("code", code.join("\n") + (code.length ? "\n" : ""))));
      continue;
    }
    let match;
    if (!line.trim()) {
      flushAll();
    } else if ((match = HEADING.exec(line))) {
      flushAll();
      out.append(node(`h${match[1].length}`, ...inline(match[2])));
    } else if (RULE.test(line) && !paragraph.length) {
      flushAll();
      out.append(document.createElement("hr"));
    } else if ((match = BULLET.exec(line)) || (match = NUMBERED.exec(line))) {
      flushParagraph();
      flushQuote();
      const ordered = match.length === 3;
      if (!list || list.ordered !== ordered) {
        flushList();
        list = { element: document.createElement(ordered ? "ol" : "ul"), ordered };
        if (ordered && match[1] !== "1") list.element.start = Number(match[1]);
      }
      list.element.append(node("li", ...inline(match[match.length - 1])));
    } else if ((match = QUOTE.exec(line))) {
      flushParagraph();
      flushList();
      quote.push(match[1]);
    } else if (list && /^\s{2,}\S/.test(line)) {
      // A continued list item.
      const item = list.element.lastElementChild;
      item.append(document.createElement("br"), ...inline(line.trim()));
    } else {
      flushList();
      flushQuote();
      paragraph.push(line);
    }
  }
  flushAll();
  return out;
}
