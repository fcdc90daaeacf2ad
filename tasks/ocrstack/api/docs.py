"""``/docs``: Swagger UI from the assets vendored under ``static/vendor/swagger-ui`` (issue 24).

FastAPI's own ``/docs`` and ``/redoc`` load their JavaScript, CSS and favicon from CDNs, so they
are blank offline; the app turns them off (``docs_url=None, redoc_url=None``) and
:func:`add_docs` serves the same Swagger UI page (:func:`fastapi.openapi.docs.get_swagger_ui_html`)
with every asset from ``/static``. ReDoc is not kept: Swagger UI shows the same schema. The
vendored version and licence are in ``static/vendor/VENDORED.md``.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

#: Where the app mounts ``ocrstack/api/static`` + the vendored Swagger UI folder.
SWAGGER = "/static/vendor/swagger-ui"


def add_docs(app: FastAPI) -> None:
    """Add ``GET /docs`` (not in the schema) to ``app``: Swagger UI for ``app.openapi_url``.

    Needs the ``/static`` mount of ``ocrstack/api/static`` (the page's own assets) on the same app.
    """

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
        )
