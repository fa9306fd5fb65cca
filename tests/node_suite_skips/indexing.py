"""Node cases of the indexing ops (Gather, GatherND, ScatterND, ScatterElements, NonZero, Pad,
OneHot, Trilu, DepthToSpace, SpaceToDepth) that cannot pass: none; every case runs."""

SKIPS: dict[str, str] = {}
