// The lab book's script: draws each plotly figure from the JSON beside it (plotly.js ships with the site), fitted
// to the column; renders the prose's maths with the vendored KaTeX (on pages that have maths); and answers the
// search page from search-index.js. Nothing is fetched: all of it works from file:// too.
(function () {
  "use strict";
  function drawFigures() {
    const jobs = [];
    document.querySelectorAll("script.plotly-data").forEach(function (data) {
      const div = document.getElementById(data.dataset.for);
      if (!div || !window.Plotly) return;
      try {
        const fig = JSON.parse(data.textContent);
        const config = Object.assign({responsive: true, displaylogo: false}, fig.config || {});
        jobs.push(Plotly.newPlot(div, fig.data || [], fitted(fig.layout || {}, div), config));
      } catch (err) {
        div.textContent = "This figure could not be drawn: " + err;
        div.classList.add("figure-error");
      }
    });
    return Promise.all(jobs);
  }

  // A figure laid out wider than the column (a notebook's 1,000-px figure beside the lesson list) is drawn at
  // the column's width instead, keeping its height; narrower ones keep their size.
  function fitted(layout, div) {
    const room = div.parentElement ? div.parentElement.clientWidth : 0;
    if (room > 0 && typeof layout.width === "number" && layout.width > room) {
      layout = Object.assign({}, layout, {autosize: true});
      delete layout.width;
      div.classList.add("fitted");
    }
    return layout;
  }

  // $…$, $$…$$, \(…\), \[…\] in the prose (markdown cells and markdown outputs), as JupyterLab renders them.
  // trust: false, so \href, \url and \includegraphics render as text and fetch nothing.
  function renderMaths() {
    if (!window.renderMathInElement) return;
    document.querySelectorAll(".cell.markdown, .output.markdown").forEach(function (el) {
      try {
        renderMathInElement(el, {
          delimiters: [{left: "$$", right: "$$", display: true}, {left: "\\[", right: "\\]", display: true},
                       {left: "$", right: "$", display: false}, {left: "\\(", right: "\\)", display: false}],
          throwOnError: false, trust: false, strict: "ignore", maxExpand: 1000, maxSize: 50,
        });
      } catch (err) {
        window.BOOK_MATHS_ERROR = String(err);
      }
    });
    window.BOOK_MATHS = document.querySelectorAll(".katex").length;
  }

  function search() {
    const box = document.getElementById("search-q"), list = document.getElementById("search-results");
    if (!box || !list || !window.BOOK_INDEX) return;
    const q = new URLSearchParams(window.location.search).get("q") || "";
    box.value = q;
    const terms = q.toLowerCase().split(/\s+/).filter(Boolean);
    if (!terms.length) return;
    const hits = [];
    for (const e of window.BOOK_INDEX) {
      const hay = (e.title + " " + e.heading + " " + e.text).toLowerCase();
      if (!terms.every(t => hay.includes(t))) continue;
      let score = 0;
      for (const t of terms) score += hay.split(t).length - 1 + (e.heading.toLowerCase().includes(t) ? 5 : 0);
      hits.push([score, e]);
    }
    hits.sort((a, b) => b[0] - a[0]);
    list.replaceChildren();
    if (!hits.length) {
      const li = document.createElement("li");
      li.textContent = "No section mentions " + q + ".";
      list.appendChild(li);
    }
    for (const [, e] of hits.slice(0, 50)) {
      const i = e.text.toLowerCase().indexOf(terms[0]);
      const snippet = e.text.slice(Math.max(0, i - 80), i + 160);
      // built from text nodes and a href set as a property: nothing in the index is ever parsed as HTML
      const li = document.createElement("li"), a = document.createElement("a"), div = document.createElement("div");
      a.setAttribute("href", e.page + e.anchor);
      a.textContent = e.title + (e.heading !== e.title ? " › " + e.heading : "");
      div.className = "snippet";
      div.textContent = "…" + snippet + "…";
      li.append(a, div);
      list.appendChild(li);
    }
  }

  // "how to run it live" links open the box at the top of the page
  function openLive() {
    const box = document.getElementById("run-live");
    if (box && window.location.hash === "#run-live") box.open = true;
  }

  function start() {
    renderMaths();
    search();
    openLive();
    window.addEventListener("hashchange", openLive);
    drawFigures().then(() => { window.BOOK_READY = true; },
                       (err) => { window.BOOK_READY = true; window.BOOK_ERROR = String(err); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
