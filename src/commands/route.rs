//! `cua route explain <ref|file> [--step S] [--platform P]`: per step, the provider the planner
//! selects, every candidate with the constraint that decided its fate, and the recovery policy,
//! without opening any provider. Exit 0 when every step has one route, 1 when one has none, 2
//! for a usage error (an unknown capability or step, an unknown platform).

use cua_route::{Platform, ProviderRegistry, explain_capability};

use crate::cli::{Format, RouteExplainArgs};
use crate::commands::codegen::load;
use crate::error::{CliError, ErrorCode};
use crate::output::{Exit, emit};

/// Runs `cua route explain`.
pub(crate) fn explain(format: Format, args: &RouteExplainArgs) -> Result<Exit, CliError> {
    let platform = match args.platform.as_deref() {
        None => host_platform(),
        Some(name) => name.parse::<Platform>().map_err(|_| {
            CliError::new(
                ErrorCode::InvalidPlatform,
                format!("unknown platform {name:?}: use linux, macos or windows"),
            )
        })?,
    };
    let loaded = load(
        &args.capability,
        args.tenant.as_deref(),
        &args.paths.catalog()?,
        &args.paths.tenants_for(args.tenant.as_deref())?,
    )?;
    let registry = ProviderRegistry::builtin();
    let Some(routes) = explain_capability(
        &loaded.capability,
        platform,
        args.step.as_deref(),
        &registry,
    ) else {
        let steps: Vec<&str> = loaded
            .capability
            .steps
            .iter()
            .map(|step| step.id.as_str())
            .collect();
        return Err(CliError::new(
            ErrorCode::UnknownStep,
            format!(
                "{} has no step {:?}; its steps are: {}",
                loaded.capability.reference(),
                args.step.as_deref().unwrap_or_default(),
                steps.join(", ")
            ),
        ));
    };
    let selected = routes.all_selected();
    let error = (!selected).then(|| {
        ErrorCode::RouteUnavailable
            .envelope("at least one step has no route; its explanation says why")
    });
    emit(
        format,
        "route explain",
        Some(&routes),
        error.as_ref(),
        || routes.to_string(),
    );
    Ok(if selected {
        Exit::Success
    } else {
        ErrorCode::RouteUnavailable.exit()
    })
}

/// The platform this binary runs on.
fn host_platform() -> Platform {
    match std::env::consts::OS {
        "macos" => Platform::Macos,
        "windows" => Platform::Windows,
        _ => Platform::Linux,
    }
}
