"""Summarizes cargo-mutants' outcomes per crate: caught, missed, unviable and timed-out counts
and the share of viable mutants caught, side by side; for a full run, writes the figures of
every crate with a record to evidence/mutants.txt and their missed mutants to
evidence/mutants-missed.txt.

An `--iterate` run of cargo-mutants tests only the mutants not caught before, so its own
outcomes are a fraction of the crate. Every run's outcomes are therefore folded into one record
per crate (target/mutants/<crate>/record.json): a later outcome replaces an earlier one of the
same mutant, a full run starts the record afresh, and the record keeps each run's wall time.

usage: mutants_report.py OUT_DIR [--in-diff REV] CRATE...
"""

import datetime
import json
import sys
from pathlib import Path

TARGET = 90.0
KINDS = {
    "CaughtMutant": "caught",
    "MissedMutant": "missed",
    "Unviable": "unviable",
    "Timeout": "timeout",
}
HEADER = (
    f"{'crate':<14} {'mutants':>7} {'caught':>7} {'missed':>7} {'unviable':>8} "
    f"{'timeout':>7} {'caught %':>9} {'wall time':>10}"
)


def outcomes(run: Path) -> tuple[dict[str, str], int]:
    """The outcome of each mutant of one cargo-mutants run, by name, and the run's seconds."""
    data = json.loads((run / "outcomes.json").read_text())
    by_name = {}
    for outcome in data["outcomes"]:
        scenario = outcome["scenario"]
        kind = KINDS.get(outcome["summary"])
        if scenario != "Baseline" and kind is not None:
            by_name[scenario["Mutant"]["name"]] = kind
    start, end = (
        datetime.datetime.fromisoformat(data[key][:26].rstrip("Z")) for key in ("start_time", "end_time")
    )
    return by_name, int((end - start).total_seconds())


def fold(crate_dir: Path) -> dict:
    """Folds the crate's latest run into its record and returns the record."""
    run = crate_dir / "mutants.out"
    record_file = crate_dir / "record.json"
    by_name, seconds = outcomes(run)
    if (run / "previously_caught.txt").exists():
        if not record_file.exists():
            raise SystemExit(
                f"mutants: {crate_dir.name} was iterated without an earlier full run to build "
                "on; run scripts/mutants.sh without --iterate first"
            )
        record = json.loads(record_file.read_text())
    else:
        record = {"mutants": {}, "seconds": []}
    record["mutants"].update(by_name)
    record["seconds"].append(seconds)
    record_file.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def row(crate: str, by_name: dict[str, str], seconds: int) -> tuple[str, float]:
    tally = {kind: 0 for kind in KINDS.values()}
    for kind in by_name.values():
        tally[kind] += 1
    viable = tally["caught"] + tally["missed"] + tally["timeout"]
    share = 100.0 * tally["caught"] / viable if viable else 100.0
    line = (
        f"{crate:<14} {len(by_name):>7} {tally['caught']:>7} {tally['missed']:>7} "
        f"{tally['unviable']:>8} {tally['timeout']:>7} {share:>8.1f}% {duration(seconds):>10}"
    )
    return line, share


def duration(seconds: int) -> str:
    return f"{seconds // 3600}h{seconds % 3600 // 60:02}m{seconds % 60:02}s"


def table(rows: list[tuple[str, dict[str, str], int]]) -> tuple[str, list[str]]:
    lines, below, missed = [HEADER], [], []
    for crate, by_name, seconds in rows:
        line, share = row(crate, by_name, seconds)
        lines.append(line)
        if share < TARGET:
            below.append(crate)
        missed.extend(sorted(name for name, kind in by_name.items() if kind == "missed"))
    lines.append(f"total wall time {duration(sum(seconds for _, _, seconds in rows))}")
    lines.append(
        f"target: at least {TARGET:.0f} % of viable mutants caught per crate"
        + (f"; below it: {', '.join(below)}" if below else "; every crate meets it")
    )
    return "\n".join(lines) + "\n", missed


def main() -> int:
    args = sys.argv[1:]
    out, rest = Path(args[0]), args[1:]
    base = None
    if rest[:1] == ["--in-diff"]:
        base, rest = rest[1], rest[2:]
    this_run = []
    for crate in rest:
        run = out / crate / "mutants.out"
        if not (run / "outcomes.json").exists():
            print(f"{crate}: no outcomes (nothing to test)")
            continue
        if base is None:
            fold(out / crate)
        # A diff run's figures are its own handful of mutants, never folded into a record.
        by_name, seconds = outcomes(run)
        this_run.append((crate, by_name, seconds))
    report, missed = table(this_run)
    print("this run:")
    print(report, end="")
    for name in missed:
        print(f"  missed: {name}")
    if base is None:
        # The evidence covers every crate with a record, whichever crates this run tested.
        records = []
        for record_file in sorted(out.glob("*/record.json")):
            record = json.loads(record_file.read_text())
            records.append((record_file.parent.name, record["mutants"], sum(record["seconds"])))
        report, missed = table(records)
        evidence = Path("evidence")
        header = (
            "# cargo-mutants over the safety-critical crates (scripts/mutants.sh); per crate, the\n"
            "# latest outcome of every mutant and the wall time of the runs that produced them\n"
        )
        (evidence / "mutants.txt").write_text(header + report)
        (evidence / "mutants-missed.txt").write_text(
            "# Missed mutants: each needs a test that kills it or a reason in .cargo/mutants.toml\n"
            + "".join(f"{name}\n" for name in missed)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
