# Debian package helpers shared by scripts/setup, scripts/build-fio-engine,
# scripts/guest-test and scripts/serve-guest-test (sourced, not run). Every helper is idempotent: a
# package already installed or a source already present is left alone.
#
#   apt_missing PKG...            prints the packages not installed
#   apt_install PKG...            installs the missing ones from bookworm
#   apt_install_backports PKG...  the same from bookworm-backports (adds
#                                 that source first): QEMU, whose bookworm
#                                 7.2 conflicts with the qemu-utils 10.0
#                                 from backports that machines of this kind
#                                 ship with
#   apt_add_source NAME BODY      writes /etc/apt/sources.list.d/NAME.sources
#                                 (deb822) and runs apt-get update
#   apt_add_deb_src               a deb-src entry for bookworm main (in
#                                 znskit-deb-src.sources) when apt has no
#                                 deb-src entry, for `apt-get source`
#
# Runs apt as root, or through sudo when that is available.

if [ "$(id -u)" -eq 0 ]; then
    apt_as_root=()
elif command -v sudo >/dev/null 2>&1; then
    apt_as_root=(sudo)
else
    apt_as_root=(apt_no_root)
fi
export DEBIAN_FRONTEND=noninteractive

apt_no_root() {
    echo "needs root (or sudo) to run: $*" >&2
    return 1
}

apt_missing() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}

apt_add_source() { # NAME BODY
    local file="/etc/apt/sources.list.d/$1.sources"
    [ -f "$file" ] && return 0
    printf '%s\n' "$2" | "${apt_as_root[@]}" tee "$file" >/dev/null
    "${apt_as_root[@]}" apt-get update -qq
}

apt_has_backports() {
    grep -rqsE 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/
}

apt_add_backports() {
    apt_has_backports && return 0
    apt_add_source znskit-backports "Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
}

apt_add_deb_src() {
    grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
    echo "adding a deb-src entry for bookworm main" >&2
    apt_add_source znskit-deb-src "Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
}

apt_updated=0
apt_install_from() { # SUITE|"" PKG...
    local suite=$1
    shift
    local missing
    mapfile -t missing < <(apt_missing "$@")
    [ ${#missing[@]} -gt 0 ] || return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "apt-get not found; install these by hand: ${missing[*]}" >&2
        return 1
    fi
    echo "installing ${missing[*]}${suite:+ (from $suite)}" >&2
    if [ "$apt_updated" -eq 0 ]; then
        "${apt_as_root[@]}" apt-get update -qq
        apt_updated=1
    fi
    "${apt_as_root[@]}" apt-get install -y -qq --no-install-recommends ${suite:+-t "$suite"} "${missing[@]}" >/dev/null
}

apt_install() {
    apt_install_from "" "$@"
}

apt_install_backports() {
    apt_add_backports
    apt_install_from bookworm-backports "$@"
}
