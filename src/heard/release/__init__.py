"""Caption release: when stable text goes out for display and translation.

The package's names are its modules' own (each module's ``__all__``): the release policy's
constants and rules, the tracker and its modes, the captions stage, the translators.
"""

from heard.release import captions, policy, tracker, translation
from heard.release.captions import *  # noqa: F403
from heard.release.policy import *  # noqa: F403
from heard.release.tracker import *  # noqa: F403
from heard.release.translation import *  # noqa: F403

# ReleaseConfig is the policy's, and the tracker's too: each name once
__all__ = list(dict.fromkeys([*captions.__all__, *policy.__all__, *tracker.__all__,
                              *translation.__all__]))  # fmt: skip
