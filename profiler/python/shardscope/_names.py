"""NVTX message convention shared with the C++ collector (profiler/collector/core/module_range_name.h).

    ss:fwd:<fqn>   module forward          ss:bwd:<fqn>   module backward
    ss:rcp:<fqn>   recompute under activation checkpointing
    ss:opt:<n>     optimizer step n (0-based)
The root module has the empty fqn ("ss:fwd:").
"""

FORWARD = "fwd"
BACKWARD = "bwd"
RECOMPUTE = "rcp"
OPTIMIZER = "opt"


def module_message(phase, fqn):
    return "ss:%s:%s" % (phase, fqn)


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
