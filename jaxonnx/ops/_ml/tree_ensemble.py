"""TreeEnsemble (ai.onnx.ml 5), TreeEnsembleRegressor and TreeEnsembleClassifier (1, 3, 5).

Every version is first turned into one forest table (numpy, built from the attributes at
trace time): each tree padded to the same number of nodes, with per node its feature,
threshold, comparison, missing-value rule, two children and leaf values. The evaluation
then descends all trees for all rows at once, one gather per level, for the forest's
depth: an array program that runs under ``jax.jit``, with no loop over rows or trees.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.ml import POST_TRANSFORMS, binary_scores, class_labels, labels_at
from jaxonnx.ops._helpers.ml import post_transform as transformed

ML = "ai.onnx.ml"
#: The comparisons of a branch node, in TreeEnsemble-5's numbering (the older versions name them).
MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER")
_LEAF = -1
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")


@dataclasses.dataclass(frozen=True)
class Forest:
    """Trees padded to ``nodes`` nodes each; every field is indexed ``[tree, node]``.

    ``mode`` is an index into :data:`MODES` (-1 for a leaf and for padding), ``members``
    the values of BRANCH_MEMBER nodes (NaN padded), ``values``/``present`` the leaf
    weights per target and whether a leaf has a weight for that target.
    """

    roots: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    mode: np.ndarray
    missing_true: np.ndarray
    true_child: np.ndarray
    false_child: np.ndarray
    values: np.ndarray  # [tree, node, target]
    present: np.ndarray  # [tree, node, target]
    members: np.ndarray  # [tree, node, member]
    depth: int

    @property
    def trees(self) -> int:
        return self.roots.shape[0]


def _depth(roots, true_child, false_child, mode) -> int:
    """The longest path from a root to a leaf, in branch nodes; an error for a cycle."""
    nodes = mode.shape[1]
    current = np.zeros(mode.shape, bool)
    current[np.arange(len(roots)), roots] = True
    depth = 0
    while True:
        branching = current & (mode != _LEAF)
        if not branching.any():
            return depth
        if depth > nodes:
            raise OnnxValidationError("has a tree whose branches form a cycle.")
        following = np.zeros_like(current)
        trees, positions = np.nonzero(branching)
        following[trees, true_child[trees, positions]] = True
        following[trees, false_child[trees, positions]] = True
        current, depth = following, depth + 1


def _checked_length(name: str, values, count: int):
    if len(values) != count:
        raise OnnxValidationError(
            f"got {len(values)} `{name}` for {count} nodes; every nodes_* attribute has one entry per node."
        )
    return values


def forest_of_node_lists(
    *,
    treeids,
    nodeids,
    featureids,
    modes,
    values,
    truenodeids,
    falsenodeids,
    missing_tracks_true,
    leaf_treeids,
    leaf_nodeids,
    leaf_ids,
    leaf_weights,
    targets: int,
    what: str,
) -> Forest:
    """The forest of TreeEnsembleRegressor / TreeEnsembleClassifier's attributes (versions 1-5):
    nodes named by (tree id, node id), leaf weights by (tree id, node id, target or class)."""
    count = len(nodeids)
    if count == 0:
        raise OnnxValidationError("has no nodes (`nodes_nodeids` is empty).")
    treeids = np.asarray(_checked_length("nodes_treeids", treeids, count), np.int64)
    nodeids = np.asarray(nodeids, np.int64)
    featureids = np.asarray(_checked_length("nodes_featureids", featureids, count), np.int64)
    modes = list(_checked_length("nodes_modes", modes, count))
    unknown = sorted(set(modes) - set(MODES) - {"LEAF"})
    if unknown:
        raise OnnxValidationError(f"got `nodes_modes` {unknown}; they are LEAF or one of {', '.join(MODES[:-1])}.")
    codes = np.array([_LEAF if m == "LEAF" else MODES.index(m) for m in modes], np.int64)
    missing = (
        np.zeros(count, bool)
        if not missing_tracks_true
        else np.asarray(_checked_length("nodes_missing_value_tracks_true", missing_tracks_true, count), bool)
    )
    tree_keys, tree_of = np.unique(treeids, return_inverse=True)
    trees = len(tree_keys)
    # A node's position in its tree: its rank among the tree's nodes in attribute order.
    position = np.zeros(count, np.int64)
    sizes = np.zeros(trees, np.int64)
    lookup: dict[tuple[int, int], int] = {}
    for i, (t, n) in enumerate(zip(tree_of.tolist(), nodeids.tolist())):
        if (t, n) in lookup:
            raise OnnxValidationError(f"has node id {n} twice in tree {tree_keys[t]}.")
        position[i], sizes[t] = sizes[t], sizes[t] + 1
        lookup[t, n] = int(position[i])
    width = int(sizes.max())

    def child(ids, name):
        ids = _checked_length(name, ids, count)
        out = np.zeros(count, np.int64)
        for i, (t, n) in enumerate(zip(tree_of.tolist(), np.asarray(ids, np.int64).tolist())):
            if codes[i] == _LEAF:
                continue
            if (t, n) not in lookup:
                raise OnnxValidationError(
                    f"has a branch to node {n}, which tree {tree_keys[t]} does not have (`{name}`)."
                )
            out[i] = lookup[t, n]
        return out

    true_local, false_local = child(truenodeids, "nodes_truenodeids"), child(falsenodeids, "nodes_falsenodeids")
    table = np.full((trees, width), _LEAF, np.int64)
    table[tree_of, position] = codes
    pointed = np.zeros((trees, width), bool)
    branches = codes != _LEAF
    pointed[tree_of[branches], true_local[branches]] = True
    pointed[tree_of[branches], false_local[branches]] = True
    filled = np.zeros((trees, width), bool)
    filled[tree_of, position] = True
    # The root is the node no branch points to (the first one in attribute order).
    unpointed = filled & ~pointed
    if not unpointed.any(axis=1).all():
        raise OnnxValidationError("has a tree with no root: every node of it is a branch's child.")
    roots = np.argmax(unpointed, axis=1)

    def placed(array, fill, dtype):
        out = np.full((trees, width), fill, dtype)
        out[tree_of, position] = array
        return out

    leaf_count = len(leaf_nodeids)
    leaf_treeids = _checked_length(f"{what}_treeids", leaf_treeids, leaf_count)
    leaf_ids = _checked_length(f"{what}_ids", leaf_ids, leaf_count)
    leaf_weights = np.asarray(_checked_length(f"{what}_weights", leaf_weights, leaf_count), np.float64)
    leaf_values = np.zeros((trees, width, targets), np.float64)
    present = np.zeros((trees, width, targets), bool)
    tree_index = {int(k): i for i, k in enumerate(tree_keys)}
    for t, n, k, w in zip(
        np.asarray(leaf_treeids).tolist(),
        np.asarray(leaf_nodeids).tolist(),
        np.asarray(leaf_ids).tolist(),
        leaf_weights.tolist(),
    ):
        if (tree_index.get(t), n) not in lookup:
            raise OnnxValidationError(
                f"has a weight for node {n} of tree {t}, which does not exist (`{what}_nodeids`)."
            )
        if not 0 <= k < targets:
            raise OnnxValidationError(
                f"got `{what}_ids` {k} for {targets} {'classes' if what == 'class' else 'targets'}."
            )
        tree = tree_index[t]
        leaf_values[tree, lookup[tree, n], k] += w
        present[tree, lookup[tree, n], k] = True
    true_child = placed(true_local, 0, np.int64)
    false_child = placed(false_local, 0, np.int64)
    return Forest(
        roots=roots,
        feature=placed(featureids, 0, np.int64),
        threshold=placed(np.asarray(values), 0, np.asarray(values).dtype),
        mode=table,
        missing_true=placed(missing, False, bool),
        true_child=true_child,
        false_child=false_child,
        values=leaf_values,
        present=present,
        members=np.full((trees, width, 0), np.nan),
        depth=_depth(roots, true_child, false_child, table),
    )


def forest_of_tree_ensemble_5(
    *,
    tree_roots,
    featureids,
    splits,
    modes,
    truenodeids,
    falsenodeids,
    trueleafs,
    falseleafs,
    missing_tracks_true,
    membership_values,
    leaf_targetids,
    leaf_weights,
    targets: int,
) -> Forest:
    """The forest of TreeEnsemble-5's attributes: branch nodes and leaves in two lists,
    trees by their root, children by index into the node or the leaf list."""
    count = len(featureids)
    modes = np.asarray(modes).reshape(-1).astype(np.int64)
    splits = np.asarray(splits).reshape(-1)
    for name, array in (
        ("nodes_splits", splits),
        ("nodes_modes", modes),
        ("nodes_truenodeids", truenodeids),
        ("nodes_falsenodeids", falsenodeids),
        ("nodes_trueleafs", trueleafs),
        ("nodes_falseleafs", falseleafs),
    ):
        _checked_length(name, array, count)
    if ((modes < 0) | (modes >= len(MODES))).any():
        raise OnnxValidationError(
            f"got `nodes_modes` {sorted(set(modes.tolist()))}; they are 0 to 6 (BRANCH_LEQ to BRANCH_MEMBER)."
        )
    missing = (
        np.zeros(count, bool)
        if not missing_tracks_true
        else np.asarray(_checked_length("nodes_missing_value_tracks_true", missing_tracks_true, count), bool)
    )
    leaf_weights = np.asarray(leaf_weights).reshape(-1)
    _checked_length("leaf_weights", leaf_weights, len(leaf_targetids))
    # The members of each BRANCH_MEMBER node, in node order, each list ended by a NaN.
    member_lists: dict[int, list[float]] = {}
    if (modes == 6).any():
        if membership_values is None:
            raise OnnxValidationError("has BRANCH_MEMBER nodes but no `membership_values`.")
        flat = np.asarray(membership_values, np.float64).reshape(-1)
        ends = np.flatnonzero(np.isnan(flat))
        member_nodes = np.flatnonzero(modes == 6)
        if len(ends) != len(member_nodes):
            raise OnnxValidationError(
                f"has {len(member_nodes)} BRANCH_MEMBER nodes but `membership_values` holds {len(ends)} "
                "NaN-terminated sets; it needs one per such node."
            )
        start = 0
        for node, end in zip(member_nodes.tolist(), ends.tolist()):
            member_lists[node] = flat[start:end].tolist()
            start = end + 1
    # Each tree's nodes: a walk from its root, numbering branch nodes and leaves as met.
    trees = []
    for root in np.asarray(tree_roots, np.int64).tolist():
        if not 0 <= root < count:
            raise OnnxValidationError(f"got the tree root {root} for {count} nodes (`tree_roots`).")
        # A tree that is one leaf: a root whose two children are that same leaf.
        single_leaf = trueleafs[root] and falseleafs[root] and truenodeids[root] == falsenodeids[root]
        stack = [("leaf", truenodeids[root]) if single_leaf else ("node", root)]
        slots: dict[tuple, int] = {}  # ("node" or "leaf", index) -> position in the tree
        order: list[tuple] = []
        while stack:
            entry = stack.pop()
            if entry in slots:
                continue
            slots[entry] = len(order)
            order.append(entry)
            if len(order) > count + len(leaf_weights) + 1:
                raise OnnxValidationError("has a tree whose branches form a cycle.")
            kind, index = entry
            if kind == "node":
                for leaf, child in ((falseleafs[index], falsenodeids[index]), (trueleafs[index], truenodeids[index])):
                    bound = len(leaf_weights) if leaf else count
                    if not 0 <= child < bound:
                        raise OnnxValidationError(
                            f"has a branch to {'leaf' if leaf else 'node'} {child}, out of range for {bound}."
                        )
                    stack.append(("leaf" if leaf else "node", child))
        trees.append((order, slots))
    width = max(len(entries) for entries, _ in trees)
    widest_set = max((len(v) for v in member_lists.values()), default=0)
    shape = (len(trees), width)
    fields = {
        "feature": np.zeros(shape, np.int64),
        "threshold": np.zeros(shape, splits.dtype),
        "mode": np.full(shape, _LEAF, np.int64),
        "missing_true": np.zeros(shape, bool),
        "true_child": np.zeros(shape, np.int64),
        "false_child": np.zeros(shape, np.int64),
    }
    values = np.zeros((*shape, targets), np.float64)
    present = np.zeros((*shape, targets), bool)
    members = np.full((*shape, widest_set), np.nan)
    for t, (entries, slots) in enumerate(trees):
        for slot, (kind, index) in enumerate(entries):
            if kind == "leaf":
                target = int(leaf_targetids[index])
                if not 0 <= target < targets:
                    raise OnnxValidationError(f"got `leaf_targetids` {target} for {targets} targets (`n_targets`).")
                values[t, slot, target] = leaf_weights[index]
                present[t, slot, target] = True
                continue
            fields["feature"][t, slot] = featureids[index]
            fields["threshold"][t, slot] = splits[index]
            fields["mode"][t, slot] = modes[index]
            fields["missing_true"][t, slot] = missing[index]
            fields["true_child"][t, slot] = slots["leaf" if trueleafs[index] else "node", truenodeids[index]]
            fields["false_child"][t, slot] = slots["leaf" if falseleafs[index] else "node", falsenodeids[index]]
            if index in member_lists:
                members[t, slot, : len(member_lists[index])] = member_lists[index]
    roots = np.zeros(len(trees), np.int64)  # every walk starts at its root
    return Forest(
        roots=roots,
        values=values,
        present=present,
        members=members,
        depth=_depth(roots, fields["true_child"], fields["false_child"], fields["mode"]),
        **fields,
    )


def _leaves(forest: Forest, X):
    """The leaf each row reaches in each tree, ``[rows, trees]`` (positions in the tree)."""
    trees, width = forest.mode.shape
    if forest.feature.size and (forest.feature.max(initial=0) >= X.shape[1] or forest.feature.min(initial=0) < 0):
        raise OnnxValidationError(
            f"reads feature {int(forest.feature.max())} of rows of {X.shape[1]} features (`nodes_featureids`)."
        )
    flat = lambda a: jnp.asarray(a.reshape(trees * width, *a.shape[2:]))  # noqa: E731
    used = tuple(sorted(set(np.unique(forest.mode).tolist()) - {_LEAF}))
    offsets = jnp.asarray(np.arange(trees, dtype=np.int64)[None, :] * width)
    positions = _descend(
        X,
        jnp.asarray(forest.roots),
        offsets,
        flat(forest.feature),
        flat(forest.threshold).astype(X.dtype),
        flat(forest.mode),
        flat(forest.missing_true),
        flat(forest.true_child),
        flat(forest.false_child),
        flat(forest.members).astype(X.dtype),
        depth=forest.depth,
        used=used,
    )
    return positions, offsets


# Compiled once per forest shape: an eager call (a model with string labels runs op by op)
# runs one XLA computation instead of tracing the loop again on every call.
@functools.partial(jax.jit, static_argnames=("depth", "used"))
def _descend(
    X,
    roots,
    offsets,
    feature,
    threshold,
    mode,
    missing_true,
    true_child,
    false_child,
    members,
    *,
    depth: int,
    used: tuple[int, ...],
):
    def step(_, position):
        node = offsets + position  # [rows, trees], flat node indices
        x = jnp.take_along_axis(X, feature[node], axis=1)
        v = threshold[node]
        comparisons = {
            0: lambda: x <= v,
            1: lambda: x < v,
            2: lambda: x >= v,
            3: lambda: x > v,
            4: lambda: x == v,
            5: lambda: x != v,
            6: lambda: jnp.any(x[..., None] == members[node], axis=-1),
        }
        code = mode[node]
        goes_true = jnp.zeros(x.shape, bool)
        for m in used:
            goes_true = jnp.where(code == m, comparisons[m](), goes_true)
        # A missing value (NaN) fails every comparison but NEQ, unless its node tracks it to true.
        goes_true = goes_true | (missing_true[node] & jnp.isnan(x))
        following = jnp.where(goes_true, true_child[node], false_child[node])
        return jnp.where(code == _LEAF, position, following)

    start = jnp.broadcast_to(roots[None, :], (X.shape[0], roots.shape[0]))
    return jax.lax.fori_loop(0, depth, step, start)


def _leaf_values(forest: Forest, X, dtype):
    """``(values, present)``: the leaf weights each row reaches, ``[rows, trees, targets]``."""
    positions, offsets = _leaves(forest, X)
    trees, width, targets = forest.values.shape
    node = offsets + positions
    values = jnp.asarray(forest.values.reshape(trees * width, targets), dtype)[node]
    present = jnp.asarray(forest.present.reshape(trees * width, targets))[node]
    return values, present


def _aggregate(values, present, how: str, trees: int):
    """The trees' weights per target, and whether any tree had one (``has``)."""
    has = jnp.any(present, axis=1)
    if how in ("SUM", "AVERAGE"):
        total = jnp.sum(jnp.where(present, values, jnp.zeros_like(values)), axis=1)
        return (total / trees if how == "AVERAGE" else total), has
    if how in ("MIN", "MAX"):
        fill = jnp.asarray(jnp.inf if how == "MIN" else -jnp.inf, values.dtype)
        picked = (jnp.min if how == "MIN" else jnp.max)(jnp.where(present, values, fill), axis=1)
        # A target no tree has a weight for scores 0, as onnxruntime leaves it.
        return jnp.where(has, picked, jnp.zeros_like(picked)), has
    raise OnnxValidationError(f"got `aggregate_function`={how!r}; it is one of {', '.join(AGGREGATES)}.")


