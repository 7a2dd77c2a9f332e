"""Slurm hostlist expressions: ``cn[001-003],gpu-a1`` <-> ``["cn001", "cn002", "cn003", "gpu-a1"]``.

The syntax is Slurm's (checked against ``scontrol show hostnames`` by the test suite):

* items are separated by commas (or whitespace); empty items are skipped;
* an item is literal text and bracket groups; each group holds comma-separated numbers
  and ``lo-hi`` ranges, zero-padded to the width of ``lo`` (``n[01-3]`` -> n01 n02 n03);
* several groups form a cartesian product, the first group varying slowest
  (``r[1-2]n[1-2]`` -> r1n1 r1n2 r2n1 r2n2);
* order and duplicates are kept (``n[1-3],n2`` -> n1 n2 n3 n2).

Two deliberate differences from Slurm 22.05: text after a closing bracket is accepted as
a suffix (``cn[1-2]-ib`` -> cn1-ib cn2-ib, as newer Slurm releases do), and unbalanced
brackets are an error where 22.05 silently produces garbage (``n[1-2`` -> ``n]``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from clusterenv._core.safe import shorten
from clusterenv.exceptions import HostlistError

__all__ = ["compress_hostlist", "count_hosts", "expand_hostlist", "first_host"]

#: Slurm refuses a single range of more hosts than this ("Too many hosts in range").
MAX_RANGE = 65536
#: Upper bounds on a whole expansion, in hosts and in characters, so that a hostile
#: variable cannot exhaust memory (a long prefix times many hosts).
MAX_HOSTS = 1_000_000
MAX_CHARACTERS = 32 * 1024 * 1024

_Range = tuple[int, int, int]  # lo, hi, zero-padding width
_Part = str | tuple[_Range, ...]  # literal text or one bracket group
_Item = tuple[_Part, ...]

_SEPARATORS = re.compile(r"[,\s]+")
_GROUP = re.compile(r"\[([^\[\]]*)\]")
# Host numbers have at most 18 digits: int() stays cheap and far from Python's limit.
_RANGE = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")
_DIGITS = "0123456789"
#: The characters with a meaning in a hostlist, which no host name may contain.
_SYNTAX = re.compile(r"[\[\],\s]")


def _error(hostlist: str, problem: str) -> HostlistError:
    return HostlistError(
        f"invalid hostlist {shorten(hostlist)!r}: {problem}",
        hint="use Slurm's syntax, e.g. 'cn[001-004],gpu-a1'; "
        "`scontrol show hostnames` prints what Slurm makes of it",
    )


def _split_items(hostlist: str) -> list[str]:
    """Split at top-level separators; commas inside brackets belong to the group."""
    items, start, depth = [], 0, 0
    for match in _SYNTAX.finditer(hostlist):  # only the syntax characters, not every one
        i, char = match.start(), match.group()
        if char == "[":
            depth += 1
            if depth > 1:
                raise _error(hostlist, f"nested '[' at position {i}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise _error(hostlist, f"']' without '[' at position {i}")
        elif depth == 0:  # a separator: comma or whitespace
            items.append(hostlist[start:i])
            start = i + 1
    if depth:
        raise _error(hostlist, "'[' is never closed")
    items.append(hostlist[start:])
    return [item for item in items if item]


def _parse_group(hostlist: str, body: str) -> tuple[_Range, ...]:
    ranges = []
    for text in body.split(","):
        match = _RANGE.fullmatch(text)
        if match is None:
            raise _error(hostlist, f"{shorten(text)!r} is not a number or a lo-hi range")
        lo_text, hi_text = match.group(1), match.group(2)
        lo, hi = int(lo_text), int(hi_text or lo_text)
        if hi < lo:
            raise _error(hostlist, f"range {shorten(text)!r} runs backwards")
        if hi - lo + 1 > MAX_RANGE:
            raise _error(hostlist, f"range {text!r} has more than {MAX_RANGE} hosts")
        ranges.append((lo, hi, len(lo_text)))
    return tuple(ranges)


def _parse(hostlist: str) -> list[_Item]:
    if not isinstance(hostlist, str):
        raise HostlistError(f"a hostlist must be a string, not {type(hostlist).__name__}")
    items = []
    for text in _split_items(hostlist):
        parts: list[_Part] = []
        position = 0
        for match in _GROUP.finditer(text):
            if match.start() > position:
                parts.append(text[position : match.start()])
            parts.append(_parse_group(hostlist, match.group(1)))
            position = match.end()
        if position < len(text):
            parts.append(text[position:])
        items.append(tuple(parts))
    if not items:
        raise _error(hostlist, "it names no host")
    return items


def _part_size(part: _Part) -> int:
    return 1 if isinstance(part, str) else sum(hi - lo + 1 for lo, hi, _ in part)


def _part_values(part: _Part, prefix: str = "") -> list[str]:
    """The names ``prefix + value`` for each value of ``part``, in order."""
    if isinstance(part, str):
        return [prefix + part]
    values: list[str] = []
    for lo, hi, width in part:  # the hot loop of a 10^5 expansion; zfill beats str.format 2x
        values.extend([prefix + str(number).zfill(width) for number in range(lo, hi + 1)])
    return values


def _product(factors: Iterable[int]) -> int:
    """The product, or ``MAX_HOSTS + 1`` once it exceeds ``MAX_HOSTS``: 20 000 groups
    would otherwise make a number too long to print."""
    product = 1
    for factor in factors:
        product *= factor
        if product > MAX_HOSTS:
            return MAX_HOSTS + 1
    return product


def _count(items: list[_Item]) -> int:
    """Hosts in ``items``; at most ``MAX_HOSTS + 1`` (meaning: more than ``MAX_HOSTS``)."""
    total = 0
    for item in items:
        total += _product(_part_size(part) for part in item)
        if total > MAX_HOSTS:
            return MAX_HOSTS + 1
    return total


def _characters(items: list[_Item]) -> int:
    """An upper bound on the characters of the expansion (within ``MAX_HOSTS``), without
    expanding it: each part's longest value, times the hosts of its item."""
    total = 0
    for item in items:
        longest = sum(
            len(part) if isinstance(part, str) else max(max(w, len(str(hi))) for _, hi, w in part)
            for part in item
        )
        total += longest * _product(_part_size(part) for part in item)
    return total


