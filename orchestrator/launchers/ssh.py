"""Processes on an SSH host (paramiko): one connection per host, one channel per process.

The agent's control channel is the SSH channel's stdin/stdout, so no port is opened for
it. Host keys are always checked against known_hosts and an unknown key is an error, never
a prompt. A process is started as `printf 'pid %s' $$; exec ...`: sshd makes each session
its own process group, so that pid names the group, and stopping it reaches everything the
process started, even when the controller's end of the channel is gone. Each group is
registered with a guard on the host (launchers.ssh_guard), which stops it if the controller
dies or its connection vanishes.

`prepare` checks the host (Python, disk) and installs this checkout's bundle
into a venv named by its build id, reused while the code is unchanged; the bundle's wheels
travel with it, so the host needs no package index.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shlex
import stat
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import paramiko

from sixnines.formats.atomic import atomic_path
from sixnines.formats.run_files import name_problem, plain_name
from sixnines.orchestrator.launchers.base import (
    Completed,
    Launcher,
    LaunchError,
    Process,
)
from sixnines.orchestrator.launchers.bundle import Bundle, BundleError, build_bundle
from sixnines.orchestrator.launchers.shaping import clear_command, interface_of, shape_commands
from sixnines.orchestrator.launchers.ssh_guard import SshGuard
from sixnines.orchestrator.scenario.fields import check_env_name
from sixnines.orchestrator.scenario.hosts import LinkShaping, SshHost

CONNECT_TIMEOUT_S = 10.0
START_TIMEOUT_S = 60.0
KEEPALIVE_S = 5  # notices a host that vanished without closing the connection
MIN_FREE_BYTES = 1 << 30  # bootstrap venv (~400 MB) and run files
MIN_PYTHON = (3, 11)

#: Run by the host's python3 (or the inventory's python) with the work directory as argv[1].
PREFLIGHT = """\
import json, os, platform, shutil, sys
os.makedirs(sys.argv[1], exist_ok=True)
print(json.dumps({
    "python": platform.python_version(), "machine": platform.machine(),
    "hostname": platform.node(), "free_bytes": shutil.disk_usage(sys.argv[1]).free,
    "mem_available_bytes": next((int(line.split()[1]) * 1024 for line in open("/proc/meminfo")
                                 if line.startswith("MemAvailable:")), None),
}))
"""


class SshLauncher(Launcher):
    def __init__(self, spec: SshHost, bundle: Bundle | None = None) -> None:
        self.spec = spec
        self.host = spec.name
        self.bundle = bundle
        options = _ssh_config(spec.address)
        self.address = options.get("hostname", spec.address)
        self.user = spec.user or options.get("user") or "root"
        self.port = spec.port or int(options.get("port", 22))
        self.key = _expand(spec.key or next(iter(options.get("identityfile", [])), None))
        known = spec.known_hosts or options.get("userknownhostsfile", "").split(" ")[0]
        self.known_hosts = str(Path(known or "~/.ssh/known_hosts").expanduser())
        self.root = PurePosixPath(spec.workdir)
        self.python = spec.python or "python3"
        self._client: paramiko.SSHClient | None = None
        self._sftp_lock = threading.Lock()
        self._shaped: str | None = None  # the interface whose qdisc we replaced
        self._guard = SshGuard(self._open_session, lambda: self.python)

    @property
    def needs_bundle(self) -> bool:
        """Whether `prepare` installs the bundle (no environment named in the inventory)."""
        return self.spec.python is None

    # -- connection ------------------------------------------------------------------------
    @property
    def label(self) -> str:
        return f"host {self.host} ({self.user}@{self.address}:{self.port})"

    def _connect(self) -> paramiko.SSHClient:
        if self._client is not None:
            return self._client
        if not Path(self.known_hosts).is_file():
            raise LaunchError(f"{self.label}: known_hosts file {self.known_hosts} does not "
                              "exist; sixnines checks host keys and needs the host's key there")
        client = paramiko.SSHClient()
        client.load_host_keys(self.known_hosts)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(self.address, self.port, self.user, key_filename=self.key,
                           look_for_keys=self.key is None, allow_agent=self.key is None,
                           timeout=CONNECT_TIMEOUT_S, banner_timeout=CONNECT_TIMEOUT_S,
                           auth_timeout=CONNECT_TIMEOUT_S)
        except paramiko.BadHostKeyException:
            raise LaunchError(
                f"{self.label}: the host key does not match the one in {self.known_hosts}; "
                "the host was reinstalled or someone is in between: check it, then fix "
                "known_hosts") from None
        except paramiko.AuthenticationException as exc:
            raise LaunchError(f"{self.label}: authentication failed with key "
                              f"{self.key or '(default keys / agent)'}: {exc}") from None
        except paramiko.SSHException as exc:
            if "known_hosts" in str(exc):
                raise LaunchError(
                    f"{self.label}: its host key is not in {self.known_hosts}, and sixnines "
                    "does not accept unknown keys; verify the host's fingerprint and add it, "
                    f"e.g. ssh-keyscan -p {self.port} {self.address} >> {self.known_hosts}"
                ) from None
            raise LaunchError(f"{self.label}: SSH failed: {exc}") from None
        except (TimeoutError, OSError) as exc:
            raise LaunchError(f"{self.label}: cannot connect: {exc}") from None
        transport = client.get_transport()
        assert transport is not None  # connected
        transport.set_keepalive(KEEPALIVE_S)
        self._client = client
        return client

    def connect(self) -> None:
        self._transport()

    def _transport(self) -> paramiko.Transport:
        transport = self._connect().get_transport()
        if transport is None or not transport.is_active():
            raise LaunchError(f"{self.label}: the SSH connection was lost")
        return transport

    def close(self) -> None:
        if self._client is not None:
            self._guard.close()
            if self._shaped is not None:
                with contextlib.suppress(LaunchError, paramiko.SSHException, OSError):
                    self._run_line(shlex.join(clear_command(self._shaped)), ["tc"], 30.0)
                self._shaped = None
            self._client.close()
            self._client = None

    # -- commands ----------------------------------------------------------------------------
    def command_line(self, argv: Sequence[str], env: dict[str, str] | None,
                     announce_pid: bool = False) -> str:
        """The shell line for `argv`: every word quoted and every variable name checked
        (scenario text never reaches the shell as code), the bootstrap venv's bin first on
        PATH (servers installed from PyPI live there), and optionally the pid (= process
        group) printed first."""
        assignments = [f"{self._env_name(name)}={shlex.quote(value)}"
                       for name, value in (env or {}).items()]
        bin_dir = shlex.quote(str(PurePosixPath(self.python).parent))
        line = f"exec env PATH={bin_dir}:\"$PATH\" {' '.join(assignments)} {shlex.join(argv)}"
        line = f"cd {shlex.quote(str(self.root))} && {line}"
        return f"printf 'pid %s\\n' \"$$\" && {line}" if announce_pid else line

    def _env_name(self, name: str) -> str:
        try:
            return check_env_name(name)
        except ValueError as exc:
            raise LaunchError(f"{self.label}: {exc}") from None

    def start(self, argv: Sequence[str], name: str, log_path: Path,
              inbox: queue.Queue | None = None, env: dict[str, str] | None = None
              ) -> SshProcess:
        process = SshProcess(self, argv, name, log_path, inbox, env)
        if process.pid is not None:
            try:
                self._guard.watch(process.pid)
            except (OSError, paramiko.SSHException) as exc:
                process.kill()
                raise LaunchError(f"{self.label}: cannot reach the guard there: {exc}") from None
        return process

    def release(self, pgid: int) -> None:
        """A process group that was stopped: the guard forgets it (a host that is gone
        has no guard left to tell)."""
        with contextlib.suppress(OSError, paramiko.SSHException):
            self._guard.release(pgid)

    def on_controller_exit(self, argv: Sequence[str], env: dict[str, str] | None = None
                           ) -> int:
        line = self.command_line(argv, None)  # env apart: the guard's, not on a command line
        try:
            return self._guard.on_exit(["sh", "-c", line], env)
        except (OSError, paramiko.SSHException) as exc:
            raise LaunchError(f"{self.label}: cannot reach the guard there: {exc}") from None

    def cancel_on_exit(self, token: int) -> None:
        with contextlib.suppress(OSError, paramiko.SSHException):
            self._guard.cancel(token)

    def _open_session(self, argv: list[str]) -> paramiko.Channel:
        """A session running `argv` on the host, its stdin the channel's."""
        channel = self._transport().open_session()
        channel.exec_command(self.command_line(argv, None))
        return channel

    def run(self, argv: Sequence[str], env: dict[str, str] | None = None,
            timeout_s: float = 60.0) -> Completed:
        return self._run_line(self.command_line(argv, env), list(argv), timeout_s)

    def _run_line(self, line: str, argv: list[str], timeout_s: float) -> Completed:
        channel = self._transport().open_session()
        channel.set_combine_stderr(True)
        channel.settimeout(timeout_s)
        channel.exec_command(line)
        chunks = []
        try:
            while data := channel.recv(65536):
                chunks.append(data)
            code: int | None = channel.recv_exit_status()
        except TimeoutError:
            code = None
        finally:
            channel.close()
        return Completed(argv, code, b"".join(chunks).decode(errors="replace"))

    def signal_group(self, pgid: int, signame: str) -> None:
        """Signal a process group on the host; a host that is gone has nothing to signal."""
        with contextlib.suppress(LaunchError, paramiko.SSHException, OSError):
            self._run_line(f"kill -{signame} -- -{pgid}", ["kill"], 10.0)

    # -- files -------------------------------------------------------------------------------
    def contact(self) -> dict[str, str | int]:
        return {"kind": "ssh", "address": self.address, "port": self.port, "user": self.user,
                "key": self.key or "", "known_hosts": self.known_hosts,
                "workdir": str(self.root)}

    def workdir(self, key: str, local_dir: Path) -> str:
        return str(self.root / "runs" / key)

    def write_file(self, path: str, content: str) -> None:
        self._mkdir(str(PurePosixPath(path).parent))
        with self._sftp() as sftp, sftp.open(path, "w") as remote:
            remote.write(content.encode())

    def _mkdir(self, path: str) -> None:
        done = self._run_line(f"mkdir -p {shlex.quote(path)}", ["mkdir"], 30.0)
        if done.code != 0:
            raise LaunchError(f"{self.label}: cannot create {path}: {done.output.strip()}")

    @contextlib.contextmanager
    def _sftp(self):
        with self._sftp_lock:
            sftp = self._connect().open_sftp()
            channel = sftp.get_channel()
            assert channel is not None  # open
            channel.settimeout(60.0)
            try:
                yield sftp
            finally:
                sftp.close()

    def fetch_dir(self, remote_dir: str, local_dir: Path) -> None:
        """Copy a directory tree from the host (SFTP); the caller verifies checksums."""
        with self._sftp() as sftp:
            _get_tree(sftp, remote_dir, local_dir)

    def _left_folder(self, files_at: dict[str, str], sftp: paramiko.SFTPClient) -> str:
        """`files_at`'s folder, if it is one under this host's work directory for runs with
        no link on the way (the host resolves it); LaunchError otherwise."""
        folder, runs = files_at["dir"], self.root / "runs"
        path = PurePosixPath(folder)
        if not path.is_relative_to(runs) or path == runs or ".." in path.parts or \
                sftp.normalize(folder) != folder:
            raise LaunchError(f"{self.label}: {folder} is not a folder under its work "
                              f"directory {runs}: left alone")
        return folder

    def read_left_file(self, files_at: dict[str, str], name: str, max_bytes: int
                       ) -> bytes | None:
        plain_name(name, "file name")
        try:
            with self._sftp() as sftp:
                path = f"{self._left_folder(files_at, sftp)}/{name}"
                if not stat.S_ISREG(sftp.lstat(path).st_mode or 0):
                    return None
                with sftp.open(path, "rb") as remote:
                    data = remote.read(max_bytes + 1)
        except FileNotFoundError:
            return None
        except (OSError, paramiko.SSHException) as exc:
            raise LaunchError(f"{self.label}: reading {files_at['dir']}/{name} failed: "
                              f"{exc}") from None
        if len(data) > max_bytes:
            raise LaunchError(f"{self.label}: {files_at['dir']}/{name} is larger than "
                              f"{max_bytes:,} bytes, more than a sixnines agent writes")
        return data

    def fetch_left_files(self, files_at: dict[str, str], local_dir: Path) -> list[str]:
        fetched = []
        try:
            with self._sftp() as sftp:
                folder = self._left_folder(files_at, sftp)
                for entry in _left_files(sftp, folder):
                    with atomic_path(local_dir / entry) as temp:
                        sftp.get(f"{folder}/{entry}", str(temp))
                    fetched.append(entry)
        except FileNotFoundError:
            raise LaunchError(f"{self.label}: {files_at['dir']} is not there (removed, or "
                              "never written)") from None
        except (OSError, paramiko.SSHException) as exc:
            raise LaunchError(f"{self.label}: fetching {files_at['dir']} failed: "
                              f"{exc}") from None
        return fetched

    def discard_left_files(self, files_at: dict[str, str], names: list[str]) -> list[str]:
        try:
            with self._sftp() as sftp:
                folder = self._left_folder(files_at, sftp)
                for name in set(names) & set(_left_files(sftp, folder)):
                    sftp.remove(f"{folder}/{name}")
                left = sorted(sftp.listdir(folder))
                if not left:
                    sftp.rmdir(folder)
        except (OSError, paramiko.SSHException) as exc:
            raise LaunchError(f"{self.label}: removing files of {files_at['dir']} failed: "
                              f"{exc}") from None
        return left

    # -- preparing the host ----------------------------------------------------------------
    def prepare(self) -> dict:
        self._connect()
        facts = self._preflight()
        if self.spec.python is None:
            facts["bootstrap"] = self._bootstrap(facts)
        else:
            facts["bootstrap"] = {"python": self.python, "installed_by": "inventory"}
        facts["address"] = self.address
        if self.spec.link is not None:
            facts["link"] = self._shape(self.spec.link)
        return facts

    def _shape(self, link: LinkShaping) -> dict:
        """Apply the host's `link` shaping (undone by `close`); a kernel without netem is
        named as the reason when delay or loss were asked for."""
        interface = link.interface
        if interface is None:
            found = self._run_line("ip -o addr show", ["ip"], 30.0)
            interface = interface_of(self.address, found.output)
            if interface is None:
                raise LaunchError(f"{self.label}: no interface there holds {self.address}; "
                                  "name it as link.interface")
        self._shaped = interface
        for command in shape_commands(interface, link):
            done = self._run_line(shlex.join(command), command, 30.0)
            if done.code == 0:
                continue
            if "netem" in command and "unknown" in done.output.lower():
                raise LaunchError(
                    f"{self.label}: its kernel has no netem (sch_netem), so link delay and "
                    "loss are unavailable there; a rate cap alone (tbf) works")
            raise LaunchError(f"{self.label}: shaping {interface} failed ({shlex.join(command)},"
                              f" exit {done.code}): {done.output.strip()[-300:]}")
        return {"interface": interface, **link.model_dump(exclude_none=True)}

    def python_facts(self, script: str, *args: str, timeout_s: float = 60.0) -> dict:
        """The JSON object the last line of `script` prints, run by the host's Python with
        `args` (before the work directory exists: no `cd` there); LaunchError naming the
        host when it cannot run or prints none."""
        done = self._run_line(shlex.join([self.python, "-c", script, *args]), ["python"],
                              timeout_s)
        try:
            facts = json.loads(done.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            facts = None
        if isinstance(facts, dict):
            return facts
        if done.code is None:
            raise LaunchError(f"{self.label}: `{self.python} -c ...` did not finish within "
                              f"{timeout_s:.0f} s (does a shell startup file there block?)")
        raise LaunchError(f"{self.label}: cannot run {self.python} there (exit "
                          f"{done.code}): {done.output.strip()[-300:]}")

    def _preflight(self) -> dict:
        facts = self.python_facts(PREFLIGHT, str(self.root))
        found = tuple(int(part) for part in facts["python"].split(".")[:2])
        if found < MIN_PYTHON:
            raise LaunchError(f"{self.label}: {self.python} is Python {facts['python']}; "
                              f"sixnines needs {'.'.join(map(str, MIN_PYTHON))} or newer")
        if facts["free_bytes"] < MIN_FREE_BYTES:
            raise LaunchError(f"{self.label}: only {facts['free_bytes'] >> 20} MB free in "
                              f"{self.root}; sixnines needs about {MIN_FREE_BYTES >> 20} MB")
        return facts

    def _bootstrap(self, facts: dict) -> dict:
        """Install the bundle into `<workdir>/venvs/<build id>` unless it is there already.
        Concurrent bootstraps of one directory (hosts sharing a filesystem) take turns."""
        try:
            bundle = self.bundle or build_bundle()
        except BundleError as exc:
            raise LaunchError(f"{self.label}: {exc}") from None
        python = ".".join(facts["python"].split(".")[:2])
        if (python, facts["machine"]) != (bundle.python, bundle.machine):
            raise LaunchError(
                f"{self.label}: it has Python {python} on {facts['machine']}, the bundle is "
                f"built for Python {bundle.python} on {bundle.machine}; run the controller "
                "with the same Python, or name an environment with sixnines installed as "
                "the host's `python:`")
        venv = self.root / "venvs" / bundle.build_id
        self.python = str(venv / "bin" / "python")
        started = time.monotonic()
        if self._run_line(f"test -f {shlex.quote(str(venv / 'COMPLETE'))}", ["test"],
                          30.0).code == 0:
            return {"build_id": bundle.build_id, "python": self.python, "reused": True}
        wheels = self.root / "bundles" / bundle.directory.name
        self._upload_wheels(bundle, str(wheels))
        q = shlex.quote
        script = (
            f"set -e; exec 9>{q(str(self.root / 'bootstrap.lock'))}; flock 9; "
            f"if [ ! -f {q(str(venv / 'COMPLETE'))} ]; then rm -rf {q(str(venv))}; "
            f"python3 -m venv {q(str(venv))}; "
            f"{q(self.python)} -m pip install --quiet --no-index --find-links {q(str(wheels))} "
            f"{q(bundle.requirement)}; touch {q(str(venv / 'COMPLETE'))}; fi"
        )
        done = self._run_line(f"sh -c {q(script)}", ["bootstrap"], 900.0)
        if done.code != 0:
            raise LaunchError(f"{self.label}: installing sixnines into {venv} failed (exit "
                              f"{done.code}): {done.output.strip()[-800:]}")
        return {"build_id": bundle.build_id, "python": self.python, "reused": False,
                "seconds": round(time.monotonic() - started, 1)}

    def _upload_wheels(self, bundle: Bundle, remote_dir: str) -> None:
        """Copy the wheels the host lacks (same name and size: already there). Each is
        written under a name of its own and renamed: hosts sharing a filesystem upload
        into one directory at once, and must not write into each other's files."""
        self._mkdir(remote_dir)
        with self._sftp() as sftp:
            present = {entry.filename: entry.st_size for entry in sftp.listdir_attr(remote_dir)}
            for wheel in bundle.wheels():
                if present.get(wheel.name) != wheel.stat().st_size:
                    partial = f"{remote_dir}/{wheel.name}.{uuid.uuid4().hex}.partial"
                    sftp.put(str(wheel), partial)
                    sftp.posix_rename(partial, f"{remote_dir}/{wheel.name}")


class SshProcess(Process):
    def __init__(self, launcher: SshLauncher, argv: Sequence[str], name: str, log_path: Path,
                 inbox: queue.Queue | None, env: dict[str, str] | None) -> None:
        super().__init__(name, inbox)
        self._launcher = launcher
        log_path.parent.mkdir(parents=True, exist_ok=True)
        channel = launcher._transport().open_session()
        channel.exec_command(launcher.command_line(argv, env, announce_pid=True))
        self._channel = channel
        self._stdin = channel.makefile_stdin("w")
        self._stdout = channel.makefile("r")
        channel.settimeout(START_TIMEOUT_S)  # a shell that never gets to our command
        try:
            announced = self._stdout.readline()
        except TimeoutError:
            channel.close()
            raise LaunchError(f"{launcher.label}: {name} did not start within "
                              f"{START_TIMEOUT_S:.0f} s") from None
        channel.settimeout(None)
        self.pid = int(announced.split()[1]) if announced.startswith("pid ") else None
        threading.Thread(target=self._copy_stderr, args=(log_path,), daemon=True,
                         name=f"stderr-{name}").start()
        self._start_reader()

    def _copy_stderr(self, log_path: Path) -> None:
        with open(log_path, "ab") as log, contextlib.suppress(OSError, paramiko.SSHException):
            while chunk := self._channel.recv_stderr(65536):
                log.write(chunk)
                log.flush()

    def _write(self, text: str) -> None:
        if self._channel.closed:
            raise OSError("the SSH channel is closed")
        self._stdin.write(text)
        self._stdin.flush()

    def _readline(self) -> str:
        try:
            return self._stdout.readline()
        except (OSError, paramiko.SSHException):
            return ""

    def poll(self) -> int | None:
        if self._channel.exit_status_ready():
            return self._channel.recv_exit_status()
        transport = self._channel.get_transport()
        if self._channel.closed or transport is None or not transport.is_active():
            return -1  # the connection is gone: the process is out of reach
        return None

    def shutdown(self, grace_s: float = 5.0) -> int | None:
        """As `Process.shutdown`, and the host's guard forgets the group."""
        code = super().shutdown(grace_s)
        if self.pid is not None:
            self._launcher.release(self.pid)
        return code

    def terminate(self) -> None:
        if self.pid is not None:
            self._launcher.signal_group(self.pid, "TERM")
            self._launcher.signal_group(self.pid, "CONT")  # a paused group acts on it then

    def suspend(self) -> None:
        if self.pid is None:
            super().suspend()
        else:
            self._launcher.signal_group(self.pid, "STOP")

    def resume(self) -> None:
        if self.pid is not None:
            self._launcher.signal_group(self.pid, "CONT")

    def kill(self) -> None:
        if self.pid is not None:
            self._launcher.signal_group(self.pid, "KILL")
        self._channel.close()

    def fetch(self, remote_dir: str, local_dir: Path) -> None:
        self._launcher.fetch_dir(remote_dir, local_dir)


def _left_files(sftp: paramiko.SFTPClient, folder: str) -> list[str]:
    """The regular files directly in `folder` with plain names (the listing's attributes
    are the entries' own, so a link is no regular file)."""
    return sorted(entry.filename for entry in sftp.listdir_attr(folder)
                  if stat.S_ISREG(entry.st_mode or 0) and name_problem(entry.filename) is None)


def _get_tree(sftp: paramiko.SFTPClient, remote_dir: str, local_dir: Path) -> None:
    local_dir.mkdir(parents=True, exist_ok=True)
    for entry in sftp.listdir_attr(remote_dir):
        remote = f"{remote_dir}/{entry.filename}"
        if stat.S_ISDIR(entry.st_mode or 0):
            _get_tree(sftp, remote, local_dir / entry.filename)
        elif stat.S_ISREG(entry.st_mode or 0):
            sftp.get(remote, str(local_dir / entry.filename))


def _ssh_config(address: str) -> dict:
    """What `~/.ssh/config` says for `address` (hostname, user, port, identityfile,
    userknownhostsfile); the scenario's own fields take precedence."""
    path = Path("~/.ssh/config").expanduser()
    if not path.is_file():
        return {}
    return dict(paramiko.SSHConfig.from_path(str(path)).lookup(address))


def _expand(path: str | None) -> str | None:
    return None if path is None else str(Path(path).expanduser())
