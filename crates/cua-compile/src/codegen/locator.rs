//! The locators a target becomes: a role within its scope and frame, a name by cua's match modes,
//! an anchor, an identity key's record and an ordinal inside it.

use cua_artifact::{
    AnchorRelation, IdentityCheck, MatchMode, NodeQuery, ResolutionStrategy, TargetDescriptor,
    Template, ValueExpr,
};

use super::{
    BREAK, Body, NameSpec, PLAYWRIGHT_ROLES, QueryCode, SpecWriter, TargetCode, ValueScope,
    js_regex_literal, ts_string,
};

impl SpecWriter<'_> {
    /// Appends the statements that build `target` (its identity check included) to `lines`.
    pub(super) fn target_statements(
        &mut self,
        descriptor: &TargetDescriptor,
        scope: ValueScope,
        body: &mut Body,
        lines: &mut Vec<String>,
    ) -> Result<(), String> {
        let code = self.target(descriptor, scope, body)?;
        lines.extend(code.lines);
        lines.push(format!("const target = {};", code.locator));
        Ok(())
    }

    /// A target as a locator, with its identity check when it has one.
    ///
    /// A name and an anchor narrow each other (the named candidates standing where the anchor
    /// says); the anchor alone decides only without a name, since a test never takes replay's
    /// fallback for a renamed control. A target with an identity check is found inside the one
    /// record whose key holds the key (`.nth(i)` inside it, counted in its region, when it has
    /// an ordinal).
    pub(super) fn target(
        &mut self,
        descriptor: &TargetDescriptor,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<TargetCode, String> {
        if descriptor.recorded_strategy == Some(ResolutionStrategy::Vision) {
            return Err(
                "the target was recorded by vision, which has no locator (replay refuses it too)"
                    .to_owned(),
            );
        }
        if descriptor.ordinal.is_some() && descriptor.identity.is_none() {
            return Err(
                "an ordinal without an identity check: `.nth(i)` alone would act on whatever sits \
                 at that position"
                    .to_owned(),
            );
        }
        // A target's region is checked on the element itself (`inRegion`); the frame scopes
        // the locator.
        let root = self.scope_expression(descriptor.scope.as_ref(), body);
        let name = descriptor
            .name
            .as_ref()
            .map(|name| self.name_spec(name.match_mode, &name.value, scope))
            .transpose()?;

        // `rows`: the rows the target sits in, when it is found through a row; `inside`: the
        // target relative to its row (or to the root). A name and an anchor are both
        // constraints, as in replay: the named nodes standing where the anchor says.
        let mut lines = Vec::new();
        let candidates = self.by_role(&descriptor.role, name.as_ref())?;
        let (rows, inside) = match &descriptor.anchor {
            None => {
                let rows = descriptor
                    .identity
                    .as_ref()
                    .map(|_| self.innermost_records(&root, &on("page", &candidates)));
                (rows, candidates)
            }
            Some(anchor) => {
                let label = self.name_spec(anchor.match_mode, &anchor.text, scope)?;
                lines.push(format!("const anchorName = {};", label.value));
                match anchor.relation {
                    AnchorRelation::AdjacentTo | AnchorRelation::BesideLabel
                        if descriptor.identity.is_none() =>
                    {
                        // Beside its label anywhere, not only in a table: the sibling after it.
                        // (A visual label is the one just before its control: the same pair
                        // read from the label's side.)
                        let anchors = self.named(&root, "anchorName");
                        lines.push(format!("const anchors = {anchors};"));
                        let what = format!("{} adjacent_to {:?}", descriptor.role, anchor.text);
                        let region = descriptor
                            .scope
                            .as_ref()
                            .and_then(|scope| scope.region.as_deref())
                            .map_or_else(|| "null".to_owned(), ts_string);
                        lines.push(format!(
                            "const adjacent = await adjacentTo(anchors, anchorName, {}, {region}, {});",
                            on(&root, &candidates),
                            ts_string(&what)
                        ));
                        // Found already: a template that names no base.
                        (None, "adjacent".to_owned())
                    }
                    AnchorRelation::RowOf
                    | AnchorRelation::AdjacentTo
                    | AnchorRelation::BesideLabel => {
                        let rows = innermost_rows(&root, &self.named("page", "anchorName"));
                        let mut inside = candidates;
                        if descriptor.role == "cell" {
                            // The label is a cell of the same row; the target is another cell.
                            inside
                                .push_str(&format!("{BREAK}.filter({{ hasNotText: anchorName }})"));
                        }
                        (Some(rows), inside)
                    }
                    AnchorRelation::LabelledBy => {
                        if descriptor.identity.is_some() {
                            return Err(
                                "an identity check on a target found by its label: the label names \
                                 no row to check"
                                    .to_owned(),
                            );
                        }
                        (
                            None,
                            format!("{candidates}.and(page.getByLabel(anchorName))"),
                        )
                    }
                    AnchorRelation::WithinSection => {
                        return Err(format!(
                            "the anchor `within_section {:?}` depends on whether the anchor is a \
                             heading or a table cell on the live page; Playwright has no \
                             role-based locator for \"the nodes after a heading\"",
                            anchor.text
                        ));
                    }
                }
            }
        };

        let region = descriptor
            .scope
            .as_ref()
            .and_then(|scope| scope.region.as_ref());
        let locator = match (&descriptor.identity, rows) {
            (Some(identity), Some(rows)) => {
                lines.push(format!(
                    "const record = {};",
                    self.keyed_record(&root, &rows, identity, scope)?
                ));
                match (descriptor.ordinal, region) {
                    // The n-th run of text of the record, as replay counts text nodes (the
                    // element holding it stands for it).
                    // The n-th run of text of the record, counted as replay counts text nodes
                    // (`textRun`); the element holding it stands for it in an action.
                    (Some(ordinal), None)
                        if descriptor.role == "text"
                            && name.is_none()
                            && descriptor.anchor.is_none() =>
                    {
                        lines.push(format!("const run = await textRun(record, {ordinal});"));
                        "run.holder".to_owned()
                    }
                    (Some(_), _) if descriptor.role == "text" => {
                        return Err(
                            "a run of text counted by position within a region, among named runs \
                             or beside an anchor: Playwright finds elements, not runs of text"
                                .to_owned(),
                        );
                    }
                    // Replay counts the ordinal among the candidates in the region.
                    (Some(ordinal), Some(region)) => {
                        lines.push(format!(
                            "const inRegionCandidates = await inRegionAll({}, {});",
                            on("record", &inside),
                            ts_string(region)
                        ));
                        lines.push(format!(
                            "expect(inRegionCandidates.length, {}).toBeGreaterThan({ordinal});",
                            ts_string(&format!("candidate #{ordinal} in region {region}"))
                        ));
                        format!("inRegionCandidates[{ordinal}]")
                    }
                    (Some(ordinal), None) => format!("{}.nth({ordinal})", on("record", &inside)),
                    (None, _) => on("record", &inside),
                }
            }
            (_, Some(rows)) => on(&rows, &inside),
            (_, None) => on(&root, &inside),
        };
        let counted_in_region = descriptor.identity.is_some() && descriptor.ordinal.is_some();
        let locator = match region {
            Some(region) if !counted_in_region => {
                lines.push(format!(
                    "const regional = await inRegion({locator}, {});",
                    ts_string(region)
                ));
                "regional".to_owned()
            }
            _ => locator,
        };
        Ok(TargetCode { lines, locator })
    }

    /// How a locator finds `role` named by `name`: a template where
    /// [`BASE`] stands for that locator (`␂.getByRole(…)`, `byRole(␂, …)`). Fill it with [`on`].
    pub(super) fn by_role(
        &mut self,
        role: &str,
        name: Option<&NameSpec>,
    ) -> Result<String, String> {
        let option = name.map_or_else(String::new, NameSpec::option);
        Ok(match role_locator(role)? {
            RoleLocator::Aria(role) => format!("{BASE}.getByRole({}{option})", ts_string(role)),
            RoleLocator::Aliased(role) => {
                format!("byRole({BASE}, {}{option})", ts_string(role))
            }
            // `.and()` matches its argument in the receiver's own document: `page.` is only
            // its spelling there (a frame locator is refused inside it).
            RoleLocator::Field(kind) => format!(
                "{BASE}.getByRole('textbox'{option}){BREAK}.and(page.locator({}))",
                ts_string(&format!("input[type=\"{kind}\"]"))
            ),
            RoleLocator::Text => match name {
                Some(name) => format!("{BASE}.getByText({})", name.value),
                None => format!("{BASE}{TEXT_RUNS}"),
            },
        })
    }

    /// The nodes of `root` whose name matches `name` (an argument of `getByText`), whatever
    /// their role: cua's query without a role.
    pub(super) fn named(&mut self, root: &str, name: &str) -> String {
        format!("named({root}, {name})")
    }

    /// The innermost records of `root` (rows, list items, articles, definitions) that hold a
    /// node matching `inner` (a `page`-rooted locator, queried inside each): the record an
    /// identity check reads its key on.
    pub(super) fn innermost_records(&mut self, root: &str, inner: &str) -> String {
        innermost(&format!("records({root})"), "records(page)", inner)
    }

    /// The identity check as the one record of `rows` whose key holds the key: replay keys a
    /// target by its record and refuses a key that two records hold, and so does the spec.
    pub(super) fn keyed_record(
        &mut self,
        root: &str,
        rows: &str,
        identity: &IdentityCheck,
        scope: ValueScope,
    ) -> Result<String, String> {
        let column = match &identity.column {
            Some(column) => ts_string(column),
            None => "null".to_owned(),
        };
        let what = match &identity.column {
            Some(column) => format!("the {column:?} cell"),
            None => "the record's key".to_owned(),
        };
        let expected = self.value(&identity.equals, scope, false)?;
        let holds = match identity.match_mode {
            MatchMode::Exact => {
                format!("(text) => exactName({expected}).test(text)")
            }
            MatchMode::Normalized => {
                format!("(text) => folded({expected}).test(text)")
            }
            MatchMode::Contains => {
                format!("(text) => text.toLowerCase().includes(squash({expected}).toLowerCase())")
            }
            MatchMode::Regex => match &identity.equals {
                ValueExpr::String(pattern) => {
                    format!("(text) => {}.test(text)", js_regex_literal(pattern)?)
                }
                _ => {
                    return Err(
                        "a regex identity check whose pattern is not a literal cannot be \
                         translated before it is known"
                            .to_owned(),
                    );
                }
            },
        };
        Ok(format!(
            "await keyedRecord(page, {root}, {rows}, {column}, {holds}, {})",
            ts_string(&what)
        ))
    }

    /// How a name (or an anchor's text) is matched, by match mode. Its values are bound as
    /// replay binds them: as text, and escaped in a regex ([`Self::bound_regex`]).
    pub(super) fn name_spec(
        &mut self,
        mode: MatchMode,
        text: &str,
        scope: ValueScope,
    ) -> Result<NameSpec, String> {
        if mode == MatchMode::Exact && text.trim().is_empty() {
            return Err(
                "an unnamed control (`name: {value: \"\", match: exact}`) has no role-and-name \
                 locator; find it through its label's row (`anchor: {relation: row_of, …}`)"
                    .to_owned(),
            );
        }
        let value = match mode {
            MatchMode::Exact => {
                format!("exactName({})", self.text_expression(text, scope)?)
            }
            MatchMode::Normalized => {
                format!("folded({})", self.text_expression(text, scope)?)
            }
            MatchMode::Contains => self.text_expression(text, scope)?,
            MatchMode::Regex if text.contains("{$") => {
                let template = Template::parse(text)
                    .map_err(|problem| format!("the name {text:?}: {problem}"))?;
                self.bound_regex(&template, scope)?
            }
            MatchMode::Regex => js_regex_literal(text)?,
        };
        Ok(NameSpec { value })
    }

    /// The locator of a predicate's node query, and the region its nodes must be in.
    pub(super) fn query_locator(
        &mut self,
        query: &NodeQuery,
        scope: ValueScope,
        body: &mut Body,
    ) -> Result<QueryCode, String> {
        let root = self.scope_expression(query.scope.as_ref(), body);
        // Each name condition as the argument of `getByText` and its kin (a `RegExp`).
        let mut names = Vec::new();
        if let Some(name) = &query.name {
            names.push(format!("folded({})", self.text_expression(name, scope)?));
        }
        if let Some(part) = &query.name_contains {
            names.push(format!(
                "foldedPart({})",
                self.text_expression(part, scope)?
            ));
        }
        if let Some(pattern) = &query.name_matches {
            names.push(js_regex_literal(pattern)?);
        }
        let mut found = Vec::new();
        match &query.role {
            Some(role) => {
                if names.is_empty() {
                    found.push(on(&root, &self.by_role(role, None)?));
                }
                for name in names {
                    let name = NameSpec { value: name };
                    found.push(on(&root, &self.by_role(role, Some(&name))?));
                }
            }
            None => {
                if names.is_empty() {
                    return Err(
                        "a node query with neither a role nor a name selects every node; \
                                Playwright has no locator for that"
                            .to_owned(),
                    );
                }
                for name in &names {
                    found.push(self.named(&root, name));
                }
            }
        }
        let mut found = found.into_iter();
        let mut locator = found.next().unwrap_or_default();
        for more in found {
            locator.push_str(&format!("{BREAK}.and({more})"));
        }
        let region = query.scope.as_ref().and_then(|scope| scope.region.clone());
        Ok(QueryCode { locator, region })
    }
}

