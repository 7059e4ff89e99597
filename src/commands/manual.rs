//! `cua completions SHELL` and `cua man --out DIR`: the shell completion script and the man
//! pages, both generated from the one clap definition, so they never disagree with `--help`.

use std::io::Write as _;

use clap::CommandFactory;
use cua_fs::{Dir, FileMode};
use serde::Serialize;

use crate::cli::{Cli, CompletionsArgs, Format, ManArgs};
use crate::error::{CliError, ErrorCode};
use crate::output::{Exit, emit};

/// Prints the completion script for the shell on stdout. A reader that stops early (`head`)
/// is no error; any other failure to write (a full disk under `>`) is, so a truncated script
/// never exits 0.
pub(crate) fn completions(args: &CompletionsArgs) -> Result<Exit, CliError> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "cua", &mut script);
    match std::io::stdout().write_all(&script) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::new(
            ErrorCode::WriteFailed,
            format!("cannot write the completion script: {error}"),
        )),
        _ => Ok(Exit::Success),
    }
}

#[derive(Debug, Serialize)]
struct Written {
    directory: String,
    pages: Vec<String>,
}

/// Writes `cua.1` and a page per subcommand, nested ones included (`cua-catalog-approve.1`).
pub(crate) fn man(format: Format, args: &ManArgs) -> Result<Exit, CliError> {
    let directory = Dir::create_all(&args.out, FileMode::Readable)
        .map_err(|error| CliError::unwritten(&error, ErrorCode::WriteFailed))?;
    let mut pages = Vec::new();
    let mut command = Cli::command();
    command.build();
    write_pages(&directory, &command, "cua", &mut pages)?;
    let written = Written {
        directory: args.out.display().to_string(),
        pages,
    };
    emit(format, "man", Some(&written), None, || {
        format!(
            "wrote {} man page(s) into {}\n",
            written.pages.len(),
            written.directory
        )
    });
    Ok(Exit::Success)
}

fn write_pages(
    directory: &Dir,
    command: &clap::Command,
    name: &str,
    pages: &mut Vec<String>,
) -> Result<(), CliError> {
    let mut text = Vec::new();
    clap_mangen::Man::new(command.clone().name(name.to_owned()))
        .render(&mut text)
        .map_err(|error| CliError::new(ErrorCode::Internal, format!("a man page: {error}")))?;
    let file = format!("{name}.1");
    directory
        .write_atomic(&file, &text, FileMode::Readable)
        .map_err(|error| CliError::unwritten(&error, ErrorCode::WriteFailed))?;
    pages.push(file);
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        write_pages(directory, sub, &format!("{name}-{}", sub.get_name()), pages)?;
    }
    Ok(())
}
