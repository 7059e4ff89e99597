//! `cua route explain <ref|file> [--step S] [--platform P]`: per step, the provider the planner
//! selects, every candidate with the constraint that decided its fate, and the recovery policy,
//! without opening any provider. Exit 0 when every step has one route, 1 when one has none, 2
//! for a usage error (an unknown capability or step, an unknown platform).

use cua_route::{Platform, ProviderRegistry, explain_capability};

use crate::cli::{Format, RouteExplainArgs};
use crate::commands::codegen::{Failure, load};
use crate::output::{EnvelopeError, Exit, emit};

/// Runs `cua route explain`.
pub(crate) fn explain(format: Format, args: &RouteExplainArgs) -> Exit {
    let platform = match args.platform.as_deref() {
        None => host_platform(),
        Some(name) => match name.parse::<Platform>() {
            Ok(platform) => platform,
            Err(_) => {
                return Failure::new(
                    Exit::Usage,
                    "invalid_platform",
                    format!("unknown platform {name:?}: use linux, macos or windows"),
                )
                .report(format, "route explain");
            }
        },
    };
    let loaded = match load(
        &args.capability,
        args.tenant.as_deref(),
        &args.paths.catalog,
        &args.paths.tenants,
    ) {
        Ok(loaded) => loaded,
        Err(failure) => return failure.report(format, "route explain"),
    };
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
        return Failure::new(
            Exit::Usage,
            "unknown_step",
            format!(
                "{} has no step {:?}; its steps are: {}",
                loaded.capability.reference(),
                args.step.as_deref().unwrap_or_default(),
                steps.join(", ")
            ),
        )
        .report(format, "route explain");
    };
    let selected = routes.all_selected();
    let error = (!selected).then(|| EnvelopeError {
        code: "route_unavailable".to_owned(),
        message: "at least one step has no route; its explanation says why".to_owned(),
    });
    emit(
        format,
        "route explain",
        Some(&routes),
        error.as_ref(),
        || routes.to_string(),
    );
    if selected {
        Exit::Success
    } else {
        Exit::Failed
    }
}

/// The platform this binary runs on.
fn host_platform() -> Platform {
    match std::env::consts::OS {
        "macos" => Platform::Macos,
        "windows" => Platform::Windows,
        _ => Platform::Linux,
    }
}
