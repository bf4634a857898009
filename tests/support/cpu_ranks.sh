# Sourced by the shell tests that record real jobs on CPU ranks (PY must be set first):
#  - exits 77 (skipped) when PY has no torch, unless SHARDSCOPE_REQUIRE_TORCH=1 (then it fails);
#  - T: a scratch folder, removed at exit; fail MESSAGE: prints FAIL and exits 1;
#  - $T/two_ranks.sh ARGS...: runs `PY ARGS...` as two gloo ranks started the way torchrun starts
#    them (RANK / LOCAL_RANK / WORLD_SIZE; a plain launcher keeps the tests independent of
#    torchrun's rendezvous) and exits with the larger exit code.
if ! "$PY" -c "import torch" 2>/dev/null; then
  [ "${SHARDSCOPE_REQUIRE_TORCH:-0}" = 1 ] && { echo "FAIL: $PY has no torch (run scripts/python-env.sh)"; exit 1; }
  echo "SKIP: $PY has no torch"; exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The master port: below the ephemeral range (32768-60999 here), where gloo's own connections and
# the torchrun tests' port-0 stores take theirs, and free when it is chosen.
for _ in 1 2 3 4 5 6 7 8; do
  PORT=$(( 20000 + RANDOM % 12000 ))
  "$PY" -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))" "$PORT" 2>/dev/null && break
done
cat > "$T/two_ranks.sh" <<LAUNCH
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=2
RANK=0 LOCAL_RANK=0 $PY "\$@" & p0=\$!
RANK=1 LOCAL_RANK=1 $PY "\$@" & p1=\$!
wait \$p0; c0=\$?; wait \$p1; c1=\$?
exit \$(( c0 > c1 ? c0 : c1 ))
LAUNCH
