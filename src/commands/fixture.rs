//! `cua fixture serve`: run the MemberDesk fixture app until Ctrl-C. The base URL is the only
//! thing on stdout, so scripts can read it; progress goes to stderr.

use std::net::SocketAddr;

use memberdesk::{FixtureConfig, FixtureError};
use serde::Serialize;

use crate::cli::{FixtureServeArgs, Format};
use crate::output::{self, EnvelopeError, Exit};

#[derive(Serialize)]
struct Serving {
    base_url: String,
    variant: memberdesk::Variant,
}

/// Serves until Ctrl-C. A bind failure is `surface_unavailable` (exit 69).
pub(crate) fn serve(format: Format, args: &FixtureServeArgs) -> Exit {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(format, "runtime_unavailable", &error.to_string()),
    };
    let config = FixtureConfig {
        variant: args.variant,
        bind: SocketAddr::new(args.host, args.port),
    };
    runtime.block_on(async move {
        let fixture = match memberdesk::serve(config).await {
            Ok(fixture) => fixture,
            Err(error) => return fail(format, "surface_unavailable", &describe(&error)),
        };
        let serving = Serving {
            base_url: fixture.base_url(),
            variant: fixture.variant(),
        };
        output::emit(format, "fixture serve", Some(&serving), None, || {
            format!("{}\n", serving.base_url)
        });
        eprintln!(
            "serving MemberDesk ({}) at {}; press Ctrl-C to stop",
            serving.variant, serving.base_url
        );
        if let Err(error) = tokio::signal::ctrl_c().await {
            eprintln!("cannot wait for Ctrl-C ({error}); stopping");
        }
        match fixture.shutdown().await {
            Ok(()) => Exit::Success,
            Err(error) => {
                eprintln!("error: {}", describe(&error));
                Exit::Failed
            }
        }
    })
}

fn fail(format: Format, code: &str, message: &str) -> Exit {
    let error = EnvelopeError {
        code: code.to_owned(),
        message: message.to_owned(),
    };
    output::emit::<()>(format, "fixture serve", None, Some(&error), String::new);
    eprintln!("error: {message}");
    Exit::Unavailable
}

/// The error and its sources on one line.
fn describe(error: &FixtureError) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message += &format!(": {cause}");
        source = cause.source();
    }
    message
}
