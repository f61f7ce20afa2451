"""Every notebook, run in JupyterLab in a real browser, looks right to a person.

nbval (the README's test command runs it too) proves each notebook runs; it cannot see what the browser
draws. This module opens each `notebooks/*.ipynb` (found when the tests are collected, so a new notebook is
covered without touching this file) in JupyterLab, in headless Chromium driven by Playwright, runs all
cells, and asserts what a person would see:

- no error anywhere: no error output, no traceback on stderr, no widget that failed to load, no bertlab
  widget showing its red error line, no uncaught JavaScript error (`pageerror`);
- every plotly figure drawn (an `.main-svg` in every plotly output);
- every bertviz view drawn with its tokens (head view: the token column on both sides; model view: its
  thumbnails, and the tokens once a thumbnail is clicked);
- every widget driven like a person would (a slider moved with the keyboard, a sentence typed, a token
  or button clicked), each with its figure or label changing;
- not one request to anything but 127.0.0.1 (and data:/blob:): everything else is aborted and listed.

A screenshot of each notebook (the whole notebook, and the driven widget) goes to a temporary folder named
in the summary at the end; `BERTLAB_SAVE_SCREENSHOTS=1` also copies them to docs/screenshots/.

Needs the system's Chromium (`scripts/install_browser.sh` installs Debian's; `BROWSER_PATH` names another)
and the `playwright` package; Playwright's own browser downloads are never used. Without them the module is
skipped. `BERTLAB_BROWSER_TIMEOUT` (seconds, default 120) bounds running one notebook.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from pathlib import Path

import pytest

from browser.conftest import CHROMIUM, CHROMIUM_ARGS, VIEWPORT

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))

if importlib.util.find_spec("playwright") is None:
    pytest.skip("the browser test needs Playwright: pip install playwright (its browser downloads are not "
                "needed: the system's chromium is used)", allow_module_level=True)
if CHROMIUM is None:
    pytest.skip("the browser test needs the system's Chromium: bash scripts/install_browser.sh "
                "(apt-get install chromium), or set BROWSER_PATH", allow_module_level=True)
if importlib.util.find_spec("jupyterlab") is None:
    pytest.skip("the browser test needs JupyterLab: pip install 'bertlab[notebooks]'", allow_module_level=True)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_TIMEOUT_MS = int(float(os.environ.get("BERTLAB_BROWSER_TIMEOUT", "120")) * 1000)
WIDGET_ERROR_RGB = "rgb(159, 28, 28)"     # the colour of a bertlab widget's error line (Widget.say)
SHOT_MAX_HEIGHT = 12000                   # px: the whole-notebook screenshot stops here

PANEL = "window.jupyterapp.shell.currentWidget"
NB = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"
# Lab 4 marks text outputs with data-mime-type, but not widget or plotly outputs: find those by their content.
# A widget area is a top-level output holding a widget (an Output widget inside it has output areas of its own).
WIDGET_AREA = (".jp-OutputArea-output:has(> .jupyter-widgets):not(.jupyter-widgets *), "
               ".jp-OutputArea-output:has(.bl-view)")     # a bertlab view (an anywidget: viz.views)
PLOTLY = ".jp-RenderedPlotly, .js-plotly-plot"


# ---- the browser ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium_context(lab, network, tmp_path_factory):
    """A persistent Chromium context (Playwright rejects --user-data-dir in args) with the offline route."""
    from playwright.sync_api import sync_playwright

    def route(r):
        url = r.request.url
        if network.allows(url):
            r.continue_()
        else:
            network.blocked.append(url)
            r.abort()

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport=VIEWPORT, service_workers="block")
        context.set_default_timeout(30_000)
        context.route("**/*", route)
        try:
            yield context
        finally:
            context.close()


class LabPage:
    """One JupyterLab page, reused from notebook to notebook (loading Lab costs ~5 s on two cores): each test
    opens its notebook in it and closes it (kernel shut down) at the end. After a failed test the page is
    replaced, so one broken notebook cannot spoil the next."""

    def __init__(self, context, lab, network):
        self.context, self.lab, self.network = context, lab, network
        self.page = None
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []

    def get(self):
        if self.page is None or self.page.is_closed():
            self._open()
        return self.page

    def replace(self) -> None:
        if self.page is not None and not self.page.is_closed():
            self.page.close()
        self.page = None

    def _open(self) -> None:
        page = self.context.new_page()
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        page.on("websocket", lambda ws: self.network.websockets.append(ws.url))
        workspace = "browser-test-" + os.urandom(3).hex()       # a fresh workspace: nothing is restored
        page.goto(f"{self.lab.url}/lab/workspaces/{workspace}?token={self.lab.token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=90_000, polling=100)
        page.evaluate("""() => window.jupyterapp.restored.then(() => {
          const shell = window.jupyterapp.shell;
          shell.collapseLeft();                                  // no file browser: more room for the notebook
          for (const w of [...shell.widgets('main')]) w.close(); // no Launcher tab
        })""")
        self.page = page

    def open_notebook(self, path: str) -> None:
        self.page.evaluate("(path) => { window.jupyterapp.commands.execute('docmanager:open', "
                           "{path, factory: 'Notebook'}); }", path)

    def close_notebook(self) -> None:
        """Close the current notebook without a "save?" dialog, its kernel shut down; back to 1280 × 900."""
        self.page.evaluate(f"""async () => {{
          const w = {PANEL};
          if (!w || !w.context) return;
          w.context.model.dirty = false;
          if (w.sessionContext) await w.sessionContext.shutdown();
          w.dispose();
        }}""")
        self.page.set_viewport_size(VIEWPORT)


@pytest.fixture(scope="module")
def lab_page(chromium_context, lab, network):
    return LabPage(chromium_context, lab, network)


# ---- what the page shows, read in the page ------------------------------------------------------------

KERNEL_IDLE = """(path) => {
  const app = window.jupyterapp; if (!app) return false;
  const w = app.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path || !w.sessionContext) return false;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle';
}"""

# Errors as the cell models hold them (Lab draws an error output as stderr text): error outputs, and stderr
# that shows a traceback or an error line (a warning on stderr is not an error)
ERROR_OUTPUTS = r"""(w) => w.content.widgets.flatMap((c, i) => {
  if (c.model.type !== 'code') return [];
  const outs = c.model.outputs, found = [];
  const plain = t => (Array.isArray(t) ? t.join('') : String(t || '')).replace(/\x1b\[[0-9;]*m/g, '');
  for (let j = 0; j < outs.length; j++) {
    const o = outs.get(j).toJSON();
    if (o.output_type === 'error')
      found.push(`cell ${i}: error output: ${o.ename}: ${o.evalue}\n` + plain((o.traceback || []).join('\n')));
    else if (o.output_type === 'stream' && o.name === 'stderr'
             && /Traceback|^\w*(Error|Exception)\b[:\s]|^ERROR\b/m.test(plain(o.text)))
      found.push(`cell ${i}: stderr shows an error:\n` + plain(o.text));
  }
  return found;
})"""

# done: the kernel is idle and every non-empty code cell has its execution count; or an error stopped the run
RUN_FINISHED = f"""() => {{
  const w = {PANEL};
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  if (k && k.status === 'dead') return {{dead: true}};
  if (!k || k.status !== 'idle') return false;
  const cells = w.content.widgets.filter(c => c.model.type === 'code' && c.model.sharedModel.getSource().trim());
  const pending = cells.filter(c => c.model.executionCount === null || c.model.executionCount === undefined).length;
  const errored = ({ERROR_OUTPUTS})(w).length > 0;
  return (pending === 0 || errored) ? {{cells: cells.length, pending, errored}} : false;
}}"""

PLOTS_DRAWN = f"""() => [...document.querySelectorAll('{NB} :is({PLOTLY})')].every(o => o.querySelector('.main-svg'))"""

# everything the assertions need, in one pass over the notebook
INSPECT = f"""() => {{
  const root = {PANEL}.node;
  const text = e => (e.innerText || e.textContent || '').trim();
  const cellOf = e => {{
    const cell = e.closest('.jp-Cell'); if (!cell) return '?';
    const cells = [...root.querySelectorAll('.jp-Cell')];
    const p = cell.querySelector('.jp-InputPrompt');
    return `cell ${{cells.indexOf(cell)}} ${{p ? text(p) : ''}}`;
  }};
  const problems = ({ERROR_OUTPUTS})({PANEL}).map(e => e.slice(0, 3000));
  root.querySelectorAll('.jp-OutputArea-output').forEach(e => {{
    const t = text(e);
    for (const bad of ['Error displaying widget', 'Javascript Error', 'No renderer could be found',
                       'Failed to load model class', 'require is not defined'])
      if (t.includes(bad)) problems.push(`${{cellOf(e)}}: the output says "${{bad}}":\\n${{t.slice(0, 500)}}`);
  }});
  root.querySelectorAll('.widget-html-content *').forEach(e => {{
    if (getComputedStyle(e).color === '{WIDGET_ERROR_RGB}' && text(e))
      problems.push(`${{cellOf(e)}}: a widget shows an error: ${{text(e).slice(0, 500)}}`);
  }});
  root.querySelectorAll('.widget-interact').forEach(w => {{
    const out = w.querySelector('.widget-output');
    if (out && !out.querySelector('.jp-OutputArea-output'))
      problems.push(`${{cellOf(w)}}: an interact widget shows nothing below its controls `
                    + '(ipywidgets.interactive does not display what the function returns: use interact, '
                    + 'or display() inside the function)');
  }});
  const plots = [...root.querySelectorAll('{PLOTLY}')];
  const undrawn = plots.filter(o => !o.querySelector('.main-svg'))
                       .map(o => `${{cellOf(o)}}: a plotly figure is not drawn: ${{text(o).slice(0, 200)}}`);
  const bertviz = [...root.querySelectorAll('[id^=bertviz]')].map(v => ({{
    id: v.id, where: cellOf(v),
    texts: [...v.querySelectorAll('svg text')].map(t => t.textContent),
    tokens: [...v.querySelectorAll('svg text.token')].map(t => t.textContent)}}));
  return {{problems, undrawn, bertviz, figures: root.querySelectorAll('.js-plotly-plot:has(.main-svg)').length,
          widgets: root.querySelectorAll('{WIDGET_AREA}').length}};
}}"""

# what a widget area shows: its figures' text and graphics, its labels and HTML (not the control's own value)
SIGNATURE = """(area) => {
  const text = [], marks = [];
  area.querySelectorAll('.main-svg').forEach(s => {
    text.push(s.textContent);
    s.querySelectorAll('image').forEach(i => marks.push(i.getAttribute('href') || i.getAttribute('xlink:href') || ''));
    s.querySelectorAll('path, rect').forEach(p => marks.push((p.getAttribute('d') || '') + (p.getAttribute('width') || '')));
  });
  area.querySelectorAll('.widget-label, .widget-html-content, .widget-output .jp-RenderedText, '
                        + '.widget-output .jp-RenderedHTMLCommon, .bl-view .bl-html, .bl-view .bl-label, '
                        + '.bl-view [data-kind=output]:not(:has(.main-svg))')      // a view's HTML pane (interact)
      .forEach(e => text.push(e.textContent));
  let h = 5381; const m = marks.join('|');
  for (let i = 0; i < m.length; i++) h = ((h * 33) ^ m.charCodeAt(i)) >>> 0;
  const plots = [...area.querySelectorAll('.js-plotly-plot')];
  return {text: text.join(' | '), marks: h, plots: plots.length,
          drawn: plots.every(p => p.querySelector('.main-svg'))};
}"""


# on a time-out: the kernel's state and the cells still waiting, so the failure says where it got stuck
STATE = f"""() => {{
  const w = window.jupyterapp && {PANEL};
  if (!w || !w.content) return 'no notebook is open';
  const k = w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  const waiting = w.content.widgets.map((c, i) => [c, i])
    .filter(([c]) => c.model.type === 'code' && c.model.sharedModel.getSource().trim() && c.model.executionCount == null)
    .map(([c, i]) => `cell ${{i}} [${{c.promptNode ? c.promptNode.textContent : ''}}] `
                     + c.model.sharedModel.getSource().split('\\n')[0].slice(0, 100));
  return `kernel: ${{k ? k.status : 'none'}}; cells without an execution count: ${{waiting.length}}\\n  `
         + waiting.slice(0, 8).join('\\n  ');
}}"""


def _wait(page, js, arg=None, timeout=RUN_TIMEOUT_MS, what=""):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        return page.wait_for_function(js, arg=arg, timeout=timeout, polling=250).json_value()
    except PlaywrightTimeout:
        try:
            state = page.evaluate(STATE)
        except Exception as e:                  # the page itself is stuck
            state = f"(the page did not answer: {e})"
        pytest.fail(f"timed out after {timeout / 1000:.0f} s waiting for {what}; {state}")


def _kernel_idle(page) -> bool:
    return page.evaluate(f"() => {{ const k = {PANEL}.sessionContext.session.kernel; return k && k.status === 'idle'; }}")


# ---- driving a widget -------------------------------------------------------------------------------------

def _candidates(area):
    """(kind, locator) for each control in a widget area a person might use: sliders, filled-in text boxes,
    an unselected option of a row of toggle buttons (a token to click), toggle buttons and buttons."""
    out = []
    for h in area.locator(".widget-slider:not([disabled]) .noUi-handle").filter(visible=True).all():
        out.append(("slider", h))
    for t in area.locator(".widget-text input[type=text], .widget-textarea textarea").filter(visible=True).all():
        if t.is_enabled() and t.input_value().strip():
            out.append(("text", t))
    for row in area.locator(".widget-toggle-buttons").filter(visible=True).all():
        for b in row.locator("button:not(.mod-active)").filter(visible=True).all()[:1]:
            out.append(("click", b))
    for b in area.locator(".widget-toggle-button:not(.widget-toggle-buttons *), .widget-button").filter(visible=True).all():
        if b.is_enabled():
            out.append(("click", b))
    # a bertlab view (bertlab.viz.views) draws its own controls: a range input, text boxes, buttons
    for r in area.locator(".bl-view input[type=range]:not([disabled])").filter(visible=True).all():
        out.append(("range", r))
    for t in area.locator(".bl-view input[type=text], .bl-view textarea").filter(visible=True).all():
        if t.is_enabled() and t.input_value().strip():
            out.append(("text", t))
    for b in area.locator(".bl-view button.bl-btn:not([disabled]):not([aria-pressed=true])").filter(visible=True).all():
        out.append(("click", b))
    return out


def _describe(kind, control) -> str:
    box = control.locator("xpath=ancestor::*[contains(@class,'widget-inline-hbox') or contains(@class,"
                          "'widget-toggle-buttons')][1]")
    label = box.locator(".widget-label").first.text_content() if box.count() else ""
    own = control.text_content() if kind == "click" else ""
    return f"{kind} {(label or own or '').strip()!r}".strip()


def _act(page, kind, control) -> None:
    if kind == "slider":
        now, top = control.get_attribute("aria-valuenow"), control.get_attribute("aria-valuemax")
        key = "ArrowLeft" if now is not None and top is not None and float(now) >= float(top) else "ArrowRight"
        control.focus()
        control.press(key)
    elif kind == "range":
        at_end = control.evaluate("r => +r.value >= +r.max")
        control.focus()
        control.press("ArrowLeft" if at_end else "ArrowRight")
    elif kind == "text":
        value = control.input_value().rstrip()
        changed = value[:-1] + " today" + value[-1] if value[-1:] in ".!?" else value + " today"
        control.fill(changed)
        if control.evaluate("e => e.tagName") == "INPUT":
            control.press("Enter")
        control.evaluate("e => e.blur()")
    else:
        control.click()


def _drive_a_widget(page, areas, tries: int = 3):
    """Use controls of `areas` until one changes what its widget shows. Returns (description, before, after,
    area)."""
    order = {"slider": 0, "range": 0, "text": 1, "click": 2}
    found = [(a, kind, c) for a in areas for kind, c in _candidates(a)]
    candidates = sorted(found, key=lambda x: order[x[1]])      # stable: page order within each kind
    assert candidates, (f"no widget to drive among {len(areas)} widget outputs: every notebook should let the "
                        "reader change something (a slider, a text box, a button) and see the result")
    tried = []
    for area, kind, control in candidates[:tries]:
        what = _describe(kind, control)
        before = area.evaluate(SIGNATURE)
        _act(page, kind, control)
        deadline = time.monotonic() + 30
        last = None
        while time.monotonic() < deadline:
            page.wait_for_timeout(300)
            now = area.evaluate(SIGNATURE)
            settled = (_kernel_idle(page) and now["drawn"] and now["plots"] >= before["plots"]
                       and (now["text"], now["marks"]) != (before["text"], before["marks"]))
            if settled and last == now:          # the same for two polls in a row: done redrawing
                return what, before, now, area
            last = now if settled else None
        tried.append(what)
    pytest.fail(f"driving a widget changed nothing that a person would see; tried: {', '.join(tried)}")


def _answer_course_widgets(page) -> list[str]:
    """Commit a prediction and answer a quiz question, as a learner does, and see each reveal.

    The generic driver above may press a Predict's commit button with nothing chosen (it then only nudges);
    here a choice is made first, so the result and the prediction show side by side, and a quiz answer
    shows every option explained. Returns what was done."""
    done = []
    predicts = page.locator(f"{NB} {WIDGET_AREA}", has_text="Predict first.")
    for i in range(predicts.count()):
        area = predicts.nth(i)
        commit = area.locator("button:not([disabled])", has_text="commit my prediction")
        if commit.count() == 0:
            continue
        radios = area.locator(".widget-radio-box input[type=radio], .bl-radio input[type=radio]")
        if radios.count():
            radios.first.check()
        else:
            box = area.locator(".widget-text input[type=text], .bl-view input[type=text]").first
            box.fill("1")
            box.press("Enter")
        commit.click()
        area.get_by_text("you predicted").wait_for(timeout=60_000)
        text = area.inner_text()
        assert "the result:" in text and ("as you predicted" in text or "not what you predicted" in text), text
        done.append("committed a prediction")
        break
    quizzes = page.locator(f"{NB} {WIDGET_AREA}", has_text="check your understanding")
    if quizzes.count():
        area = quizzes.first
        area.locator(".widget-radio-box input[type=radio], .bl-radio input[type=radio]").first.check()
        area.get_by_text("your answer").wait_for(timeout=30_000)
        area.get_by_text("answered right").first.wait_for(timeout=30_000)   # the score line updates after the marks
        text = area.inner_text()
        assert "✓" in text and "✗" in text and "answered right" in text, text      # every option marked
        done.append("answered a quiz question")
    return done


NEURON_VIEW_TITLES = {"Query q", "Key k", "q × k (elementwise)", "q ∙ k", "Softmax", "No token selected"}


def _check_bertviz(page, views) -> list[str]:
    problems = []
    for v in views:
        texts = v["texts"]
        if "Layers" in texts and "Heads" in texts:       # the model view: thumbnails, tokens on a click
            tokens = v["tokens"]
            if not tokens:                               # (a second click would close the detail again)
                page.locator(f'#{v["id"]} g:has(> rect.attn_background) > rect:last-child').first.click(force=True)
                tokens = page.locator(f'#{v["id"]} svg text.token').all_text_contents()
        elif "Query q" in texts and "Softmax" in texts:  # the neuron view: its column titles, then the tokens
            tokens = [t for t in texts if t.strip() not in NEURON_VIEW_TITLES]
        else:                                            # the head view: the tokens on the left and on the right
            tokens = texts
        half = len(tokens) // 2
        if not tokens or len(tokens) % 2 or tokens[:half] != tokens[half:] or not any(t.strip() for t in tokens):
            problems.append(f"{v['where']}: the bertviz view {v['id']} is not drawn with its tokens "
                            f"(svg text: {tokens[:12]}{'…' if len(tokens) > 12 else ''})")
    return problems


def _assert_offline_and_no_js_errors(notebook, network, blocked, page_errors) -> None:
    assert not blocked, f"{notebook} asked for something other than 127.0.0.1 (aborted):\n" + "\n".join(blocked)
    foreign_ws = [u for u in network.websockets if not network.allows(u)]
    assert not foreign_ws, f"websockets to other hosts: {foreign_ws}"
    assert not page_errors, f"JavaScript errors in {notebook}:\n" + "\n".join(page_errors)


def _shoot_notebook(page, path: Path) -> Path:
    """The whole notebook in one image: the page made as tall as the notebook (up to SHOT_MAX_HEIGHT)."""
    extra = page.evaluate(f"""() => {{
      const w = {PANEL}; if (!w || !w.content) return 0;
      const n = w.content.node, outer = n.querySelector('.jp-WindowedPanel-outer') || n;
      outer.scrollTop = 0;
      return outer.scrollHeight - outer.clientHeight;
    }}""")
    height = max(VIEWPORT["height"], min(VIEWPORT["height"] + int(extra), SHOT_MAX_HEIGHT))
    page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
    page.wait_for_timeout(800)
    page.screenshot(path=path)
    return path


# ---- the test ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_in_browser(notebook, lab, lab_page, network, screenshot_dir, report):
    t0 = time.monotonic()
    page = lab_page.get()                                # loads JupyterLab for the first notebook only
    errors_before, console_before = len(lab_page.page_errors), len(lab_page.console_errors)
    blocked_before = len(network.blocked)
    passed = False
    try:
        lab_page.open_notebook(notebook)
        _wait(page, KERNEL_IDLE, arg=notebook, timeout=90_000, what=f"{notebook} to open with an idle kernel")
        t_open = time.monotonic()

        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        page.wait_for_timeout(500)
        run = _wait(page, RUN_FINISHED, what=f"every cell of {notebook} to run")
        assert not run.get("dead"), f"the kernel died while running {notebook} (out of memory?)"
        try:
            page.wait_for_function(PLOTS_DRAWN, timeout=20_000, polling=250)
        except Exception:
            pass                                         # reported below, figure by figure
        t_run = time.monotonic()

        def check(when: str) -> dict:
            seen = page.evaluate(INSPECT)
            problems = seen["problems"] + seen["undrawn"] + _check_bertviz(page, seen["bertviz"])
            if run["pending"] and not problems:
                problems.append(f"{run['pending']} of {run['cells']} code cells did not run")
            assert not problems, f"{notebook} {when}:\n\n" + "\n\n".join(problems)
            _assert_offline_and_no_js_errors(notebook, network, network.blocked[blocked_before:],
                                             lab_page.page_errors[errors_before:])
            return seen

        check("after Run All")
        # every widget on the page, each driven once (a notebook with several shows each kind working)
        driven = []
        for i in range(page.locator(f"{NB} {WIDGET_AREA}").count()):
            widget = page.locator(f"{NB} {WIDGET_AREA}").nth(i)
            if widget.locator(".widget-slider, .widget-text, .widget-textarea, .widget-button, "
                              ".widget-toggle-button, .widget-toggle-buttons, .bl-view input[type=range], "
                              ".bl-view input[type=text], .bl-view textarea, .bl-view .bl-btn").count() == 0:
                continue                                 # a display without controls (say, a bare figure)
            what, before, after, area = _drive_a_widget(page, [widget])
            driven.append((what, before, after, area))
            check(f"after driving widget {i + 1} ({what})")
        assert driven, ("no widget to drive: every notebook should let the reader change something (a slider, "
                        "a text box, a button) and see the result")
        what, before, after, area = driven[0]
        seen = check("after driving every widget")
        course = _answer_course_widgets(page)
        if course:
            driven.append(("; ".join(course), None, None, None))
            seen = check("after committing a prediction and answering the quiz")
        t_drive = time.monotonic()

        # screenshots: the driven widget, and the whole notebook (the mouse off every figure: no plotly toolbar)
        stem = Path(notebook).stem
        page.mouse.move(0, 0)
        widget_shot = screenshot_dir / f"{stem}-widget.png"
        area.screenshot(path=widget_shot)
        page_shot = _shoot_notebook(page, screenshot_dir / f"{stem}.png")
        if os.environ.get("BERTLAB_SAVE_SCREENSHOTS") == "1":
            docs = REPO / "docs" / "screenshots"
            docs.mkdir(parents=True, exist_ok=True)
            for shot in (widget_shot, page_shot):
                shutil.copyfile(shot, docs / shot.name)

        changed = "figure/label text" if before["text"] != after["text"] else "figure graphics"
        report.append(f"{notebook}: {time.monotonic() - t0:.1f} s (open {t_open - t0:.1f}, run all "
                      f"{t_run - t_open:.1f}, widget {t_drive - t_run:.1f}); {seen['figures']} plotly figures, "
                      f"{len(seen['bertviz'])} bertviz views, {seen['widgets']} widgets; drove "
                      f"{'; '.join(d[0] for d in driven)} (first: {changed} changed); {page_shot}")
        passed = True
    finally:
        console = lab_page.console_errors[console_before:]
        if console:
            print(f"console errors in {notebook}:", *console[:20], sep="\n  ")
        if not passed:
            try:                                         # what the page showed when it failed
                shot = _shoot_notebook(page, screenshot_dir / f"{Path(notebook).stem}-FAILED.png")
                print(f"screenshot of the failure: {shot}")
            except Exception:
                pass
            lab_page.replace()                           # a fresh page for the next notebook
        else:
            try:
                lab_page.close_notebook()
            except Exception:
                lab_page.replace()
        lab.shutdown_kernels()
