#!/usr/bin/env bash
# Builds clix's release packages for x86_64 Linux into dist/:
#   clix_<version>_amd64.deb            sudo apt-get install ./clix_<version>_amd64.deb
#   clix-<version>-x86_64-linux.tar.gz  tar -xzf … --strip-components=1 -C ~/.local
# Each holds the binary, its manual pages (from clap, by clap_mangen) and
# the bash, zsh and fish completions.
#
# Why a script over dpkg-deb rather than cargo-deb or cargo-dist: dpkg-deb
# is part of every Debian and Ubuntu, so building a package needs nothing
# installed beyond the Rust toolchain (cargo-deb is a crate to compile
# first, cargo-dist a release pipeline for GitHub); the layout below is
# short enough to read whole.
#
# Usage: scripts/release.sh [--binary PATH] [--out DIR] [--tarball-only]
#   --binary PATH    package this clix instead of building one (the tests
#                    package their own build this way)
#   --out DIR        where the packages go (default: dist/)
#   --tarball-only   leave the .deb out (its compression takes the longest)
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
out="dist"
deb_too=1
while (($#)); do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --tarball-only) deb_too=0; shift ;;
        *) echo "release.sh: unknown argument $1; see the usage at the top of the script" >&2; exit 2 ;;
    esac
done

if [[ -z "$binary" ]]; then
    cargo build --release --locked -p clix
    binary="${CARGO_TARGET_DIR:-target}/release/clix"
fi
[[ -x "$binary" ]] || { echo "release.sh: $binary is not an executable clix" >&2; exit 1; }

version="$("$binary" --version | awk '{print $2}')"
[[ -n "$version" ]] || { echo "release.sh: $binary --version printed no version" >&2; exit 1; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One tree laid out as a prefix (bin/, share/), copied into both packages.
# The pages and completions come from the binary itself, so they always
# describe the clix they ship with.
prefix="$work/prefix"
mkdir -p "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d" "$prefix/share/doc/clix"
install -m 0755 "$binary" "$prefix/bin/clix"
# No CLIX_HOME or config of the builder's leaks into what is generated.
generate() { env -i PATH="$PATH" CLIX_HOME="$work/home" "$prefix/bin/clix" "$@"; }
generate manpages "$prefix/share/man/man1"
generate completions bash >"$prefix/share/bash-completion/completions/clix"
generate completions zsh >"$prefix/share/zsh/site-functions/_clix"
generate completions fish >"$prefix/share/fish/vendor_completions.d/clix.fish"
install -m 0644 README.md "$prefix/share/doc/clix/README.md"
cat >"$prefix/share/doc/clix/copyright" <<EOF
clix $version
License: MIT (see the license field of the source's Cargo.toml)
Includes bashkit (MIT), vendored with clix's patches (docs/bashkit-patches.md).
EOF

# The tarball: one folder, the prefix inside it.
name="clix-$version-x86_64-linux"
cp -a "$prefix" "$work/$name"
tar -czf "$out/$name.tar.gz" -C "$work" --owner=0 --group=0 "$name"

echo "built $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1)); clix itself: $(du -h "$prefix/bin/clix" | cut -f1)"
((deb_too)) || exit 0

# The .deb: the same files under /usr, pages gzipped as Debian wants, zsh's
# completions where Debian's zsh looks.
deb="$work/deb"
mkdir -p "$deb/DEBIAN" "$deb/usr"
cp -a "$prefix/bin" "$prefix/share" "$deb/usr/"
mv "$deb/usr/share/zsh/site-functions" "$deb/usr/share/zsh/vendor-completions"
gzip -9n "$deb"/usr/share/man/man1/*.1
size_kb="$(du -sk "$deb/usr" | cut -f1)"
cat >"$deb/DEBIAN/control" <<EOF
Package: clix
Version: $version
Architecture: amd64
Maintainer: clix maintainers <maintainers@clix.invalid>
Installed-Size: $size_kb
Depends: libc6 (>= 2.34), libgcc-s1, bubblewrap
Recommends: python3, git
Section: devel
Priority: optional
Description: A CLI is all an agent needs
 clix gives an LLM one tool, run(command, stdin?), over a jailed
 bash-compatible shell with native commands, and runs real programs
 (python3, git, cargo) in a bubblewrap sandbox with no network and no
 secrets. It is also an agent (clix ask, clix chat) and an MCP server.
EOF
dpkg-deb --root-owner-group --build "$deb" "$out/clix_${version}_amd64.deb" >/dev/null

echo "built $out/clix_${version}_amd64.deb ($(du -h "$out/clix_${version}_amd64.deb" | cut -f1))"
