"""What this process may still use, read before a run trains: resident memory and address
space, each against the limits that really bound it.

- Resident memory (the pages a process touches) is bounded by every memory cgroup the process
  is in, its own and each ancestor's (a systemd slice, a Kubernetes pod: v2's `memory.max`,
  v1's `memory.limit_in_bytes`), less what each group's processes use now (their page cache
  that can be dropped, `inactive_file`, not counted); by the memory the machine has available
  (MemAvailable); and by `ANALYZER_MEMORY`, a limit of one's own on the run's processes
  together.
- Address space (what a process maps, touched or not: thread stacks, malloc's arenas,
  reservations) is bounded per process by `ulimit -v` (RLIMIT_AS): a training process starts
  with what its parent maps already.

Each limit is said as the total it leaves this run (`Limit.total`: what the run holds now plus
the room left), so that a prediction of the run's total compares with it directly. The paths
are parameters, so that tests give their own files.

>>> Limit(2_000_000_000, "ANALYZER_MEMORY=2G").total
2000000000
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from analyzer.errors import Invalid
from analyzer.settings import byte_size, bytes_written

MEMORY_ENV = "ANALYZER_MEMORY"
"""A limit of one's own on what a run's processes may use together (bytes, `16G`, `500M`)."""

PROC = Path("/proc")
"""Where this process's cgroups (self/cgroup, self/mountinfo) and MemAvailable are read (a
test gives a folder of its own)."""
CGROUPS = Path("/sys/fs/cgroup")
"""Where cgroups are mounted when /proc/self/mountinfo does not say (v2 there, v1's memory
controller in `memory/`)."""

NO_LIMIT = 2**60
"""v1 writes "no limit" as a huge number (9223372036854771712): above this, none."""


@dataclass(frozen=True)
class Limit:
    """A limit, as the total it leaves this run (bytes), and what says so."""

    total: int
    what: str
    address: bool = False
    """A limit on one process's address space (`ulimit -v`), not on resident memory."""


@dataclass(frozen=True)
class Headroom:
    """What this process holds now (`held`: resident; `mapped`: address space) and the limits
    on what it may hold."""

    held: int
    mapped: int
    limits: list[Limit] = field(default_factory=list)

    @property
    def resident(self) -> list[Limit]:
        return [limit for limit in self.limits if not limit.address]

    @property
    def address(self) -> Limit | None:
        return next((limit for limit in self.limits if limit.address), None)

    def less(self, share: float) -> Headroom:
        """The same, each limit `share` of it lower."""
        return replace(self, limits=[replace(limit, total=int(limit.total * (1 - share)))
                                     for limit in self.limits])


