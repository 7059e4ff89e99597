//! Recovery rules a spec can check: a detector whose remedies translate becomes a function run
//! right after the entrypoint.

use cua_artifact::{Action, Capability, CapabilityRef, RecoveryScope, Remedy};

use super::file::{extracts, identifier, layout};
use super::{Body, SpecWriter, ValueScope, comment_text, ts_string};

impl SpecWriter<'_> {
    /// Writes the functions of the recovery rules that translate and returns their names;
    /// the others are listed as not translated.
    pub(super) fn recoveries(&mut self, capability: &Capability) -> Vec<String> {
        let mut names = Vec::new();
        for rule in &capability.recovery {
            let watches_first_step = rule.scope == RecoveryScope::AnyStep
                || capability
                    .steps
                    .first()
                    .is_some_and(|first| rule.steps.contains(&first.id));
            if !watches_first_step {
                self.not_translated.push(format!(
                    "recovery {}: it does not watch the first step, the one place a test checks it",
                    rule.id
                ));
                continue;
            }
            // A remedy capability that does not translate leaves the rule out, not the spec.
            let refusals_before = self.refusals.len();
            let functions_before = self.functions.len();
            let remedies_before = self.remedy_functions.clone();
            let mut body = Body::default();
            let detector = self.bool_expression(&rule.detect, ValueScope::Remedy, &mut body);
            let detector = match detector {
                Ok(detector) => detector,
                Err(reason) => {
                    self.not_translated
                        .push(format!("recovery {}: its detector: {reason}", rule.id));
                    continue;
                }
            };
            let mut remedies = Vec::new();
            let mut skipped = None;
            for remedy in &rule.remedy {
                match self.remedy(remedy) {
                    Ok(line) => remedies.push(line),
                    Err(reason) => {
                        skipped = Some(reason);
                        break;
                    }
                }
            }
            if let Some(reason) = skipped {
                self.not_translated
                    .push(format!("recovery {}: {reason}", rule.id));
                continue;
            }
            if self.refusals.len() > refusals_before {
                let reasons: Vec<String> = self
                    .refusals
                    .drain(refusals_before..)
                    .map(|refusal| refusal.to_string())
                    .collect();
                self.functions.truncate(functions_before);
                self.remedy_functions = remedies_before;
                self.not_translated.push(format!(
                    "recovery {}: its remedy does not translate: {}",
                    rule.id,
                    reasons.join("; ")
                ));
                continue;
            }
            let name = format!("recover_{}", identifier(rule.id.as_str()));
            let mut function = Vec::new();
            let summary = if rule.description.is_empty() {
                String::new()
            } else {
                format!(": {}", comment_text(&rule.description))
            };
            function.push(format!(
                "// Recovery `{}`{summary} Checked once, right after the entrypoint.",
                rule.id
            ));
            function.push(format!(
                "async function {name}(page: Page): Promise<void> {{"
            ));
            function.extend(self.frame_declarations(&body));
            function.push(layout(1, &format!("if (!({detector})) {{")));
            function.push("    return;".to_owned());
            function.push("  }".to_owned());
            // Said in the report, so a run that should have started signed on shows it did not.
            function.push(format!(
                "  test.info().annotations.push({{ type: 'recovered', description: {} }});",
                ts_string(rule.id.as_str())
            ));
            for remedy in remedies {
                function.push(layout(1, &remedy));
            }
            function.push("}".to_owned());
            self.functions.push(function.join("\n"));
            names.push(name);
            for remedy in &rule.remedy {
                if let Remedy::RunCapability(run) = remedy
                    && !self.sign_ons.contains(&run.capability)
                {
                    self.sign_ons.push(run.capability.clone());
                }
            }
        }
        names
    }

    /// One remedy as a statement.
    pub(super) fn remedy(&mut self, remedy: &Remedy) -> Result<String, String> {
        match remedy {
            Remedy::RunCapability(run) => {
                if !run.inputs.is_empty() {
                    return Err(format!(
                        "the remedy runs {} with inputs, which a test cannot bind",
                        run.capability
                    ));
                }
                let name = self.remedy_function(&run.capability)?;
                Ok(format!("await {name}(page);"))
            }
            Remedy::Action(Action::Reload {}) => Ok("await page.reload();".to_owned()),
            Remedy::Action(Action::Navigate { url }) => Ok(format!(
                "await page.goto({});",
                self.url_expression(url, ValueScope::Remedy)?
            )),
            Remedy::Action(action) => Err(format!(
                "the remedy `{}` is not translated",
                action.kind().as_str()
            )),
        }
    }

    /// The function that runs a remedy capability's steps and checkpoint on the current
    /// screen, written once.
    pub(super) fn remedy_function(&mut self, reference: &CapabilityRef) -> Result<String, String> {
        if let Some(name) = self.remedy_functions.get(reference) {
            return Ok(name.clone());
        }
        let Some(capability) = self.config.remedies.get(reference).cloned() else {
            return Err(format!(
                "the remedy runs {reference}, which was not supplied to codegen"
            ));
        };
        if capability.inputs.iter().any(|input| input.required) {
            return Err(format!(
                "the remedy runs {reference}, which takes inputs a test cannot bind"
            ));
        }
        let name = format!("run_{}", identifier(capability.id.as_str()));
        self.remedy_functions
            .insert(reference.clone(), name.clone());
        let mut body = Body::default();
        if extracts(&capability) {
            body.line(1, "const outputs: Record<string, string> = {};");
        }
        for step in &capability.steps {
            self.step(&mut body, step, ValueScope::Remedy, Some(reference));
        }
        match self.expect_lines(&capability.checkpoint, None, ValueScope::Remedy, &mut body) {
            Ok(lines) => {
                for line in lines {
                    body.line(1, line);
                }
            }
            Err(reason) => self.refuse(format!("{reference}: checkpoint"), reason),
        }
        let mut function = vec![
            format!(
                "// {reference}: {} (a remedy, run on the current screen; content hash {}).",
                comment_text(&capability.title),
                capability
                    .content_hash
                    .as_ref()
                    .map_or("none: a draft", |hash| hash.as_str())
            ),
            format!("async function {name}(page: Page): Promise<void> {{"),
        ];
        function.extend(self.frame_declarations(&body));
        function.extend(body.lines);
        function.push("}".to_owned());
        self.functions.push(function.join("\n"));
        Ok(name)
    }
}
