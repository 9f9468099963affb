"""Fixtures of the stack tests: ftops installed from its wheel, outside the checkout."""

from __future__ import annotations

import pytest

from tests.stack.installed_wheel import InstalledWheel, build_and_install


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> InstalledWheel:
    return build_and_install(tmp_path_factory.mktemp("installed-wheel"))
