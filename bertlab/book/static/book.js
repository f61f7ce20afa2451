// The lab book's only script: draws each plotly figure from the JSON beside it (plotly.js ships with the site),
// and answers the search page from search-index.js. Nothing is fetched: both work from file:// too.
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
        jobs.push(Plotly.newPlot(div, fig.data || [], fig.layout || {}, config));
      } catch (err) {
        div.textContent = "This figure could not be drawn: " + err;
        div.classList.add("figure-error");
      }
    });
    return Promise.all(jobs);
  }

  function escapeHtml(s) {
    return s.replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
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
    list.innerHTML = hits.length ? "" : "<li>No section mentions " + escapeHtml(q) + ".</li>";
    for (const [, e] of hits.slice(0, 50)) {
      const i = e.text.toLowerCase().indexOf(terms[0]);
      const snippet = e.text.slice(Math.max(0, i - 80), i + 160);
      const li = document.createElement("li");
      li.innerHTML = '<a href="' + e.page + e.anchor + '">' + escapeHtml(e.title) +
        (e.heading !== e.title ? " › " + escapeHtml(e.heading) : "") + "</a><div class=snippet>…" +
        escapeHtml(snippet) + "…</div>";
      list.appendChild(li);
    }
  }

  // "how to run it live" links open the box at the top of the page
  function openLive() {
    const box = document.getElementById("run-live");
    if (box && window.location.hash === "#run-live") box.open = true;
  }

  function start() {
    search();
    openLive();
    window.addEventListener("hashchange", openLive);
    drawFigures().then(() => { window.BOOK_READY = true; },
                       (err) => { window.BOOK_READY = true; window.BOOK_ERROR = String(err); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
