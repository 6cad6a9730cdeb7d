"""Where things are: the checkout, its sample specs and test fixtures, and the
package under test (the checkout's for an editable install, site-packages'
for .ci/wheel)."""
from __future__ import annotations

import os
from pathlib import Path

import cubinrun

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
CUBINS = REPO / "kernels" / "build"         # the sample kernels' cubins
FIXTURES = REPO / "tests" / "fixtures"
# Where `import cubinrun` found the package: the checkout for an editable
# install, site-packages for a wheel (.ci/wheel). Subprocesses that must run
# the same package put this on PYTHONPATH, never REPO.
PACKAGE_PARENT = Path(cubinrun.__file__).resolve().parent.parent
# .ci/wheel runs the suite against the installed wheel from outside the checkout
# (tests/conftest.py then keeps subprocesses off the checkout's package).
INSTALLED = os.environ.get("CUBINRUN_TEST_INSTALLED") == "1"