def headroom(env: Mapping[str, str] | None = None, proc: Path | None = None,
             cgroups: Path | None = None) -> Headroom:
    """This process's usage now and every limit it has (ValueError-free: a file that cannot be
    read or makes no sense is no limit). Invalid when `ANALYZER_MEMORY` is not a size. `proc`
    and `cgroups` (default `PROC`, `CGROUPS`) are where the cgroups and MemAvailable are read;
    this process's own usage is always its own."""
    env = os.environ if env is None else env
    proc = PROC if proc is None else proc
    cgroups = CGROUPS if cgroups is None else cgroups
    held, mapped = own_usage()
    limits = []
    own = own_limit(env)
    if own is not None:
        limits.append(Limit(own, f"{MEMORY_ENV}={env[MEMORY_ENV]}"))
    for group, room, limit in cgroup_rooms(proc, cgroups):
        limits.append(Limit(held + room, f"the memory limit of cgroup {group} "
                                         f"({byte_size(limit)}, {byte_size(limit - room)} in use)"))
    available = meminfo(proc / "meminfo", "MemAvailable")
    if available is not None:
        limits.append(Limit(held + available, "the memory this machine has available"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append(Limit(soft, f"the address-space limit (ulimit -v {soft // 1024})",
                            address=True))
    return Headroom(held, mapped, limits)


def own_limit(env: Mapping[str, str] | None = None) -> int | None:
    """`ANALYZER_MEMORY` in bytes (None: not set); Invalid when it is not a size."""
    env = os.environ if env is None else env
    if not env.get(MEMORY_ENV):
        return None
    number = bytes_written(env[MEMORY_ENV])
    if number is None or not 1 <= number < 2**63:
        raise Invalid(f"{MEMORY_ENV}={env[MEMORY_ENV]!r}: write a number of bytes, e.g. 16G, "
                      "500M or 1000000")
    return int(number)


def own_usage() -> tuple[int, int]:
    """This process's resident memory and address space now (VmRSS, VmSize), in bytes (0
    where /proc does not say)."""
    status = Path("/proc/self/status")
    freed_to_the_system()
    return meminfo(status, "VmRSS") or 0, meminfo(status, "VmSize") or 0


def freed_to_the_system() -> None:
    """Give back to the system what the C allocator keeps of freed memory (glibc's
    malloc_trim; nothing where there is none), so that what this process holds is what it
    uses: a run that has just counted a sample afresh kept its counting threads' freed memory,
    8-27 MB here, which training reuses anyway; measured with it, that run was said to hold
    more than the run a refusal predicted it from, and a smaller sample offered to fit was
    refused again when followed."""
    with contextlib.suppress(AttributeError, OSError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


SHORT_OF_MEMORY = ("Cannot allocate memory", "can't start new thread", "could not start a thread",
                   "Failed to launch worker thread", "failed to map segment from shared object")
"""What Python, Arrow, the engines and the system say when memory, or a new thread's stack,
cannot be had (beside a MemoryError); the last is the loader's, when a module's compiled code
cannot be mapped under an address-space limit (`ulimit -v`: langcodes' name data, imported as
a run reads its corpus, was an internal error, exit 70, in a full test run)."""


def short_of_memory(error: BaseException) -> bool:
    """Whether an error says that memory ran out.

    >>> short_of_memory(RuntimeError("can't start new thread")), short_of_memory(OSError(2, "x"))
    (True, False)
    >>> short_of_memory(ImportError("m.so: failed to map segment from shared object"))
    True
    """
    return isinstance(error, MemoryError) or getattr(error, "errno", None) == errno.ENOMEM \
        or any(said in str(error) for said in SHORT_OF_MEMORY)


def stack_size() -> int:
    """The stack a new thread maps (glibc takes `ulimit -s`; 8 MiB where it is unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
    return 8 << 20 if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


ARENA = 64 << 20
"""The address space glibc's malloc maps for each thread's arena (HEAP_MAX_SIZE, 64-bit)."""


def address_room() -> int | None:
    """What `ulimit -v` leaves this process to map, in bytes; None where there is no limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else max(0, soft - own_usage()[1])


class ShortOfAddress(Invalid):
    """What a command is about to do would map more than `ulimit -v` leaves it."""


def check_address(need: int, what: str, threads: int = 0) -> None:
    """Refuse (ShortOfAddress), before it starts, what would map `need` bytes more than the
    address-space limit (`ulimit -v`) leaves this process. For what cannot fail gently: a
    library in Rust (Hugging Face tokenizers, tiktoken) aborts the whole process when an
    allocation fails ("memory allocation of 16 bytes failed"), with nothing to catch, nothing
    said and the run left marked as running. `what` says it: "Loading qwen3 (11.4 MB) with
    tokenizers". The limit it suggests leaves room for `threads` more threads' stacks and
    arenas: under a tight limit the process's own threads never made theirs, and under the
    one suggested they would (a suggestion from 400000 was refused again at it, the process
    mapping 146 MB more)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return
    _, mapped = own_usage()
    if mapped + need <= soft:
        return
    enough = (mapped + need + threads * (ARENA + stack_size())) * 23 // 20
    raise ShortOfAddress(
        f"{what} needs about {byte_size(need)} of address space, more than the "
        f"{byte_size(max(0, soft - mapped))} that the address-space limit (ulimit -v "
        f"{soft // 1024}) leaves this process, which maps {byte_size(mapped)} already. Give it "
        f"more: ulimit -v {-(-enough // 1024)} or more.")


def meminfo(path: Path, field: str) -> int | None:
    """A `Name: N kB` field of /proc/meminfo or /proc/self/status, in bytes.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix="meminfo") as file:
    ...     _ = file.write("MemTotal: 4 kB\\nMemAvailable: 2 kB\\n"); file.flush()
    ...     meminfo(Path(file.name), "MemAvailable")
    2048
    """
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == field:
                kib = int(value.split()[0])
                return kib * 1024 if kib >= 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def cgroup_rooms(proc: Path, cgroups: Path) -> list[tuple[str, int, int]]:
    """Every memory cgroup this process is in that has a limit, from its own to the root's
    children: `(its path, the room it leaves, its limit)`, the room being the limit less what
    the group uses now (page cache that can be dropped not counted)."""
    found = []
    for folder, group, version in _memory_groups(proc, cgroups):
        if version == 2:
            limit = _read_int(folder / "memory.max")
            used = _read_int(folder / "memory.current")
            inactive = _stat(folder / "memory.stat", "inactive_file")
        else:
            limit = _read_int(folder / "memory.limit_in_bytes")
            used = _read_int(folder / "memory.usage_in_bytes")
            inactive = _stat(folder / "memory.stat", "total_inactive_file")
        if limit is None or not 0 <= limit < NO_LIMIT:
            continue
        working = max(0, (used or 0) - (inactive or 0))
        found.append((group, max(0, limit - working), limit))
    return found


def _memory_groups(proc: Path, cgroups: Path) -> list[tuple[Path, str, int]]:
    """The folders of this process's memory cgroups, v2's and v1's memory controller's, each
    with every ancestor up to (not including) its hierarchy's root: `(folder, path, version)`."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return []
    mounts = _cgroup_mounts(proc, cgroups)
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:  # a blank or unknown line: not one of a cgroup's
            continue
        _, controllers, where = parts
        if controllers == "":
            version = 2
        elif "memory" in controllers.split(","):
            version = 1
        else:
            continue
        for mount, root in mounts.get(version, []):
            path = "/" + where.strip("/")
            # Inside a cgroup namespace, the mount's root is the namespace's own: the path is
            # below it, or is the mount itself.
            inner = path[len(root):] if root != "/" and (path + "/").startswith(root + "/") \
                else path if root == "/" else "/"
            parts_below = [part for part in inner.split("/") if part]
            # Its own group first, then each parent, up to the mount's root (a container's
            # own group, seen from inside its namespace; the host's root has no limit).
            for depth in range(len(parts_below), -1, -1):
                folder = mount.joinpath(*parts_below[:depth])
                if folder.is_dir():
                    found.append((folder, "/" + "/".join(parts_below[:depth]), version))
    return found


def _cgroup_mounts(proc: Path, cgroups: Path) -> dict[int, list[tuple[Path, str]]]:
    """Where each cgroup hierarchy with memory is mounted, and the root of it each mount shows,
    from /proc/self/mountinfo (`{2: [...], 1: [...]}`); where it cannot be read, the usual
    places under `cgroups`."""
    found: dict[int, list[tuple[Path, str]]] = {}
    try:
        lines = (proc / "self" / "mountinfo").read_text().splitlines()
    except OSError:
        return {2: [(cgroups, "/")], 1: [(cgroups / "memory", "/")]}
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        kind, options = tail[0], tail[2].split(",")
        root, mount = _unescape(fields[3]), Path(_unescape(fields[4]))
        if kind == "cgroup2":
            found.setdefault(2, []).append((mount, root))
        elif kind == "cgroup" and "memory" in options:
            found.setdefault(1, []).append((mount, root))
    return found


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (a space is \\040).

    >>> _unescape("/a\\\\040b")
    '/a b'
    """
    return field.encode().decode("unicode_escape") if "\\" in field else field


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):  # missing, or "max"
        return None


def _stat(path: Path, name: str) -> int | None:
    """A line of a cgroup's memory.stat."""
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return None
