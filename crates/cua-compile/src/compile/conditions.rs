//! Postconditions and the goal checkpoint, from what each step changed on the screen; no invented
//! outcomes.

use std::collections::BTreeSet;

use cua_artifact::{Action, Identifier, NodeQuery, NodeScope, Predicate, ValueExpr};
use cua_snapshot::{fold, normalize_name};

use crate::shape::Shape;

use super::notes::regex_escape;
use super::{Compiler, Recorded, Target};

impl Compiler {
    /// What a mutating step's effect looks like, from what changed on screen.
    pub(super) fn postcondition(
        &mut self,
        action: &Recorded<'_>,
        compiled: &Action,
        target: Option<&Target>,
        id: &Identifier,
    ) -> Option<Predicate> {
        let query = |target: &Target| NodeQuery {
            role: Some(target.descriptor.role.clone()),
            name: target
                .descriptor
                .name
                .as_ref()
                .map(|name| name.value.clone()),
            scope: target.scope.clone(),
            ..NodeQuery::default()
        };
        let predicate = match compiled {
            Action::Type {
                value: ValueExpr::Secret(_),
                ..
            } => {
                // A secret may not appear in a predicate: assert the field is no longer empty.
                target.map(|target| Predicate::Not {
                    of: Box::new(Predicate::NodeHasValue {
                        query: query(target),
                        value: ValueExpr::String(String::new()),
                    }),
                })
            }
            Action::Type { value, .. } | Action::Select { value, .. } => {
                target.map(|target| Predicate::NodeHasValue {
                    query: query(target),
                    value: value.clone(),
                })
            }
            Action::Navigate { url } => {
                let path = url.strip_prefix("{base_url}").unwrap_or(url);
                // Where the recording landed, when the app redirected elsewhere (a sign-in page
                // that will come back): the path it showed, whatever query it carried.
                let landed = action
                    .after
                    .and_then(|after| url_path(&after.url))
                    .filter(|landed| path.split(['?', '#']).next() != Some(*landed));
                let requested = Predicate::UrlMatches {
                    pattern: format!("{}$", regex_escape(path)),
                };
                // Either place will do: a replay that starts signed in is not redirected.
                Some(match landed {
                    Some(landed) => Predicate::AnyOf {
                        of: vec![
                            requested,
                            Predicate::UrlMatches {
                                pattern: format!(
                                    "^[a-z][a-z0-9+.-]*://[^/?#]*{}([?#]|$)",
                                    regex_escape(landed)
                                ),
                            },
                        ],
                    },
                    None => requested,
                })
            }
            Action::Click { .. } | Action::PressKey { .. } => self.changed(action, target),
            _ => None,
        };
        if predicate.is_none() {
            self.warnings.push(format!("step `{id}` changed nothing the compiler could observe; a reviewer must state its postcondition"));
        }
        predicate
    }

    /// The clicked control gone, or else a heading (or any named node) that appeared.
    pub(super) fn changed(
        &self,
        action: &Recorded<'_>,
        target: Option<&Target>,
    ) -> Option<Predicate> {
        let after = action.after?;
        if let Some(target) = target
            && let Some(name) = &target.descriptor.name
        {
            let still_there = after.nodes.iter().any(|node| {
                node.role == target.descriptor.role
                    && fold(&node.name) == fold(&name.value)
                    && target.scope.as_ref().is_none_or(|scope| {
                        scope.frame.is_none() || node.scope.frame == scope.frame
                    })
            });
            if !still_there {
                return Some(Predicate::NodeAbsent {
                    query: NodeQuery {
                        role: Some(target.descriptor.role.clone()),
                        name: Some(name.value.clone()),
                        scope: target.scope.clone(),
                        ..NodeQuery::default()
                    },
                });
            }
        }
        let before: BTreeSet<(String, String)> = action
            .before
            .nodes
            .iter()
            .map(|node| (node.role.clone(), fold(&node.name)))
            .collect();
        let appeared = |role: Option<&str>| {
            after.nodes.iter().find(|node| {
                role.is_none_or(|role| node.role == role)
                    && !node.name.is_empty()
                    && !cua_target::looks_like_datum(&node.name)
                    && !matches!(node.role.as_str(), "document" | "text" | "row" | "table")
                    && !before.contains(&(node.role.clone(), fold(&node.name)))
            })
        };
        let node = appeared(Some("heading")).or_else(|| appeared(None))?;
        Some(node_exists(NodeQuery {
            role: Some(node.role.clone()),
            name: Some(normalize_name(&node.name)),
            scope: node.scope.frame.clone().map(|frame| NodeScope {
                frame: Some(frame),
                region: None,
            }),
            ..NodeQuery::default()
        }))
    }

    /// The checkpoint parts for one extracted value: its label (or column header) present, and
    /// a value of its shape present.
    pub(super) fn checkpoint_for(&mut self, target: &Target, shape: Shape) {
        let mut parts = vec![target.presence.clone()];
        if let Some(pattern) = shape.screen_pattern() {
            parts.push(node_exists(NodeQuery {
                role: Some(target.descriptor.role.clone()),
                name_matches: Some(pattern.to_owned()),
                scope: target.scope.clone(),
                ..NodeQuery::default()
            }));
        }
        for part in parts {
            if !self.checkpoint.contains(&part) {
                self.checkpoint.push(part);
            }
        }
    }

    pub(super) fn checkpoint(&mut self) -> Predicate {
        if !self.checkpoint.is_empty() {
            return Predicate::AllOf {
                of: self.checkpoint.clone(),
            };
        }
        self.notes.push("The run extracted nothing, so the checkpoint is the last step's postcondition; make it assert the goal's own evidence (a confirmation number, a changed value).".to_owned());
        self.steps
            .iter()
            .rev()
            .find_map(|step| step.postcondition.clone())
            .unwrap_or(Predicate::HttpStatusIn { codes: vec![200] })
    }
}

pub(super) fn node_exists(query: NodeQuery) -> Predicate {
    Predicate::NodeExists {
        query,
        min_count: 1,
    }
}

/// The path of an absolute URL (`http://host:port/login?x` is `/login`), or `None`.
pub(super) fn url_path(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let path = &rest[rest.find('/')?..];
    Some(path.split(['?', '#']).next().unwrap_or(path))
}
