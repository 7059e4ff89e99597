//! load → dump → load is the identity and keeps the hash; dump writes readable block style.

use cua_artifact::{Capability, CapabilityApproval, PolicyConfig, TenantBinding, yaml};

use crate::support::{MINIMAL, NORTHGATE_BINDINGS, REFERENCE_CAPABILITIES, read, reference};

#[test]
fn reference_capabilities_round_trip_with_the_same_hash() {
    for file_name in REFERENCE_CAPABILITIES {
        let loaded = reference(file_name);
        let dumped = loaded.to_yaml().expect("a capability dumps");
        let reloaded = Capability::from_yaml(&dumped)
            .unwrap_or_else(|error| panic!("{file_name}: {error}\n{dumped}"));
        assert_eq!(reloaded, loaded, "{file_name}");
        assert_eq!(
            reloaded.compute_hash(),
            loaded.compute_hash(),
            "{file_name}"
        );
        assert_eq!(
            reloaded.content_hash, loaded.content_hash,
            "{file_name}: the seal survives"
        );
        assert_eq!(
            reloaded.to_yaml().expect("dumps again"),
            dumped,
            "{file_name}: dumping is stable"
        );
    }
}

#[test]
fn other_documents_round_trip() {
    let policy = PolicyConfig::from_yaml(&read("config/policy.yaml")).expect("the policy loads");
    let dumped = yaml::to_yaml(&policy).expect("dumps");
    assert_eq!(PolicyConfig::from_yaml(&dumped).expect("reloads"), policy);
    for file_name in NORTHGATE_BINDINGS {
        let binding =
            TenantBinding::from_yaml(&read(&format!("tenants/northgate-fcu/{file_name}")))
                .expect("binding loads");
        let dumped = yaml::to_yaml(&binding).expect("dumps");
        assert_eq!(
            TenantBinding::from_yaml(&dumped).expect("reloads"),
            binding,
            "{file_name}"
        );
    }
    let approval_text = "schema: cua.capability_approval/v1\ncapability: corebank.member.savings_balance@1.0.0\n\
        content_hash: blake3:713b2dda4d72825177885d079246a228718554f1687c7635a51d09f663409682\nstate: approved\n\
        approved_by: aditya\napproved_at: \"2026-09-15T18:27:33Z\"\nscope: {unattended_replay: true}\n";
    let approval: CapabilityApproval = yaml::from_yaml(approval_text).expect("an approval parses");
    let dumped = yaml::to_yaml(&approval).expect("dumps");
    assert_eq!(
        yaml::from_yaml::<CapabilityApproval>(&dumped).expect("reloads"),
        approval
    );
}

#[test]
fn dump_is_readable_block_style() {
    let capability = Capability::from_yaml(MINIMAL)
        .expect("MINIMAL loads")
        .sealed();
    insta::assert_snapshot!("minimal_dumped", capability.to_yaml().expect("dumps"));
}
