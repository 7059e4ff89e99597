#!/usr/bin/env bash
# Mutation testing of the safety-critical crates with cargo-mutants (configuration in
# .cargo/mutants.toml: what is mutated, how it is tested, and the excluded mutants with their
# reasons).
#
#   scripts/mutants.sh [CRATE...]              every mutant of the crates (all six by default)
#   scripts/mutants.sh --iterate [CRATE...]    only the mutants the crates' last runs did not
#                                              catch (after adding tests)
#   scripts/mutants.sh --in-diff REV [CRATE...] only the mutants in code changed since REV
#                                              (CI: what a change touched)
#
# A full or iterated run folds its outcomes into the crate's record
# (target/mutants/<crate>/record.json, pruned to the mutants the current source has) and
# rewrites evidence/mutants.txt (every crate's figures) and evidence/mutants-missed.txt. A diff
# run writes under target/mutants/diff/ and touches neither.
#
# Exit 0 when every viable mutant was caught, 2 when one was missed, 3 when one timed out,
# 1 when cargo-mutants could not run or the arguments are wrong.
set -euo pipefail
cd "$(dirname "$0")/.."

CRATES_DEFAULT=(cua-artifact cua-target cua-policy cua-route cua-evidence cua-gate)
OUT=target/mutants
BASE=""
ITERATE=()
case "${1:-}" in
    --in-diff)
        BASE="${2:?--in-diff needs a revision}"
        shift 2
        ;;
    --iterate)
        ITERATE=(--iterate)
        shift
        ;;
esac
CRATES=("$@")
if [[ ${#CRATES[@]} -eq 0 ]]; then
    CRATES=("${CRATES_DEFAULT[@]}")
fi
for crate in "${CRATES[@]}"; do
    if [[ " ${CRATES_DEFAULT[*]} " != *" $crate "* ]]; then
        echo "mutants: \`$crate\` is not one of ${CRATES_DEFAULT[*]} (options go first:" \
            "--iterate, or --in-diff REV)" >&2
        exit 1
    fi
    if [[ ${#ITERATE[@]} -gt 0 && ! -f "$OUT/$crate/record.json" ]]; then
        echo "mutants: $crate has no full run to iterate on; run scripts/mutants.sh $crate first" >&2
        exit 1
    fi
done

RUNS="$OUT"
mkdir -p "$OUT"
DIFF_ARGS=()
if [[ -n "$BASE" ]]; then
    RUNS="$OUT/diff"
    mkdir -p "$RUNS"
    git diff "$BASE" -- 'crates/*/src/*.rs' > "$RUNS/change.diff"
    if [[ ! -s "$RUNS/change.diff" ]]; then
        echo "mutants: no source change since $BASE in the mutated crates"
        exit 0
    fi
    DIFF_ARGS=(--in-diff "$RUNS/change.diff")
    # Only the crates the change touched: each run of cargo-mutants starts with a baseline.
    touched=()
    for crate in "${CRATES[@]}"; do
        if grep -q "^+++ b/crates/$crate/src/" "$RUNS/change.diff"; then
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
# 2,000 cases, 25 s a mutant, become 200; and a fixed seed makes a kill by a property test
# the same kill on every run.
export PROPTEST_MAX_SHRINK_ITERS=0 CUA_FUZZ_CASES=200 PROPTEST_RNG_SEED=20261202
status=0
failed=()
ran=()
for crate in "${CRATES[@]}"; do
    echo "== mutants: $crate"
    set +e
    cargo mutants --package "$crate" --jobs 1 --no-shuffle --output "$RUNS/$crate" \
        ${DIFF_ARGS[@]+"${DIFF_ARGS[@]}"} ${ITERATE[@]+"${ITERATE[@]}"}
    code=$?
    set -e
    case $code in
        0|2|3)
            ran+=("$crate")
            if [[ $code -ne 0 && ( $status -eq 0 || $status -gt $code ) ]]; then
                status=$code
            fi
            if [[ -z "$BASE" ]]; then
                # What the current source has, for pruning the record.
                cargo mutants --package "$crate" --list > "$RUNS/$crate/list.txt"
            fi
            ;;
        *)
            echo "mutants: cargo-mutants failed on $crate (exit $code)" >&2
            failed+=("$crate")
            ;;
    esac
done

if [[ ${#ran[@]} -gt 0 ]]; then
    python3 scripts/mutants_report.py "$RUNS" ${BASE:+--in-diff "$BASE"} \
        --all "${CRATES_DEFAULT[*]}" "${ran[@]}"
fi
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "mutants: cargo-mutants could not run on ${failed[*]}" >&2
    exit 1
fi
exit $status
