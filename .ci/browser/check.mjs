// The real-browser check (issue 29): renders every markdown snapshot as GitHub would and fails on
// what a reviewer would stumble on. Run by .ci/run as `node .ci/browser/check.mjs OUT_DIR`.
//
// - markdown: Debian's cmark-gfm with GitHub's extensions (table, strikethrough, autolink,
//   tagfilter), styled with github-markdown-css, in a 900 px comment column;
// - mermaid: mermaid 11 from node_modules (pinned by package-lock.json), in the light and the
//   dark theme, as GitHub renders the blocks;
// - headless Chromium: Debian's, driven by puppeteer-core (no browser download).
//
// Fails, naming the snapshot, on: a mermaid parse or render error; the run's line (an
// xychart-beta's first line) under 3:1 contrast against #ffffff or #0d1117, or a pie slice under
// 3:1 against the background of its theme; a visible escape
// (`\_`), entity (`&lt;`) or tag (`<details>`) in the rendered text; a table wider than the
// column; a number wrapped away from its unit in a table cell; a decode chart whose tolerance band
// is drawn under 20 px tall (a regression then sits a few px above it); a code block wider than
// the column in a comment (measured with every fold open); and, for the comments the issue names (BUDGETS),
// "Why" starting further down than its budget or a folded comment taller than its budget.
// Rendered at 14 px, the font size of a GitHub comment. Writes screenshots (PNG) of every snapshot in both themes under OUT_DIR: the whole
// page, each chart, and the top of the page through the first chart.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const outArg = process.argv.slice(2).find((a) => !a.startsWith("--"));
const out = path.resolve(outArg ?? path.join(root, "target/browser-check"));
const COLUMN_PX = 900;
const BACKGROUNDS = { light: "#ffffff", dark: "#0d1117" };
const MIN_CONTRAST = 3;
/** GitHub's comment body font size (github-markdown-css alone sets 16 px, the file view's). */
const FONT_PX = 14;
/** The least height of the tolerance band in a decode chart. */
const MIN_BAND_PX = 20;
/** Snapshots held to a layout budget at 900 px and 14 px: "Why" within `why` px of the top, the
 * comment (folds closed) under `height` px. */
const BUDGETS = {
  it__check_output__story_allreduce: { why: 450, height: 900 },
  it__check_output__story_moe: { why: 450, height: 900 },
};

/** Every insta snapshot: tests/it/snapshots/*.snap and src/**/snapshots/*.snap. */
function snapshots() {
  const found = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".snap") && path.basename(dir) === "snapshots") found.push(p);
    }
  };
  walk(path.join(root, "src"));
  walk(path.join(root, "tests/it/snapshots"));
  return found.sort();
}

/** The snapshot's content without insta's `---` header. */
function body(text) {
  if (!text.startsWith("---\n")) return text;
  const end = text.indexOf("\n---\n", 3);
  return end < 0 ? text : text.slice(end + 5);
}