def _base(base_values, base_values_as_tensor, count: int, dtype):
    base = base_values_as_tensor if base_values_as_tensor is not None else base_values
    if base is None or len(np.ravel(base)) == 0:
        return None
    base = np.asarray(base, np.float64).reshape(-1)
    if len(base) != count:
        raise OnnxValidationError(f"got {len(base)} `base_values` for {count} targets or classes.")
    return jnp.asarray(base, dtype)


def _features(X, *, keep_dtype: bool = False):
    """The rows as floats: integer features compare as float32, as onnxruntime does."""
    if X.ndim not in (1, 2):
        raise OnnxValidationError(f"needs `X` of rank 1 or 2, got shape {tuple(X.shape)}.")
    X = jnp.atleast_2d(X)
    if not jnp.issubdtype(X.dtype, jnp.floating) or (X.dtype == jnp.float16 and not keep_dtype):
        X = X.astype(jnp.float32)
    return X


def _legacy_forest(attributes: dict, targets: int, what: str) -> Forest:
    values = attributes["nodes_values_as_tensor"]
    values = (
        np.asarray(values).reshape(-1)
        if values is not None
        else np.asarray(attributes["nodes_values"] or [], np.float32)
    )
    weights = attributes[f"{what}_weights_as_tensor"]
    weights = np.asarray(weights).reshape(-1) if weights is not None else attributes[f"{what}_weights"] or []
    count = len(attributes["nodes_nodeids"] or [])
    if len(values) == 0 and count:
        values = np.zeros(count, np.float32)  # a forest of leaves only compares nothing
    return forest_of_node_lists(
        treeids=attributes["nodes_treeids"] or [],
        nodeids=attributes["nodes_nodeids"] or [],
        featureids=attributes["nodes_featureids"] or [],
        modes=attributes["nodes_modes"] or [],
        values=values,
        truenodeids=attributes["nodes_truenodeids"] or [],
        falsenodeids=attributes["nodes_falsenodeids"] or [],
        missing_tracks_true=attributes["nodes_missing_value_tracks_true"],
        leaf_treeids=attributes[f"{what}_treeids"] or [],
        leaf_nodeids=attributes[f"{what}_nodeids"] or [],
        leaf_ids=attributes[f"{what}_ids"] or [],
        leaf_weights=weights,
        targets=targets,
        what=what,
    )


