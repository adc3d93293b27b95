"""What a test needs beyond a base install, said once.

``pip install citeline pytest hypothesis`` runs the suite: a test module (or one test) that needs a
package of the test extra skips naming it and the command that brings it, never fails to collect.
"""

from __future__ import annotations

from types import ModuleType

import pytest

TEST_EXTRA = "pip install 'citeline[test]'"


def needs(module: str, what: str) -> ModuleType:
    """``module`` imported, or the caller skipped with a reason naming it, ``what`` it is and the extra.

    At module level it skips the whole module, so call it before the module's own imports of it.
    """
    __tracebackhide__ = True  # the skip is reported at the caller's line, not here
    found: ModuleType = pytest.importorskip(module, reason=f"needs {module} ({what}): {TEST_EXTRA}")
    return found
