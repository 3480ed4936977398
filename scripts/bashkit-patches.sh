#!/usr/bin/env bash
# vendor/bashkit is bashkit's published release plus clix's patch series
# (vendor/bashkit-patches/NNNN-name.patch, in order). This script rebuilds the
# folder from the two, checks that the folder equals the result, runs
# bashkit's own unit tests on it, and moves the series to a new release.
# docs/bashkit-patches.md says what each patch does and why.
#
#   scripts/bashkit-patches.sh check          vendor/bashkit == release + series?
#   scripts/bashkit-patches.sh test           bashkit's unit tests, clix's features
#   scripts/bashkit-patches.sh repo DIR [VER] a git repository: the release as one
#                                             commit (tag bashkit-VER), each patch
#                                             a commit on top (git am)
#   scripts/bashkit-patches.sh export DIR     the series again from DIR's commits
#                                             after the tag, and vendor/bashkit
#                                             from DIR's tree
#   scripts/bashkit-patches.sh upstream       each patch offered upstream applies
#                                             alone to the release
#
# To change a patch or add one: `repo /tmp/bk`, commit (or `git rebase -i`)
# there, then `export /tmp/bk`. Editing vendor/bashkit by hand makes `check`
# fail with the difference.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
series="$root/vendor/bashkit-patches"
vendored="$root/vendor/bashkit"
# The release the series applies to, and its checksum from the crates.io index.
version="0.20.2"
declare -A checksums=(
    [0.20.2]=f1b90af3743cfadbd07957b760b5bb91dc2137526e8d2b38aca902c23598891f
)
# What clix builds with (root Cargo.toml); the unit tests run with the same.
features="realfs,jq"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/clix/bashkit"

die() { echo "error: $*" >&2; exit 1; }

# The published crate, downloaded once and checked against the index's sum.
release_crate() {
    local ver="$1" file="$cache/bashkit-$1.crate"
    local want="${checksums[$ver]:-}"
    if [[ ! -f "$file" ]]; then
        mkdir -p "$cache"
        curl -sSfL --retry 3 -o "$file.part" "https://static.crates.io/crates/bashkit/bashkit-$ver.crate" \
            || die "cannot download bashkit $ver from crates.io; check the network or put the .crate at $file"
        mv "$file.part" "$file"
    fi
    if [[ -n "$want" ]]; then
        [[ "$(sha256sum "$file" | cut -d' ' -f1)" == "$want" ]] \
            || die "$file does not match bashkit $ver's checksum; delete it and run again"
    else
        # A new release: print its sum so it can be pinned above.
        echo "bashkit $ver: sha256 $(sha256sum "$file" | cut -d' ' -f1) (pin it in $0)" >&2
    fi
    echo "$file"
}

# The release as the folder keeps it: its source, docs and README. Its tests,
# examples and benches are not shipped in vendor/ (0001 drops their targets).
unpack_release() {
    local ver="$1" dest="$2" tmp
    tmp="$(mktemp -d)"
    tar xzf "$(release_crate "$ver")" -C "$tmp"
    mkdir -p "$dest"
    cp -r "$tmp/bashkit-$ver"/{Cargo.toml,README.md,docs,src} "$dest/"
    cp "$tmp/bashkit-$ver/Cargo.lock" "$dest/.release-Cargo.lock"
    rm -rf "$tmp"
}

git_quiet() { git -c advice.detachedHead=false -c init.defaultBranch=main "$@"; }

