# The binaries a check or a benchmark runs: the ones in $ATTESTD_BIN when it is set (scripts/test
# sets it to its one build), else built here. Sourced after scripts/lib/deps.sh.
#
#   attestd_binaries [--release] PRODUCT...
#
# With ATTESTD_BIN set: checks that every PRODUCT is there (an executable, or a library's module
# in Modules/) and builds nothing. Without: `swift build [-c release] --product PRODUCT` for each
# (debug unless --release), and ATTESTD_BIN becomes that build's bin directory. Either way
# ATTESTD_BIN is exported, for the Python a script runs.

attestd_binaries() {
    local configuration=debug product
    if [ "${1:-}" = --release ]; then
        configuration=release
        shift
    fi
    if [ -z "${ATTESTD_BIN:-}" ]; then
        attestd_require_swift
        for product in "$@"; do
            echo "== swift build -c $configuration --product $product" >&2
            swift build -c "$configuration" --product "$product" >&2
        done
        ATTESTD_BIN=$(swift build -c "$configuration" --show-bin-path)
    fi
    for product in "$@"; do
        if [ ! -x "$ATTESTD_BIN/$product" ] && [ ! -e "$ATTESTD_BIN/Modules/$product.swiftmodule" ]; then
            echo "no $product in $ATTESTD_BIN (ATTESTD_BIN names a directory of built binaries)" >&2
            exit 1
        fi
    done
    export ATTESTD_BIN
}
