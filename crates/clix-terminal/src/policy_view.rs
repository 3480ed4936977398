//! `clix policy check|list` as a person reads them.

use clix_policy::{Decision, LineEntry, Policy};

/// `policy check`'s lines: each command's decision and the rule behind it;
/// and whether one would be asked about or denied.
pub fn check_lines(entries: &[LineEntry]) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    for entry in entries {
        let (decision, reason) = match &entry.verdict {
            None => ("?".to_string(), "decided when it runs: the command's name is computed".to_string()),
            Some(v) => {
                let reason = match &v.rule {
                    Some(rule) => format!("{}: {}", rule.origin.place(&rule.id), rule.why),
                    None => "no rule matches".to_string(),
                };
                let note = if v.command != entry.what { format!(" (through `{}`)", v.command) } else { String::new() };
                (v.decision.to_string(), format!("{reason}{note}"))
            }
        };
        let again = if entry.decided_again_at_run_time { " [checked again when it runs]" } else { "" };
        lines.push(format!("{decision:<6} {}  — {reason}{again}", entry.what));
    }
    let refused = entries.iter().any(|e| e.verdict.as_ref().is_some_and(|v| v.decision != Decision::Allow));
    (lines, refused)
}

/// `policy list --json`: every rule, the default, the allowed prefixes, the warnings.
pub fn rules_json(policy: &Policy) -> serde_json::Value {
    let rules: Vec<serde_json::Value> = policy
        .rules()
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id, "decision": r.decision, "why": r.why, "from": r.origin.file,
                "scope": r.origin.scope, "matches": r.describe(), "rule": r.spec,
            })
        })
        .collect();
    serde_json::json!({
        "rules": rules,
        "default": policy.default_decision(),
        "allow": policy.allowed_prefixes().iter().map(|p| p.join(" ")).collect::<Vec<_>>(),
        "warnings": policy.warnings(),
    })
}

/// `policy list`: every rule, what it decides and why, where it came from.
pub fn rules_text(policy: &Policy) -> String {
    let mut out = String::new();
    for rule in policy.rules() {
        out.push_str(&format!(
            "{:<6} {}  — {}\n       {}; from {}\n",
            rule.decision,
            rule.id,
            rule.describe(),
            rule.why,
            rule.origin.file
        ));
    }
    out.push_str(&format!("default for commands no rule matches: {}\n", policy.default_decision()));
    for prefix in policy.allowed_prefixes() {
        out.push_str(&format!("asks let through without asking: {}\n", prefix.join(" ")));
    }
    for warning in policy.warnings() {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}
