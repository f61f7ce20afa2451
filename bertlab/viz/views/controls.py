"""The pieces a view is built from: controls, panes and rows, spelled as ipywidgets spells them.

A view's controls are drawn by its ES module in the browser, not by ipywidgets' own front end, but in
Python they keep ipywidgets' names and manners (`IntSlider(value=, min=, max=, description=)`, `.value`,
`.observe(fn, names="value")`, `Button.on_click`, `.layout.display = "none"`), so a widget moves onto the
view base by importing this module where it imported ipywidgets, and its tests still drive it the same way.

Each piece is a plain Python object with a small `spec` (a dict the module draws from). Until a `View`
adopts it, it is only that; once adopted, every change to it (a new value, a range, a hidden button) goes
to the view's synced state, and a person's change in the browser comes back as `.value = ...` here, so the
same observers run either way, synchronously.

Two kinds of pane hold what Python computed: `HTML` (markup bertlab wrote, user text escaped) and `Output`
(a plotly figure, or HTML; set it with `views.show_figure` / `views.show_html`).
"""

from __future__ import annotations

import itertools
import numbers
from typing import Any, Callable

__all__ = ["Layout", "Element", "Text", "Textarea", "HTML", "Label", "Output", "Button", "Dropdown", "ToggleButton",
           "ToggleButtons", "RadioButtons", "SelectionSlider", "IntSlider", "FloatSlider", "Checkbox",
           "BoundedIntText", "Play", "HBox", "VBox", "Box", "Change"]

_ids = itertools.count(1)


def _differs(old, new) -> bool:
    """Whether a setting really changed (an array, or anything that does not compare to a bool, counts as
    changed)."""
    if type(old) is not type(new):
        return True
    try:
        return bool(old != new)
    except Exception:
        return True


class Change(dict):
    """What an observer gets, as traitlets gives it: `change.new`, `change["old"]`, `change.owner`."""
    __getattr__ = dict.__getitem__


class Layout:
    """The few layout settings views use: `display` ("none" hides), `width`, and the flex ones for rows.

    Setting one on an adopted element redraws it, as ipywidgets' Layout does."""

    _keys = ("display", "width", "min_width", "max_width", "height", "flex_flow", "align_items", "justify_content",
             "margin", "padding", "border", "overflow", "grid_template_columns")

    def __init__(self, **kw):
        object.__setattr__(self, "_owner", None)
        object.__setattr__(self, "_values", {})
        for k, v in kw.items():
            setattr(self, k, v)

    def __setattr__(self, key, value):
        if key not in self._keys:
            raise AttributeError(f"Layout has no {key!r}: views lay out with {', '.join(self._keys)}")
        if key in self._values and not _differs(self._values[key], value):
            return                                     # unchanged: nothing to redraw
        self._values[key] = value
        if self._owner is not None:
            self._owner._push()

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        if key not in self._keys:
            raise AttributeError(f"Layout has no {key!r}")
        return self._values.get(key)

    def css(self) -> dict:
        return {k.replace("_", "-"): v for k, v in self._values.items() if v is not None and v != ""}


