# Shared by scripts/run and scripts/test: make sure the Debian packages the build needs are present.
# As root, installs what is missing with apt-get; otherwise prints the exact command and stops.

ATTESTD_DEBIAN_PACKAGES=(pkg-config libssl-dev libsqlite3-dev libmicrohttpd-dev libpq-dev libcurl4-openssl-dev)

attestd_ensure_packages() {
    local missing=()
    local package
    for package in "${ATTESTD_DEBIAN_PACKAGES[@]}" "$@"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$package")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        echo "Installing missing Debian packages: ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
        echo "Missing Debian packages. Run this, then try again:" >&2
        echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
}

attestd_require_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        echo "The Swift toolchain (6.0 or later) is not on PATH; see https://www.swift.org/install/linux/" >&2
        exit 1
    fi
}

# Installs packages that ship a service (nginx, postgresql, prometheus) without letting their
# postinst start it: the checks run their own instances on loopback ports.
attestd_ensure_service_packages() {
    local missing=()
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        local status=0
        attestd_ensure_packages "${missing[@]}" || status=$?
        rm -f /usr/sbin/policy-rc.d
        return $status
    fi
    attestd_ensure_packages "${missing[@]}"
}
