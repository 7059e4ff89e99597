//! The binary attacked as a second local user and with hostile files. The attacker plants
//! links, directories and FIFOs (as `nobody` when the tests run as root, see
//! `cua_fs::testing`) in a directory every user may write to, as in `/tmp`; cua runs as the
//! current user and must refuse, with exit 2 and a message naming the path, before it writes
//! anything, leaving every victim file as it was: run ids that climb out of the evidence root,
//! a batch's state file, a run directory or the evidence root planted as links, seal's
//! temporary file, codegen's and eval's outputs, and inputs that never end (a device, a FIFO).
//!
//! No test here starts a browser (`CUA_CHROMIUM` names nothing), so each refusal is shown to
//! come first.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cua_fs::testing::{plant_directory, plant_fifo, plant_symlink, share};
use tempfile::TempDir;

const SAVINGS: &str = "corebank.member.savings_balance@1.0.0";
const VICTIM_TEXT: &str = "precious: written by its owner, never by cua\n";
/// Every refusal here is immediate; a command still running after this is hanging.
const PROMPTLY: Duration = Duration::from_secs(20);

/// What a command did.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The attack's ground: a directory every user may write to (`shared`), and the victim's own
/// directory (`private`, only its owner's), holding `victim.txt`.
struct Ground {
    shared: TempDir,
    private: TempDir,
}

impl Ground {
    fn new() -> Self {
        let shared = tempfile::tempdir().expect("a temporary directory");
        share(shared.path());
        let private = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(private.path().join("victim.txt"), VICTIM_TEXT).expect("a victim file");
        Self { shared, private }
    }

    fn shared(&self, name: &str) -> PathBuf {
        self.shared.path().join(name)
    }

    fn victim(&self) -> PathBuf {
        self.private.path().join("victim.txt")
    }

    /// A directory of the victim's, empty.
    fn victim_dir(&self) -> PathBuf {
        let dir = self.private.path().join("victim-dir");
        std::fs::create_dir_all(&dir).expect("a victim directory");
        dir
    }

    /// The victim's file and directory are as they were.
    fn assert_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.victim()).expect("the victim file is still there"),
            VICTIM_TEXT,
            "the victim file was written"
        );
        let names = |dir: &Path| -> Vec<String> {
            cua_fs::Dir::open(dir)
                .and_then(|dir| dir.entry_names())
                .unwrap_or_default()
        };
        let inside = names(self.private.path());
        assert!(
            inside == ["victim.txt"] || inside == ["victim-dir", "victim.txt"],
            "something was created beside the victim: {inside:?}"
        );
        assert_eq!(
            names(&self.private.path().join("victim-dir")),
            Vec::<String>::new(),
            "something was created in the victim's directory"
        );
    }
}

/// `cua ARGS` from the repository root, with no browser to start.
fn cua<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cua"));
    command.args(args);
    with_path_test_env(&mut command);
    command
}

/// The repository as working directory, no browser, and the secrets a replay checks before
/// anything else: these tests are about paths.
fn with_path_test_env(command: &mut Command) {
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env("CUA_CHROMIUM", "/nonexistent/chromium")
        .env("CUA_SECRET_COREBANK_OPERATOR_ID", "operator-for-path-tests")
        .env(
            "CUA_SECRET_COREBANK_OPERATOR_PASSWORD",
            "password-for-path-tests",
        );
}

/// Runs `command` to its end, which must come within [`PROMPTLY`].
fn run(command: &mut Command) -> Ran {
    let output = tempfile::tempdir().expect("a temporary directory");
    let (out, err) = (output.path().join("out"), output.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("a file"))
        .stderr(std::fs::File::create(&err).expect("a file"))
        .spawn()
        .expect("the cua binary runs");
    finish(&mut child, &out, &err, &format!("{command:?}"))
}

fn finish(child: &mut std::process::Child, out: &Path, err: &Path, what: &str) -> Ran {
    let deadline = Instant::now() + PROMPTLY;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waitable") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} still ran after {PROMPTLY:?}: {}",
                std::fs::read_to_string(err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        stdout: std::fs::read_to_string(out).unwrap_or_default(),
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
    }
}

/// The command was refused with exit 2, its message naming `path` and saying `why`.
fn assert_refused(ran: &Ran, path: &Path, why: &str) {
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.code, 2, "{said}");
    assert!(
        said.contains(&path.display().to_string()),
        "the refusal does not name {}: {said}",
        path.display()
    );
    assert!(
        said.contains(why),
        "the refusal does not say `{why}`: {said}"
    );
}

/// A one-row batch file in `dir`.
fn rows(dir: &Path) -> PathBuf {
    let path = dir.join("rows.jsonl");
    std::fs::write(&path, "{\"member_id\": \"12345\"}\n").expect("a rows file");
    path
}

/// A draft copy of a reference capability at `path`, so that sealing it writes.
fn draft_capability(path: &Path) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("capabilities/{SAVINGS}.yaml")),
    )
    .expect("the reference capability");
    let start = text.find("content_hash: blake3:").expect("sealed");
    std::fs::write(
        path,
        format!("{}content_hash: \"\"\n", &text[..start]).replace("max_steps: 12", "max_steps: 11"),
    )
    .expect("a draft");
}

