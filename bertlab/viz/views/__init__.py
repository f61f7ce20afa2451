"""Views: bertlab's live widgets on anywidget, one ES module each (js/), drawn the same in every front end.

The base (base.py) says how a view's state travels and how to move a widget onto it; controls.py holds the
controls and panes, spelled as ipywidgets spells them.
"""

from . import controls
from .base import PLOTLY_VERSION, View, esm, pack_figure, plotly_source, same_figure, show_figure, show_html, unpack
from .interact import Interactive, interact

__all__ = ["View", "controls", "show_figure", "show_html", "pack_figure", "unpack", "same_figure", "esm", "plotly_source", "PLOTLY_VERSION",
           "Interactive", "interact"]