def _compute_dtype(X, forest: Forest):
    """Comparisons and sums in float64 where the input or the thresholds are double, else float32."""
    wide = X.dtype == jnp.float64 or forest.threshold.dtype == np.float64
    return jnp.float64 if wide and jax.config.jax_enable_x64 else jnp.float32


@register("TreeEnsembleRegressor", 1, 3, 5, domain=ML, folds=False)
def tree_ensemble_regressor(
    X,
    *,
    aggregate_function="SUM",
    base_values=None,
    base_values_as_tensor=None,
    n_targets=None,
    nodes_falsenodeids=None,
    nodes_featureids=None,
    nodes_hitrates=None,
    nodes_hitrates_as_tensor=None,
    nodes_missing_value_tracks_true=None,
    nodes_modes=None,
    nodes_nodeids=None,
    nodes_treeids=None,
    nodes_truenodeids=None,
    nodes_values=None,
    nodes_values_as_tensor=None,
    post_transform="NONE",
    target_ids=None,
    target_nodeids=None,
    target_treeids=None,
    target_weights=None,
    target_weights_as_tensor=None,
):
    """Implements ONNX TreeEnsembleRegressor (ai.onnx.ml): the weights of the leaves each row
    reaches, aggregated over the trees (SUM, AVERAGE, MIN or MAX) per target, plus
    ``base_values``, then the post transform.

    A node compares the row's feature with its value (BRANCH_LEQ, BRANCH_LT, BRANCH_GTE,
    BRANCH_GT, BRANCH_EQ, BRANCH_NEQ) and goes to its true or false child; a missing value
    (NaN) goes to the true child where ``nodes_missing_value_tracks_true`` says so. All trees
    and rows descend at once, so it runs under ``jax.jit``; the gradient in ``X`` is 0
    (the prediction is piecewise constant). ``nodes_hitrates`` do not change the result.

    Args:
        X: rows (N, F), or one row (F,); integers compare as float32.
        aggregate_function: SUM, AVERAGE, MIN or MAX (a target no tree weighs is 0 for MIN/MAX).
        base_values, base_values_as_tensor: one value per target, added at the end.
        n_targets: the number of targets.
        nodes_*: the nodes, one entry per node in each list (``*_as_tensor``: double values).
        target_*: the leaf weights: tree id, node id, target and weight of each.
        post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT.

    Returns:
        The float32 predictions (N, n_targets).

    Example:
        >>> jaxonnx.ops.tree_ensemble_regressor(
        ...     jnp.array([[0.2], [0.8]]), n_targets=1, nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2],
        ...     nodes_featureids=[0, 0, 0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        ...     nodes_values=[0.5, 0.0, 0.0], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        ...     target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0], target_weights=[-1.0, 1.0])
        Array([[-1.],
               [ 1.]], dtype=float32)
    """
    attributes = dict(locals())
    if n_targets is None:
        raise OnnxValidationError("needs `n_targets`, which was not given.")
    X = _features(X)
    forest = _legacy_forest(attributes, n_targets, "target")
    dtype = _compute_dtype(X, forest)
    values, present = _leaf_values(forest, X.astype(dtype), dtype)
    scores, _ = _aggregate(values, present, aggregate_function, forest.trees)
    base = _base(base_values, base_values_as_tensor, n_targets, dtype)
    if base is not None:
        scores = scores + base[None, :]
    return transformed(scores, post_transform).astype(jnp.float32)


