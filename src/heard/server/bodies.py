"""How a request's JSON body is read: once, and refused when it names a key twice.

Python's JSON parser keeps the last of two equal keys, so ``{"k": 1, "k": 100}`` would reach a
route as ``k = 100`` while a proxy or a log that reads the first saw ``1``. Every router's
routes read their bodies here instead: a 422 naming the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from heard.errors import RepeatedKeyError
from heard.storable import unique_keys

__all__ = ["StrictJSONRoute"]


def _one_of_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    try:
        return unique_keys(pairs)
    except RepeatedKeyError as e:
        raise HTTPException(422, f"the JSON body {e}") from None


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(await self.body(), object_pairs_hook=_one_of_each)
        return self._json


class StrictJSONRoute(APIRoute):
    """A route whose JSON body may not name a key twice in an object."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return route
