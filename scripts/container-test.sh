#!/usr/bin/env bash
# The container image end to end on this machine, with Debian's podman: build the image from
# the Containerfile, run it with its data in a volume, wait for its healthcheck, create an
# account inside it, stream a sample through its published port and check the transcript,
# then restart it and check the account and the transcript survived in the volume.
#
# Not part of `npm test` (CI): the first run builds a Debian base and the image (15.5 minutes
# in all on the project's loaded 2-core machine, 14 of them the image build: apt, npm
# packages, compiling); later runs reuse the base and podman's layer cache (3.3 minutes after
# a change under src/, most of it the addon and TypeScript builds and the first start's
# capacity measurement). Run it as root on
# Debian 12: it installs podman, runc and mmdebstrap when missing.
#
# Where no image registry is reachable (this project's machines), the base image is built from
# Debian's archive with mmdebstrap and imported; with a registry, BASE=docker.io/library/debian:bookworm-slim
# skips that. podman runs with runc and an empty default ulimit list: crun and podman's default
# RLIMIT_NOFILE are refused on some sandboxed hosts (docs: README, "Container").
#
# env: WORK (cache dir, default /var/tmp/scribed-container), PORT (host port, default 18990),
#      BASE (base image; default: built here), KEEP=1 (leave the container running).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
WORK=${WORK:-/var/tmp/scribed-container}
PORT=${PORT:-18990}
IMAGE=localhost/scribed:test
NAME=scribed-container-test
VOLUME=scribed-container-test-data
STARTED=$(date +%s)
say() { echo "container-test: $* ($(($(date +%s) - STARTED)) s)"; }
fail() {
  echo "container-test: FAILED: $*" >&2
  podman logs --tail 30 "$NAME" >&2 2>/dev/null || true
  exit 1
}

missing=()
for tool in podman:podman runc:runc mmdebstrap:mmdebstrap; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]}"
  [ "$(id -u)" -eq 0 ] || { echo "container-test: run as root to install ${missing[*]}" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$WORK"
printf '[containers]\ndefault_ulimits = []\n' >"$WORK/containers.conf"
export CONTAINERS_CONF="$WORK/containers.conf"
podman() { command podman --runtime runc "$@"; }

cleanup() {
  if [ -z "${KEEP:-}" ]; then
    podman rm -f "$NAME" >/dev/null 2>&1 || true
    podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
cleanup

# The base: a minimal Debian bookworm from Debian's archive, built once and kept.
if [ -z "${BASE:-}" ]; then
  BASE=localhost/scribed-base:bookworm
  if ! podman image exists "$BASE"; then
    say "building the Debian bookworm base with mmdebstrap"
    mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$WORK/base.tar" http://deb.debian.org/debian
    podman import --quiet "$WORK/base.tar" "$BASE" >/dev/null
  fi
fi

# A build behind a TLS-inspecting proxy needs the host's extra CAs (the Containerfile says how).
ca_mount=()
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  ca_mount=(-v /usr/local/share/ca-certificates:/usr/local/share/ca-certificates:ro)
fi
say "building $IMAGE from $BASE (log: $WORK/build.log)"
if ! podman build --format docker "${ca_mount[@]}" --build-arg "BASE=$BASE" -t "$IMAGE" -f Containerfile . >"$WORK/build.log" 2>&1; then
  tail -n 40 "$WORK/build.log" >&2
  fail "the image build failed (log: $WORK/build.log)"
fi
say "built: $(podman image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%.0f MB", $1 / 1e6}')"

say "running it on 127.0.0.1:$PORT with its data in volume $VOLUME"
# podman runs the image's HEALTHCHECK on a systemd timer; without systemd (a container host
# like this one) it cannot make the timer and says so on stderr (kept in run.log), so the
# check is run here, by hand, instead.
podman run -d --name "$NAME" -p "127.0.0.1:$PORT:8080" -v "$VOLUME:/var/lib/scribed" "$IMAGE" >/dev/null 2>"$WORK/run.log" \
  || { cat "$WORK/run.log" >&2; fail "podman run failed"; }

wait_ready() { # SECONDS
  local deadline=$(($(date +%s) + $1))
  until curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; do
    [ "$(podman inspect "$NAME" --format '{{.State.Running}}')" = true ] || fail "the container stopped"
    [ "$(date +%s)" -lt "$deadline" ] || fail "not ready within $1 s"
    sleep 2
  done
}
# The first start measures this host's capacity before it listens.
wait_ready 300
say "ready"

uid=$(podman exec "$NAME" id -u)
[ "$uid" != 0 ] || fail "the service runs as root"
podman healthcheck run "$NAME" >/dev/null || fail "the image's HEALTHCHECK fails while /readyz answers"
[ "$(podman inspect "$IMAGE" --format '{{index .Config.Volumes "/var/lib/scribed"}}')" = "{}" ] || fail "no volume at /var/lib/scribed"
say "runs as uid $uid; its healthcheck passes"

account=$(podman exec "$NAME" scribed accounts create --name container-test --characters 600 --json)
key=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).accessKey)' "$account")
out=$(node samples/stream-sample.mjs --url "http://127.0.0.1:$PORT" --key "$key" --file samples/librivox-0880.ulaw --encoding mulaw_8000)
echo "$out" | sed 's/^/  | /'
# The clip says "he was not an ill disposed young man"; pocketsphinx hears most of it.
words=$(echo "$out" | grep '^final' | grep -oiE '\b(he|was|not|an|ill|disposed|young|man)\b' | wc -l)
[ "$words" -ge 4 ] || fail "the transcript has $words of the clip's words"
session=$(echo "$out" | grep -m1 '^session' | awk '{print $2}')
say "streamed a sample: $words of its 8 words heard (session $session)"

# The data outlives the container's process: restart it, the account still works.
podman restart --time 20 "$NAME" >/dev/null 2>>"$WORK/run.log" || { cat "$WORK/run.log" >&2; fail "podman restart failed"; }
wait_ready 120
history=$(curl -s -H "accessKey: $key" "http://127.0.0.1:$PORT/sound_clone/api/v1/stt/transcriptions")
# stream-sample.mjs titles the session with the file it streamed.
echo "$history" | grep -q 'librivox-0880' || fail "after a restart the History does not list the sample: $history"
say "restarted: the account and its transcriptions are still there"
say "PASSED in $(($(date +%s) - STARTED)) s"
