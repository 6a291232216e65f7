# Sourced by scripts/setup.sh (and by test/ops/setup-up-to-date.test.ts on a temp dir): when a
# set-up step may be skipped, and putting the `scribed` command on PATH.
#
# A step is up to date when its stamp file exists, holds the same key (what the output also
# depends on but is no file: the Node ABI, a package list), its output exists, and no input
# (a file, or a directory and everything under it) changed after the stamp. Directories count
# by their own mtime too, so a deleted or added source rebuilds. The stamp's mtime is the time
# the step STARTED (begin_step), so a source saved during a build still rebuilds next time.

# up_to_date STAMP KEY OUTPUT INPUT...
up_to_date() {
  local stamp=$1 key=$2 output=$3
  shift 3
  [ -f "$stamp" ] && [ -e "$output" ] || return 1
  [ "$(cat "$stamp")" = "$key" ] || return 1
  local input
  for input in "$@"; do
    [ -e "$input" ] || return 1
    [ -z "$(find "$input" -newer "$stamp" -print -quit)" ] || return 1
  done
  return 0
}

# begin_step STAMP: note the start time (STAMP.new) before building.
begin_step() {
  mkdir -p "$(dirname "$1")"
  rm -f "$1"
  : > "$1.new"
}

# end_step STAMP KEY: the build succeeded; the stamp keeps the start time and records KEY.
end_step() {
  printf '%s' "$2" > "$1.key"
  touch -r "$1.new" "$1.key"
  mv "$1.key" "$1"
  rm -f "$1.new"
}

# link_command TARGET NAME BIN_DIR: make BIN_DIR/NAME a symlink to TARGET. Replaces a symlink
# (another checkout's link, a stale one) but never a regular file someone put there. Prints
# what it did; returns 1 when it could not.
link_command() {
  local target=$1 name=$2 dir=$3 link
  link="$dir/$name"
  if [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ]; then
    return 0
  fi
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    echo "setup: $link exists and is not a link; left alone (run $target directly)" >&2
    return 1
  fi
  mkdir -p "$dir" 2>/dev/null || true
  if [ ! -w "$dir" ]; then
    echo "setup: cannot write $dir; $name is not on PATH (run $target directly)" >&2
    return 1
  fi
  local was=""
  [ -L "$link" ] && was=" (was -> $(readlink "$link"))"
  ln -sfn "$target" "$link"
  echo "setup: linked $link -> $target$was"
}

# command_bin_dir: where set-up puts the command. SCRIBED_BIN_DIR if set; /usr/local/bin when it
# is writable (root); else ~/.local/bin, which Debian's ~/.profile puts on PATH once it exists.
command_bin_dir() {
  if [ -n "${SCRIBED_BIN_DIR:-}" ]; then
    echo "$SCRIBED_BIN_DIR"
  elif [ -w /usr/local/bin ]; then
    echo /usr/local/bin
  else
    echo "$HOME/.local/bin"
  fi
}

# Quiet steps: a step's output (apt, npm, gyp, compilers) goes to a log file, not the screen;
# the screen gets one line per step that runs and, at the end, a summary. A failing step
# shows the end of its log and stops the set-up.
SETUP_STARTED_NS=$(date +%s%N)
SETUP_DONE=()
: "${SETUP_LOG_DIR:=node_modules/.cache/scribed-setup/logs}"

# seconds_since NS: elapsed seconds since a `date +%s%N` reading, one decimal.
seconds_since() {
  local ms=$((($(date +%s%N) - $1) / 1000000))
  printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# step_run NAME LABEL COMMAND...: run COMMAND with its output in $SETUP_LOG_DIR/NAME.log.
# Success: records "LABEL N s" for the summary. Failure: prints the log's last lines and
# where the whole log is, then exits with the command's status.
step_run() {
  local name=$1 label=$2 started status=0 log
  shift 2
  mkdir -p "$SETUP_LOG_DIR"
  log="$SETUP_LOG_DIR/$name.log"
  echo "setup: $label ..."
  started=$(date +%s%N)
  "$@" >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    {
      echo "setup: $label failed (exit $status) after $(seconds_since "$started") s; the end of its log:"
      tail -n 40 "$log" | sed 's/^/  | /'
      echo "setup: the whole log is $log"
    } >&2
    exit "$status"
  fi
  SETUP_DONE+=("$label $(seconds_since "$started") s")
}

# setup_summary STEP_LABEL...: one line: what ran (with times), that the rest (the labels
# given, minus those that ran) was up to date, the total time and where the logs are.
setup_summary() {
  local total done_list="" skipped=() label ran d
  total=$(seconds_since "$SETUP_STARTED_NS")
  for label in "$@"; do
    ran=""
    for d in "${SETUP_DONE[@]+"${SETUP_DONE[@]}"}"; do
      case "$d" in "$label "*) ran=1 ;; esac
    done
    [ -n "$ran" ] || skipped+=("$label")
  done
  if [ "${#SETUP_DONE[@]}" -eq 0 ]; then
    echo "setup: up to date ($total s)"
    return 0
  fi
  done_list=$(printf '%s, ' "${SETUP_DONE[@]}")
  local up=""
  [ "${#skipped[@]}" -eq 0 ] || up="; up to date: $(printf '%s, ' "${skipped[@]}" | sed 's/, $//')"
  echo "setup: done in $total s: ${done_list%, }$up (logs: $SETUP_LOG_DIR)"
}
