#!/usr/bin/env bash
# Builds ringbench's Debian package with cargo-deb (Cargo.toml's [package.metadata.deb]) and checks it
# on a fresh Debian: a chroot made by mmdebstrap from the Debian mirror apt uses, where the package is
# installed with `apt install ./ringbench_*.deb` (apt resolves its dependencies), then `ringbench
# --version` runs, `man -l` renders its man page and its bash, zsh and fish completions are where each
# shell looks. The package ends in target/debian/. Needs root (the chroot), cargo-deb (installed with
# `cargo install cargo-deb` when missing) and mmdebstrap (apt-get). SUITE=bookworm by default: the
# suite whose libc the binary is built against (this machine's).
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}
command -v cargo-deb >/dev/null || cargo install cargo-deb
command -v mmdebstrap >/dev/null || apt-get install -y mmdebstrap

cargo build --release
bin=target/release/ringbench
scripts/man.sh "$bin"
completions=target/assets/completions
mkdir -p "$completions"
"$bin" completions bash >"$completions/ringbench.bash"
"$bin" completions zsh >"$completions/_ringbench"
"$bin" completions fish >"$completions/ringbench.fish"
bash -n "$completions/ringbench.bash"

rm -rf target/debian
# Stripped: the release profile keeps line tables for profiling, which a package need not carry.
cargo deb --no-build --strip --output target/debian/
deb=$(ls target/debian/ringbench_*.deb)
echo "scripts/deb.sh: built $deb"
dpkg-deb --info "$deb"
dpkg-deb --contents "$deb"

# A fresh Debian: only what apt needs, and man-db to read the page with.
root=$(mktemp -d /tmp/ringbench-deb-chroot.XXXXXX)
trap 'rm -rf "$root"' EXIT
name=$(basename "$deb")
version=$(grep -m1 '^version' Cargo.toml | cut -d'"' -f2)
cat >"$root.check.sh" <<CHECK
set -eux
cd /root
apt install -y ./$name
test "\$(ringbench --version)" = "ringbench $version"
MANWIDTH=100 man -P cat -l /usr/share/man/man1/ringbench.1.gz | grep -q capacity
MANWIDTH=100 man -P cat ringbench-capacity | grep -q -- --slo
test -s /usr/share/bash-completion/completions/ringbench
bash -n /usr/share/bash-completion/completions/ringbench
test -s /usr/share/zsh/vendor-completions/_ringbench
test -s /usr/share/fish/vendor_completions.d/ringbench.fish
test -s /usr/share/doc/ringbench/README.md
test -s /usr/share/doc/ringbench/docs/memtier.md
ringbench compre a.json b.json 2>&1 | grep -q "did you mean"
dpkg -s ringbench | grep -E "^(Version|Depends):"
CHECK
trap 'rm -rf "$root" "$root.check.sh"' EXIT
mmdebstrap --variant=apt --include=man-db "$suite" "$root" \
  --customize-hook="copy-in $deb $root.check.sh /root" \
  --customize-hook="chroot \"\$1\" sh /root/$(basename "$root.check.sh")"
echo "scripts/deb.sh: $name installs and runs on a fresh Debian $suite ($root, removed)"
