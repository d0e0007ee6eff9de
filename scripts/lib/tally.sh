# PASS/FAIL lines and their count for the bash checks (scripts/checks/nginx, package, alerts,
# backup, readme-demo): the same lines as the Python checks' Tally (scripts/lib/attestd_testlib.py):
#   PASS: name
#   FAIL: name: detail
# and, at the end, "N passed, N failed" alone on a line (what CI reads).
#
#   check NAME OK [DETAIL]     PASS when OK is 1, else FAIL with DETAIL (the why)
#   check_command NAME CMD...  PASS when CMD exits 0
#   tally_absorb FILE          prints a program's output and counts its PASS:/FAIL: lines
#   tally_summary              prints "N passed, N failed"
#   tally_finish               tally_summary, then returns 1 when anything failed (end a script with it)

TALLY_PASSED=0
TALLY_FAILED=0

tally_pass() {
    TALLY_PASSED=$((TALLY_PASSED + 1))
    echo "PASS: $1"
}

tally_fail() {
    TALLY_FAILED=$((TALLY_FAILED + 1))
    echo "FAIL: $1${2:+: $2}"
}

check() {
    if [ "$2" = 1 ]; then
        tally_pass "$1"
    else
        tally_fail "$1" "${3:-}"
    fi
}

check_command() {
    local name=$1
    shift
    if "$@"; then
        tally_pass "$name"
    else
        tally_fail "$name"
    fi
}

tally_absorb() {
    cat "$1"
    TALLY_PASSED=$((TALLY_PASSED + $(grep -c '^PASS: ' "$1" || true)))
    TALLY_FAILED=$((TALLY_FAILED + $(grep -c '^FAIL: ' "$1" || true)))
}

tally_summary() {
    echo "$TALLY_PASSED passed, $TALLY_FAILED failed"
}

tally_finish() {
    tally_summary
    [ "$TALLY_FAILED" -eq 0 ]
}
