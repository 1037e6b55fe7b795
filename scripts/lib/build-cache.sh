# shellcheck shell=bash
# Sourced by scripts/test and scripts/run: puts cargo's build directory outside
# the clone so that a fresh clone reuses what an earlier one compiled, and makes
# that sharing safe.
#
# Why a cache outside the clone: CI runs every submission in a fresh clone, and a
# cold build of the dependency tree (plus, later, Leptos for wasm) costs many
# minutes of a 90-minute budget. Registry crates are fingerprinted by name,
# version, features, profile, target and compiler, none of which depend on where
# the clone lives, so a new clone reuses them as they are.
#
# Why that alone is not safe: cargo 1.95 names and fingerprints a workspace
# crate by its path *relative to the workspace root*, and decides whether it is
# fresh by comparing source file mtimes with the last build's outputs. Two
# clones therefore map to the same artifacts, and a clone whose files are older
# than another clone's last build would silently run that other clone's code
# (verified here with two clones of one crate and a shared CARGO_TARGET_DIR).
# So the cache remembers which work tree built it last; when a different tree
# builds, every file of that tree is touched first, which makes cargo rebuild the
# workspace crates (incremental compilation keeps that cheap) while registry
# crates stay reused. A lock keeps two trees from interleaving their builds.
#
# CARGO_TARGET_DIR, when already set, is respected; CCM_CACHE_DIR moves the
# default cache (default: ~/.cache/ccm). Deleting that directory is always safe.

# Call as: ccm_build_cache_setup "$repo_root" "$0" "$@"
# It exports CARGO_TARGET_DIR and then re-executes the calling script under an
# exclusive lock on the cache (the lock is released when the script exits).
ccm_build_cache_setup() {
  local repo_root="$1"
  shift
  if [[ -z "${CARGO_TARGET_DIR:-}" ]]; then
    export CARGO_TARGET_DIR="${CCM_CACHE_DIR:-$HOME/.cache/ccm}/target"
  fi
  mkdir -p "$CARGO_TARGET_DIR"

  if [[ -z "${CCM_BUILD_CACHE_LOCKED:-}" ]]; then
    local lock="$CARGO_TARGET_DIR/.ccm-lock"
    if ! flock -n "$lock" true; then
      echo "build cache: waiting for another run that uses $CARGO_TARGET_DIR to finish"
    fi
    export CCM_BUILD_CACHE_LOCKED=1
    # `flock -o` holds the lock in the flock process itself and closes it in the
    # script, so a browser or server that outlives the script cannot keep it.
    exec flock -o "$lock" "$@"
  fi

  local stamp="$CARGO_TARGET_DIR/.ccm-worktree" last=""
  [[ -f "$stamp" ]] && last="$(<"$stamp")"
  if [[ "$last" != "$repo_root" ]]; then
    echo "build cache: $CARGO_TARGET_DIR was last used by ${last:-no work tree}; touching this tree's files so cargo rebuilds the workspace crates"
    # `touch -c` skips paths that no longer exist (tracked files deleted in the tree).
    ccm_list_worktree_files "$repo_root" | (cd "$repo_root" && xargs -0 -r touch -c --)
    printf '%s\n' "$repo_root" >"$stamp"
  fi
  echo "build cache: CARGO_TARGET_DIR=$CARGO_TARGET_DIR"
}

# Prints, NUL-separated and relative to the work tree's root, every file that a
# build could read: tracked files plus untracked files that are not ignored, or
# everything outside .git and build output when the tree is not a git checkout.
ccm_list_worktree_files() {
  local repo_root="$1"
  if git -C "$repo_root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$repo_root" ls-files -z --cached --others --exclude-standard
  else
    (cd "$repo_root" && find . \( -name .git -o -name target -o -name node_modules -o -name dist \) -prune \
      -o -type f -print0)
  fi
}
