"""Summarizes cargo-mutants' outcomes per crate: caught, missed, unviable and timed-out counts
and the share of viable mutants caught, side by side. After a full or iterated run it writes
every crate's figures to evidence/mutants.txt and the missed mutants to
evidence/mutants-missed.txt.

An `--iterate` run of cargo-mutants tests only the mutants the last run did not catch, so its
own outcomes are a fraction of the crate. Every run's outcomes are therefore folded into one
record per crate (target/mutants/<crate>/record.json): a full run starts the record afresh, an
iterated run's outcomes replace earlier ones of the same mutant, and the record is pruned to
the mutants the current source has (list.txt, from `cargo mutants --list`), so a mutant whose
line moved or that was excluded since is not counted twice or at all. The record keeps each
run's start and wall time; folding the same run twice changes nothing.

usage: mutants_report.py RUNS_DIR [--in-diff REV] --all "CRATE..." CRATE...
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


def outcomes(run: Path) -> tuple[dict[str, str], str, int]:
    """One cargo-mutants run: each mutant's outcome by name, the start time and the seconds."""
    data = json.loads((run / "outcomes.json").read_text())
    by_name = {}
    for outcome in data["outcomes"]:
        scenario = outcome["scenario"]
        kind = KINDS.get(outcome["summary"])
        if scenario != "Baseline" and kind is not None:
            by_name[scenario["Mutant"]["name"]] = kind
    start, end = (
        datetime.datetime.fromisoformat(data[key][:26].rstrip("Z"))
        for key in ("start_time", "end_time")
    )
    return by_name, data["start_time"], int((end - start).total_seconds())


def fold(crate_dir: Path) -> dict:
    """Folds the crate's latest run into its record and returns the record."""
    run = crate_dir / "mutants.out"
    record_file = crate_dir / "record.json"
    by_name, start, seconds = outcomes(run)
    if (run / "previously_caught.txt").exists():
        if not record_file.exists():
            raise SystemExit(
                f"mutants: {crate_dir.name} was iterated without an earlier full run to build "
                "on; run scripts/mutants.sh without --iterate first"
            )
        record = json.loads(record_file.read_text())
    else:
        record = {"mutants": {}, "runs": []}
    if all(known["start"] != start for known in record["runs"]):
        record["mutants"].update(by_name)
        record["runs"].append({"start": start, "seconds": seconds})
    listing = crate_dir / "list.txt"
    if listing.exists():
        current = set(listing.read_text().splitlines())
        record["mutants"] = {
            name: kind for name, kind in record["mutants"].items() if name in current
        }
        untested = len(current - record["mutants"].keys())
        if untested:
            print(f"{crate_dir.name}: {untested} mutants of the current source have no outcome")
    record_file.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def duration(seconds: int) -> str:
    return f"{seconds // 3600}h{seconds % 3600 // 60:02}m{seconds % 60:02}s"


def table(rows: list[tuple[str, dict[str, str] | None, int]]) -> tuple[str, list[str]]:
    lines, below, missed = [HEADER], [], []
    for crate, by_name, seconds in rows:
        if by_name is None:
            lines.append(f"{crate:<14} no record: run scripts/mutants.sh {crate}")
            below.append(crate)
            continue
        tally = {kind: 0 for kind in KINDS.values()}
        for kind in by_name.values():
            tally[kind] += 1
        viable = tally["caught"] + tally["missed"] + tally["timeout"]
        share = 100.0 * tally["caught"] / viable if viable else 100.0
        lines.append(
            f"{crate:<14} {len(by_name):>7} {tally['caught']:>7} {tally['missed']:>7} "
            f"{tally['unviable']:>8} {tally['timeout']:>7} {share:>8.1f}% {duration(seconds):>10}"
        )
        if share < TARGET:
            below.append(crate)
        missed.extend(sorted(name for name, kind in by_name.items() if kind == "missed"))
    lines.append(f"total wall time {duration(sum(seconds for _, _, seconds in rows))}")
    lines.append(
        f"target: at least {TARGET:.0f} % of viable mutants caught per crate"
        + (f"; not met: {', '.join(below)}" if below else "; every crate meets it")
    )
    return "\n".join(lines) + "\n", missed


def main() -> int:
    args = sys.argv[1:]
    runs, rest = Path(args[0]), args[1:]
    base = None
    if rest[:1] == ["--in-diff"]:
        base, rest = rest[1], rest[2:]
    if rest[:1] != ["--all"]:
        raise SystemExit(__doc__)
    every, rest = rest[1].split(), rest[2:]
    this_run = []
    for crate in rest:
        run = runs / crate / "mutants.out"
        if not (run / "outcomes.json").exists():
            print(f"{crate}: no outcomes (nothing to test)")
            continue
        if base is None:
            fold(runs / crate)
        # A diff run's figures are its own handful of mutants, never folded into a record.
        by_name, _, seconds = outcomes(run)
        this_run.append((crate, by_name, seconds))
    report, missed = table(this_run)
    print("this run:")
    print(report, end="")
    for name in missed:
        print(f"  missed: {name}")
    if base is None:
        records = []
        for crate in every:
            record_file = runs / crate / "record.json"
            if record_file.exists():
                record = json.loads(record_file.read_text())
                seconds = sum(run["seconds"] for run in record["runs"])
                records.append((crate, record["mutants"], seconds))
            else:
                records.append((crate, None, 0))
        report, missed = table(records)
        evidence = Path("evidence")
        header = (
            "# cargo-mutants over the safety-critical crates (scripts/mutants.sh): per crate,\n"
            "# the latest outcome of every mutant the current source has, and the wall time of\n"
            "# the runs (a full run and the iterations after it) that produced them\n"
        )
        (evidence / "mutants.txt").write_text(header + report)
        (evidence / "mutants-missed.txt").write_text(
            "# Missed mutants: each needs a test that kills it or a reason in .cargo/mutants.toml\n"
            + "".join(f"{name}\n" for name in missed)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