@register("TreeEnsembleClassifier", 1, 3, 5, domain=ML, folds=False)
def tree_ensemble_classifier(
    X,
    *,
    base_values=None,
    base_values_as_tensor=None,
    class_ids=None,
    class_nodeids=None,
    class_treeids=None,
    class_weights=None,
    class_weights_as_tensor=None,
    classlabels_int64s=None,
    classlabels_strings=None,
    nodes_falsenodeids=None,
    nodes_featureids=None,
    nodes_hitrates=None,
    nodes_hitrates_as_tensor=None,
    nodes_missing_value_tracks_true=None,
    nodes_modes=None,
    nodes_nodeids=None,
    nodes_treeids=None,
    nodes_truenodeids=None,
    nodes_values=None,
    nodes_values_as_tensor=None,
    post_transform="NONE",
):
    """Implements ONNX TreeEnsembleClassifier (ai.onnx.ml): the class weights of the leaves
    each row reaches, summed over the trees, plus ``base_values``; the post transform; the
    label of the best class.

    Nodes branch as in :func:`tree_ensemble_regressor`. A binary model whose weights are
    all for one class (what scikit-learn converts to) gives one score ``s`` per row, as
    onnxruntime reads it: with weights all >= 0, ``s`` is the second class's probability
    (label: the second where ``s > 0.5``; scores ``[1 - p, p]``, ``p`` the LOGISTIC or
    PROBIT of ``s``, else ``s``); with weights of both
    signs, ``s`` is a margin (label: the second where ``s > 0``; scores ``[-s, s]``, or
    their logistic with LOGISTIC).

    Args:
        X: rows (N, F), or one row (F,); integers compare as float32.
        base_values, base_values_as_tensor: one value per class (or one for a binary model).
        class_*: the leaf weights: tree id, node id, class index and weight of each.
        classlabels_int64s, classlabels_strings: the class labels (exactly one of the two).
        nodes_*: the nodes, one entry per node in each list (``*_as_tensor``: double values).
        post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT.

    Returns:
        ``(Y, Z)``: the labels (N,), int64 or string, and the float32 scores (N, classes).

    Example:
        >>> y, z = jaxonnx.ops.tree_ensemble_classifier(
        ...     jnp.array([[0.2], [0.8]]), classlabels_int64s=[3, 4], nodes_treeids=[0, 0, 0],
        ...     nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
        ...     nodes_values=[0.5, 0.0, 0.0], nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        ...     class_treeids=[0, 0, 0, 0], class_nodeids=[1, 1, 2, 2], class_ids=[0, 1, 0, 1],
        ...     class_weights=[0.9, 0.1, 0.3, 0.7])
        >>> y
        Array([3, 4], dtype=int32)
        >>> z
        Array([[0.9, 0.1],
               [0.3, 0.7]], dtype=float32)
    """
    attributes = dict(locals())
    labels = class_labels(classlabels_int64s, classlabels_strings, ints="classlabels_int64s")
    classes = len(labels)
    X = _features(X)
    forest = _legacy_forest(attributes, classes, "class")
    dtype = _compute_dtype(X, forest)
    values, present = _leaf_values(forest, X.astype(dtype), dtype)
    scores, has = _aggregate(values, present, "SUM", forest.trees)
    weighted = sorted(set(np.asarray(class_ids if class_ids is not None else [], np.int64).tolist()))
    if classes == 2 and len(weighted) == 1:
        return _binary(
            labels,
            scores[:, weighted[0]],
            class_weights_as_tensor if class_weights_as_tensor is not None else class_weights,
            base_values_as_tensor if base_values_as_tensor is not None else base_values,
            post_transform,
            dtype,
        )
    base = _base(base_values, base_values_as_tensor, classes, dtype)
    if base is not None:
        scores, has = scores + base[None, :], jnp.ones_like(has)
    # The best class among those some tree (or a base value) scores, the first of equals.
    best = jnp.argmax(jnp.where(has, scores, jnp.asarray(-jnp.inf, scores.dtype)), axis=1)
    return labels_at(labels, best), transformed(scores, post_transform).astype(jnp.float32)


