#!/usr/bin/env bash
# Mutation testing of the safety-critical crates with cargo-mutants (configuration in
# .cargo/mutants.toml: what is mutated, how it is tested, and the excluded mutants with their
# reasons).
#
#   scripts/mutants.sh [CRATE...]              every mutant of the crates (all six by default);
#                                              figures in evidence/mutants.txt, missed mutants
#                                              in evidence/mutants-missed.txt
#   scripts/mutants.sh --iterate [CRATE...]    only the mutants a full run of the crates did
#                                              not catch (after adding tests); the figures fold
#                                              into the full run's
#   scripts/mutants.sh --in-diff REV [CRATE...] only the mutants in code changed since REV
#                                              (CI: what a change touched); nothing is written
#                                              under evidence/
#
# Exit 0 when every viable mutant was caught, 2 when one was missed, 3 when one timed out,
# 1 when cargo-mutants could not run.
set -euo pipefail
cd "$(dirname "$0")/.."

CRATES_DEFAULT=(cua-artifact cua-target cua-policy cua-route cua-evidence cua-gate)
BASE=""
ITERATE=()
if [[ "${1:-}" == "--in-diff" ]]; then
    BASE="${2:?--in-diff needs a revision}"
    shift 2
elif [[ "${1:-}" == "--iterate" ]]; then
    ITERATE=(--iterate)
    shift
fi
CRATES=("$@")
if [[ ${#CRATES[@]} -eq 0 ]]; then
    CRATES=("${CRATES_DEFAULT[@]}")
fi

OUT=target/mutants
mkdir -p "$OUT"
DIFF_ARGS=()
if [[ -n "$BASE" ]]; then
    git diff "$BASE" -- 'crates/*/src/*.rs' > "$OUT/change.diff"
    if [[ ! -s "$OUT/change.diff" ]]; then
        echo "mutants: no source change since $BASE in the mutated crates"
        exit 0
    fi
    DIFF_ARGS=(--in-diff "$OUT/change.diff")
    # Only the crates the change touched: each run of cargo-mutants starts with a baseline.
    touched=()
    for crate in "${CRATES[@]}"; do
        if grep -q "^+++ b/crates/$crate/src/" "$OUT/change.diff"; then
            touched+=("$crate")
        fi
    done
    if [[ ${#touched[@]} -eq 0 ]]; then
        echo "mutants: the change since $BASE touches none of ${CRATES[*]}"
        exit 0
    fi
    CRATES=("${touched[@]}")
fi

# One build at a time on this machine; the copies share one target directory, so only the
# mutated crate and its tests are rebuilt for each mutant.
export CARGO_TARGET_DIR="$PWD/$OUT/build"
# A property test that catches a mutant needs no shrinking to say so; the document fuzzer's
# 2,000 cases, 25 s a mutant, become 200.
export PROPTEST_MAX_SHRINK_ITERS=0 CUA_FUZZ_CASES=200
status=0
for crate in "${CRATES[@]}"; do
    echo "== mutants: $crate"
    set +e
    cargo mutants --package "$crate" --jobs 1 --no-shuffle --output "$OUT/$crate" \
        ${DIFF_ARGS[@]+"${DIFF_ARGS[@]}"} ${ITERATE[@]+"${ITERATE[@]}"}
    code=$?
    set -e
    case $code in
        0) ;;
        2|3) [[ $status -eq 0 || $status -gt $code ]] && status=$code ;;
        *) echo "mutants: cargo-mutants failed on $crate (exit $code)" >&2; exit 1 ;;
    esac
done
python3 scripts/mutants_report.py "$OUT" ${BASE:+--in-diff "$BASE"} "${CRATES[@]}"
exit $status
