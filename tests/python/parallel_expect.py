"""What the real TP / SP / PP runs of scripts/fsdp_tp_train.py must issue per step, worked out by
hand from the model's shapes (the numbers are derived in docs/accuracy.md, "Real 2D FSDP + TP and
pipeline runs on CPU/gloo"). fp32 everywhere (4 bytes). Keys: (type label, group ranks "[a,b]").

Conventions, as `shardscope record` stores bytes: an all-gather's output, a reduce-scatter's
input, an all-reduce's buffer, a send's / recv's tensor."""

F32 = 4
# scripts/fsdp_tp_train.py --tiny (the model sees `seq` tokens; the batch is per data-parallel rank)
TINY = dict(vocab=256, dim=64, layers=2, heads=4, hidden=128, seq=32, batch=2)


def group(ranks):
    return "[" + ",".join(str(r) for r in sorted(ranks)) + "]"


def layer_params(m, tp=1):
    """One decoder layer's parameters held by a TP rank: q, k, v, o and w1, w2, w3 split by tp, the two
    RMSNorm weights replicated."""
    d, f = m["dim"], m["hidden"]
    return (4 * d * d + 3 * d * f) // tp + 2 * d


def root_params(m, tp=1, embedding=True, head=True):
    """The root unit's own parameters held by a TP rank: embedding (rowwise: vocab split), final norm and
    output head (colwise: vocab split); a pipeline stage holds only its end's part."""
    v, d = m["vocab"], m["dim"]
    return (v * d // tp if embedding else 0) + ((d + v * d // tp) if head else 0)


def fsdp(m, dp_group, root, layers, tp=1):
    """FSDP2 over the dp group, every layer its own unit (reshard after forward), the root not resharded:
    forward gathers the root and each layer, backward re-gathers each layer; one reduce-scatter a unit."""
    lp = layer_params(m, tp)
    return {("all_gather", dp_group): [1 + 2 * layers, F32 * (root + 2 * layers * lp)],
            ("reduce_scatter", dp_group): [1 + layers, F32 * (root + layers * lp)]}


def tensor_parallel(m, rank, tp, sequence_parallel, loss_parallel=False, world=4):
    """One rank's step of the 2D run (mesh dp x tp, tp innermost), torchtitan's plan with the root parallel.

    Without SP: forward all-reduces the embedding's partial output and each block's attention and MLP
    output (wo, w2: Partial -> Replicate); backward all-reduces the input gradient of each block's
    attention and MLP (PrepareModuleInput makes wq/wk/wv share one) and of the output head: 4L + 2
    all-reduces of batch x seq x dim, plus the output head's all-gather of the logits.
    With SP each all-reduce becomes a reduce-scatter (to sequence shards) and its partner an
    all-gather (from them): 4L + 2 of each, plus the logits' all-gather; and the norms' weight
    gradients (replicated weights over sequence shards: Partial) are all-reduced, 2L + 1 of dim.
    Loss parallel: the logits stay vocab shards (no all-gather); loss_parallel()'s cross-entropy
    all-reduces three fp32 values per token over the TP pair (the softmax's max and sum of
    exponentials, the target's logit)."""
    b, s, d, v, L = m["batch"], m["seq"], m["dim"], m["vocab"], m["layers"]
    tp_group = group(range(rank - rank % tp, rank - rank % tp + tp))
    dp_group = group(range(rank % tp, world, tp))
    act = F32 * b * s * d
    logits = F32 * b * s * v
    n = 4 * L + 2
    out = fsdp(m, dp_group, root_params(m, tp), L, tp)
    gathered_logits = [0, 0] if loss_parallel else [1, logits]
    small = [3, 3 * F32 * b * s] if loss_parallel else [0, 0]
    if sequence_parallel:
        out[("reduce_scatter", tp_group)] = [n, n * act]
        out[("all_gather", tp_group)] = [n + gathered_logits[0], n * act + gathered_logits[1]]
        out[("all_reduce", tp_group)] = [2 * L + 1 + small[0], (2 * L + 1) * F32 * d + small[1]]
    else:
        out[("all_reduce", tp_group)] = [n + small[0], n * act + small[1]]
        if gathered_logits[0]:
            out[("all_gather", tp_group)] = gathered_logits
    return out


def pipeline(m, rank, microbatches=2):
    """One rank's steady step of the 2-stage run (mesh pp 2 x dp 2: stages {0,1} and {2,3}), 1F1B or GPipe
    with 2 micro-batches, each stage fully_shard'ed over its dp pair. Per micro-batch a stage sends its
    activation forward (or its input gradient back) and receives the other: (batch / M) x seq x dim.
    FSDP2 under the schedule: the stage's root gathered once; its layer gathered for each micro-batch's
    forward and once more for the first backward (pipelining keeps it unsharded until the last
    backward, and reduce-scatters only after the last)."""
    assert microbatches == 2
    b, s, d, L = m["batch"], m["seq"], m["dim"], m["layers"]
    stage = rank // 2
    dp_group = group(range(2 * stage, 2 * stage + 2))
    pp_group = group((rank % 2, rank % 2 + 2))
    layers = L // 2
    root = root_params(m, embedding=stage == 0, head=stage == 1)
    lp = layer_params(m)
    msg = F32 * (b // microbatches) * s * d
    return {("all_gather", dp_group): [1 + (microbatches + 1) * layers, F32 * (root + (microbatches + 1) * layers * lp)],
            ("reduce_scatter", dp_group): [1 + layers, F32 * (root + layers * lp)],
            ("send", pp_group): [microbatches, microbatches * msg],
            ("recv", pp_group): [microbatches, microbatches * msg]}


def tp_sharded_param_bytes(m, tp, dp):
    """FSDPMemTracker's "Sharded Param" on each rank: the TP-local parameters split over dp."""
    return F32 * (root_params(m, tp) + m["layers"] * layer_params(m, tp)) // dp


def param_tensors(m):
    """Parameter tensors of the model (AdamW keeps one 4-byte step count for each)."""
    return 3 + 9 * m["layers"]
