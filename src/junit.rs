//! JUnit XML, the report CI systems render (GitHub Actions reporters, GitLab, Jenkins, Azure):
//! `cua eval --junit FILE` writes a test suite per eval suite and a test case per run;
//! `cua replay --inputs … --junit FILE` a test case per row. A wrong answer or a failed row is a
//! `<failure>` with its code; a row that never ran (an invalid row) an `<error>`; a run that
//! refused to answer, which an eval counts as acceptable but not as right, is `<skipped>`. Every
//! case names its evidence directory in `<system-out>`, so a red build links to what happened.
//!
//! The text comes from the application under test (labels, error messages): it is escaped, and
//! characters XML cannot carry at all are replaced, so a hostile page cannot break the report.

use std::io::Write as _;
use std::path::Path;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use crate::error::{CliError, ErrorCode};

/// One `<testsuite>`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Suite {
    pub(crate) name: String,
    pub(crate) cases: Vec<Case>,
    /// `<properties>`: what the suite evaluated, and its verdict.
    pub(crate) properties: Vec<(String, String)>,
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Case {
    pub(crate) classname: String,
    pub(crate) name: String,
    pub(crate) duration_ms: u64,
    pub(crate) verdict: Verdict,
    /// `<system-out>`: the evidence directory and anything else a reader follows up.
    pub(crate) output: String,
}

/// How a case ended, as JUnit says it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    Passed,
    /// The run answered wrongly, or did not succeed: `kind` is its code.
    Failure {
        kind: String,
        message: String,
    },
    /// Nothing ran (an invalid row).
    Error {
        kind: String,
        message: String,
    },
    /// The run refused to answer.
    Skipped {
        message: String,
    },
}

/// The document: one `<testsuites>` named `name` holding `suites`.
pub(crate) fn render(name: &str, suites: &[Suite]) -> String {
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing to a Vec cannot fail.
    let _ = write_document(&mut writer, name, suites);
    let mut text = String::from_utf8(writer.into_inner()).unwrap_or_default();
    text.push('\n');
    text
}

/// Makes the directory the report goes in, as a test runner's reporter does, and removes an
/// earlier report there: called before anything runs, so a report that cannot be written is
/// found before the runs, and a command that fails before writing one leaves none, never the
/// last run's (a CI step that publishes the file on failure would show it as this run's).
pub(crate) fn prepare(path: &Path) -> Result<(), CliError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        cua_fs::Dir::create_all(parent, cua_fs::FileMode::Readable)
            .map_err(|error| CliError::unwritten(&error, ErrorCode::WriteFailed))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_file() => std::fs::remove_file(path).map_err(|error| {
            CliError::new(
                ErrorCode::WriteFailed,
                format!(
                    "cannot remove the earlier report {}: {error}",
                    path.display()
                ),
            )
        }),
        Ok(_) => Err(CliError::new(
            ErrorCode::RefusedPath,
            format!(
                "{} is not a regular file; the JUnit report is never written through a link or over a directory",
                path.display()
            ),
        )),
        Err(_) => Ok(()),
    }
}

/// Writes the document to `path` atomically.
pub(crate) fn write(path: &Path, name: &str, suites: &[Suite]) -> Result<(), CliError> {
    cua_fs::write_atomic(
        path,
        render(name, suites).as_bytes(),
        cua_fs::FileMode::Readable,
    )
    .map_err(|error| CliError::unwritten(&error, ErrorCode::WriteFailed))
}

fn write_document(
    writer: &mut Writer<Vec<u8>>,
    name: &str,
    suites: &[Suite],
) -> std::io::Result<()> {
    writer.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let totals = totals(name, suites.iter().flat_map(|suite| &suite.cases));
    writer
        .create_element("testsuites")
        .with_attributes(totals.iter().map(|(key, value)| (*key, value.as_str())))
        .write_inner_content(|writer| {
            for suite in suites {
                write_suite(writer, suite)?;
            }
            Ok(())
        })?;
    Ok(())
}

fn write_suite(writer: &mut Writer<Vec<u8>>, suite: &Suite) -> std::io::Result<()> {
    let totals = totals(&suite.name, &suite.cases);
    writer
        .create_element("testsuite")
        .with_attributes(totals.iter().map(|(key, value)| (*key, value.as_str())))
        .write_inner_content(|writer| {
            if !suite.properties.is_empty() {
                writer
                    .create_element("properties")
                    .write_inner_content(|writer| {
                        for (name, value) in &suite.properties {
                            writer
                                .create_element("property")
                                .with_attributes([
                                    ("name", clean(name).as_str()),
                                    ("value", clean(value).as_str()),
                                ])
                                .write_empty()?;
                        }
                        Ok(())
                    })?;
            }
            for case in &suite.cases {
                write_case(writer, case)?;
            }
            Ok(())
        })?;
    Ok(())
}

