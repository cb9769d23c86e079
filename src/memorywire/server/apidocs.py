"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) over ``/openapi.json``, from packaged
copies, never a CDN.

The server runs where there may be no internet (and a page that pulls scripts from a CDN
leaks who reads the docs), so the Swagger UI files come from the ``swagger-ui-bundle-v2``
wheel (Swagger UI 5, which reads OpenAPI 3.1), a core dependency. ReDoc's one file comes from
the ``redoc`` extra: the only wheel that ships ``redoc.standalone.js`` without a framework we
would have to import is ``fastapi-standalone-docs``, whose FastAPI dependency is installed but
never imported here (the file is found without importing the package). Without the extra,
``/redoc`` answers 404 with a page that names the install command and points at ``/docs``.
Neither page has an inline script, so both work under a strict Content-Security-Policy.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Mount, Route

__all__ = ["DOCS_PATH", "REDOC_INSTALL_HINT", "REDOC_PATH", "docs_mount", "redoc_mount",
           "redoc_script"]

DOCS_PATH = "/docs"
REDOC_PATH = "/redoc"
REDOC_INSTALL_HINT = "pip install 'memorywire[redoc]'"
#: The package of the ``redoc`` extra and where its ReDoc file lies inside it.
_REDOC_PACKAGE = "fastapi_standalone_docs"
_REDOC_FILE = ("static", "redoc", "redoc.standalone.js")

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memorywire API</title>
<link rel="stylesheet" href="{base}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{base}/swagger-ui-bundle.js"></script>
<script src="{base}/init.js"></script>
</body>
</html>
"""

_INIT = """window.ui = SwaggerUIBundle({{
  url: "{spec}",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout"
}});
"""

_ASSETS = {"swagger-ui.css": "text/css", "swagger-ui-bundle.js": "text/javascript"}


def docs_mount(spec_url: str = "/openapi.json") -> Mount:
    """The page, its initialiser and the two vendored files, mounted apart from the API's
    route table (like ``/ui`` and ``/mcp``)."""
    from swagger_ui_bundle import swagger_ui_path

    async def page(request: Request) -> Response:
        return HTMLResponse(_PAGE.format(base=DOCS_PATH))

    async def init(request: Request) -> Response:
        return Response(_INIT.format(spec=spec_url), media_type="text/javascript")

    def asset(name: str, media_type: str) -> Route:
        async def serve(request: Request) -> Response:
            return FileResponse(str(swagger_ui_path / name), media_type=media_type)

        return Route(f"/{name}", serve, methods=["GET"])

    return Mount(DOCS_PATH, routes=[
        Route("/", page, methods=["GET"]),
        Route("/init.js", init, methods=["GET"]),
        *(asset(name, media) for name, media in _ASSETS.items()),
    ])


_REDOC_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>memorywire API</title>
</head>
<body>
<redoc spec-url="{spec}"></redoc>
<script src="{base}/redoc.standalone.js"></script>
</body>
</html>
"""

_REDOC_MISSING = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>ReDoc is not installed</title></head>
<body>
<h1>ReDoc is not installed on this server</h1>
<p>Install it with <code>{hint}</code> and restart the server.</p>
<p>The same API document is readable now in <a href="{docs}">Swagger UI</a>,
and as JSON at <a href="{spec}">{spec}</a>.</p>
</body>
</html>
"""


def redoc_script() -> Path | None:
    """ReDoc's file from the ``redoc`` extra, or ``None`` when the extra is not installed."""
    spec = importlib.util.find_spec(_REDOC_PACKAGE)  # finds, does not import (no FastAPI)
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(root).joinpath(*_REDOC_FILE)
        if path.is_file():
            return path
    return None


def redoc_mount(spec_url: str = "/openapi.json") -> Mount:
    """ReDoc's page and its one file; without the extra, a 404 page saying how to get it."""
    script = redoc_script()

    async def page(request: Request) -> Response:
        if script is None:
            return HTMLResponse(_REDOC_MISSING.format(hint=REDOC_INSTALL_HINT, docs=DOCS_PATH,
                                                      spec=spec_url), status_code=404)
        return HTMLResponse(_REDOC_PAGE.format(spec=spec_url, base=REDOC_PATH))

    routes = [Route("/", page, methods=["GET"])]
    if script is not None:
        found = script

        async def asset(request: Request) -> Response:
            return FileResponse(str(found), media_type="text/javascript")

        routes.append(Route("/redoc.standalone.js", asset, methods=["GET"]))
    return Mount(REDOC_PATH, routes=routes)
