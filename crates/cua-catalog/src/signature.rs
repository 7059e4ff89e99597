//! The one-line typed signature of a capability, as `list` prints it:
//! `corebank.member.savings_balance(member_id: string) -> {savings_balance: money}`.

use cua_artifact::{Capability, InputSpec, ValueType};

/// `id(in: type, …) -> {out: type, …}`. An input the caller may leave out is written `name?`,
/// an enum lists its values, and a sensitive input or output is marked `secret`.
pub fn signature(capability: &Capability) -> String {
    let inputs: Vec<String> = capability.inputs.iter().map(input_part).collect();
    let outputs: Vec<String> = capability
        .outputs
        .iter()
        .map(|output| {
            let marker = if output.sensitive { " secret" } else { "" };
            format!("{}: {}{marker}", output.name, output.value_type.as_str())
        })
        .collect();
    format!(
        "{}({}) -> {{{}}}",
        capability.id,
        inputs.join(", "),
        outputs.join(", ")
    )
}

fn input_part(input: &InputSpec) -> String {
    let optional = if input.required && input.default.is_none() {
        ""
    } else {
        "?"
    };
    let value_type = if input.value_type == ValueType::Enum && !input.allowed.is_empty() {
        format!("enum({})", input.allowed.join("|"))
    } else {
        input.value_type.as_str().to_owned()
    };
    let marker = if input.sensitive { " secret" } else { "" };
    format!("{}{optional}: {value_type}{marker}", input.name)
}