fn write_case(writer: &mut Writer<Vec<u8>>, case: &Case) -> std::io::Result<()> {
    let time = seconds(case.duration_ms);
    writer
        .create_element("testcase")
        .with_attributes([
            ("classname", clean(&case.classname).as_str()),
            ("name", clean(&case.name).as_str()),
            ("time", time.as_str()),
        ])
        .write_inner_content(|writer| {
            match &case.verdict {
                Verdict::Passed => {}
                Verdict::Failure { kind, message } | Verdict::Error { kind, message } => {
                    let element = if matches!(case.verdict, Verdict::Failure { .. }) {
                        "failure"
                    } else {
                        "error"
                    };
                    writer
                        .create_element(element)
                        .with_attributes([
                            ("message", clean(message).as_str()),
                            ("type", clean(kind).as_str()),
                        ])
                        .write_text_content(BytesText::new(&clean(message)))?;
                }
                Verdict::Skipped { message } => {
                    writer
                        .create_element("skipped")
                        .with_attribute(("message", clean(message).as_str()))
                        .write_empty()?;
                }
            }
            if !case.output.is_empty() {
                writer
                    .create_element("system-out")
                    .write_text_content(BytesText::new(&clean(&case.output)))?;
            }
            Ok(())
        })?;
    Ok(())
}

/// The attributes a `<testsuites>` or `<testsuite>` carries for `cases`: its name, the counts
/// by how each case ended, and the time they took.
fn totals<'a>(
    name: &str,
    cases: impl IntoIterator<Item = &'a Case>,
) -> [(&'static str, String); 6] {
    let (mut tests, mut failures, mut errors, mut skipped, mut milliseconds) = (0, 0, 0, 0, 0);
    for case in cases {
        tests += 1;
        milliseconds += case.duration_ms;
        match case.verdict {
            Verdict::Passed => {}
            Verdict::Failure { .. } => failures += 1,
            Verdict::Error { .. } => errors += 1,
            Verdict::Skipped { .. } => skipped += 1,
        }
    }
    [
        ("name", clean(name)),
        ("tests", tests.to_string()),
        ("failures", failures.to_string()),
        ("errors", errors.to_string()),
        ("skipped", skipped.to_string()),
        ("time", seconds(milliseconds)),
    ]
}

/// Milliseconds as JUnit's seconds, `1.234`.
fn seconds(milliseconds: u64) -> String {
    format!("{}.{:03}", milliseconds / 1000, milliseconds % 1000)
}

/// The text with every character XML 1.0 cannot carry (most C0 controls, lone surrogates are
/// impossible in a `str`, U+FFFE and U+FFFF) replaced by U+FFFD; the writer escapes the rest.
fn clean(text: &str) -> String {
    text.chars()
        .map(|character| match character {
            '\t' | '\n' | '\r' => character,
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => '\u{fffd}',
            _ => character,
        })
        .collect()
}

/// A one-line summary for stderr after the file is written.
pub(crate) fn announce(path: &Path, suites: &[Suite]) {
    let cases: usize = suites.iter().map(|suite| suite.cases.len()).sum();
    let _ = writeln!(
        std::io::stderr(),
        "junit: {} ({cases} test case(s))",
        path.display()
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test that cannot unwrap has failed")]

    use super::*;

    #[test]
    fn a_hostile_text_is_escaped_and_what_xml_cannot_carry_is_replaced() {
        let suites = [Suite {
            name: "hostile".to_owned(),
            properties: vec![("verdict".to_owned(), "UNSOUND".to_owned())],
            cases: vec![
                Case {
                    classname: "suite.cap@1.0.0".to_owned(),
                    name: "member_id=1</testcase><x a=\"".to_owned(),
                    duration_ms: 1234,
                    verdict: Verdict::Failure {
                        kind: "wrong_action".to_owned(),
                        message: "got \"4210.56\" & <b>\u{1b}[31m</b>".to_owned(),
                    },
                    output: "evidence: runs/a\u{0}b".to_owned(),
                },
                Case {
                    classname: "suite.cap@1.0.0".to_owned(),
                    name: "refused".to_owned(),
                    duration_ms: 5,
                    verdict: Verdict::Skipped {
                        message: "needs_human".to_owned(),
                    },
                    output: String::new(),
                },
            ],
        }];
        let text = render("cua eval", &suites);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{0}'),
            "{text}"
        );
        assert!(text.contains("&lt;/testcase&gt;&lt;x a=&quot;"), "{text}");
        assert!(
            text.contains("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"1.239\""),
            "{text}"
        );
        assert!(
            text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
            "{text}"
        );
        // It parses back as XML, with exactly the cases written.
        let mut reader = quick_xml::Reader::from_str(&text);
        let mut cases = 0;
        loop {
            match reader.read_event().unwrap() {
                Event::Start(element) | Event::Empty(element)
                    if element.name().into_inner() == "testcase" =>
                {
                    cases += 1;
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(cases, 2);
    }
}