/** Markdown, not JSON or the terminal format: named so, or written with markdown's marks. */
function isMarkdown(file, text) {
  const t = text.trimStart();
  if (t.startsWith("{") || t.startsWith("[")) return false;
  if (/markdown/.test(path.basename(file))) return true;
  if (/_table\.snap$|_text\.snap$/.test(file)) return false;
  return /\*\*|\\_|^\|.*\|\s*$|^```|<details>/m.test(t);
}

function gfm(markdown) {
  return execFileSync(
    "cmark-gfm",
    ["--unsafe", "-e", "table", "-e", "strikethrough", "-e", "autolink", "-e", "tagfilter"],
    { input: markdown, encoding: "utf8", maxBuffer: 64 << 20 },
  );
}

function page(html, theme) {
  const css = fs.readFileSync(
    path.join(here, `node_modules/github-markdown-css/github-markdown-${theme}.css`),
    "utf8",
  );
  return `<!doctype html><html><head><meta charset="utf-8"><style>${css}
body { margin: 0; background: ${BACKGROUNDS[theme]}; }
.markdown-body { box-sizing: border-box; width: ${COLUMN_PX}px; padding: 16px; font-size: ${FONT_PX}px; }
</style></head><body><article class="markdown-body">${html}</article></body></html>`;
}

/** A CSS colour as [r, g, b], 0-255, from rgb()/rgba()/#hex. */
function rgb(c) {
  c = c.trim();
  let m = c.match(/^#([0-9a-f]{3}|[0-9a-f]{6})$/i);
  if (m) {
    let h = m[1];
    if (h.length === 3) h = [...h].map((x) => x + x).join("");
    return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  }
  m = c.match(/^rgba?\(([^)]+)\)$/i);
  if (m) return m[1].split(",").slice(0, 3).map((x) => parseFloat(x));
  throw new Error(`cannot read the colour ${c}`);
}

/** `colour` drawn at `opacity` over `background`, as rgb(). */
function blend(colour, background, opacity) {
  const a = Number.isFinite(opacity) ? opacity : 1;
  const [f, b] = [rgb(colour), rgb(background)];
  return `rgb(${f.map((v, i) => v * a + b[i] * (1 - a)).join(", ")})`;
}

/** WCAG 2 contrast of two CSS colours given as rgb()/#hex. */
function contrast(a, b) {
  const lum = (c) => {
    const [r, g, bl] = rgb(c).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)];
  return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
}

/** In the page: renders each mermaid block in `theme`, then reports what a reviewer would see. */
async function inspect(p, theme, isComment) {
  return p.evaluate(
    async (theme, columnPx, isComment) => {
      const problems = [];
      const runColours = [];
      const sliceColours = [];
      mermaid.initialize({ startOnLoad: false, theme: theme === "dark" ? "dark" : "default" });
      const blocks = [...document.querySelectorAll("pre > code.language-mermaid")];
      let i = 0;
      for (const code of blocks) {
        const source = code.textContent;
        const pre = code.parentElement;
        const div = document.createElement("div");
        div.className = "mermaid-chart";
        try {
          await mermaid.parse(source);
          const { svg } = await mermaid.render(`chart${i++}`, source);
          div.innerHTML = svg;
          pre.replaceWith(div);
        } catch (e) {
          problems.push(`mermaid block ${i} does not parse or render: ${String(e.message ?? e).split("\n").slice(0, 3).join(" ")}`);
          continue;
        }
        if (/^\s*(%%.*\n\s*)*xychart-beta/.test(source)) {
          const lines = [...div.querySelectorAll('g[class*="line-plot-"] path')];
          const first = lines[0];
          if (first) runColours.push({ chart: i, colour: first.getAttribute("stroke") ?? getComputedStyle(first).stroke });
          // The decode chart's band: its third and fourth lines (baseline + and - tolerance).
          if (lines.length === 4 && /x-axis "decode step/.test(source)) {
            const [upper, lower] = [lines[2], lines[3]].map((l) => l.getBoundingClientRect());
            const band = Math.abs(lower.top - upper.top);
            if (band < 20) problems.push(`chart ${i}: the tolerance band is ${band.toFixed(1)} px tall, under 20 px: a regression would sit a few px above it`);
          }
        }
        if (/^\s*(%%.*\n\s*)*pie\b/.test(source)) {
          for (const [n, slice] of [...div.querySelectorAll("path.pieCircle")].entries()) {
            const style = getComputedStyle(slice);
            sliceColours.push({ chart: i, slice: n + 1, colour: style.fill, opacity: parseFloat(style.opacity) * parseFloat(style.fillOpacity || "1") });
          }
        }
      }
      // The text and the tables are the same in both themes: checked once, in the light one.
      if (theme === "dark") return { problems, runColours, sliceColours };
      // Text a reader sees, outside code blocks (their content is literal by design).
      const article = document.querySelector("article");
      const clone = article.cloneNode(true);
      clone.querySelectorAll("pre, svg, .mermaid-chart").forEach((e) => e.remove());
      // In code spans a backslash is literal: only the escapes of markdown's own marks are
      // flagged there (a regex's `\.` is not).
      const spans = [...clone.querySelectorAll("code")].map((c) => c.textContent).join("\n");
      const escaped = spans.match(/\\[_*<>`#]/);
      if (escaped) {
        const at = spans.indexOf(escaped[0]);
        problems.push(`a markdown escape shown as text (in code): ${JSON.stringify(spans.slice(Math.max(0, at - 40), at + 40))}`);
      }
      clone.querySelectorAll("code").forEach((e) => e.remove());
      const text = clone.innerText;
      const shown = [
        [/\\[!-\/:-@\[-`{-~]/, "a markdown escape shown as text"],
        [/&(lt|gt|amp|quot|#\d+|#x[0-9a-f]+);/i, "an HTML entity shown as text"],
        [/<\/?(details|summary|br|b|i|em|strong|code|sub|sup|div|span|p|a|img|table|tr|td|th)\b[^>]*>/i, "an HTML tag shown as text"],
      ];
      for (const [re, what] of shown) {
        const m = text.match(re);
        if (m) {
          const at = text.indexOf(m[0]);
          problems.push(`${what}: ${JSON.stringify(text.slice(Math.max(0, at - 40), at + 40))}`);
        }
      }
      // Tables wider than the column (github-markdown-css lets a wide table scroll).
      const column = article.getBoundingClientRect();
      document.querySelectorAll("table").forEach((t, n) => {
        const right = t.getBoundingClientRect().left + t.scrollWidth;
        if (t.scrollWidth > t.clientWidth + 1 || right > column.right + 1) {
          // textContent: a table folded in <details> has no innerText.
          const head = [...(t.querySelector("tr")?.children ?? [])].map((c) => c.textContent.trim()).join(" | ").slice(0, 60);
          problems.push(`table ${n + 1} ("${head}") is ${t.scrollWidth} px wide, wider than the ${columnPx} px comment column`);
        }
      });
      // A number wrapped away from its unit in a table cell ("20.974" on one line, "ms" below).
      const unitRe = /[+\-−±]?\d[\d.,]*(\s+)(ms|µs|us|ns|s|pp|%|tok\/s|GB|MB|KB|TFLOP\/s|TB\/s)(?![\w])/g;
      for (const cell of document.querySelectorAll("td, th")) {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (const m of node.data.matchAll(unitRe)) {
            const r = document.createRange();
            r.setStart(node, m.index);
            r.setEnd(node, m.index + m[0].length);
            const tops = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
            if (tops.size > 1) problems.push(`a number wrapped away from its unit in a table cell: ${JSON.stringify(cell.textContent.trim().slice(0, 60))}`);
          }
        }
      }
      // Layout: where "Why" starts and how tall the comment is with its folds closed.
      const top = column.top + window.scrollY;
      const why = [...article.querySelectorAll("h1, h2, h3, h4")].find((h) => h.textContent.trim() === "Why");
      const layout = {
        why: why ? Math.round(why.getBoundingClientRect().top + window.scrollY - top) : null,
        height: Math.round(column.height),
      };
      // Code blocks wider than the column, with every fold open (a folded one is one click away).
      // Comments only: `report`'s "full name" blocks are reference text, kept whole on purpose.
      article.querySelectorAll("details").forEach((d) => { d.open = true; });
      if (isComment) article.querySelectorAll("pre").forEach((pre, n) => {
        if (pre.scrollWidth > columnPx) problems.push(`code block ${n + 1} is ${pre.scrollWidth} px wide, wider than the ${columnPx} px comment column`);
      });
      article.querySelectorAll("details").forEach((d) => { d.open = false; });
      return { problems, runColours, sliceColours, layout };
    },
    theme,
    COLUMN_PX,
    isComment,
  );
}

/** Renders `files` ({ f, text }) in both themes: the problems found, each naming its file. */
async function check(browser, files) {
  const mermaidJs = path.join(here, "node_modules/mermaid/dist/mermaid.min.js");
  const failures = [];
  let charts = 0;
  let slices = 0;
  const layouts = [];
  for (const { f, text } of files) {
    const html = gfm(text);
    const name = path.basename(f).replace(/\.(snap|md)$/, "");
    const rel = path.relative(root, f);
    for (const theme of ["light", "dark"]) {
      const p = await browser.newPage();
      await p.setViewport({ width: COLUMN_PX, height: 800, deviceScaleFactor: 1 });
      await p.setContent(page(html, theme), { waitUntil: "load" });
      await p.addScriptTag({ path: mermaidJs });
      const { problems, runColours, sliceColours, layout } = await inspect(p, theme, !/__report__/.test(name));
      const budget = BUDGETS[name];
      if (layout && (budget || selfTestBudget(text))) {
        const b = budget ?? selfTestBudget(text);
        layouts.push(`${name}: Why at ${layout.why ?? "—"} px (budget ${b.why}), ${layout.height} px tall folded (budget ${b.height})`);
        if (layout.why === null || layout.why > b.why) problems.push(`"Why" starts ${layout.why ?? "nowhere"} px down, more than ${b.why} px`);
        if (layout.height >= b.height) problems.push(`the comment is ${layout.height} px tall with its folds closed, ${b.height} px or more`);
      }
      // A pie slice against the background it is drawn on (mermaid's default palette starts
      // with #ECECFF, almost invisible on white).
      for (const { chart, slice, colour, opacity } of sliceColours) {
        slices++;
        // As drawn: mermaid's slices are translucent unless pieOpacity says otherwise.
        const c = contrast(blend(colour, BACKGROUNDS[theme], opacity), BACKGROUNDS[theme]);
        if (c < MIN_CONTRAST) {
          problems.push(`chart ${chart}: pie slice ${slice} ${colour} has ${c.toFixed(2)}:1 contrast on the ${theme} background ${BACKGROUNDS[theme]}, under ${MIN_CONTRAST}:1`);
        }
      }
      for (const { chart, colour } of runColours) {
        charts++;
        for (const [bgName, bg] of Object.entries(BACKGROUNDS)) {
          const c = contrast(colour, bg);
          if (c < MIN_CONTRAST) {
            problems.push(`chart ${chart}: the run's line ${colour} has ${c.toFixed(2)}:1 contrast on the ${bgName} background ${bg}, under ${MIN_CONTRAST}:1`);
          }
        }
      }
      for (const problem of problems) failures.push({ rel, text: `${rel} (${theme}): ${problem}` });
      await p.screenshot({ path: path.join(out, `${name}-${theme}.png`), fullPage: true });
      // Each chart on its own too: small enough to look at, or to put in the docs.
      const shown = await p.$$(".mermaid-chart");
      for (const [n, el] of shown.entries()) {
        await el.screenshot({ path: path.join(out, `${name}-${theme}-chart${n + 1}.png`) });
      }
      // The top of the comment through its first chart (the first line, Why, the chart): what
      // the README shows (docs/comment.png is the allreduce story's, light).
      const bottom = await p.evaluate(() => {
        const chart = document.querySelector(".mermaid-chart");
        return chart ? chart.getBoundingClientRect().bottom + window.scrollY : null;
      });
      if (bottom) {
        const height = Math.ceil(bottom);
        await p.screenshot({ path: path.join(out, `${name}-${theme}-top.png`), clip: { x: 0, y: 0, width: COLUMN_PX, height } });
      }
      await p.close();
    }
  }
  return { failures, charts, slices, layouts };
}