def count_hosts(hostlist: str) -> int:
    """Number of hosts ``hostlist`` expands to, without expanding it (``MAX_HOSTS + 1``
    standing for any larger number)."""
    return _count(_parse(hostlist))


def first_host(hostlist: str) -> str:
    """First host of ``hostlist`` (the Slurm convention for rank 0), without expanding it.

    The whole expression is still validated, so a malformed list fails here too.
    """
    first_item = _parse(hostlist)[0]
    return "".join(
        part if isinstance(part, str) else _part_values(part[:1])[0] for part in first_item
    )


def expand_hostlist(hostlist: str) -> list[str]:
    """Expand a Slurm hostlist into host names, in Slurm's order, duplicates kept.

    Raises :class:`~clusterenv.HostlistError` for malformed input, an empty list, or more
    than ``MAX_HOSTS`` hosts or ``MAX_CHARACTERS`` characters.
    """
    items = _parse(hostlist)
    total = _count(items)
    if total > MAX_HOSTS:
        raise _error(hostlist, f"it expands to more than {MAX_HOSTS} hosts")
    if _characters(items) > MAX_CHARACTERS:
        raise _error(hostlist, f"its host names would take more than {MAX_CHARACTERS} characters")
    hosts: list[str] = []
    for item in items:
        names = [""]
        for part in item:
            names = [value for name in names for value in _part_values(part, name)]
        hosts.extend(names)
    return hosts


def _runs(digits: list[str]) -> Iterable[str]:
    """Group zero-padded numbers into ``lo-hi`` runs that expand back to exactly ``digits``."""
    start = 0
    while start < len(digits):
        width, lo = len(digits[start]), int(digits[start])
        end = start + 1
        while (
            end < len(digits)
            and end - start < MAX_RANGE
            and digits[end] == f"{lo + end - start:0{width}d}"
        ):
            end += 1
        yield digits[start] if end - start == 1 else f"{digits[start]}-{digits[end - 1]}"
        start = end


def compress_hostlist(hosts: Iterable[str]) -> str:
    """Compress host names into a Slurm hostlist; ``expand_hostlist`` gives them back.

    Order and duplicates are kept, so only neighbouring hosts that share a prefix are
    bracketed: ``["cn001", "cn002", "gpu-a1"]`` -> ``"cn[001-002],gpu-a1"``.
    An empty input gives ``""``.
    """
    groups: list[tuple[str, list[str]]] = []  # (prefix, trailing numbers); [] = literal host
    for host in hosts:
        if not isinstance(host, str) or not host or _SYNTAX.search(host):
            raise HostlistError(
                f"cannot put host name {shorten(str(host))!r} into a hostlist",
                hint="host names must be non-empty and contain no brackets, commas or spaces",
            )
        # Split off the trailing digits by hand: the regex (.*?)([0-9]+) backtracks
        # quadratically on a long run of digits that does not end the name.
        prefix = host.rstrip(_DIGITS)
        number = host[len(prefix) :]
        if not number:
            groups.append((host, []))
        elif groups and groups[-1][1] and groups[-1][0] == prefix:
            groups[-1][1].append(number)
        else:
            groups.append((prefix, [number]))
    items = []
    for prefix, digits in groups:
        if not digits:
            items.append(prefix)
        elif len(digits) == 1:
            items.append(prefix + digits[0])
        else:
            items.append(f"{prefix}[{','.join(_runs(digits))}]")
    return ",".join(items)