/// The elements a translated query finds, as a promise of a `Locator[]`: those in its region
/// when it has one.
pub(super) fn nodes(query: &QueryCode) -> String {
    match &query.region {
        Some(region) => format!("inRegionAll({}, {})", query.locator, ts_string(region)),
        None => format!("{}.all()", query.locator),
    }
}

/// How many elements a translated query finds, awaited.
pub(super) fn count(query: &QueryCode) -> String {
    match &query.region {
        Some(_) => format!("(await {}).length", nodes(query)),
        None => format!("(await {}.count())", query.locator),
    }
}

/// The innermost table rows of `root` that hold a node matching `inner` (a `page.`-rooted
/// locator, queried inside each row). Layout tables nest rows inside rows; the innermost row
/// is the one a label and its control share.
pub(super) fn innermost_rows(root: &str, inner: &str) -> String {
    innermost(
        &format!("{root}{BREAK}.getByRole('row')"),
        "page.getByRole('row')",
        inner,
    )
}

/// The elements of `outer` that hold a node matching `inner` and hold no element of `nested`
/// (the same kind, `page.`-rooted) that holds one too.
pub(super) fn innermost(outer: &str, nested: &str, inner: &str) -> String {
    format!(
        "{outer}{BREAK}.filter({{ has: {inner} }}){BREAK}.filter({{ hasNot: {nested}.filter({{ has: {inner} }}) }})"
    )
}

