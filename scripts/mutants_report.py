"""Summarizes cargo-mutants' outcomes per crate: caught, missed, unviable and timed-out counts
and the share of viable mutants caught, side by side; for a full run, writes the figures to
evidence/mutants.txt and the missed mutants to evidence/mutants-missed.txt."""

import json
import sys
from pathlib import Path

TARGET = 90.0


def counts(outcomes_file: Path) -> tuple[dict, list[str]]:
    data = json.loads(outcomes_file.read_text())
    tally = {"caught": 0, "missed": 0, "unviable": 0, "timeout": 0}
    missed = []
    for outcome in data["outcomes"]:
        scenario = outcome["scenario"]
        if scenario == "Baseline":
            continue
        summary = outcome["summary"]
        key = {
            "CaughtMutant": "caught",
            "MissedMutant": "missed",
            "Unviable": "unviable",
            "Timeout": "timeout",
        }.get(summary)
        if key is None:
            continue
        tally[key] += 1
        if key == "missed":
            mutant = scenario["Mutant"]
            missed.append(mutant["name"])
    return tally, missed


def main() -> int:
    args = sys.argv[1:]
    out, elapsed = Path(args[0]), int(args[1])
    base = None
    rest = args[2:]
    if rest[:1] == ["--in-diff"]:
        base, rest = rest[1], rest[2:]
    lines = [
        f"{'crate':<14} {'mutants':>7} {'caught':>7} {'missed':>7} {'unviable':>8} {'timeout':>7} {'caught %':>9}",
    ]
    all_missed = []
    below = []
    for crate in rest:
        outcomes = out / crate / "mutants.out" / "outcomes.json"
        if not outcomes.exists():
            lines.append(f"{crate:<14} (no outcomes: nothing to test)")
            continue
        tally, missed = counts(outcomes)
        viable = tally["caught"] + tally["missed"] + tally["timeout"]
        share = 100.0 * tally["caught"] / viable if viable else 100.0
        total = sum(tally.values())
        lines.append(
            f"{crate:<14} {total:>7} {tally['caught']:>7} {tally['missed']:>7} "
            f"{tally['unviable']:>8} {tally['timeout']:>7} {share:>8.1f}%"
        )
        if share < TARGET:
            below.append(crate)
        all_missed.extend(missed)
    lines.append(f"wall time {elapsed // 3600} h {elapsed % 3600 // 60} min {elapsed % 60} s")
    lines.append(
        f"target: at least {TARGET:.0f} % of viable mutants caught per crate"
        + (f"; below it: {', '.join(below)}" if below else "; every crate in this run meets it")
    )
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if all_missed:
        print("missed:")
        for mutant in all_missed:
            print(f"  {mutant}")
    if base is None:
        evidence = Path("evidence")
        header = "# cargo-mutants over the safety-critical crates (scripts/mutants.sh)\n"
        (evidence / "mutants.txt").write_text(header + report)
        (evidence / "mutants-missed.txt").write_text(
            "# Missed mutants: each needs a test that kills it or a reason in .cargo/mutants.toml\n"
            + "".join(f"{mutant}\n" for mutant in all_missed)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
