//! `cua completions` and `cua man`, used as a shell and `man` use them: bash completes a
//! subcommand and a flag from the script, and nroff renders every page, each naming what
//! `--help` names.

use std::process::Command;

/// What bash offers for `words` (the last one being completed), from `cua completions bash`.
fn bash_completes(words: &[&str]) -> Vec<String> {
    let script = format!(
        "source <('{}' completions bash) && COMP_WORDS=({}) && COMP_CWORD={} && _cua cua '{}' '{}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        env!("CARGO_BIN_EXE_cua"),
        words.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len().saturating_sub(2)],
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_flags_from_the_generated_script() {
    assert_eq!(bash_completes(&["cua", "rep"]), ["replay"]);
    assert_eq!(bash_completes(&["cua", "replay", "--ju"]), ["--junit"]);
    assert_eq!(bash_completes(&["cua", "catalog", "appr"]), ["approve"]);
}

/// nroff's output as plain text: its bold and underline are a character, a backspace and a
/// character again.
fn plain(rendered: &[u8]) -> String {
    let mut text = String::new();
    for character in String::from_utf8_lossy(rendered).chars() {
        if character == '\u{8}' {
            text.pop();
        } else {
            text.push(character);
        }
    }
    text.replace('\u{2010}', "-")
}

#[test]
fn every_command_has_a_man_page_that_renders() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let written = Command::new(env!("CARGO_BIN_EXE_cua"))
        .args(["man", "--out"])
        .arg(out.path())
        .output()
        .expect("cua runs");
    assert!(written.status.success(), "{written:?}");
    let mut pages: Vec<String> = std::fs::read_dir(out.path())
        .expect("the pages")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for page in [
        "cua.1",
        "cua-replay.1",
        "cua-catalog-approve.1",
        "cua-eval.1",
        "cua-man.1",
    ] {
        assert!(pages.iter().any(|name| name == page), "{page}: {pages:?}");
    }
    for page in &pages {
        let rendered = Command::new("nroff")
            .args(["-man"])
            .arg(out.path().join(page))
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("nroff runs (make deps installs groff-base)");
        assert!(rendered.status.success(), "{page}: {rendered:?}");
        let text = plain(&rendered.stdout);
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{page}: {text}"
        );
    }
    let replay = Command::new("nroff")
        .args(["-man"])
        .arg(out.path().join("cua-replay.1"))
        .output()
        .expect("nroff runs");
    let text = plain(&replay.stdout);
    assert!(
        text.contains("--junit") && text.contains("--inputs"),
        "{text}"
    );
}
