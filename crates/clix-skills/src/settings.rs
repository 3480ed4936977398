//! The `[skills]` section of clix's config file.

use clix_common::settings::{BadValue, Validate};
use serde::{Deserialize, Serialize};

/// The most a level-0 budget may be: the list is paid for on every model call.
const MAX_LEVEL0_BYTES: usize = 64 << 10;

/// `[skills]`: whether a session has skills, and how much of the `run`
/// tool's description their level-0 list may take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsSettings {
    /// Find skills and offer the `skill` command (`CLIX_SKILLS_ENABLED`).
    pub enabled: bool,
    /// Bytes of skill names and descriptions in the `run` tool's
    /// description; the rest are counted in a line pointing to `skill`.
    pub level0_bytes: usize,
}

impl Default for SkillsSettings {
    fn default() -> Self {
        SkillsSettings { enabled: true, level0_bytes: 2048 }
    }
}

impl Validate for SkillsSettings {
    fn validate(&self) -> Vec<BadValue> {
        if self.level0_bytes > MAX_LEVEL0_BYTES {
            return vec![BadValue::new(
                "level0_bytes",
                self.level0_bytes,
                format!("from 0 to {MAX_LEVEL0_BYTES} (bytes of the run tool's description, paid on every call)"),
            )];
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_bounded() {
        assert!(SkillsSettings::default().validate().is_empty());
        let bad = SkillsSettings { level0_bytes: MAX_LEVEL0_BYTES + 1, ..Default::default() }.validate();
        assert_eq!(bad.len(), 1);
        assert!(bad[0].to_string().starts_with("level0_bytes = 65537: from 0 to 65536"), "{}", bad[0]);
    }
}
