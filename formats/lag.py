"""Whose doing a send lag was (docs/design.md rule 2): the system that stopped taking
messages, the CPUs the generator's loops had, or the generator's own work. One rule for
the warnings of a run (spark_jobs.analyze) and the verdict on a capacity probe
(orchestrator.capacity.verdict).

Senders that did not keep their schedule (send-lag p99 over 1 ms, or under 95 % of the
rate sent) were behind it for `behind_s`, and the kernel says where their loop threads
spent the run (`cpu.sender.loop`): blocked in a call, waiting for a CPU, or running. A
spinning loop is blocked only when a call does not return (measured: under 1 ms in a run
of two loops sharing one CPU), while it waits for a CPU in slices all along on a busy
machine. A side explains the lag when it holds at least a third of the time behind, and
blocked calls also when they took 1 % of the loops' time (enough on their own to put
send-lag p99 over 1 ms). In this order:

- on a kernel whose busy loops had no CPU of their own (orchestrator.plan.cpus): "CPUs
  oversubscribed" — the placement, never the system: there, a system starved of CPU by
  the generator's loops blocks their sends too, so blocked decides only when waiting
  explains nothing;
- loops that sent under the rate per second they ran (`_paced_on_cpu`): "generator
  saturated" — a CPU to themselves would not have kept it, whatever else held them (zmq
  at 3M msg/s sent 2.2M per second on a CPU, on a machine busy enough to keep it
  waiting 4.9 s of 7; the relay at 20M msg/s blocked the sends a third of the time, and
  they ran at 10M per second on a CPU);
- blocked: "system pushed back" — the sends did not return: the system stopped taking
  messages (a broker stalled or full, a consumer stalled behind it); also on a machine so
  busy that the loop waited for its CPU longer (the relay stalled 2 s: behind 4 s in
  all, blocked 1 s, waiting 3.2 s);
- waiting: "machine busy" — other work had the CPU;
- neither: "generator saturated" — the loops ran and still fell behind.

Without the kernel's account (runs recorded before it, kernels without schedstat) the
loops' CPU share stands in: under PUSHED_BACK_CORES of a core per sending agent, they
mostly waited — blocked by the system, unless the placement says they shared their CPUs,
which explains that as well.
"""

from __future__ import annotations

import re
from enum import StrEnum

from sixnines.formats.summary import (
    SATURATED_LAG_P99_US,
    SATURATED_RATE_SHARE,
    LoopTime,
    RunSummary,
)
from sixnines.formats.vocabulary import Load, Schedule

#: A side (blocked, waiting) explains a lag when it holds at least this share of the time
#: the senders were behind, and at least EXPLAINS_FLOOR_S: several times what loops that
#: kept up were blocked over a whole run (0.5–0.8 ms measured).
EXPLAINS = 1 / 3
EXPLAINS_FLOOR_S = 0.005
#: Blocked calls explain it too when they took this share of the loops' time: the share
#: of sends the p99 rule lets lag.
BLOCKED_ALONE = 0.01
#: Without the kernel's account: a loop keeping its schedule, or falling behind on its own
#: work, uses a whole core; one under this share of a core per sending agent mostly
#: waited. The bound sits below what contention leaves a loop (0.43 each for two producers
#: beside the relay and two consumers on two cores) and above what blocked loops used
#: (0.13–0.19 against Redis at 1.6M msg/s).
PUSHED_BACK_CORES = 0.25


class LagCause(StrEnum):
    """Whose doing a send lag was, as the warning's first words name it."""

    SYSTEM = "system pushed back"
    PLACEMENT = "CPUs oversubscribed"
    MACHINE = "machine busy"
    GENERATOR = "generator saturated"


_CROWDED = re.compile(r"^.+: \d+ busy loop\(s\) on \d+ CPU\(s\): no CPU of their own")


def crowded_note(where: str, loops: int, cpus: int) -> str:
    """The CPU placement's note for a kernel whose busy loops get no CPU of their own
    (`where`: "host local"), as the manifest records it and `crowded` reads it back."""
    return (f"{where}: {loops} busy loop(s) on {cpus} CPU(s): no CPU of their own; loops "
            "share their CPUs with everything else (expect send-lag tails)")


def crowded(placement: list[str]) -> list[str]:
    """The kernels of a run's CPU placement notes whose busy loops had no CPU of their
    own, each as "host local: 3 busy loop(s) on 2 CPU(s): no CPU of their own"."""
    return [found[0] for note in placement if (found := _CROWDED.match(note))]