def _binary(labels, score, weights, base, post_transform: str, dtype):
    """The labels and scores of a binary model that weighs one class only (see
    :func:`tree_ensemble_classifier`)."""
    base = np.asarray(base if base is not None else [], np.float64).reshape(-1)
    if len(base) in (1, 2):
        score = score + jnp.asarray(base[-1] if len(base) == 2 else base[0], dtype)
    elif len(base):
        raise OnnxValidationError(f"got {len(base)} `base_values` for a binary model; it takes 1 or 2.")
    if np.all(np.asarray(weights, np.float64) >= 0):
        return labels_at(labels, (score > 0.5).astype(jnp.int32)), binary_scores(score, post_transform).astype(
            jnp.float32
        )
    # A margin: the pair is [-s, s], its logistic with LOGISTIC; onnxruntime leaves it as it
    # is for the softmaxes (and so does this), and PROBIT takes the probit of s first.
    if post_transform in ("LOGISTIC", "PROBIT"):
        pair = (
            transformed(jnp.stack([-score, score], axis=1), "LOGISTIC")
            if post_transform == "LOGISTIC"
            else jnp.stack([-transformed(score, "PROBIT"), transformed(score, "PROBIT")], axis=1)
        )
    else:
        pair = jnp.stack([-score, score], axis=1)
    return labels_at(labels, (score > 0).astype(jnp.int32)), pair.astype(jnp.float32)


