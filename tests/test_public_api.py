from __future__ import annotations

import heard


def test_public_api_is_exactly_all() -> None:
    public = {name for name in dir(heard) if not name.startswith("_")}
    # submodules appear as attributes once imported; they are not API
    modules = {"cli", "errors", "registry", "samples", "transcript"}
    assert public - modules == set(heard.__all__) - {"__version__"}
    for name in heard.__all__:
        assert getattr(heard, name) is not None


def test_every_error_is_a_heard_error() -> None:
    for name in ("EventLogError", "InputError", "TurnStateError", "UnknownNameError"):
        assert issubclass(getattr(heard, name), heard.HeardError)
