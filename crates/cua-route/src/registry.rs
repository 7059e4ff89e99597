//! The compiled provider registry: profiles indexed by provider (a hash lookup) and by logical
//! action (a posting list), so direct selection is O(1) and an explanation is O(k) in the
//! providers that implement one action. The planner never scans every profile.

use std::collections::HashMap;

use crate::RouteError;
use crate::axes::{LogicalAction, Platform, ProviderKind, RouteName};
use crate::profile::{ProviderProfile, action_index};

/// Immutable, validated provider profiles and their indexes. Nothing here depends on the order
/// profiles were registered in: posting lists are sorted by the providers' total order, the hash
/// maps are only ever looked up, never iterated.
#[derive(Debug, Clone)]
pub struct ProviderRegistry {
    by_provider: HashMap<ProviderKind, ProviderProfile>,
    /// Indexed by logical action ordinal; each list is sorted by provider.
    by_action: Box<[Vec<ProviderKind>]>,
    by_route: HashMap<(RouteName, Platform), ProviderKind>,
    platform_defaults: HashMap<(Platform, LogicalAction), ProviderKind>,
}

impl ProviderRegistry {
    /// Compiles profiles into a registry. Refuses a provider registered twice, two providers
    /// answering one route on one platform, and two platform defaults for one action.
    pub fn new(profiles: impl IntoIterator<Item = ProviderProfile>) -> Result<Self, RouteError> {
        let mut profiles: Vec<ProviderProfile> = profiles.into_iter().collect();
        // Validation walks profiles in provider order so the error for a bad set of profiles is
        // the same whatever order they arrived in.
        profiles.sort_by_key(ProviderProfile::provider);
        let mut by_provider = HashMap::with_capacity(profiles.len());
        let mut by_action = vec![Vec::new(); LogicalAction::ALL.len()].into_boxed_slice();
        let mut by_route = HashMap::new();
        let mut platform_defaults = HashMap::new();
        for profile in profiles {
            let provider = profile.provider();
            if by_provider.contains_key(&provider) {
                return Err(RouteError::DuplicateProvider { provider });
            }
            for &platform in profile.platforms() {
                if let Some(&first) = by_route.get(&(profile.route(), platform)) {
                    return Err(RouteError::RouteCollision {
                        route: profile.route(),
                        platform,
                        first,
                        second: provider,
                    });
                }
                by_route.insert((profile.route(), platform), provider);
                if profile.platform_default() {
                    for action in profile.actions() {
                        if let Some(&first) = platform_defaults.get(&(platform, action)) {
                            return Err(RouteError::PlatformDefaultCollision {
                                platform,
                                action,
                                first,
                                second: provider,
                            });
                        }
                        platform_defaults.insert((platform, action), provider);
                    }
                }
            }
            for action in profile.actions() {
                // Profiles arrive sorted by provider, so every posting list is sorted too.
                by_action[action_index(action)].push(provider);
            }
            by_provider.insert(provider, profile);
        }
        Ok(ProviderRegistry {
            by_provider,
            by_action,
            by_route,
            platform_defaults,
        })
    }

    /// The profile of `provider`: one hash lookup.
    pub fn profile(&self, provider: ProviderKind) -> Option<&ProviderProfile> {
        self.by_provider.get(&provider)
    }

    /// The providers that implement `action`, on any platform, in provider order.
    pub fn implementers(&self, action: LogicalAction) -> &[ProviderKind] {
        self.by_action
            .get(action_index(action))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The provider that answers `route` on `platform`.
    pub fn route_provider(&self, route: RouteName, platform: Platform) -> Option<ProviderKind> {
        self.by_route.get(&(route, platform)).copied()
    }

    /// The platform default provider for `action` on `platform`.
    pub fn platform_default(
        &self,
        platform: Platform,
        action: LogicalAction,
    ) -> Option<ProviderKind> {
        self.platform_defaults.get(&(platform, action)).copied()
    }

    /// Every profile, in provider order.
    pub fn profiles(&self) -> impl Iterator<Item = &ProviderProfile> + '_ {
        ProviderKind::ALL
            .iter()
            .filter_map(|provider| self.by_provider.get(provider))
    }
}
