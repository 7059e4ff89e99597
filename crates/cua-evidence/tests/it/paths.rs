//! The bus and the verifier attacked as a second local user (see `cua_fs::testing`): an
//! evidence root or run directory planted as a link, a run directory the attacker made, a
//! trace or snapshot swapped for a link, and a trace too large to read.

use std::path::Path;

use cua_evidence::{EvidenceBus, EvidenceError, Redactor, RunId, TRACE_FILE, read_trace, verify};
use cua_fs::testing::{attacker_is_another_user, plant_directory, plant_symlink, share};

use crate::{bus, clock, policy_redactor, replay_run};

fn create(root: &Path, run_id: &str) -> Result<EvidenceBus, EvidenceError> {
    EvidenceBus::create(
        root,
        RunId::parse(run_id).expect("a valid run id"),
        clock(),
        Redactor::default(),
    )
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).expect("listable").count()
}

fn assert_refused(refused: &Result<EvidenceBus, EvidenceError>, path: &Path, why: &str) {
    let message = match refused {
        Ok(bus) => panic!("{} was accepted as a run directory", bus.dir().display()),
        Err(error) => error.to_string(),
    };
    assert!(
        message.contains(&path.display().to_string()) && message.contains(why),
        "expected a refusal of {} saying `{why}`, got: {message}",
        path.display()
    );
}

#[test]
fn a_run_directory_or_evidence_root_planted_as_a_link_is_refused() {
    let shared = tempfile::tempdir().expect("a temporary directory");
    share(shared.path());
    let victim = tempfile::tempdir().expect("a temporary directory");

    let run_link = shared.path().join("run-1");
    plant_symlink(victim.path(), &run_link);
    assert_refused(
        &create(shared.path(), "run-1"),
        &run_link,
        "is a symbolic link",
    );

    let root_link = shared.path().join("evidence");
    plant_symlink(victim.path(), &root_link);
    assert_refused(
        &create(&root_link, "run-2"),
        &root_link,
        "is a symbolic link",
    );
    assert_eq!(
        entries(victim.path()),
        0,
        "something was written through a link"
    );

    // A run directory the attacker made could be read or planted in by them.
    if attacker_is_another_user() {
        let planted = shared.path().join("run-3");
        plant_directory(&planted);
        assert_refused(
            &create(shared.path(), "run-3"),
            &planted,
            "belongs to another user",
        );
        assert_eq!(entries(&planted), 0);
    }
    // An empty directory of our own, made ahead of time, is still a run directory.
    std::fs::create_dir(shared.path().join("run-4")).expect("creatable");
    create(shared.path(), "run-4").expect("an empty run directory of ours is accepted");
}

#[test]
fn the_run_directory_and_its_files_are_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-1", policy_redactor());
    replay_run(&bus);
    bus.finish().expect("the run record is written");
    let mode = |path: &Path| {
        std::fs::symlink_metadata(path)
            .expect("there")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(bus.dir()), 0o700);
    assert_eq!(mode(&bus.dir().join(TRACE_FILE)), 0o600);
    assert_eq!(mode(&bus.dir().join(cua_evidence::RUN_RECORD_FILE)), 0o600);
    assert_eq!(mode(&bus.dir().join(cua_evidence::SNAPSHOT_DIR)), 0o700);
}

#[test]
fn verify_reads_nothing_through_a_link_and_nothing_unbounded() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let bus = bus(root.path(), "run-1", policy_redactor());
    replay_run(&bus);
    bus.finish().expect("the run record is written");
    let run = bus.dir().to_owned();
    drop(bus);
    assert!(verify(&run).expect("verifiable").is_intact());

    // The run directory itself as a link.
    let shared = tempfile::tempdir().expect("a temporary directory");
    share(shared.path());
    let linked_run = shared.path().join("run-1");
    plant_symlink(&run, &linked_run);
    for refused in [
        verify(&linked_run).map(|_| ()),
        read_trace(&linked_run).map(|_| ()),
    ] {
        let message = refused.expect_err("a linked run directory").to_string();
        assert!(message.contains("is a symbolic link"), "{message}");
    }

    // A snapshot the trace names, swapped for a link to a file with the same bytes elsewhere,
    // is reported as a broken file, never read through.
    let snapshots = run.join(cua_evidence::SNAPSHOT_DIR);
    let first = std::fs::read_dir(&snapshots)
        .expect("snapshots")
        .next()
        .expect("a snapshot")
        .expect("an entry")
        .path();
    let elsewhere = root.path().join("elsewhere.json");
    std::fs::rename(&first, &elsewhere).expect("movable");
    std::os::unix::fs::symlink(&elsewhere, &first).expect("a link");
    let report = verify(&run).expect("verifiable");
    assert!(!report.is_intact(), "a linked snapshot verified");

    // A trace swapped for a link, and a trace over the limit, are refused unread.
    let trace = run.join(TRACE_FILE);
    std::fs::rename(&trace, root.path().join("trace.jsonl")).expect("movable");
    std::os::unix::fs::symlink(root.path().join("trace.jsonl"), &trace).expect("a link");
    let message = verify(&run).expect_err("a linked trace").to_string();
    assert!(message.contains("is a symbolic link"), "{message}");
    std::fs::remove_file(&trace).expect("removable");
    let file = std::fs::File::create(&trace).expect("creatable");
    // Sparse: the size is what is checked, before a byte is read.
    file.set_len(cua_evidence::MAX_TRACE_BYTES + 1)
        .expect("a sparse file");
    let message = verify(&run).expect_err("an oversized trace").to_string();
    assert!(
        message.contains(&format!("{}-byte limit", cua_evidence::MAX_TRACE_BYTES)),
        "{message}"
    );
}
