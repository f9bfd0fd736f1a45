"""The hub through the sixnines driver conformance suite, hubs started in this process."""

from contextlib import contextmanager

import pytest
from sixnines.testing import DriverConformance, Target, WrongLogin

from sixnines_hub import Hub, HubDriver, LossyHubDriver


@contextmanager
def doomed_hub():
    hub = Hub().start()
    try:
        yield hub.address, hub.close
    finally:
        hub.close()


@pytest.fixture(scope="module")
def hubs(monkeypatch_module):
    monkeypatch_module.setenv("HUB_TEST_PASSWORD", "wrong")
    hub, locked = Hub().start(), Hub(password="right").start()
    yield hub, locked
    hub.close()
    locked.close()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def target_for(driver, hubs) -> Target:
    hub, locked = hubs
    return Target(driver, hub.address, doomed=doomed_hub,
                  wrong_login=WrongLogin(locked.address, {"password_env": "HUB_TEST_PASSWORD"},
                                         "wrong"),
                  invalid_options={"connect_timeout_s": "soon"})


class TestHub(DriverConformance):
    @pytest.fixture
    def target(self, hubs) -> Target:
        return target_for(HubDriver, hubs)


class TestLossyHub(DriverConformance):
    """Fails every case that counts deliveries: run it to see what the suite reports."""

    @pytest.fixture
    def target(self, hubs) -> Target:
        return target_for(LossyHubDriver, hubs)