/** A self-test case's layout budget: a line `<!-- budget: why=N height=M -->`. */
function selfTestBudget(text) {
  const m = text.match(/<!-- budget: why=(\d+) height=(\d+) -->/);
  return m ? { why: Number(m[1]), height: Number(m[2]) } : null;
}

/** The self-test's cases: .ci/browser/selftest/*.md, each naming the problem it must raise in a
 * first line `<!-- expect: TEXT -->` (or `<!-- expect: nothing -->`). */
function selfTestCases() {
  const dir = path.join(here, "selftest");
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith(".md"))
    .sort()
    .map((n) => {
      const f = path.join(dir, n);
      const text = fs.readFileSync(f, "utf8");
      const m = text.match(/^<!-- expect: (.*) -->/);
      if (!m) throw new Error(`${f}: no first line <!-- expect: ... -->`);
      return { f, text, expect: m[1] };
    });
}

async function main() {
  const selfTest = process.argv.includes("--self-test");
  fs.mkdirSync(out, { recursive: true });
  const files = selfTest
    ? selfTestCases()
    : snapshots()
        .map((f) => ({ f, text: body(fs.readFileSync(f, "utf8")) }))
        .filter(({ f, text }) => isMarkdown(f, text))
        .filter(({ f }) => !process.env.ONLY || new RegExp(process.env.ONLY).test(f));
  if (files.length === 0) throw new Error("no markdown snapshot found under tests/it/snapshots or src/**/snapshots");
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--font-render-hinting=none"],
  });
  let result;
  try {
    result = await check(browser, files);
  } finally {
    await browser.close();
  }
  const { failures, charts, slices, layouts } = result;
  if (!selfTest) {
    const rendered = new Set(files.map(({ f }) => path.basename(f).replace(/\.(snap|md)$/, "")));
    for (const name of Object.keys(BUDGETS)) {
      if (!rendered.has(name)) failures.push({ rel: name, text: `${name}: held to a layout budget, but no such markdown snapshot was rendered` });
    }
  }
  for (const l of layouts) console.log(`browser check layout: ${l}`);
  if (selfTest) {
    let wrong = 0;
    for (const { f, expect } of files) {
      const rel = path.relative(root, f);
      const got = failures.filter((x) => x.rel === rel).map((x) => x.text);
      const ok = expect === "nothing" ? got.length === 0 : got.some((g) => g.includes(expect));
      if (!ok) {
        wrong++;
        console.error(`browser check self-test: ${rel} should raise "${expect}", raised: ${got.length ? got.join("; ") : "nothing"}`);
      }
    }
    console.log(`browser check self-test: ${files.length - wrong} of ${files.length} cases caught as expected`);
    process.exit(wrong ? 1 : 0);
  }
  console.log(`browser check: ${files.length} markdown snapshots rendered in 2 themes, ${charts} run lines and ${slices} pie slices measured; screenshots in ${out}`);
  if (failures.length) {
    for (const f of [...new Set(failures.map((x) => x.text))]) console.error(`browser check: ${f}`);
    console.error(`browser check: ${failures.length} problem(s)`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(`browser check: ${e.stack ?? e}`);
  process.exit(2);
});
