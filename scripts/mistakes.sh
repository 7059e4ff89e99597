#!/usr/bin/env bash
# What every command says for the commonest mistakes, as a Markdown table: the exit code,
# the envelope's error code, its message and its help line. Run from the repository root:
#   scripts/mistakes.sh [path/to/cua]
# The same mistake should give the same code in every command, and a help line that says what
# to do. `tests/it/mistakes.rs` keeps the table as a snapshot; `make evidence` writes it to
# evidence/mistakes.md.
set -euo pipefail

cua=${1:-target/debug/cua}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# A capability whose `title:` is misspelt, as a file.
sed 's/^title:/titel:/' capabilities/corebank.member.savings_balance@1.0.0.yaml > "$scratch/titel.yaml"

row() {
  local mistake=$1
  shift
  local output code
  set +e
  output=$(env -u CUA_CATALOG -u CUA_TENANTS -u CUA_POLICY_FILE -u CUA_EVIDENCE_DIR NO_COLOR=1 \
    "$cua" --format json "$@" 2>/dev/null)
  code=$?
  set -e
  local fields
  fields=$(printf '%s' "$output" | head -n 1 | python3 -c '
import json, sys
try:
    error = json.loads(sys.stdin.read() or "{}").get("error") or {}
except ValueError:
    error = {"code": "(no envelope)"}
def cell(text):
    return (text or "").replace("|", "\\|").replace("\n", " ")
print(" | ".join([cell(error.get("code")), cell(error.get("message")), cell(error.get("help"))]))
')
  local line
  line=$(printf '| %s | `cua %s` | %s | %s |' "$mistake" "$*" "$code" "$fields")
  line=${line//$scratch/SCRATCH}
  printf '%s\n' "${line//$PWD/REPO}"
}

echo "| mistake | command | exit | code | message | help |"
echo "|---|---|---|---|---|---|"
typo=corebank.member.savings_balanc
row "capability name" replay "$typo" --input member_id=12345
row "capability name" codegen "$typo" --out "$scratch/x.spec.ts"
row "capability name" route explain "$typo"
row "capability name" probe "$typo" --snapshots "$scratch"
row "capability name" catalog show "$typo"
row "capability name" catalog approve "$typo" --by reviewer
row "flag" replay corebank.member.savings_balance --inptu member_id=12345
row "flag" eval --repeat 2
row "flag" codegen corebank.member.savings_balance --output x.spec.ts
row "flag" catalog list --catalgo capabilities
row "subcommand" replya corebank.member.savings_balance
row "subcommand" catalog lst
row "subcommand" route explian corebank.member.savings_balance
row "tenant" replay corebank.member.savings_balance --input member_id=12345 --tenant northgate
row "tenant" codegen corebank.member.savings_balance --out "$scratch/x.spec.ts" --tenant northgate
row "tenant" route explain corebank.member.savings_balance --tenant northgate
row "tenant" catalog show corebank.member.savings_balance --tenant northgate
# With the secrets set, as a real run would have them: the input is the only mistake.
CUA_SECRET_COREBANK_OPERATOR_ID=teller CUA_SECRET_COREBANK_OPERATOR_PASSWORD=secret \
  row "input name" replay corebank.member.savings_balance --input membr_id=12345 --base-url http://127.0.0.1:9
row "file name" eval evals/replay_stabilty.yaml
row "file name" replay corebank.member.savings_balance --input member_id=12345 --policy config/polcy.yaml
echo '{"member_id": "12345"}' > "$scratch/rows.jsonl"
CUA_SECRET_COREBANK_OPERATOR_ID=teller CUA_SECRET_COREBANK_OPERATOR_PASSWORD=secret \
  row "file name" replay corebank.member.savings_balance --inputs "$scratch/row.jsonl" --base-url http://127.0.0.1:9
row "document key" validate "$scratch/titel.yaml"
row "document key" seal "$scratch/titel.yaml"
row "document key" replay "$scratch/titel.yaml" --input member_id=12345
row "document key" codegen "$scratch/titel.yaml" --out "$scratch/x.spec.ts"
row "document key" route explain "$scratch/titel.yaml"
