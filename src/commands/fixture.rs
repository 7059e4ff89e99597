//! `cua fixture serve`: run the MemberDesk fixture app until Ctrl-C. The base URL is the only
//! thing on stdout, so scripts can read it; progress goes to stderr.

use std::net::SocketAddr;

use memberdesk::FixtureConfig;
use serde::Serialize;

use crate::cli::{FixtureServeArgs, Format};
use crate::error::{CliError, ErrorCode, chain, runtime};
use crate::output::{self, Exit};

#[derive(Serialize)]
struct Serving {
    base_url: String,
    variant: memberdesk::Variant,
}

/// Serves until Ctrl-C. A bind failure is `surface_unavailable` (exit 69).
pub(crate) fn serve(format: Format, args: &FixtureServeArgs) -> Result<Exit, CliError> {
    let runtime = runtime()?;
    let config = FixtureConfig {
        variant: args.variant,
        bind: SocketAddr::new(args.host, args.port),
    };
    runtime.block_on(async move {
        let fixture = memberdesk::serve(config)
            .await
            .map_err(|error| CliError::chained(ErrorCode::FixtureUnavailable, &error))?;
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
        // The envelope is already out: a failed shutdown is said on stderr, not in a second one.
        if let Err(error) = fixture.shutdown().await {
            tracing::error!("the fixture did not shut down cleanly: {}", chain(&error));
            return Ok(Exit::Failed);
        }
        Ok(Exit::Success)
    })
}
