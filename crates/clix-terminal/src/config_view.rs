//! `clix config show` as a person reads it, or as JSON.

use clix_session::ConfigReport;

/// Each setting with its source, then the prompts and the provider's variables.
pub fn text(report: &ConfigReport) -> String {
    let mut text = format!("# config file: {}\n", report.file.display());
    let width = report.settings.iter().map(|(k, ..)| k.len()).max().unwrap_or(0);
    for (key, value, source) in &report.settings {
        text.push_str(&format!("{key:width$} = {:<12} # {source}\n", value.to_string()));
    }
    text.push_str("\n# prompts (override one with a file of that name in the config folder)\n");
    for (name, source) in &report.prompts {
        text.push_str(&format!("{name:<19} # {source}\n"));
    }
    if !report.env.is_empty() {
        text.push_str("\n# environment variables the agent's provider reads\n");
        let width = report.env.iter().map(|v| v.name.len()).max().unwrap_or(0);
        for var in &report.env {
            text.push_str(&format!("{:width$} = {:<12} # fills {}\n", var.name, var.shown, var.fills));
        }
    }
    text
}

/// The same as one JSON object: each key's value and source, each
/// prompt's source, each variable's value and what it fills.
pub fn json(report: &ConfigReport) -> serde_json::Value {
    let mut rows: serde_json::Map<String, serde_json::Value> = report
        .settings
        .iter()
        .map(|(k, value, source)| (k.clone(), serde_json::json!({"value": value, "source": source})))
        .collect();
    for (name, source) in &report.prompts {
        rows.insert(name.clone(), serde_json::json!({ "source": source }));
    }
    for var in &report.env {
        rows.insert(format!("env {}", var.name), serde_json::json!({"value": var.shown, "fills": var.fills}));
    }
    serde_json::Value::Object(rows)
}
