"""The one Jinja2 environment of the torch backend (openapi-python-client's settings).

Jinja2 is imported when the first template is rendered, not with this module: `parc check` and
`parc search` ask the backend for its diagnostics of each plan (`runtime.diagnostics`), which
render nothing, and importing Jinja2 cost a fresh process about a tenth of a second."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("parc.backends.torch", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)
