"""The console's markup: Jinja2 templates (autoescaped; a value is escaped unless it is ``Markup`` another template
made), read from this package (package data, so an installed wheel has them). ``page.html`` is the frame, one template
per section (``history.html``, ``drills.html``, ...) and macros for the shared pieces (``cells.html``, ``chart.html``,
``refresh.html``); the ``ui`` modules gather the values and call them. Formats are ``ui/formats.py``'s filters.

Airflow 3's look: its type, spacing, gray and colour scales (oklch values from the UI's Chakra theme), light or dark
as Airflow's own theme toggle says (``theme.js``: the ``theme`` key Airflow keeps in localStorage on the same origin,
"system" following the browser). Charts (``chart.html``) are drawn by the vendored Apache ECharts (``ui/static``),
loaded only by pages that have one, and ``console.js``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

HERE = Path(__file__).parent


@cache
def _environment():
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from ftops_provider.ui.formats import FILTERS

    env = Environment(loader=FileSystemLoader(HERE), autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    env.globals["refresh_s"] = REFRESH_S
    return env


REFRESH_S = 20  # an open page redraws its live parts this often, while its tab is shown (refresh.html)
ECHARTS = "echarts-6.1.0.min.js"  # in ui/static (scripts/vendor-echarts.sh)
CHART_MARK = '<figure class="chart"'  # what chart.html starts with: a page with it loads the charting library


@cache
def _assets() -> tuple[str, str, str]:
    return (HERE / "console.css").read_text(), (HERE / "theme.js").read_text(), (HERE / "console.js").read_text()


def render(template: str, **values) -> str:
    """A fragment from one of this package's templates, every value escaped unless it is ``Markup``."""
    from markupsafe import Markup

    return Markup(_environment().get_template(template).render(**values))


def macro(template: str, name: str):
    """A macro of one of this package's templates, as a function returning markup."""
    return getattr(_environment().get_template(template).module, name)


def render_page(title: str, body: str, static_root: str = "") -> str:
    """The whole page: ``title`` (escaped here) above ``body`` (markup the sections built, each value escaped); a
    page with a chart loads the charting library from ``static_root`` (the app's ``/static``).

    >>> html = render_page("Jobs <all>", "<p>none</p>")
    >>> "<h1>Jobs &lt;all&gt;</h1>" in html and "<p>none</p>" in html and "--bg" in html and ECHARTS not in html
    True
    """
    from markupsafe import Markup

    css, theme, charts = _assets()
    library = f"{static_root}/{ECHARTS}" if CHART_MARK in body else None
    return render("page.html", title=title, body=Markup(body), css=Markup(css), theme_script=Markup(theme),
                  library=library, charts_script=Markup(charts))