make_repo() {
    local dest="$1" ver="${2:-$version}"
    [[ ! -e "$dest" ]] || die "$dest exists; give a new folder"
    unpack_release "$ver" "$dest"
    cd "$dest"
    printf '.release-Cargo.lock\nCargo.lock\ntarget/\n' >.git-info-exclude
    git_quiet init -q .
    mv .git-info-exclude .git/info/exclude
    git add -A
    GIT_AUTHOR_DATE="2000-01-01T00:00:00Z" GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" \
        git -c user.name=bashkit -c user.email=bashkit@crates.io commit -q -m "bashkit $ver as published on crates.io"
    git tag "bashkit-$ver"
    local patches=("$series"/*.patch)
    if ! git -c user.name=clix -c user.email=clix@localhost am -q --3way --committer-date-is-author-date "${patches[@]}"; then
        echo "The series stopped at the patch above: resolve it in $dest, then 'git am --continue'." >&2
        exit 1
    fi
}

cmd_check() {
    local tmp
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' RETURN
    (make_repo "$tmp/bashkit") >/dev/null
    if ! diff -r -x .git -x .release-Cargo.lock -x Cargo.lock -x target "$tmp/bashkit" "$vendored" >"$tmp/diff"; then
        head -n 40 "$tmp/diff" >&2
        die "vendor/bashkit is not bashkit $version plus vendor/bashkit-patches (difference above). Change bashkit through the series: scripts/bashkit-patches.sh repo /tmp/bk, commit there, then scripts/bashkit-patches.sh export /tmp/bk"
    fi
    echo "vendor/bashkit == bashkit $version + $(ls "$series"/*.patch | wc -l) patches"
}

cmd_test() {
    # One fixed folder, so cargo reuses the dependencies' builds from the
    # last run (a new path each time would build them all again).
    local tree="$cache/tree-$version"
    rm -rf "$tree"
    (make_repo "$tree") >/dev/null
    # The release's lock file, so the dev-dependencies are the ones bashkit
    # was tested with; cargo adds what the patches need.
    cp "$tree/.release-Cargo.lock" "$tree/Cargo.lock"
    # bashkit's jq is checked against the host's jq, and follows jq 1.7
    # (bashkit's CI pins its oracle). Debian 12's jq 1.6 prints 1.0 as 1,
    # leaves literal control characters unescaped and exits 4, not 5, on
    # malformed input: those three cases are skipped with it, and said so.
    local skips=()
    if [[ "$(jq --version 2>/dev/null)" == jq-1.6* ]]; then
        local case
        for case in diff_all_literal_controls diff_float_zero_decimal diff_malformed_quote_and_control_outside_string; do
            skips+=(--skip "builtins::jq::tests::differential::$case")
            echo "bashkit's jq::tests::differential::$case: skipped, the host's jq 1.6 answers as jq 1.6, bashkit as jq 1.7" \
                | tee -a "${CLIX_SKIP_LOG:-/dev/null}" >&2
        done
    fi
    (cd "$tree" && cargo test --lib --no-default-features --features "$features" -q -- "${skips[@]}")
}

cmd_export() {
    local from="$1"
    [[ -d "$from/.git" ]] || die "$from is not a repository made by '$0 repo'"
    local ver
    ver="$(git -C "$from" describe --tags --abbrev=0 --match 'bashkit-*')"
    rm -f "$series"/*.patch
    git -C "$from" format-patch -q --no-numbered --zero-commit --no-signature --no-stat -o "$series" "$ver..HEAD"
    # The folder is the repository's last commit, nothing uncommitted.
    rm -rf "$vendored"
    mkdir -p "$vendored"
    git -C "$from" archive HEAD | tar x -C "$vendored"
    echo "exported $(ls "$series"/*.patch | wc -l) patches against ${ver#bashkit-}; update 'version' in $0 if it changed"
}

# Patches offered upstream (docs/bashkit-patches.md, "Offered upstream") are
# kept whole in vendor/bashkit-patches/upstream: each must apply alone to the
# release, with its unit test.
cmd_upstream() {
    local tmp p
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' RETURN
    unpack_release "$version" "$tmp/release"
    for p in "$series"/upstream/*.patch; do
        (cd "$tmp/release" && git apply --check "$p") \
            || die "$(basename "$p") no longer applies to bashkit $version alone"
        echo "applies alone: $(basename "$p")"
    done
}

case "${1:-}" in
    check) cmd_check ;;
    test) cmd_test ;;
    repo) [[ $# -ge 2 ]] || die "usage: $0 repo DIR [VERSION]"; make_repo "$2" "${3:-$version}"; echo "$2: bashkit ${3:-$version} + series (git log bashkit-${3:-$version}..)" ;;
    export) [[ $# -eq 2 ]] || die "usage: $0 export DIR"; cmd_export "$2" ;;
    upstream) cmd_upstream ;;
    *) die "usage: $0 check | test | repo DIR [VERSION] | export DIR | upstream" ;;
esac
