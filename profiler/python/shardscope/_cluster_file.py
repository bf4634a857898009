"""The measure_* tools' cluster files: the base they start from, and the file they write."""
import json
import os
import sys


def read_base(path):
    """The cluster file at `path` as a dict ({} for no path). Raises ValueError saying why not."""
    if not path:
        return {}
    try:
        with open(path) as f:
            base = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(str(e))
    if not isinstance(base, dict):
        raise ValueError("not a JSON object")
    return base


def write(cluster, output):
    """Writes `cluster` (a dict) to `output` whole or not at all (a .partial file renamed), or to
    stdout when `output` is empty."""
    text = json.dumps(cluster, indent=1) + "\n"
    if not output:
        sys.stdout.write(text)
        return
    tmp = output + ".partial"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, output)
