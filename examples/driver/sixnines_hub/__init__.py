"""An example sixnines driver: a tiny TCP hub and the driver that talks to it."""

from sixnines_hub.driver import HubDriver, HubOptions, LossyHubDriver
from sixnines_hub.hub import Hub

__all__ = ["Hub", "HubDriver", "HubOptions", "LossyHubDriver"]
