"""``/docs``: Swagger UI over ``/openapi.json``, served from a vendored copy, never a CDN.

The server runs where there may be no internet (and a page that pulls scripts from a CDN
leaks who reads the docs), so the Swagger UI files come from the ``swagger-ui-bundle-v2``
wheel (Swagger UI 5, which reads OpenAPI 3.1). The page has no inline script, so it works
under a strict Content-Security-Policy. No package vendors ReDoc, so ``/redoc`` is not served.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Mount, Route

__all__ = ["DOCS_PATH", "docs_mount"]

DOCS_PATH = "/docs"

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
