//! Reading back the JUnit XML `cua eval --junit` and `cua replay --inputs … --junit` write, as
//! a CI system would: the test cases, how each ended, and what each names.

use std::path::Path;

use quick_xml::events::Event;

/// One `<testcase>` as a CI system renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JunitCase {
    pub(crate) name: String,
    /// passed, failure, error or skipped.
    pub(crate) outcome: String,
    /// The failure's or error's `type` (its code).
    pub(crate) kind: String,
    pub(crate) message: String,
    pub(crate) output: String,
}

/// Every test case in the file, in order; the file must be well-formed XML whose totals agree
/// with its cases.
pub(crate) fn cases(path: &Path) -> Vec<JunitCase> {
    let text = std::fs::read_to_string(path).expect("the JUnit file");
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut cases: Vec<JunitCase> = Vec::new();
    let mut totals = None;
    let mut in_output = false;
    loop {
        let event = reader
            .read_event()
            .unwrap_or_else(|error| panic!("well-formed XML: {error}\n{text}"));
        let attribute = |element: &quick_xml::events::BytesStart<'_>, name: &str| {
            element
                .try_get_attribute(name)
                .expect("attributes parse")
                .map(|value| {
                    value
                        .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                        .expect("escaped")
                        .into_owned()
                })
                .unwrap_or_default()
        };
        match event {
            Event::Start(element) | Event::Empty(element) => match element.name().into_inner() {
                "testsuites" => {
                    totals =
                        Some(["tests", "failures", "errors", "skipped"].map(|name| {
                            attribute(&element, name).parse::<usize>().expect("a count")
                        }));
                }
                "testcase" => cases.push(JunitCase {
                    name: attribute(&element, "name"),
                    outcome: "passed".to_owned(),
                    kind: String::new(),
                    message: String::new(),
                    output: String::new(),
                }),
                outcome @ ("failure" | "error" | "skipped") => {
                    let case = cases.last_mut().expect("inside a test case");
                    case.outcome = outcome.to_owned();
                    case.kind = attribute(&element, "type");
                    case.message = attribute(&element, "message");
                }
                "system-out" => in_output = true,
                _ => {}
            },
            Event::Text(text) if in_output => {
                let case = cases.last_mut().expect("inside a test case");
                case.output.push_str(&text.xml10_content());
            }
            Event::End(element) if element.name().into_inner() == "system-out" => in_output = false,
            Event::Eof => break,
            _ => {}
        }
    }
    let count = |outcome: &str| cases.iter().filter(|case| case.outcome == outcome).count();
    assert_eq!(
        totals,
        Some([
            cases.len(),
            count("failure"),
            count("error"),
            count("skipped")
        ]),
        "the totals agree with the cases\n{text}"
    );
    cases
}
