//! `clix mcp import FILE`: the `mcpServers` object of Claude Desktop
//! (`claude_desktop_config.json`), Claude Code (`.mcp.json`) and Cursor
//! (`~/.cursor/mcp.json`) as `[[mcp.server]]` entries, with what was
//! skipped and why. A literal secret in the file (an `env` value, a header)
//! is never written: it becomes a variable the person exports.

use serde_json::{Map, Value};

use crate::settings::{McpSettings, ServerEntry, is_command_name};

/// What an import made of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    /// The entries, by name.
    pub servers: Vec<ServerEntry>,
    /// Servers left out, each with why.
    pub skipped: Vec<Skipped>,
    /// Variables the person must export before starting clix: values the
    /// file held literally and the config now names instead.
    pub export: Vec<String>,
    /// Other things worth saying (fields with no counterpart, ignored).
    pub notes: Vec<String>,
}

/// A server the import left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its name in the file.
    pub name: String,
    /// Why, and what to do instead.
    pub reason: String,
}

impl Imported {
    /// The entries as `[[mcp.server]]` tables, to append to `config.toml`.
    pub fn toml(&self) -> String {
        #[derive(serde::Serialize)]
        struct Config<'a> {
            mcp: &'a McpSettings,
        }
        let settings = McpSettings { server: self.servers.clone() };
        toml::to_string(&Config { mcp: &settings }).unwrap_or_default()
    }
}

/// Fields each kind of entry may carry and clix reads.
const READ: &[&str] = &["type", "command", "args", "env", "url", "headers", "disabled"];

/// Reads `json` (a whole config file with `mcpServers`); `existing` are the
/// names the person's config already has, so a second import skips them.
pub fn import(json: &str, existing: &[&str]) -> Result<Imported, String> {
    let doc: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let servers = doc.get("mcpServers").and_then(Value::as_object).ok_or_else(|| {
        "no `mcpServers` object: expected a file of Claude Desktop (claude_desktop_config.json), Claude Code \
         (.mcp.json) or Cursor (mcp.json)"
            .to_string()
    })?;
    let mut out = Imported::default();
    let mut taken: Vec<String> = existing.iter().map(|s| s.to_string()).collect();
    for (name, entry) in servers {
        let skip = |reason: String| Skipped { name: name.clone(), reason };
        if !is_command_name(name) {
            let near: String = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
                .collect();
            let near = near.trim_start_matches(['-', '.']);
            out.skipped.push(skip(format!(
                "`{name}` cannot be a command name (letters, digits, `-`, `_`, `.`); rename it in the file{} and \
                 import again",
                if near.is_empty() { String::new() } else { format!(" (to `{near}`, say)") }
            )));
            continue;
        }
        if taken.contains(name) {
            out.skipped.push(skip(format!("a server named `{name}` is already configured; remove one of them")));
            continue;
        }
        let Some(obj) = entry.as_object() else {
            out.skipped.push(skip("its entry is not an object".into()));
            continue;
        };
        match server(name, obj, &mut out) {
            Ok(entry) => {
                taken.push(name.clone());
                out.servers.push(entry);
            }
            Err(reason) => out.skipped.push(skip(reason)),
        }
        let ignored: Vec<&str> = obj.keys().map(String::as_str).filter(|k| !READ.contains(k)).collect();
        if !ignored.is_empty() {
            out.notes.push(format!("{name}: ignored {} (clix has no such setting)", ignored.join(", ")));
        }
    }
    Ok(out)
}

/// One entry, its literal secrets turned into variables (recorded in `out`).
fn server(name: &str, obj: &Map<String, Value>, out: &mut Imported) -> Result<ServerEntry, String> {
    let kind = obj.get("type").and_then(Value::as_str);
    let url = obj.get("url").and_then(Value::as_str);
    let command = obj.get("command").and_then(Value::as_str);
    let mut entry = match (kind, command, url) {
        (Some("sse"), _, _) => {
            return Err("it uses the legacy SSE transport, which clix does not speak; if the server also serves \
                        streamable HTTP (often at /mcp rather than /sse), add it with that `url`"
                .into());
        }
        (None | Some("stdio"), Some(command), _) => {
            let args = obj.get("args").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            if let Some(bad) = args.iter().find(|a| !a.is_string()) {
                return Err(format!("its `args` hold {bad}, which is not a string"));
            }
            let args: Vec<&str> = args.iter().filter_map(Value::as_str).collect();
            ServerEntry::stdio(name, command, &args)
        }
        (None | Some("http" | "streamable-http"), None, Some(url)) => ServerEntry::http(name, url),
        (Some(other), _, _) if !matches!(other, "stdio" | "http" | "streamable-http") => {
            return Err(format!("its type {other:?} is not one clix speaks (stdio, http)"));
        }
        _ => return Err("it has neither a `command` (stdio) nor a `url` (http)".into()),
    };
    if let Some(env) = obj.get("env").and_then(Value::as_object) {
        for (var, value) in env {
            if !clix_sandbox::is_variable_name(var) {
                return Err(format!("its env names {var:?}, which is not a variable name"));
            }
            entry.env.push(var.clone());
            // `${VAR}` of the same name already comes from the environment;
            // anything else was the value itself, now left out of the config.
            if value.as_str() != Some(&format!("${{{var}}}")) {
                out.export.push(var.clone());
            }
        }
        if !entry.env.is_empty() && entry.command.is_none() {
            out.notes.push(format!("{name}: ignored env (an HTTP server runs elsewhere)"));
            entry.env.clear();
        }
    }
    if let Some(headers) = obj.get("headers").and_then(Value::as_object) {
        for (header, value) in headers {
            let value = value.as_str().unwrap_or_default();
            let template = if value.contains("${") {
                value.to_string()
            } else {
                let var = header_variable(name, header, value);
                let template = match value.strip_prefix("Bearer ") {
                    Some(_) => format!("Bearer ${{{var}}}"),
                    None => format!("${{{var}}}"),
                };
                out.export.push(var);
                template
            };
            entry.headers.insert(header.clone(), template);
        }
    }
    if obj.get("disabled").and_then(Value::as_bool) == Some(true) {
        entry.enabled = false;
    }
    Ok(entry)
}

/// The variable a literal header value becomes: `GITHUB_TOKEN` for a
/// bearer token of `github`, `GITHUB_X_API_KEY` for its `X-API-Key`.
fn header_variable(server: &str, header: &str, value: &str) -> String {
    let what = if value.starts_with("Bearer ") { "TOKEN" } else { header };
    let var: String = format!("{server}_{what}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
        .collect();
    if var.starts_with(|c: char| c.is_ascii_digit()) { format!("_{var}") } else { var }
}