def behind_schedule(summary: RunSummary) -> list[str]:
    """How the senders did not keep their schedule, one finding a line; empty when they
    kept it, or had none to keep (a closed loop waits on purpose, throughput mode has no
    schedule)."""
    params = summary.params
    if params.get("schedule") == Schedule.CLOSED or summary.load == Load.SATURATION:
        return []
    found = []
    lag_p99 = summary.send_lag_us.p99 if summary.send_lag_us is not None else None
    if lag_p99 is not None and lag_p99 > SATURATED_LAG_P99_US:
        found.append(f"send lag p99 is {lag_p99:,.0f} µs (over {SATURATED_LAG_P99_US:,.0f} "
                     "µs); latency includes that wait")
    rate, sent = params.get("rate"), summary.send_rate
    if sent is not None and isinstance(rate, int | float) and sent < SATURATED_RATE_SHARE * rate:
        found.append(f"sent {sent:,.0f} msg/s of the {rate:,.0f} msg/s scheduled")
    return found


def _loops(summary: RunSummary) -> LoopTime | None:
    side = summary.cpu.sender if summary.cpu is not None else None
    return side.loop if side is not None else None


def _paced_on_cpu(summary: RunSummary, loops: LoopTime) -> bool:
    """Whether the senders sent at least SATURATED_RATE_SHARE of the rate per second their
    loops were on a CPU: given the CPU, they kept up (a loop keeping its schedule spins
    between sends, so this holds for it whatever its capacity). True when unknown."""
    rate, sent = summary.params.get("rate"), summary.send_rate
    if not isinstance(rate, int | float) or sent is None or loops.running_s <= 0:
        return True
    spent = loops.running_s + loops.waiting_s + loops.blocked_s
    return sent * spent >= SATURATED_RATE_SHARE * rate * loops.running_s


def lag_cause(summary: RunSummary) -> LagCause:
    """Whose doing it was that the senders fell behind (the module doc has the rule)."""
    shared = bool(crowded(summary.cpu_placement))
    loops, behind = _loops(summary), summary.behind_s
    if loops is not None and behind is not None:
        least = max(EXPLAINS * behind, EXPLAINS_FLOOR_S)
        spent = loops.running_s + loops.waiting_s + loops.blocked_s
        blocked = loops.blocked_s >= min(least, max(BLOCKED_ALONE * spent, EXPLAINS_FLOOR_S))
        waiting = loops.waiting_s >= least
        if shared:
            return LagCause.SYSTEM if blocked and not waiting else LagCause.PLACEMENT
        if not _paced_on_cpu(summary, loops):
            return LagCause.GENERATOR
        if blocked:
            return LagCause.SYSTEM
        return LagCause.MACHINE if waiting else LagCause.GENERATOR
    if shared:
        return LagCause.PLACEMENT
    side = summary.cpu.sender if summary.cpu is not None else None
    senders = summary.params.get("producers", 1)
    if side is not None and side.cores is not None and side.cores < PUSHED_BACK_CORES * senders:
        return LagCause.SYSTEM
    return LagCause.GENERATOR


def evidence(summary: RunSummary, cause: LagCause) -> str:
    """Why the lag is `cause`'s doing, in words: the loops' account against the time
    behind, the placement, or (without the account) the loops' CPU share."""
    loops, behind = _loops(summary), summary.behind_s
    parts = crowded(summary.cpu_placement) if cause == LagCause.PLACEMENT else []
    if loops is not None and behind is not None:
        parts.append(f"behind by over {SATURATED_LAG_P99_US / 1000:g} ms for {behind:,.2f} s "
                     f"in all; the senders' loops were blocked in calls {loops.blocked_s:,.2f} "
                     f"s, waited for a CPU {loops.waiting_s:,.2f} s, ran "
                     f"{loops.running_s:,.2f} s")
    elif cause == LagCause.SYSTEM and summary.cpu is not None and summary.cpu.sender:
        parts.append(f"the senders' loops used {summary.cpu.sender.cores:.2f} core(s)")
    parts.append(CONCLUSIONS[cause])
    return "; ".join(parts)


#: What to do about a placement without a CPU per busy loop.
FEWER_LOOPS = ("fewer busy loops per host (producers, requesters, busy-poll consumers), or "
               "more hosts or CPUs")
CONCLUSIONS = {
    LagCause.SYSTEM: "their sends blocked: the system did not take the messages",
    LagCause.PLACEMENT: f"the placement, not the system: {FEWER_LOOPS}",
    LagCause.MACHINE: "other work on the machine had their CPU, not the system",
    LagCause.GENERATOR: "the generator's own work set the pace, not the system",
}


def lag_warnings(summary: RunSummary) -> list[str]:
    """The warnings on the senders' schedule and CPU placement: one line naming whose
    doing a lag was, with its findings and evidence; and a placement that gave busy loops
    no CPU of their own, also when the lag had another cause or none."""
    found, shared = behind_schedule(summary), crowded(summary.cpu_placement)
    cause = lag_cause(summary) if found else None
    lines = [f"{cause}: {'; '.join(found)} ({evidence(summary, cause)})"] if cause else []
    if shared and cause != LagCause.PLACEMENT:
        lines.append(f"{LagCause.PLACEMENT}: {'; '.join(shared)} (expect send-lag tails from "
                     f"the placement, not the system: {FEWER_LOOPS})")
    return lines
