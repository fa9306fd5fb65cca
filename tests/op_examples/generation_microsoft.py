"""Examples of onnxruntime's com.microsoft generation ops: BeamSearch, GreedySearch, Sampling.

The decoder subgraph is a Python function here (a bigram table: the next token's logits
from the last token), as the graph runner hands a subgraph to an op; the oracles are plain
Python loops written from onnxruntime's CPU kernels. tests/test_generation_ops.py checks
the ops against onnxruntime itself on files its convert_generation tool wrote. The outputs
are token ids and scores of discrete choices: no gradients, and no vmap (the decoder is a
Python function of one batch).
"""

import numpy as np

from tests.op_examples._example import Example

DOMAIN = "com.microsoft"

_VOCAB = 7
_TABLE = np.random.default_rng(41).normal(size=(_VOCAB, _VOCAB)).astype(np.float32) * 2
_TABLE[:, 2] += 2.5  # the end token: likely enough that hypotheses close before max_length


def _bigram(ids, positions, mask):
    import jax.numpy as jnp

    return (jnp.asarray(_TABLE)[ids],)


_bigram.input_names, _bigram.inputs = ("input_ids", "position_ids", "attention_mask"), ()


def _int32(*values):
    return np.array(values, np.int32)


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _greedy_reference(input_ids, max_length, *_, eos_token_id, pad_token_id, decoder, **__):
    sequences = []
    for row in np.asarray(input_ids):
        tokens, ended = list(row), False
        while len(tokens) < int(max_length[0]):
            token = int(np.argmax(_TABLE[tokens[-1]]))
            ended = ended or token == eos_token_id
            tokens.append(pad_token_id if ended else token)
        sequences.append(tokens)
    return [np.array(sequences, np.int32)]


def _beam_reference(
    input_ids,
    max_length,
    min_length,
    num_beams,
    num_return_sequences,
    length_penalty,
    *_,
    eos_token_id,
    pad_token_id,
    early_stopping=0,
    **__,
):
    """onnxruntime's BeamSearchScorer, with Python lists: sorted hypotheses, candidates in order."""
    beams, returned, max_length = int(num_beams[0]), int(num_return_sequences[0]), int(max_length[0])
    penalty = np.float32(length_penalty[0])
    prompts = np.asarray(input_ids)
    batch = len(prompts)
    sequences = [list(row) for row in np.repeat(prompts, beams, axis=0)]
    beam_scores = np.array(([0.0] + [-1e9] * (beams - 1)) * batch, np.float32)
    hypotheses = [[] for _ in range(batch)]
    done = [False] * batch

    def add(entry, tokens, score):
        found = hypotheses[entry]
        score = np.float32(score / np.float32(len(tokens)) ** penalty)
        if len(found) == beams and score <= found[-1][0]:
            return
        at = sum(1 for s, _ in found if s >= score)
        found.insert(at, (score, list(tokens)))
        del found[beams:]

    while len(sequences[0]) < max_length and not all(done):
        length = len(sequences[0])
        logits = np.stack([_TABLE[tokens[-1]] for tokens in sequences])
        scores = (_log_softmax(logits) + beam_scores[:, None]).reshape(batch, beams * _VOCAB)
        candidates = []
        for entry in range(batch):
            order = np.argsort(-scores[entry], kind="stable")[: 2 * beams]
            candidates.append([(scores[entry, i], int(i % _VOCAB), entry * beams + int(i // _VOCAB)) for i in order])
        # onnxruntime reads entry b's best candidate from the flat candidates at b * beams.
        flat = np.array([score for entry_candidates in candidates for score, _, _ in entry_candidates])
        next_beams = []
        for entry in range(batch):
            if done[entry]:
                next_beams += [(0.0, pad_token_id, 0)] * beams
                continue
            chosen = []
            for j, (score, token, row) in enumerate(candidates[entry]):
                if token == eos_token_id:
                    if j < beams:
                        add(entry, sequences[row], score)
                else:
                    chosen.append((score, token, row))
                if len(chosen) == beams:
                    break
            next_beams += chosen
            best = flat[entry * beams : entry * beams + 2 * beams].max()
            if len(hypotheses[entry]) == beams and (
                early_stopping or not hypotheses[entry][-1][0] < best / np.float32(length) ** penalty
            ):
                done[entry] = True
        sequences = [sequences[row] + [token] for _, token, row in next_beams]
        beam_scores = np.array([score for score, _, _ in next_beams], np.float32)
    for entry in range(batch):
        if not done[entry]:
            for beam in range(beams):
                add(entry, sequences[entry * beams + beam], beam_scores[entry * beams + beam])
    out = np.full((batch, returned, max_length), pad_token_id, np.int32)
    out_scores = np.zeros((batch, returned), np.float32)
    for entry in range(batch):
        for k, (score, tokens) in enumerate(hypotheses[entry][:returned]):
            out[entry, k, : len(tokens)] = tokens
            out_scores[entry, k] = score
    return [out, out_scores, None]


_IDS = _int32([1, 4], [3, 3])
_SEARCH = {"eos_token_id": 2, "pad_token_id": 0, "decoder": _bigram}

EXAMPLES = {
    "BeamSearch": [
        Example(
            [_IDS, _int32(7), _int32(0), _int32(3), _int32(2), np.array([1.3], np.float32)],
            dict(_SEARCH),
            outputs=3,
            grad=False,
            vmap=False,
            reference=_beam_reference,
        ),
        Example(
            [_IDS[:1], _int32(7), None, _int32(2), _int32(1), np.array([0.7], np.float32)],
            {**_SEARCH, "early_stopping": 1},
            outputs=2,
            grad=False,
            vmap=False,
            reference=_beam_reference,
        ),
    ],
    # top_p this small keeps only the most likely token: the draw is greedy's, whatever the key.
    "Sampling": [
        Example([_IDS, _int32(8)], {**_SEARCH, "top_p": 1e-4}, grad=False, vmap=False, reference=_greedy_reference),
    ],
    "GreedySearch": [
        Example([_IDS, _int32(8)], dict(_SEARCH), grad=False, vmap=False, reference=_greedy_reference),
    ],
}
