"""NVTX message convention shared with the C++ collector (profiler/collector/core/module_range_name.h).

    ss:fwd:<fqn>   module forward          ss:bwd:<fqn>   module backward
    ss:rcp:<fqn>   recompute under activation checkpointing
    ss:opt:<n>     optimizer step n (0-based)
The root module has the empty fqn ("ss:fwd:").
    ss:mem:<category>:<address>[:<fqn>]   a tensor fact (zero-length, only in torch.profiler traces):
                                  the allocation at <address> holds <category> (storage/types.cpp
                                  labels), owned by module <fqn>
    ss:live:<category>:<address>:<bytes>[:<fqn>]   a tensor alive when a capture window starts
                                  (record --steps A:B): allocated before the trace, so the trace has
                                  no allocation event for it; the importer makes one of <bytes>
    ss:freed:<address>            that tensor's storage died (torch.profiler reports no free on a CPU
                                  for a block allocated before it started)
    FSDP::unshard (<fqn>)         FSDP1 unshards unit <fqn> (its all-gather and the unsharded
                                  FlatParameter; only in the CPU trace: FSDP1 names no unit itself)
    FSDP::post_backward_reduce (<fqn>)   FSDP1 reduce-scatters unit <fqn>'s gradient (FSDP2's name)
"""

FORWARD = "fwd"
BACKWARD = "bwd"
RECOMPUTE = "rcp"
OPTIMIZER = "opt"


def module_message(phase, fqn):
    return "ss:%s:%s" % (phase, fqn)


def tensor_fact_message(category, address, module=None):
    if module is None:
        return "ss:mem:%s:%d" % (category, address)
    return "ss:mem:%s:%d:%s" % (category, address, module)


def live_tensor_message(category, address, nbytes, module=None):
    if module is None:
        return "ss:live:%s:%d:%d" % (category, address, nbytes)
    return "ss:live:%s:%d:%d:%s" % (category, address, nbytes, module)


def freed_tensor_message(address):
    return "ss:freed:%d" % address


def fsdp_unshard_message(fqn):
    """FSDP1's unshard of unit <fqn> (hooks._name_fsdp1_units), in FSDP's own range style."""
    return "FSDP::unshard (%s)" % fqn


def fsdp_reduce_message(fqn):
    """FSDP1's gradient reduction of unit <fqn>, under FSDP2's name for it."""
    return "FSDP::post_backward_reduce (%s)" % fqn


def optimizer_message(step):
    return "ss:opt:%d" % step


def parse_message(message):
    """Returns (phase, fqn_or_step) or None for messages that are not ours."""
    if not message.startswith("ss:") or len(message) < 7 or message[6] != ":":
        return None
    tag, rest = message[3:6], message[7:]
    if tag == OPTIMIZER:
        return (tag, int(rest)) if rest.isdigit() else None
    if tag in (FORWARD, BACKWARD, RECOMPUTE):
        return (tag, rest)
    return None