class Element:
    """One piece of a view: its kind, its spec (what the module draws) and, once adopted, its view."""

    kind = "element"
    _spec_keys: tuple = ()                       # attributes that are part of the drawn spec

    def __init__(self, layout: Layout | dict | None = None, **spec):
        object.__setattr__(self, "id", f"{self.kind}-{next(_ids)}")
        object.__setattr__(self, "_view", None)
        object.__setattr__(self, "_observers", [])
        object.__setattr__(self, "_spec", {})
        if isinstance(layout, Layout):
            # one Layout shared by several controls (a module's WIDE) is copied: each control owns its own
            lay = layout if layout._owner is None else Layout(**layout._values)
        else:
            lay = Layout(**(layout or {}))
        object.__setattr__(self, "layout", lay)
        object.__setattr__(lay, "_owner", self)
        for k, v in spec.items():
            self._spec[k] = v

    # -- spec attributes read and written like ipywidgets' traits
    def __getattr__(self, key):
        spec = object.__getattribute__(self, "_spec")
        if key in type(self)._spec_keys:
            return spec.get(key)
        raise AttributeError(f"{type(self).__name__} has no attribute {key!r}")

    def __setattr__(self, key, value):
        if key in type(self)._spec_keys:
            if key == "value":
                self._set_value(value)
            elif key not in self._spec or _differs(self._spec[key], value):
                # only a real change goes to the browser: a widget that sets `disabled` on every update
                # would otherwise resend its view's controls each time
                self._spec[key] = value
                self._after_spec(key)
                self._push()
        else:
            object.__setattr__(self, key, value)

    def _after_spec(self, key: str) -> None:
        """A subclass's chance to keep its value valid after a range or options change."""

    def spec(self) -> dict:
        return {"kind": self.kind, **self._spec, "css": self.layout.css()}

    def _push(self) -> None:
        if self._view is not None:
            self._view._update_node(self)

    def children_of(self) -> list:
        return []

    # -- value and observers, as traitlets does them
    def _coerce(self, value):
        return value

    def _set_value(self, value) -> None:
        new = self._coerce(value)
        old = self._spec.get("value")
        self._spec["value"] = new
        if old != new or type(old) is not type(new):
            self._push()
            self._notify(old, new)

    def _notify(self, old, new) -> None:
        change = Change(name="value", old=old, new=new, owner=self, type="change")
        for fn in list(self._observers):
            fn(change)

    def observe(self, handler: Callable, names="value") -> None:
        if names not in ("value", ["value"], ("value",)):
            raise ValueError(f"views observe only 'value', not {names!r}")
        self._observers.append(handler)

    def unobserve(self, handler: Callable, names="value") -> None:
        if handler in self._observers:
            self._observers.remove(handler)

    def _from_front(self, value) -> None:
        """A person changed this control in the browser: the same path as `.value = ...` from Python."""
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._spec.get('description') or self.id!r})"


# ---- text and markup ----------------------------------------------------------------------------------

class Text(Element):
    kind = "text"
    _spec_keys = ("value", "description", "placeholder", "disabled", "continuous_update")

    def __init__(self, value: str = "", description: str = "", placeholder: str = "", disabled: bool = False,
                 continuous_update: bool = True, layout=None):
        super().__init__(layout, value=value, description=description, placeholder=placeholder,
                         disabled=disabled, continuous_update=continuous_update)

    def _coerce(self, value):
        if not isinstance(value, str):
            raise ValueError(f"{self.description or 'the text'} must be a str, got {type(value).__name__}")
        return value


class Textarea(Text):
    kind = "textarea"
    _spec_keys = Text._spec_keys + ("rows",)

    def __init__(self, value: str = "", description: str = "", placeholder: str = "", disabled: bool = False,
                 rows: int | None = None, continuous_update: bool = True, layout=None):
        super().__init__(value, description, placeholder, disabled, continuous_update, layout)
        self._spec["rows"] = rows


class HTML(Element):
    """Markup bertlab wrote (every user text in it escaped), drawn as it is."""
    kind = "html"
    _spec_keys = ("value", "description")

    def __init__(self, value: str = "", description: str = "", layout=None):
        super().__init__(layout, value=value, description=description)

    def _coerce(self, value):
        return "" if value is None else str(value)


class Label(HTML):
    """Plain text (never markup)."""
    kind = "label"


class Output(Element):
    """A pane for what Python computed: a plotly figure or HTML. Set it with show_figure / show_html;
    `figure` is the go.Figure shown (None when empty), `html` the markup shown."""
    kind = "output"

    def __init__(self, layout=None):
        super().__init__(layout)
        object.__setattr__(self, "figure", None)
        object.__setattr__(self, "html", None)
        object.__setattr__(self, "content", None)      # what the module gets: {"figure": ...} or {"html": ...}

    @property
    def empty(self) -> bool:
        return self.content is None

    def _set_content(self, content: dict | None) -> None:
        object.__setattr__(self, "content", content)
        if self._view is not None:
            self._view._update_content(self)


# ---- buttons and choices ------------------------------------------------------------------------------

