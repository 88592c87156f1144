from __future__ import annotations

from types import ModuleType

import heard


def test_public_api_is_exactly_all() -> None:
    # submodules appear as attributes once imported; they are not API
    public = {
        name
        for name in dir(heard)
        if not name.startswith("_") and not isinstance(getattr(heard, name), ModuleType)
    }
    assert public == set(heard.__all__) - {"__version__"}
    for name in heard.__all__:
        assert getattr(heard, name) is not None
