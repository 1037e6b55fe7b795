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
  ccm_prune_build_cache "$CARGO_TARGET_DIR"
  echo "build cache: CARGO_TARGET_DIR=$CARGO_TARGET_DIR"
}

# Keeps the cache from filling the disk. Every change to a workspace crate adds new test
# binaries (hundreds of megabytes each with debug info) and new incremental-compilation
# sessions, and cargo never removes the old ones: a cache on this machine grew to 27 GB and a
# CI run once failed with "No space left on device". When the cache is over
# CCM_CACHE_LIMIT_GIB (default 20) or the disk has less than 5 GiB free, the incremental state
# goes first (it only speeds up rebuilding the workspace crates); if the cache is still over
# the limit, all of it goes and the next build starts cold. Runs under the cache's lock, so no
# build is using what it removes.
ccm_prune_build_cache() {
  local dir="$1" limit_gib="${CCM_CACHE_LIMIT_GIB:-20}" used_kib free_kib
  local limit_kib=$((limit_gib * 1024 * 1024)) low_disk_kib=$((5 * 1024 * 1024))
  used_kib="$(du -sk "$dir" 2>/dev/null | cut -f1)" || return 0
  free_kib="$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')"
  if ((used_kib <= limit_kib && free_kib >= low_disk_kib)); then
    return 0
  fi
  echo "build cache: $((used_kib / 1048576)) GiB used (limit ${limit_gib} GiB), $((free_kib / 1048576)) GiB free on disk; removing incremental compilation state"
  find "$dir" -mindepth 2 -maxdepth 3 -type d -name incremental -prune -exec rm -rf {} +
  used_kib="$(du -sk "$dir" 2>/dev/null | cut -f1)"
  if ((used_kib > limit_kib)); then
    # Test programs (native executables and wasm modules in deps/) belong to the workspace's
    # own tests, which every run rebuilds anyway since it touches the tree's files; old ones
    # only take space. The compiled dependencies stay, so the build stays warm.
    echo "build cache: still $((used_kib / 1048576)) GiB; removing compiled test programs"
    find "$dir" -mindepth 3 -maxdepth 4 -path '*/deps/*' -type f \
      \( -name '*.wasm' -o \( -perm -u+x ! -name '*.*' \) \) -delete
    used_kib="$(du -sk "$dir" 2>/dev/null | cut -f1)"
  fi
  if ((used_kib > limit_kib)); then
    # The workspace's own crates (all named ccm-…) are rebuilt by every run of a new tree
    # anyway, and each tree that built here left a copy of every one of them; the registry
    # crates, which are most of a cold build's time, stay.
    echo "build cache: still $((used_kib / 1048576)) GiB; removing the workspace crates' compiled copies"
    find "$dir" -mindepth 3 -maxdepth 4 \( -path '*/deps/libccm_*' -o -path '*/deps/ccm_*' \
      -o -path '*/.fingerprint/ccm-*' -o -path '*/build/ccm-*' \) -prune -exec rm -rf {} +
    used_kib="$(du -sk "$dir" 2>/dev/null | cut -f1)"
  fi
  if ((used_kib > limit_kib)); then
    echo "build cache: still $((used_kib / 1048576)) GiB; removing it all (this build starts cold)"
    # The lock file stays: this script holds the lock on it.
    find "$dir" -mindepth 1 -maxdepth 1 ! -name .ccm-lock -exec rm -rf {} +
  fi
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
