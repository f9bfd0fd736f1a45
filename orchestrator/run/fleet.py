"""The hosts of one scenario, as launchers: made from the scenario's host list, prepared
once before the first run (checked and bootstrapped, in parallel), closed after the last."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pydantic import ValidationError

from sixnines.formats.document import first_error
from sixnines.formats.run_files import shown
from sixnines.orchestrator.launchers.base import Launcher, LaunchError
from sixnines.orchestrator.launchers.local import LocalLauncher
from sixnines.orchestrator.scenario.hosts import LOCAL, ContainerHost, HostSpec, SshHost


def launcher_for(spec: HostSpec) -> Launcher:
    if isinstance(spec, SshHost):
        from sixnines.orchestrator.launchers.ssh import SshLauncher  # paramiko: only when used

        return SshLauncher(spec)
    if isinstance(spec, ContainerHost):
        from sixnines.orchestrator.launchers.container import ContainerLauncher  # docker SDK

        return ContainerLauncher(spec.name, spec.docker, image=spec.image,
                                 address=spec.address, base_image=spec.base_image)
    raise TypeError(f"no launcher for {spec!r}")


def launcher_from_contact(host: str, contact: dict) -> Launcher:
    """A launcher reaching a host again as a manifest recorded it (`Launcher.contact`),
    after the controller that used it is gone; LaunchError for a contact sixnines did not
    write (the manifest was edited)."""
    try:
        if contact.get("kind") == "ssh":
            from sixnines.orchestrator.launchers.ssh import SshLauncher

            spec = SshHost(name=host, address=contact["address"], port=contact["port"],
                           user=contact["user"], key=contact["key"] or None,
                           known_hosts=contact["known_hosts"], workdir=contact["workdir"])
            return SshLauncher(spec)
        if contact.get("kind") == "container":
            from sixnines.orchestrator.launchers.container import ContainerLauncher

            return ContainerLauncher(host, str(contact["docker"]),
                                     session=str(contact["session"]))
    except KeyError as missing:
        raise LaunchError(f"host {shown(host)}: the manifest's contact for it has no "
                          f"{missing}") from None
    except ValidationError as error:
        raise LaunchError(f"host {shown(host)}: the manifest's contact for it is not one "
                          f"sixnines wrote ({first_error(error)})") from None
    raise LaunchError(f"host {shown(host)}: the manifest's contact for it is not one "
                      f"sixnines knows ({shown(contact.get('kind'))})")


class Fleet:
    def __init__(self, launchers: dict[str, Launcher]) -> None:
        self.launchers = launchers
        self.facts: dict[str, dict] = {}

    @classmethod
    def local(cls) -> Fleet:
        return cls({LOCAL: LocalLauncher()})

    @classmethod
    def for_scenario(cls, scenario) -> Fleet:
        """Launchers for the hosts the placement uses (others in an inventory are left
        alone: a scenario never touches a host it does not run on)."""
        placement = scenario.placement
        used = dict.fromkeys((placement.broker, *placement.agents))
        return cls({name: LocalLauncher() if name == LOCAL else launcher_for(scenario.host(name))
                    for name in used})

    def __getitem__(self, name: str) -> Launcher:
        return self.launchers[name]

    def prepare(self) -> dict[str, dict]:
        """Check and bootstrap every host at once; every host's problem is reported
        together, so one fix-and-retry cycle covers them all."""
        remote = [launcher for launcher in self.launchers.values() if launcher.host != LOCAL]
        if any(launcher.needs_bundle for launcher in remote):
            # the bundle needs the `remote` extra (packaging), as remote hosts do
            from sixnines.orchestrator.launchers.bundle import BundleError, build_bundle

            try:
                bundle = build_bundle()  # once, before the hosts install it in parallel
            except BundleError as exc:
                raise LaunchError(str(exc)) from None
            for launcher in remote:
                launcher.bundle = bundle
        errors = []
        with ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
            futures = {launcher.host: pool.submit(launcher.prepare) for launcher in remote}
        for host, future in futures.items():
            try:
                self.facts[host] = {**future.result(),
                                    "contact": self.launchers[host].contact()}
            except LaunchError as exc:
                errors.append(str(exc))
        if errors:
            raise LaunchError("; ".join(errors))
        return self.facts

    def close(self) -> None:
        for launcher in self.launchers.values():
            launcher.close()
