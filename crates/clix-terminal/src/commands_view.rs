//! `clix commands`: what `run` offers, as a person reads it or as JSON.

use clix_engine::Catalog;

/// A line per command and tool, then the standard commands.
pub fn text(catalog: &Catalog) -> String {
    let mut text = String::new();
    for spec in &catalog.agent {
        text.push_str(&format!("{:8} {}\n", spec.name, spec.summary));
    }
    for spec in &catalog.tools {
        text.push_str(&format!("{:8} {} (a tool)\n", spec.name, spec.summary));
    }
    text.push_str(&format!("\nstandard: {}\n", catalog.standard.join(" ")));
    text
}

/// `{"agent": [...], "tools": [...], "standard": [...]}`.
pub fn json(catalog: &Catalog) -> serde_json::Value {
    let agent: Vec<_> = catalog
        .agent
        .iter()
        .map(|s| serde_json::json!({"name": s.name, "summary": s.summary, "usage": s.usage}))
        .collect();
    let tools: Vec<_> =
        catalog.tools.iter().map(|s| serde_json::json!({"name": s.name, "description": s.summary})).collect();
    serde_json::json!({"agent": agent, "tools": tools, "standard": catalog.standard})
}
