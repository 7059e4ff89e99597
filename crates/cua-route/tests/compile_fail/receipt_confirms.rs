// A dispatch receipt is not confirming evidence, and confirming evidence cannot be forged.
use cua_route::{
    ConfirmingEvidence, DispatchReceipt, EffectVerdict, PhysicalAction, ProviderKind,
};

fn main() {
    let receipt = DispatchReceipt {
        provider: ProviderKind::CdpBrowser,
        physical_action: PhysicalAction::new("dom_click"),
    };
    let _ = EffectVerdict::confirmed(receipt.clone());
    let _ = EffectVerdict::Confirmed {
        evidence: ConfirmingEvidence(receipt),
        verification: None,
    };
}
