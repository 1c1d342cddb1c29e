"""The placements of a paired measurement's inputs: two launches (A, B) given once per placement of the operands
they share take the placements in turn, pair by pair, so a ratio is an average over where the operands lie rather
than one draw of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

Launches = Callable[[], object] | Sequence[Callable[[], object]]
"""One launch, or one per placement of the inputs (see ``placed_pair``)."""


def placed_pair(
    launch_a: Launches, launch_b: Launches
) -> Callable[[int], tuple[Callable[[], object], Callable[[], object]]]:
    """Pair ``k``'s two launches: with one launch per placement of the inputs (A's and B's ``i``-th on the same
    operands), placement ``(k // 2) % P``, so each placement is timed in both orders (A B, then B A) and the
    placements take turns through the whole measurement.

    Hazard guarded: on the H200 the winner/torch.matmul ratio of one kernel pair read 0.911–0.935 at
    16×4096×4096 and 1.167–1.208 at 128×4096×4096 on eight fresh placements of the operands in one process,
    each to ±0.55% (benchmarks/measurement-trust/placement_spread.py): a ratio timed on one placement is one draw of
    that spread, and an independent check (another process, other addresses) draws another."""
    a = list(launch_a) if isinstance(launch_a, Sequence) else [launch_a]
    b = list(launch_b) if isinstance(launch_b, Sequence) else [launch_b]
    if len(a) != len(b) or not a:
        raise ValueError(f"{len(a)} A launches beside {len(b)} B launches: one of each per placement")
    return lambda k: (a[(k // 2) % len(a)], b[(k // 2) % len(b)])
