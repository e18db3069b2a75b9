"""OS components some tests drive for real (redis-server, HAProxy, Chromium).

`.ci/run` installs them, and under CI (``CI`` set in the environment) a missing one fails the
test that needs it. On a developer's machine without them, those tests skip with the package
to install, so ``make test`` still works with nothing but Python.
"""

from __future__ import annotations

import os
import shutil

import pytest

#: Executable → the Debian package that provides it.
PACKAGES = {
    "redis-server": "redis-server",
    "haproxy": "haproxy",
    "chromium": "chromium",
    "chromedriver": "chromium-driver",
}


#: Where system daemons are installed, searched after ``PATH``.
SBIN = os.pathsep.join(("/usr/local/sbin", "/usr/sbin", "/sbin"))


def require(executable: str) -> str:
    """The path of ``executable``; skip the test without it, or fail it under CI."""
    # the sbin directories too: a user's PATH often lacks them (haproxy is /usr/sbin/haproxy)
    path = shutil.which(executable) or shutil.which(executable, path=SBIN)
    if path is not None:
        return path
    package = PACKAGES.get(executable, executable)
    why = f"{executable} is not installed (Debian package {package}; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)