/// The savings replay under `--run-id run_id` into `evidence`, batch over `rows` when given,
/// against an address where nothing listens: whatever is refused is refused before any page.
fn replay_nowhere(evidence: &Path, run_id: &str, rows: Option<&Path>, extra: &[&str]) -> Ran {
    let mut args = vec![
        "replay",
        SAVINGS,
        "--evidence-dir",
        evidence.to_str().expect("UTF-8"),
        "--base-url",
        "http://127.0.0.1:9",
        "--run-id",
        run_id,
    ];
    match rows {
        Some(rows) => args.extend(["--inputs", rows.to_str().expect("UTF-8")]),
        None => args.extend(["--input", "member_id=12345"]),
    }
    args.extend(extra);
    run(&mut cua(&args))
}

#[test]
fn a_run_id_that_leaves_the_evidence_root_is_refused_by_batch_and_replay() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let evidence = scratch.path().join("evidence");
    let outside = scratch.path().join("outside");
    std::fs::create_dir_all(&outside).expect("a directory");
    let rows = rows(scratch.path());
    let too_long = "r".repeat(129);
    for run_id in [
        "../outside/pwned",
        "outside/pwned",
        ".pwned",
        "..",
        too_long.as_str(),
    ] {
        for batch in [true, false] {
            let ran = replay_nowhere(&evidence, run_id, batch.then_some(rows.as_path()), &[]);
            let said = format!("{}{}", ran.stdout, ran.stderr);
            assert_eq!(ran.code, 2, "--run-id {run_id:?} (batch: {batch}): {said}");
            assert!(
                said.contains("invalid run id") && said.contains(run_id),
                "--run-id {run_id:?} (batch: {batch}): {said}"
            );
            assert_eq!(
                std::fs::read_dir(&outside).expect("listable").count(),
                0,
                "--run-id {run_id:?} (batch: {batch}) wrote outside the evidence root"
            );
        }
    }
}

#[test]
fn a_batch_state_file_planted_as_a_link_is_refused_and_its_target_left_alone() {
    let ground = Ground::new();
    let evidence = ground.shared.path();
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let rows = rows(scratch.path());
    let victim_dir = ground.victim_dir();
    // A link to a file of the victim's, and a dangling one naming where the attacker would like
    // a file created.
    plant_symlink(&ground.victim(), &ground.shared("linked.batch.jsonl"));
    plant_symlink(
        &victim_dir.join("created.batch.jsonl"),
        &ground.shared("dangling.batch.jsonl"),
    );
    for (run_id, resume) in [("linked", false), ("linked", true), ("dangling", false)] {
        let resume: &[&str] = if resume { &["--resume"] } else { &[] };
        let ran = replay_nowhere(evidence, run_id, Some(rows.as_path()), resume);
        assert_refused(
            &ran,
            &ground.shared(&format!("{run_id}.batch.jsonl")),
            "is a symbolic link",
        );
        ground.assert_untouched();
    }
}

#[test]
fn an_evidence_root_or_run_directory_planted_as_a_link_is_refused() {
    let ground = Ground::new();
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let rows = rows(scratch.path());
    let victim_dir = ground.victim_dir();
    let linked_root = ground.shared("evidence");
    plant_symlink(&victim_dir, &linked_root);
    let replay = |evidence: &Path, run_id: &str, batch: bool| {
        replay_nowhere(evidence, run_id, batch.then_some(rows.as_path()), &[])
    };
    for batch in [false, true] {
        let ran = replay(&linked_root, "run-a", batch);
        assert_refused(&ran, &linked_root, "is a symbolic link");
        ground.assert_untouched();
    }
    // The evidence root is real and shared; the run's directory in it is the attacker's link.
    let linked_run = ground.shared("run-b");
    plant_symlink(&victim_dir, &linked_run);
    let ran = replay(ground.shared.path(), "run-b", false);
    assert_refused(&ran, &linked_run, "is a symbolic link");
    ground.assert_untouched();
    // A run directory the attacker made (and owns) is refused too: they could read the
    // evidence or plant files in it.
    if cua_fs::testing::attacker_is_another_user() {
        let planted = ground.shared("run-c");
        plant_directory(&planted);
        let ran = replay(ground.shared.path(), "run-c", false);
        assert_refused(&ran, &planted, "belongs to another user");
        assert_eq!(std::fs::read_dir(&planted).expect("listable").count(), 0);
    }
}