_POST_TRANSFORM_CODES = dict(enumerate(POST_TRANSFORMS))


@register("TreeEnsemble", 5, domain=ML, folds=False)
def tree_ensemble(
    X,
    *,
    leaf_targetids,
    leaf_weights,
    nodes_falseleafs,
    nodes_falsenodeids,
    nodes_featureids,
    nodes_modes,
    nodes_splits,
    nodes_trueleafs,
    nodes_truenodeids,
    tree_roots,
    aggregate_function=1,
    membership_values=None,
    n_targets=None,
    nodes_hitrates=None,
    nodes_missing_value_tracks_true=None,
    post_transform=0,
):
    """Implements ONNX TreeEnsemble (ai.onnx.ml 5): the leaf weights each row reaches,
    aggregated over the trees per target, then the post transform.

    Branch nodes and leaves are two lists; each tree is its root in ``tree_roots``. A node
    compares the row's feature with its split (modes 0-5: LEQ, LT, GTE, GT, EQ, NEQ) or,
    for BRANCH_MEMBER (6), checks whether the feature is one of the node's members (its
    NaN-terminated run of ``membership_values``). NaN goes to the true child where
    ``nodes_missing_value_tracks_true`` says so. All trees and rows descend at once.

    Args:
        X: float rows (N, F); float16 rows compare in float32.
        aggregate_function: 0 AVERAGE, 1 SUM, 2 MIN, 3 MAX.
        leaf_targetids, leaf_weights: each leaf's target and weight.
        membership_values: the member sets of BRANCH_MEMBER nodes.
        n_targets: the number of targets.
        nodes_*: the branch nodes; ``*leafs`` says whether a child is a leaf index.
        post_transform: 0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT.
        tree_roots: the index of each tree's root node.

    Returns:
        The predictions (N, n_targets), of the dtype of ``X``.

    Example:
        >>> from onnx.numpy_helper import from_array as tensor
        >>> jaxonnx.ops.tree_ensemble(
        ...     jnp.array([[1.0], [2.0], [3.0]]), n_targets=1, tree_roots=[0], nodes_featureids=[0],
        ...     nodes_modes=tensor(np.array([6], np.uint8)), nodes_splits=tensor(np.array([0.0], np.float32)),
        ...     membership_values=tensor(np.array([1.0, 3.0, np.nan], np.float32)), nodes_truenodeids=[0],
        ...     nodes_trueleafs=[1], nodes_falsenodeids=[1], nodes_falseleafs=[1], leaf_targetids=[0, 0],
        ...     leaf_weights=tensor(np.array([10.0, 20.0], np.float32)))
        Array([[10.],
               [20.],
               [10.]], dtype=float32)
    """
    if n_targets is None:
        raise OnnxValidationError("needs `n_targets`, which was not given.")
    if aggregate_function not in range(4) or post_transform not in range(5):
        raise OnnxValidationError(
            f"got `aggregate_function`={aggregate_function} and `post_transform`={post_transform}; "
            "they are 0-3 and 0-4."
        )
    if X.ndim != 2:
        raise OnnxValidationError(f"needs `X` of rank 2, got shape {tuple(X.shape)}.")
    forest = forest_of_tree_ensemble_5(
        tree_roots=tree_roots,
        featureids=nodes_featureids,
        splits=nodes_splits,
        modes=nodes_modes,
        truenodeids=nodes_truenodeids,
        falsenodeids=nodes_falsenodeids,
        trueleafs=nodes_trueleafs,
        falseleafs=nodes_falseleafs,
        missing_tracks_true=nodes_missing_value_tracks_true,
        membership_values=membership_values,
        leaf_targetids=leaf_targetids,
        leaf_weights=leaf_weights,
        targets=n_targets,
    )
    rows = _features(X)
    dtype = _compute_dtype(rows, forest)
    values, present = _leaf_values(forest, rows.astype(dtype), dtype)
    scores, _ = _aggregate(values, present, AGGREGATES[aggregate_function], forest.trees)
    return transformed(scores, _POST_TRANSFORM_CODES[post_transform]).astype(X.dtype)


__all__ = ["tree_ensemble", "tree_ensemble_classifier", "tree_ensemble_regressor"]
