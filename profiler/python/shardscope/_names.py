"""NVTX message convention shared with the C++ collector (profiler/collector/core/module_range_name.h).

    ss:fwd:<fqn>   module forward          ss:bwd:<fqn>   module backward
    ss:rcp:<fqn>   recompute under activation checkpointing
    ss:opt:<n>     optimizer step n (0-based)
The root module has the empty fqn ("ss:fwd:").
    ss:mem:<category>:<address>[:<fqn>]   a tensor fact (zero-length, only in torch.profiler traces):
                                  the allocation at <address> holds <category> (storage/types.cpp
                                  labels), owned by module <fqn>
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
