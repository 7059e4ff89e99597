//! URLs built from inputs: a `navigate` whose URL holds `{$input: …}` binds the value into one
//! path segment, percent-encoded, and a placeholder nothing binds is refused before the browser
//! moves.

use cua_artifact::{Action, Capability, FailureCode, RunStatus};
use cua_replay::{PreparedCapability, RunRequest};
use memberdesk::Variant;

use crate::live::Live;
use crate::support::{inputs, root};

/// A capability of `tests/fixtures/deep_link/`, edited, sealed and bound to the fixture.
fn fixture(live: &Live, file: &str, edit: impl FnOnce(&mut Capability)) -> PreparedCapability {
    let path = root().join("tests/fixtures/deep_link").join(file);
    let mut base = Capability::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut base);
    PreparedCapability::bind(base.sealed(), None, Some(&live.base_url()), None).unwrap()
}

fn deep_link(live: &Live, edit: impl FnOnce(&mut Capability)) -> PreparedCapability {
    fixture(live, "corebank.member.balance_by_link@1.0.0.yaml", edit)
}

/// The URL of every page the run observed, in order.
fn navigations(run_dir: &std::path::Path) -> Vec<String> {
    let trace = std::fs::read_to_string(run_dir.join("trace.jsonl")).unwrap();
    let mut urls: Vec<String> = trace
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| line["event"] == "observe")
        .filter_map(|line| line["url"].as_str().map(str::to_owned))
        .collect();
    urls.dedup();
    urls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_fills_one_path_segment_and_never_more() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let base = live.base_url();

    let (report, run_dir) = live
        .run(RunRequest::new(
            deep_link(&live, |_| {}),
            inputs(&[("member_id", "12345")]),
        ))
        .await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{:?} ({})",
        report.result.error,
        run_dir.display()
    );
    assert_eq!(report.result.outputs["savings_balance"], "4210.55");
    // The record names what a reviewer approved and what ran, and what bound the difference.
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run_record.json")).unwrap())
            .unwrap();
    let prepared = deep_link(&live, |_| {});
    let sealed = prepared
        .overlay
        .as_ref()
        .unwrap()
        .base
        .content_hash
        .clone()
        .unwrap();
    let effective = prepared.capability.content_hash.clone().unwrap();
    assert_ne!(sealed, effective);
    assert_eq!(record["sealed_content_hash"], sealed.to_string());
    assert_eq!(record["capability_content_hash"], effective.to_string());
    assert_eq!(
        record["bound_by"],
        format!(
            "the binding of tenant {}, vars base_url",
            cua_replay::INVOCATION_TENANT
        )
    );
    assert!(
        navigations(&run_dir).contains(&format!("{base}/member/12345?view=detail")),
        "{:?}",
        navigations(&run_dir)
    );

    // A value that tries to add segments, a query and another path is one encoded segment.
    let (report, run_dir) = live
        .run(RunRequest::new(
            deep_link(&live, |_| {}),
            inputs(&[("member_id", "12345/../../admin?x=1#top")]),
        ))
        .await;
    assert_ne!(report.result.status, RunStatus::Success);
    let dispatched = navigations(&run_dir);
    assert!(
        dispatched.contains(&format!(
            "{base}/member/12345%2F..%2F..%2Fadmin%3Fx%3D1%23top?view=detail"
        )),
        "{dispatched:?}"
    );
    assert!(
        !dispatched.iter().any(|url| url.contains("/admin")),
        "{dispatched:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_nothing_binds_is_refused_before_the_browser_moves() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let prepared = deep_link(&live, |capability| {
        capability.steps[0].action = Action::Navigate {
            url: "{base_url}/{branch_path}/member/{$input: member_id}".to_owned(),
        };
    });
    let (report, run_dir) = live
        .run(RunRequest::new(prepared, inputs(&[("member_id", "12345")])))
        .await;
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (error.code, error.step_id.as_ref().map(|step| step.as_str())),
        (FailureCode::InputValidationFailed, Some("open_member")),
        "{error:?}"
    );
    assert!(
        error.message.contains("placeholder nothing binds"),
        "{}",
        error.message
    );
    // Only the entrypoint was navigated to.
    assert_eq!(
        navigations(&run_dir).len(),
        1,
        "{:?}",
        navigations(&run_dir)
    );
}

/// A paragraph has no accessible name: its rendered text is what an extract reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rendered_text_of_a_paragraph_is_read() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let prepared = fixture(&live, "corebank.member.savings_notice@1.0.0.yaml", |_| {});
    let (report, run_dir) = live
        .run(RunRequest::new(prepared, inputs(&[("member_id", "13579")])))
        .await;
    assert_eq!(
        report.result.status,
        RunStatus::Success,
        "{:?} ({})",
        report.result.error,
        run_dir.display()
    );
    assert_eq!(
        report.result.outputs["notice"],
        "No savings account on file for this member."
    );
}

/// A value that would be a `..` segment moves the URL instead of filling it: refused before the
/// browser moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dot_segment_value_is_refused() {
    let live = Live::start(Variant::FirstValley).await;
    live.sign_on().await;
    let (report, run_dir) = live
        .run(RunRequest::new(
            deep_link(&live, |_| {}),
            inputs(&[("member_id", "..")]),
        ))
        .await;
    let error = report.result.error.clone().unwrap();
    assert_eq!(
        (error.code, error.step_id.as_ref().map(|step| step.as_str())),
        (FailureCode::InputValidationFailed, Some("open_member")),
        "{error:?}"
    );
    assert_eq!(
        navigations(&run_dir).len(),
        1,
        "{:?}",
        navigations(&run_dir)
    );
}
