"""The console's page frame: a Jinja2 template (autoescaped) with its stylesheet and its theme script, read once
from this package (package data, so an installed wheel has them).

Airflow 3's look: its type, spacing, gray and colour scales (oklch values from the UI's Chakra theme), light or dark
as Airflow's own theme toggle says (``theme.js``: the ``theme`` key Airflow keeps in localStorage on the same origin,
"system" following the browser). The sections inside a page are still built by the ``ui`` modules, each value escaped
where it is written (issue 36, item 7, is only begun: the frame comes from a template, the sections not yet).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

HERE = Path(__file__).parent


@cache
def _environment():
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    return Environment(loader=FileSystemLoader(HERE), autoescape=select_autoescape(default=True, default_for_string=True))


@cache
def _assets() -> tuple[str, str]:
    return (HERE / "console.css").read_text(), (HERE / "theme.js").read_text()


def render_page(title: str, body: str) -> str:
    """The whole page: ``title`` (escaped here) above ``body`` (markup the sections built, each value escaped).

    >>> html = render_page("Jobs <all>", "<p>none</p>")
    >>> "<h1>Jobs &lt;all&gt;</h1>" in html and "<p>none</p>" in html and "--bg" in html
    True
    """
    from markupsafe import Markup

    css, script = _assets()
    return _environment().get_template("page.html").render(title=title, body=Markup(body), css=Markup(css),
                                                           theme_script=Markup(script))