class Button(Element):
    kind = "button"
    _spec_keys = ("description", "disabled", "button_style", "icon", "tooltip")

    def __init__(self, description: str = "", disabled: bool = False, button_style: str = "", icon: str = "",
                 tooltip: str = "", layout=None):
        super().__init__(layout, description=description, disabled=disabled, button_style=button_style, icon=icon,
                         tooltip=tooltip)
        object.__setattr__(self, "_clicks", [])

    def on_click(self, fn: Callable) -> None:
        self._clicks.append(fn)

    def click(self) -> None:
        """Press the button, as a person does (a disabled button does nothing, as in the browser)."""
        if self._spec.get("disabled"):
            return
        for fn in list(self._clicks):
            fn(self)


def _pairs(options) -> list[tuple[str, Any]]:
    """ipywidgets' options: values (their str is the label), or (label, value) pairs."""
    out = []
    for o in options:
        if isinstance(o, (tuple, list)) and len(o) == 2:
            out.append((str(o[0]), o[1]))
        else:
            out.append((str(o), o))
    return out


class _Selection(Element):
    _spec_keys = ("value", "options", "description", "disabled", "button_style", "tooltips")

    allow_none = True                        # no choice yet (a quiz before it is answered), as ipywidgets allows

    def __init__(self, options=(), value=None, description: str = "", disabled: bool = False, layout=None,
                 style=None, tooltips=None, **extra):
        options = list(options)
        super().__init__(layout, options=options, description=description, disabled=disabled, tooltips=tooltips,
                         **extra)
        self._spec["value"] = None if value is None else self._coerce(value)
        if value is None and not self.allow_none and options:
            self._spec["value"] = self.values[0]

    @property
    def values(self) -> list:
        return [v for _, v in _pairs(self._spec["options"])]

    @property
    def label(self) -> str | None:
        for lab, v in _pairs(self._spec["options"]):
            if v == self._spec.get("value"):
                return lab
        return None

    @property
    def index(self) -> int | None:
        vals = self.values
        return vals.index(self._spec["value"]) if self._spec.get("value") in vals else None

    def _coerce(self, value):
        vals = self.values
        if value is None and self.allow_none:
            return None
        if value not in vals:
            raise ValueError(f"{value!r} is not one of the {self.description or 'options'}: "
                             f"{', '.join(map(repr, vals[:8]))}{' …' if len(vals) > 8 else ''}")
        return vals[vals.index(value)]

    def _after_spec(self, key: str) -> None:
        if key == "options":
            self._spec["options"] = list(self._spec["options"])
            vals = self.values
            old = self._spec.get("value")
            if old is not None and old not in vals:
                self._spec["value"] = None if self.allow_none or not vals else vals[0]
                self._notify(old, self._spec["value"])

    def spec(self) -> dict:
        s = super().spec()
        # the module gets labels and the index of each value: values need not be JSON (a tuple, a None)
        s["labels"] = [lab for lab, _ in _pairs(self._spec["options"])]
        s["index"] = self.index
        del s["options"], s["value"]
        return s

    def _from_front(self, value) -> None:
        """The module sends the index of the chosen option (its values need not be JSON)."""
        vals = self.values
        if not isinstance(value, int) or not 0 <= value < len(vals):
            raise ValueError(f"option {value!r} is out of range")
        self.value = vals[value]


class Dropdown(_Selection):
    kind = "dropdown"
    allow_none = False


class ToggleButtons(_Selection):
    kind = "togglebuttons"


class RadioButtons(_Selection):
    kind = "radio"


class SelectionSlider(_Selection):
    kind = "selectionslider"
    allow_none = False


class Checkbox(Element):
    kind = "checkbox"
    _spec_keys = ("value", "description", "disabled", "indent")

    def __init__(self, value: bool = False, description: str = "", disabled: bool = False, indent: bool = False,
                 layout=None):
        super().__init__(layout, value=bool(value), description=description, disabled=disabled, indent=indent)

    def _coerce(self, value):
        if not isinstance(value, (bool, numbers.Integral)):
            raise ValueError(f"{self.description or 'the box'} is on or off (True or False), got {value!r}")
        return bool(value)


