//! The commonest mistakes, made against every command that takes them
//! (`scripts/mistakes.sh`): the same mistake gives the same code in every command, always in the
//! envelope, with a help line that says what to do (a "did you mean" where one is close).

use std::process::Command;

#[test]
fn the_same_mistake_gives_the_same_code_and_a_help_line_in_every_command() {
    let root = env!("CARGO_MANIFEST_DIR");
    let output = Command::new("bash")
        .arg("scripts/mistakes.sh")
        .arg(env!("CARGO_BIN_EXE_cua"))
        .current_dir(root)
        .output()
        .expect("bash runs the script");
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).expect("UTF-8");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(2)
        .map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    assert!(rows.len() >= 20, "{table}");
    let mut codes = std::collections::BTreeMap::<&str, &str>::new();
    for row in &rows {
        let [mistake, command, exit, code, message, help] = row[..] else {
            panic!("a row of six cells: {row:?}");
        };
        assert_eq!(exit, "2", "a mistake is a usage error: {row:?}");
        assert!(!message.is_empty(), "{row:?}");
        assert!(!help.is_empty(), "every mistake says what to do: {row:?}");
        let first = codes.entry(mistake).or_insert(code);
        assert_eq!(*first, code, "one code for one mistake: {row:?}");
        if mistake != "document key" || !command.starts_with("`cua validate") {
            assert!(
                help.contains("did you mean") || help.contains("a similar"),
                "the near name is offered: {row:?}"
            );
        }
    }
    insta::assert_snapshot!(table);
}
