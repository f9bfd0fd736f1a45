"""Processes in containers on a Docker API endpoint (a Docker engine, or podman's compatible
service: deploy/containers/podman-service.sh), through the docker SDK.

One container per process, from the agent image (deploy/Dockerfile built with this
checkout's bundle, tagged `sixnines-agent:<build id>`), on the engine host's network by
default so servers in containers are reached at the host's address. The control channel is
the container's stdin/stdout over the API's attach connection, opened before the container
starts so nothing it prints is lost; its stderr goes to the process's log file. Containers
outlive their process so its files can be fetched afterwards; the launcher's `close()`
removes every container it created. A controller that dies leaves them exited (their
processes saw their input end), and `sixnines collect` fetches their files and removes
them (orchestrator.results.collect).
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import shutil
import signal
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any, cast

import docker
import requests
from docker.errors import APIError, BuildError, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.models.images import Image
from docker.utils import socket as frames

from sixnines.formats import protocol as p
from sixnines.formats.atomic import atomic_path
from sixnines.formats.run_files import name_problem, plain_name
from sixnines.orchestrator.launchers.base import Completed, Launcher, LaunchError, Process
from sixnines.orchestrator.launchers.bundle import PROJECT_ROOT, Bundle, BundleError, build_bundle

DOCKERFILE = PROJECT_ROOT / "deploy" / "Dockerfile"
BASE_IMAGE_VARIABLE = "SIXNINES_BASE_IMAGE"
AGENT_REPOSITORY = "sixnines-agent"
BUILD_ID_LABEL = "sixnines.build-id"
LABEL = "sixnines"
WORKDIR = "/work"  # in each container: where a process writes its files
API_TIMEOUT_S = 60
BUILD_TIMEOUT_S = 1800  # pip installs the wheels silently: no output for a minute or more
ENGINE_MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}  # Docker's names → platform's


class ContainerProcess(Process):
    """A process that is a container's main process, with its stdio attached."""

    def __init__(self, container: Container, name: str, log_path: Path,
                 inbox: queue.Queue | None) -> None:
        super().__init__(name, inbox)
        self.container = container
        self._stdout = bytearray()
        self._exit_code: int | None = None
        self._socket = container.attach_socket(
            params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        # over a unix socket or TCP the SDK hands out a read-only SocketIO around the
        # connection; SSH transports hand out the channel itself
        # the plain socket under the SDK's wrapper (or the socket itself, over SSH)
        self._connection = cast(socket.socket, getattr(self._socket, "_sock", self._socket))
        self._sending = threading.Lock()  # the caller's lines and the heartbeats
        self._ended = threading.Event()
        try:
            container.start()
        except BaseException:
            self._close_connection()
            raise
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")  # noqa: SIM115 - the reader closes it at the end
        self._start_reader()
        threading.Thread(target=self._beat, name=f"beat-{name}", daemon=True).start()

    def _write(self, text: str) -> None:
        with self._sending:
            self._connection.sendall(text.encode())

    def _beat(self) -> None:
        """Heartbeats on the process's input until its output ends: the attach connection
        to an engine on another machine can vanish without closing (the controller's
        laptop suspended), and the agents, the monitor and builtin brokers take silence
        after a beat as their controller's end (formats.protocol)."""
        line = p.encode(p.Beat()) + "\n"
        while not self._ended.wait(p.HEARTBEAT_S):
            try:
                self._write(line)
            except OSError:
                return

    def _readline(self) -> str:
        while (end := self._stdout.find(b"\n")) < 0:
            chunk = self._next_stdout()
            if not chunk:
                self._close_streams()
                line = bytes(self._stdout)
                self._stdout.clear()
                return line.decode(errors="replace")
            self._stdout += chunk
        line = bytes(self._stdout[:end + 1])
        del self._stdout[:end + 1]
        return line.decode(errors="replace")

    def _next_stdout(self) -> bytes:
        """The next stdout bytes (b"" at the end of output). The attach stream multiplexes
        stdout and stderr in frames with 8-byte headers; stderr frames go to the log here."""
        try:
            while True:
                stream, size = frames.next_frame_header(self._socket)
                if size < 0:
                    return b""
                data = frames.read_exactly(self._socket, size) if size else b""
                if stream == frames.STDERR:
                    self._log.write(data)
                    self._log.flush()
                elif data:
                    return data
        except (frames.SocketError, OSError, ValueError):  # connection dropped or closed
            return b""

    def _close_streams(self) -> None:
        """At the end of output, by the reader thread: the only one using them."""
        self._ended.set()
        self._close_connection()
        self._log.close()

    def _close_connection(self) -> None:
        with contextlib.suppress(OSError):
            self._socket.close()
            self._connection.close()

    def poll(self) -> int | None:
        if self._exit_code is None:
            try:
                self.container.reload()
            except NotFound:  # removed from outside (e.g. `podman rm -f`)
                self._exit_code = -signal.SIGKILL
                return self._exit_code
            state = self.container.attrs["State"]
            if state["Status"] in ("exited", "dead"):
                self._exit_code = state["ExitCode"]
        return self._exit_code

    def _signal(self, signum: signal.Signals) -> None:
        """To the container's init, which forwards it to the process (see `_create`)."""
        with contextlib.suppress(APIError):  # not running any more
            self.container.kill(signal=signum.name)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def files_at(self, remote_dir: str) -> dict[str, str]:
        return {"dir": remote_dir, "container": engine_id(self.container)}

    def fetch(self, remote_dir: str, local_dir: Path) -> None:
        fetch_from(self.container, remote_dir, local_dir)


class ContainerLauncher(Launcher):
    """Containers on one Docker API endpoint (`unix://`, `tcp://`, `ssh://`)."""

    python = "python"  # the image's venv is first on PATH

    def __init__(self, host: str, url: str, image: str | None = None,
                 address: str = "127.0.0.1", network_mode: str = "host",
                 base_image: str | None = None, session: str | None = None) -> None:
        """`image`: the agent image to use as it is (default: built here from the bundle,
        FROM `base_image`, default $SIXNINES_BASE_IMAGE or the Dockerfile's own).
        `session`: the label of an earlier launcher's containers, to reach them again
        (`close` then leaves them: `discard_left_files` removes each once its files are safe)."""
        self.host = host
        self.url = url
        self.address = address
        self.network_mode = network_mode
        self.base_image = base_image or os.environ.get(BASE_IMAGE_VARIABLE) or None
        self._requested_image = image
        self._image: Image | None = None
        self._client: docker.DockerClient | None = None
        self._session = session or uuid.uuid4().hex  # labels every container it creates
        self._reaching_again = session is not None
        self._files: dict[str, str] = {}
        self._left: dict[str, list[str]] = {}  # container id → the files fetched from it

    # -- host ------------------------------------------------------------------------------
    def prepare(self) -> dict:
        client = self._connect()
        engine = client.version()
        if self._requested_image is None:
            bundle = self._bundle(engine)
            self._image = self._agent_image(client, bundle)
        else:
            self._image = self._named_image(client, self._requested_image)
        component = (engine.get("Components") or [{}])[0]  # "Engine" or "Podman Engine"
        return {
            "engine": f"{component.get('Name', 'Engine')} {engine.get('Version')}",
            "api_version": engine.get("ApiVersion"),
            "engine_os": f"{engine.get('Os')}/{engine.get('Arch')}",
            "network": self.network_mode,
            "image": self._image.tags[0] if self._image.tags else self._image.id,
            "image_id": self._image.id,
            "build_id": self._image.labels.get(BUILD_ID_LABEL),
        }

    def connect(self) -> None:
        self._connect()

    def _connect(self) -> docker.DockerClient:
        if self._client is None:
            try:
                client = docker.DockerClient(base_url=self.url, timeout=API_TIMEOUT_S)
                client.ping()
            # each transport fails its own way (requests, paramiko, OSError, the SDK's)
            except Exception as exc:
                raise LaunchError(
                    f"container host {self.host}: no Docker API answers at {self.url} "
                    f"({exc}). Start the engine or fix the URL; without Docker, "
                    "deploy/containers/podman-service.sh start serves one.") from exc
            self._client = client
        return self._client

    def _bundle(self, engine: dict) -> Bundle:
        try:
            bundle = build_bundle()
        except BundleError as exc:
            raise LaunchError(f"container host {self.host}: {exc}") from exc
        machine = ENGINE_MACHINES.get(engine.get("Arch", ""), engine.get("Arch"))
        if machine != bundle.machine:
            raise LaunchError(
                f"container host {self.host} ({self.url}) runs {machine} containers, the "
                f"bundle's wheels are for {bundle.machine}: name a ready-made image instead")
        return bundle

    def _agent_image(self, client: docker.DockerClient, bundle: Bundle) -> Image:
        """`sixnines-agent:<build id>`, built when the engine does not have it yet."""
        tag = f"{AGENT_REPOSITORY}:{bundle.build_id}"
        with contextlib.suppress(ImageNotFound):
            return client.images.get(tag)
        build_args = {"PYTHON": bundle.python, "BUILD_ID": bundle.build_id}
        if self.base_image:
            build_args["BASE"] = self.base_image
        with tempfile.TemporaryDirectory(prefix="sixnines-image-") as context:
            assemble_context(bundle, Path(context))
            try:
                image, _ = client.images.build(
                    path=context, tag=tag, buildargs=build_args, rm=True, forcerm=True,
                    timeout=BUILD_TIMEOUT_S)
            except BuildError as exc:
                output = "".join(str(step.get("stream", "")) for step in exc.build_log)
                raise LaunchError(
                    f"container host {self.host}: building {tag} from {DOCKERFILE} failed: "
                    f"{exc.msg}\n{output[-2000:]}") from exc
            except (APIError, requests.RequestException) as exc:
                raise LaunchError(f"container host {self.host}: building {tag} failed: "
                                  f"{exc}") from exc
        return image

    def _named_image(self, client: docker.DockerClient, name: str) -> Image:
        with contextlib.suppress(ImageNotFound):
            return client.images.get(name)
        try:
            return client.images.pull(name)
        except (APIError, requests.RequestException) as exc:
            raise LaunchError(f"container host {self.host}: image {name} is not on "
                              f"{self.url} and pulling it failed: {exc}") from exc

    def contact(self) -> dict[str, str | int]:
        return {"kind": "container", "docker": self.url, "session": self._session}

    def _left_container(self, files_at: dict[str, str]) -> Container:
        """The container holding `files_at`, if this launcher's session started it and the
        folder is under the work directory; LaunchError otherwise."""
        container = self._container(files_at)
        labels = container.labels or {}
        if labels.get(LABEL) != "1" or labels.get(f"{LABEL}.launcher") != self._session or \
                not PurePosixPath(files_at["dir"]).is_relative_to(WORKDIR):
            raise LaunchError(f"container host {self.host}: container {container.short_id} "
                              f"({files_at['dir']}) is not one of this run's sixnines: left "
                              "alone")
        return container

    def read_left_file(self, files_at: dict[str, str], name: str, max_bytes: int
                       ) -> bytes | None:
        container = self._left_container(files_at)
        path = f"{files_at['dir']}/{plain_name(name, 'file name')}"
        try:
            chunks, _ = container.get_archive(path)
            with tarfile.open(fileobj=io.BufferedReader(ChunkReader(chunks)), mode="r|") as tar:
                member = next(iter(tar), None)
                if member is None or not member.isfile():
                    return None
                extracted = tar.extractfile(member)
                assert extracted is not None, "a regular file's member extracts"
                data = extracted.read(max_bytes + 1)
        except NotFound:
            return None
        except (APIError, requests.RequestException, tarfile.TarError) as exc:
            raise LaunchError(f"container host {self.host}: reading {path} failed: "
                              f"{exc}") from exc
        if len(data) > max_bytes:
            raise LaunchError(f"container host {self.host}: {path} is larger than "
                              f"{max_bytes:,} bytes, more than a sixnines agent writes")
        return data

    def fetch_left_files(self, files_at: dict[str, str], local_dir: Path) -> list[str]:
        container = self._left_container(files_at)
        try:
            chunks, _ = container.get_archive(files_at["dir"])
            names = untar_files(io.BufferedReader(ChunkReader(chunks)), local_dir)
        except (APIError, requests.RequestException, tarfile.TarError, OSError) as exc:
            raise LaunchError(f"container host {self.host}: fetching {files_at['dir']} from "
                              f"container {container.short_id} failed: {exc}") from exc
        self._left[engine_id(container)] = names
        return names

    def discard_left_files(self, files_at: dict[str, str], names: list[str]) -> list[str]:
        """The container itself (exited: its process saw its input end), once every file
        fetched from it is among `names`; else it stays whole."""
        container = self._left_container(files_at)
        fetched = self._left.get(engine_id(container))
        if fetched is None or not set(fetched) <= set(names):
            return sorted(fetched or [])
        with contextlib.suppress(NotFound):
            container.remove(force=True)
        return []

    def _container(self, files_at: dict[str, str]) -> Container:
        try:
            return self._connect().containers.get(files_at["container"])
        except NotFound:
            raise LaunchError(f"container host {self.host}: container "
                              f"{files_at['container'][:12]} is gone (removed)") from None
        except (APIError, requests.RequestException) as exc:
            raise LaunchError(f"container host {self.host}: {exc}") from None

    def workdir(self, key: str, local_dir: Path) -> str:
        return f"{WORKDIR}/{key}"

    def write_file(self, path: str, content: str) -> None:
        """Containers share no file system: the file is put into every container started
        from now on, as if it were on the host they run on."""
        self._files[path] = content

    # -- processes -------------------------------------------------------------------------
    def start(self, argv: Sequence[str], name: str, log_path: Path,
              inbox: queue.Queue | None = None, env: dict[str, str] | None = None
              ) -> ContainerProcess:
        container = self._create(argv, env, name, interactive=True)
        try:
            return ContainerProcess(container, name, log_path, inbox)
        except (APIError, requests.RequestException) as exc:
            raise LaunchError(f"container host {self.host}: starting {name} "
                              f"({' '.join(argv)}) failed: {exc}") from exc

    def start_beside(self, target: Process, argv: Sequence[str], name: str, log_path: Path,
                     inbox: queue.Queue | None = None) -> tuple[Process, int]:
        """In a container sharing target's PID namespace, where target's init is pid 1 and
        the processes of this container, entered from outside, are not its descendants."""
        if not isinstance(target, ContainerProcess):
            return super().start_beside(target, argv, name, log_path, inbox)
        container = self._create(argv, None, name, interactive=True,
                                 pid_mode=f"container:{target.container.id}")
        try:
            return ContainerProcess(container, name, log_path, inbox), 1
        except (APIError, requests.RequestException) as exc:
            raise LaunchError(f"container host {self.host}: starting {name} beside "
                              f"{target.name} failed: {exc}") from exc

    def run(self, argv: Sequence[str], env: dict[str, str] | None = None,
            timeout_s: float = 60.0) -> Completed:
        container = self._create(argv, env, "run", interactive=False)
        try:
            container.start()
            code = self._wait(container, timeout_s)
            output = container.logs(stdout=True, stderr=True).decode(errors="replace")
        except APIError as exc:  # the engine refused to start it
            return Completed(list(argv), 127, str(exc))
        finally:
            with contextlib.suppress(APIError):
                container.remove(force=True)
        return Completed(list(argv), code, output)

    @staticmethod
    def _wait(container: Container, timeout_s: float) -> int | None:
        """The exit code, or None: killed at the timeout (the wait request timing out)."""
        try:
            return container.wait(timeout=timeout_s)["StatusCode"]
        except requests.RequestException:
            with contextlib.suppress(APIError):
                container.kill()
            return None

    def _create(self, argv: Sequence[str], env: dict[str, str] | None, name: str,
                interactive: bool, pid_mode: str | None = None) -> Container:
        """A created (not started) container. `init`: the engine's init runs as PID 1 and
        forwards signals, since a process that is PID 1 ignores SIGTERM it has no handler
        for and would not stop on `terminate()`. In another container's PID namespace
        (`pid_mode`) that one's init is PID 1, and the engine refuses a second.
        An interactive container's stdin closes when the attach connection ends (the SDK
        sets StdinOnce for `detach=False`; podman closes it anyway): a controller that
        dies ends its processes' input, as on any other host."""
        if self._image is None:
            self.prepare()
        image = self._image
        assert image is not None  # prepare() found or built it
        labels = {LABEL: "1", f"{LABEL}.name": name, f"{LABEL}.launcher": self._session}
        try:
            container = self._connect().containers.create(
                engine_id(image), command=list(argv), environment=env or {}, labels=labels,
                network_mode=self.network_mode, stdin_open=interactive, tty=False,
                init=pid_mode is None, auto_remove=False, detach=not interactive,
                pid_mode=pid_mode)
            self._put_files(container)
        except (APIError, requests.RequestException) as exc:
            raise LaunchError(f"container host {self.host}: creating a container for "
                              f"{name} ({' '.join(argv)}) failed: {exc}") from exc
        return container

    def _put_files(self, container: Container) -> None:
        if self._files:
            container.put_archive("/", tar_files(self._files))

    def close(self) -> None:
        """Remove every container this launcher created (running ones are killed): the
        label finds them even when a start failed halfway."""
        if self._client is None:
            return
        if self._reaching_again:
            self._client.close()
            self._client = None
            return
        try:
            leftovers = self._client.containers.list(
                all=True, filters={"label": f"{LABEL}.launcher={self._session}"})
            # newest first: a monitor sharing a broker's PIDs must go before the broker
            for container in sorted(leftovers, key=lambda c: c.attrs.get("Created", ""),
                                    reverse=True):
                with contextlib.suppress(NotFound):
                    container.remove(force=True)
        except (APIError, requests.RequestException) as exc:
            raise LaunchError(f"container host {self.host}: removing the containers labelled "
                              f"{LABEL}.launcher={self._session} at {self.url} failed: "
                              f"{exc}") from exc
        finally:
            self._client.close()
            self._client = None


def fetch_from(container: Container, remote_dir: str, local_dir: Path) -> None:
    """Through the API's archive endpoint, which also reads an exited container."""
    try:
        chunks, _ = container.get_archive(remote_dir)
        local_dir.mkdir(parents=True, exist_ok=True)
        untar(io.BufferedReader(ChunkReader(chunks)), local_dir)
    except (APIError, requests.RequestException) as exc:
        name = container.labels.get(f"{LABEL}.name", "?")
        raise LaunchError(f"fetching {remote_dir} from container {container.short_id} "
                          f"({name}) failed: {exc}") from exc


def assemble_context(bundle: Bundle, context: Path) -> None:
    """deploy/Dockerfile's build context: the dependency wheels apart from sixnines' own,
    so the layers installing the dependencies stay cached while the sources change."""
    shutil.copy(DOCKERFILE, context / "Dockerfile")
    for folder in ("wheels", "sixnines"):
        (context / folder).mkdir()
    for wheel in bundle.wheels():
        own = wheel.name.split("-")[0] == "sixnines"
        shutil.copy(wheel, context / ("sixnines" if own else "wheels") / wheel.name)


# -- archives ------------------------------------------------------------------------------
class ChunkReader(io.RawIOBase):
    """The byte chunks of a streamed HTTP body as a file, so tarfile reads the archive as
    it arrives instead of holding a run's files in memory."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = chunk
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def untar(stream: IO[bytes], local_dir: Path) -> None:
    """Extract the archive of one directory into `local_dir`, dropping the directory's own
    name. Only regular files and directories, each inside `local_dir`: an archive from a
    container is not trusted to name paths elsewhere (absolute, `..`) or to plant links."""
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise LaunchError(f"refusing archive member {member.name!r}: outside the "
                                  "fetched directory")
            parts = name.parts[1:]
            if not parts:
                continue
            target = local_dir.joinpath(*parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                target.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None  # a regular file's
                with source, open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink)


def engine_id(made: Container | Image) -> str:
    """The id the engine gave a container or image it made (the SDK's types allow none)."""
    if made.id is None:
        raise LaunchError(f"the container engine gave {made!r} no id")
    return made.id


def untar_files(stream: IO[bytes], local_dir: Path) -> list[str]:
    """Extract the regular files directly in the archived directory into `local_dir`, each
    whole under its own plain name (formats.atomic); nothing else in the archive is
    written. Their names."""
    names = []
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            parts = PurePosixPath(member.name).parts
            if len(parts) != 2 or not member.isfile() or name_problem(parts[1]) is not None:
                continue
            source = archive.extractfile(member)
            assert source is not None  # a regular file's
            with source, atomic_path(local_dir / parts[1]) as temp, open(temp, "wb") as sink:
                shutil.copyfileobj(source, sink)
            names.append(parts[1])
    return sorted(names)


def tar_files(files: dict[str, str]) -> bytes:
    """An archive of text files named by absolute paths, with their parent directories,
    to unpack at "/": Docker's put-archive needs its target directory to exist already."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        directories: set[PurePosixPath] = set()
        for path, content in files.items():
            relative = PurePosixPath(path).relative_to("/")
            for parent in reversed(relative.parents[:-1]):
                if parent not in directories:
                    directories.add(parent)
                    info = tarfile.TarInfo(str(parent))
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, time.time()
                    archive.addfile(info)
            data = content.encode()
            info = tarfile.TarInfo(str(relative))
            info.size, info.mode, info.mtime = len(data), 0o644, time.time()
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