class ToggleButton(Checkbox):
    kind = "toggle"
    _spec_keys = Checkbox._spec_keys + ("icon", "button_style", "tooltip")

    def __init__(self, value: bool = False, description: str = "", disabled: bool = False, icon: str = "",
                 button_style: str = "", tooltip: str = "", layout=None):
        super().__init__(value, description, disabled, False, layout)
        self._spec.update(icon=icon, button_style=button_style, tooltip=tooltip)


# ---- numbers -------------------------------------------------------------------------------------------

class IntSlider(Element):
    """A whole number from min to max; a value outside is clamped, as ipywidgets' slider clamps it."""
    kind = "intslider"
    _spec_keys = ("value", "min", "max", "step", "description", "disabled", "readout_format", "continuous_update")
    _cast = int

    def __init__(self, value=0, min=0, max=100, step=1, description: str = "", disabled: bool = False,
                 readout_format: str = "d", continuous_update: bool = True, layout=None):
        super().__init__(layout, min=self._cast(min), max=self._cast(max), step=step, description=description,
                         disabled=disabled, readout_format=readout_format, continuous_update=continuous_update)
        self._spec["value"] = self._coerce(value)

    def _coerce(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{self.description or 'the slider'} takes a number, got {value!r}")
        if value != value or abs(value) == float("inf"):      # int() of it was a bare error; a float one kept nan
            raise ValueError(f"{self.description or 'the slider'} takes a finite number from {self._spec['min']} "
                             f"to {self._spec['max']}, got {value!r}")
        value = self._cast(value)
        return min(max(value, self._spec["min"]), self._spec["max"])

    def _after_spec(self, key: str) -> None:
        if key in ("min", "max"):
            self._spec[key] = self._cast(self._spec[key])
            old = self._spec["value"]
            new = min(max(old, self._spec["min"]), self._spec["max"])
            if new != old:
                self._spec["value"] = new
                self._notify(old, new)


class FloatSlider(IntSlider):
    kind = "floatslider"
    _cast = float

    def __init__(self, value=0.0, min=0.0, max=10.0, step=0.1, description: str = "", disabled: bool = False,
                 readout_format: str = ".2f", continuous_update: bool = True, layout=None):
        super().__init__(value, min, max, step, description, disabled, readout_format, continuous_update, layout)


class BoundedIntText(IntSlider):
    kind = "inttext"

    def __init__(self, value=0, min=0, max=100, step=1, description: str = "", disabled: bool = False,
                 layout=None):
        super().__init__(value, min, max, step, description, disabled, "d", False, layout)


class Play(IntSlider):
    """ipywidgets' Play: ▶ steps `value` from min to max, one step every `interval` ms, in the browser.

    The module's timer sends each step as a person's change (the same `event` a slider sends), so Python's
    observers run for every frame; where ipywidgets linked a Play to a slider in the browser (`jslink`), a view
    links them in Python (observe one, set the other). Setting `value` from Python moves it as a slider does."""
    kind = "play"
    _spec_keys = IntSlider._spec_keys + ("interval",)

    def __init__(self, value=0, min=0, max=100, step=1, interval: int = 100, description: str = "",
                 disabled: bool = False, layout=None):
        if isinstance(interval, bool) or not isinstance(interval, numbers.Integral) or interval < 1:
            raise ValueError(f"interval is the milliseconds between steps, a whole number of at least 1, "
                             f"got {interval!r}")
        super().__init__(value, min, max, step, description, disabled, "d", True, layout)
        self._spec["interval"] = int(interval)


# ---- rows and columns ----------------------------------------------------------------------------------

class Box(Element):
    """Children side by side (HBox, wrapping where the page is narrow) or one under another (VBox)."""
    kind = "col"

    def __init__(self, children=(), layout=None):
        super().__init__(layout)
        object.__setattr__(self, "_children", list(children))

    @property
    def children(self) -> tuple:
        return tuple(self._children)

    @children.setter
    def children(self, value) -> None:
        object.__setattr__(self, "_children", list(value))
        if self._view is not None:
            self._view._adopt(self)
            self._push()

    def children_of(self) -> list:
        return self._children

    def spec(self) -> dict:
        return {**super().spec(), "children": [c.id for c in self._children]}


class HBox(Box):
    kind = "row"


class VBox(Box):
    kind = "col"
