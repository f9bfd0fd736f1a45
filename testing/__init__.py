"""Testing a driver: the conformance suite every driver passes (`DriverConformance`), for
sixnines' own drivers and for a third party's. docs/drivers.md shows how to use it."""

from sixnines.testing.conformance import DriverConformance, Target, WrongLogin, wait_readable

__all__ = ["DriverConformance", "Target", "WrongLogin", "wait_readable"]
