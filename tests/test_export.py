"""Exporting a figure for a paper: SVG and PNG through kaleido and the local Chromium, HTML with plotly.js inside."""

from __future__ import annotations

import pytest

go = pytest.importorskip("plotly.graph_objects", reason="export draws plotly figures")

import plotly.offline  # noqa: E402

from bertlab.viz.export import NO_BROWSER, export, find_chromium  # noqa: E402

needs_chromium = pytest.mark.skipif(
    find_chromium() is None,
    reason="no Chrome/Chromium on PATH or at BROWSER_PATH: SVG and PNG export need one "
           "(Debian: apt-get install chromium)")


@pytest.fixture
def fig():
    return go.Figure(go.Bar(x=["bank", "river"], y=[0.7, 0.3], name="guesses", text=["bank-bar", "river-bar"]),
                     layout=dict(title="a figure for the paper", width=400, height=300))


@pytest.mark.slow
@needs_chromium
def test_svg_is_a_vector_drawing_holding_the_traces_text(fig, tmp_path):
    path = export(fig, tmp_path / "guesses.svg")
    svg = path.read_text(encoding="utf-8")
    assert svg.startswith("<svg")
    assert "bank-bar" in svg and "a figure for the paper" in svg
    assert 'width="400"' in svg and 'height="300"' in svg                   # the figure's own size
    assert path.with_suffix(".png").exists() is False                        # one file, the one asked for


@pytest.mark.slow
@needs_chromium
def test_png_has_the_magic_bytes_and_the_asked_size_times_scale(fig, tmp_path):
    path = export(fig, tmp_path / "guesses.out", format="png", width=200, height=100, scale=2)   # format wins
    png = path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")   # the IHDR chunk
    assert (width, height) == (400, 200)


def test_html_is_standalone_with_plotly_js_inside_and_no_cdn(fig, tmp_path):
    page = export(fig, tmp_path / "guesses.html", width=500).read_text(encoding="utf-8")
    plotly_js = plotly.offline.get_plotlyjs()
    assert plotly_js in page                                                  # inlined, so it opens offline
    rest = page.replace(plotly_js, "")
    # plotly.js itself names CDN addresses it would use only for maps; the page adds none of its own
    assert "https://cdn" not in rest and "<script src=" not in rest
    assert "bank-bar" in rest and '"width":500' in rest.replace(" ", "")


def test_bad_paths_and_arguments_say_what_to_do(fig, tmp_path):
    with pytest.raises(ValueError, match=r"cannot export to 'pdf' .*\.svg .*\.png .*\.html"):
        export(fig, tmp_path / "figure.pdf")
    with pytest.raises(ValueError, match="no suffix"):
        export(fig, tmp_path / "figure")
    with pytest.raises(FileNotFoundError, match="does not exist: create it first"):
        export(fig, tmp_path / "missing" / "figure.html")
    with pytest.raises(ValueError, match="plotly go.Figure"):
        export({"data": []}, tmp_path / "figure.html")
    with pytest.raises(ValueError, match="width must be a positive number"):
        export(fig, tmp_path / "figure.html", width=-3)
    with pytest.raises(ValueError, match="scale must be a positive number"):
        export(fig, tmp_path / "figure.png", scale=0)
    assert list(tmp_path.iterdir()) == []                                     # nothing half-written


def test_without_chromium_svg_and_png_export_say_how_to_install_it(fig, tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chromium"))   # kaleido's override, naming nothing
    for name in ("get_chrome_download_path", "get_old_chrome_download_path"):   # hide a copy kaleido fetched
        monkeypatch.setattr(f"choreographer.browsers.chromium.{name}", lambda **kwargs: None)
    assert find_chromium() is None
    for name in ("figure.svg", "figure.png"):
        with pytest.raises(RuntimeError, match="apt-get install chromium") as err:
            export(fig, tmp_path / name)
        assert "BROWSER_PATH is" in str(err.value) and NO_BROWSER in str(err.value)
    assert export(fig, tmp_path / "figure.html").exists()                     # HTML needs no browser