/// How Playwright finds the nodes of one of cua's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RoleLocator<'r> {
    /// An ARIA role `getByRole` knows, and cua means only it.
    Aria(&'r str),
    /// A role cua's snapshot gives several ARIA roles (`byRole`): a `textbox` is also a
    /// `searchbox`, a `cell` also a header cell, a `table` also a `grid`, a `combobox` also a
    /// `listbox`.
    Aliased(&'r str),
    /// A native date or time field (`date`, `time`, `datetime`): Playwright calls each a
    /// textbox, so its input type tells it from a text field.
    Field(&'static str),
    /// A run of text (`text`): the element whose text it is.
    Text,
}

/// The Playwright locator for a cua role, or why there is none.
pub(super) fn role_locator(role: &str) -> Result<RoleLocator<'_>, String> {
    match role {
        "cell" | "table" | "textbox" | "combobox" => Ok(RoleLocator::Aliased(role)),
        "date" => Ok(RoleLocator::Field("date")),
        "time" => Ok(RoleLocator::Field("time")),
        "datetime" => Ok(RoleLocator::Field("datetime-local")),
        "text" => Ok(RoleLocator::Text),
        _ if PLAYWRIGHT_ROLES.contains(&role) => Ok(RoleLocator::Aria(role)),
        _ => Err(format!(
            "the role `{role}` is neither an ARIA role Playwright's getByRole knows nor one of \
             cua's own roles with a Playwright locator (date, time, datetime, text)"
        )),
    }
}

/// Stands, in a locator template, for the locator it is found from. [`on`] puts it in.
pub(super) const BASE: char = '\u{2}';

/// The locator `template` describes, found from `base`.
pub(super) fn on(base: &str, template: &str) -> String {
    template.replace(BASE, base)
}

/// The elements holding a text run of their own: the `text` nodes of cua's snapshot.
pub(super) const TEXT_RUNS: &str = ".locator('xpath=.//*[text()[normalize-space()]]')";
