//! Binding a step's action to its values: inputs, outputs, secrets (resolved only here, at the
//! dispatch that types them) and transforms.

use cua_artifact::{Action, FailureCode, ValueExpr};
use cua_policy::{BrowserAction, ScrollDirection, SurfaceAction};
use cua_surface::SurfaceDriver;

use crate::executor::{Execution, Replayer};
use crate::stop::Stop;

impl<D: SurfaceDriver> Replayer<'_, D> {
    /// Binds an action's values into a concrete surface action. Secrets are resolved here,
    /// registered with the redactor as they are issued, and held only by the action. The flag
    /// says whether a secret or sensitive value was bound (its node is painted in screenshots).
    pub(crate) fn bind(
        &self,
        frame: &Execution<'_>,
        action: &Action,
    ) -> Result<(SurfaceAction, bool), Stop> {
        let mut sensitive = false;
        let surface = match action {
            Action::Click { accept_confirm, .. } => match accept_confirm {
                Some(confirm) => SurfaceAction::Browser(BrowserAction::ClickAcceptingConfirm {
                    confirm: confirm.clone(),
                }),
                None => SurfaceAction::Browser(BrowserAction::Click),
            },
            Action::Type {
                value, clear_first, ..
            } => SurfaceAction::Browser(BrowserAction::Type {
                text: self.bind_value(frame, value, &mut sensitive)?,
                clear_first: *clear_first,
            }),
            Action::Select { value, .. } => SurfaceAction::Browser(BrowserAction::Select {
                value: self.bind_value(frame, value, &mut sensitive)?,
            }),
            Action::PressKey { key, .. } => {
                SurfaceAction::Browser(BrowserAction::PressKey { key: key.clone() })
            }
            Action::Navigate { url } => SurfaceAction::Browser(BrowserAction::Navigate {
                url: self.bind_url(frame, url)?,
            }),
            Action::Reload {} => SurfaceAction::Browser(BrowserAction::Reload),
            Action::Scroll {
                direction, amount, ..
            } => SurfaceAction::Browser(BrowserAction::Scroll {
                direction: match direction {
                    cua_artifact::ScrollDirection::Up => ScrollDirection::Up,
                    cua_artifact::ScrollDirection::Down => ScrollDirection::Down,
                    cua_artifact::ScrollDirection::IntoView => ScrollDirection::IntoView,
                },
                amount: amount.map(i64::from),
            }),
            Action::RawInput { .. } => {
                return Err(Stop::new(
                    FailureCode::PolicyDenied,
                    "raw_input is an operator's gesture; no artifact may replay one",
                ));
            }
            Action::WaitFor { .. } | Action::Extract { .. } | Action::Assert { .. } => {
                return Err(Stop::new(
                    FailureCode::Internal,
                    format!("`{}` is never dispatched", action.kind().as_str()),
                ));
            }
            Action::Http(_)
            | Action::Command(_)
            | Action::Screenshot {}
            | Action::ClickAt { .. } => {
                return Err(Stop::new(
                    FailureCode::PolicyDenied,
                    format!(
                        "`{}` runs only as a step, through its own operator; it cannot be a remedy",
                        action.kind().as_str()
                    ),
                ));
            }
        };
        Ok((surface, sensitive))
    }

    pub(crate) fn bind_value(
        &self,
        frame: &Execution<'_>,
        value: &ValueExpr,
        sensitive: &mut bool,
    ) -> Result<String, Stop> {
        let capability = frame.capability;
        let unbound = |what: &str, name: &str| {
            Stop::new(
                FailureCode::Internal,
                format!("{what} `{name}` has no value when the step runs"),
            )
        };
        match value {
            ValueExpr::Input(name) => {
                *sensitive |= capability
                    .input(name.as_str())
                    .is_some_and(|input| input.sensitive);
                cua_target::Bindings::input(&frame.values, name)
                    .map(str::to_owned)
                    .ok_or_else(|| unbound("input", name.as_str()))
            }
            ValueExpr::Output(name) => {
                *sensitive |= capability
                    .output(name.as_str())
                    .is_some_and(|output| output.sensitive);
                cua_target::Bindings::output(&frame.values, name)
                    .map(str::to_owned)
                    .ok_or_else(|| unbound("output", name.as_str()))
            }
            ValueExpr::Secret(name) => {
                let secret = self.secrets.resolve(name).map_err(|error| {
                    Stop::new(
                        FailureCode::Internal,
                        format!("cannot bind a secret: {error}"),
                    )
                })?;
                // The resolver registers it with its redactor; registering it with the bus's
                // too costs nothing and holds even if the two were wired apart.
                self.bus.redactor().register_secret(secret.expose());
                *sensitive = true;
                Ok(secret.expose().to_owned())
            }
            literal => Ok(literal.literal_text().unwrap_or_default()),
        }
    }
}
