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