#[test]
fn seal_never_opens_a_temporary_file_an_attacker_planted() {
    let ground = Ground::new();
    let capability = ground.shared("savings.yaml");
    draft_capability(&capability);
    // The seal used to write `.<file>.seal-<pid>`: the attacker plants that name, pointing at
    // the victim, for the very process that will seal (its pid is known before it execs cua).
    let mut child = Command::new("sh")
        .args(["-c", "read go && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_cua"))
        .args(["seal", capability.to_str().expect("UTF-8")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("a shell");
    plant_symlink(
        &ground.victim(),
        &ground.shared(&format!(".savings.yaml.seal-{}", child.id())),
    );
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(b"go\n")
        .expect("the shell reads");
    let status = child.wait().expect("waitable");
    assert!(status.success(), "seal failed: {status:?}");
    ground.assert_untouched();
    let sealed = std::fs::symlink_metadata(&capability).expect("the capability is there");
    assert!(
        sealed.is_file(),
        "the capability is no longer a regular file"
    );
    assert!(
        std::fs::read_to_string(&capability)
            .expect("readable")
            .contains("content_hash: blake3:"),
        "the capability was not sealed"
    );
}

#[test]
fn seal_refuses_a_capability_that_is_a_link() {
    let ground = Ground::new();
    let real = ground.private.path().join("savings.yaml");
    draft_capability(&real);
    let before = std::fs::read_to_string(&real).expect("readable");
    let link = ground.shared("savings.yaml");
    plant_symlink(&real, &link);
    let ran = run(&mut cua(&["seal", link.to_str().expect("UTF-8")]));
    assert_refused(&ran, &link, "is a symbolic link");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("still there")
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
    assert_eq!(std::fs::read_to_string(&real).expect("readable"), before);
}

#[test]
fn codegen_and_eval_never_write_through_a_planted_link() {
    let ground = Ground::new();
    let spec = ground.shared("savings.spec.ts");
    plant_symlink(&ground.victim(), &spec);
    let ran = run(&mut cua(&[
        "codegen",
        SAVINGS,
        "--out",
        spec.to_str().expect("UTF-8"),
    ]));
    assert_refused(&ran, &spec, "is a symbolic link");
    ground.assert_untouched();

    // `eval --out` and `--runs-dir` are directories cua writes reports and evidence into.
    let victim_dir = ground.victim_dir();
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let linked_out = ground.shared("evals");
    let linked_runs = ground.shared("eval-runs");
    plant_symlink(&victim_dir, &linked_out);
    plant_symlink(&victim_dir, &linked_runs);
    let real_out = scratch.path().join("evals");
    let real_runs = scratch.path().join("runs");
    for (out, runs, refused) in [
        (&linked_out, &real_runs, &linked_out),
        (&real_out, &linked_runs, &linked_runs),
    ] {
        let ran = run(&mut cua(&[
            "eval",
            "evals/replay_stability.yaml",
            "--out",
            out.to_str().expect("UTF-8"),
            "--runs-dir",
            runs.to_str().expect("UTF-8"),
        ]));
        assert_refused(&ran, refused, "is a symbolic link");
        ground.assert_untouched();
    }
}

#[test]
fn validate_and_every_reader_refuse_a_device_a_fifo_or_a_directory_at_once() {
    let ground = Ground::new();
    let fifo = ground.shared("capability.yaml");
    plant_fifo(&fifo);
    let zero = Path::new("/dev/zero");
    let directory = Path::new("capabilities");
    // A read of /dev/zero without a bound grows until memory runs out; the address space is
    // capped so that a regression fails here instead of taking the machine with it.
    let bounded = |args: &[&str]| {
        let mut command = Command::new("prlimit");
        command
            .arg("--as=4294967296")
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_cua"))
            .args(args);
        with_path_test_env(&mut command);
        run(&mut command)
    };
    for (path, kind) in [
        (zero, "a character device"),
        (fifo.as_path(), "a FIFO"),
        (directory, "a directory"),
    ] {
        let file = path.to_str().expect("UTF-8");
        let ran = bounded(&["validate", file]);
        if kind == "a directory" {
            // `cua validate` reads a directory as the documents under it.
            assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
        } else {
            assert_refused(&ran, path, kind);
            assert!(
                ran.stderr.contains("at most 1048576 bytes"),
                "the limit is not named: {}",
                ran.stderr
            );
        }
        // Every other reader of a user's file: seal, a batch's rows, the policy, an eval suite,
        // the console's operators.
        for args in [
            vec!["seal", file],
            vec![
                "replay",
                SAVINGS,
                "--base-url",
                "http://127.0.0.1:9",
                "--inputs",
                file,
            ],
            vec![
                "replay",
                SAVINGS,
                "--base-url",
                "http://127.0.0.1:9",
                "--input",
                "member_id=12345",
                "--policy",
                file,
            ],
            vec!["eval", file],
            vec!["console", "--operators", file, "--bind", "127.0.0.1:0"],
        ] {
            let ran = bounded(&args);
            assert_refused(&ran, path, kind);
        }
    }
    ground.assert_untouched();
}

#[test]
fn a_document_over_its_limit_is_refused_unread() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let large = scratch.path().join("large.yaml");
    std::fs::write(&large, "#".repeat(1024 * 1024 + 1)).expect("a large file");
    let ran = run(&mut cua(&["validate", large.to_str().expect("UTF-8")]));
    assert_refused(&ran, &large, "over the 1048576-byte limit");
}
