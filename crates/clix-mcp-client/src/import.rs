//! `clix mcp import FILE`: the `mcpServers` object of Claude Desktop
//! (`claude_desktop_config.json`), Claude Code (`.mcp.json`) and Cursor
//! (`~/.cursor/mcp.json`) as `[[mcp.server]]` entries, with what was
//! skipped and why. A literal secret in the file (an `env` value, a
//! header, an argument after `--token` or shaped like a token, a URL's
//! password or key) is never written: it becomes a `${VARIABLE}` the
//! person exports, and the variable is named.

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

/// Why a client's config file gives no servers to import.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// It has no `mcpServers` object.
    #[error(
        "no `mcpServers` object: expected a file of Claude Desktop (claude_desktop_config.json), Claude Code \
         (.mcp.json) or Cursor (mcp.json)"
    )]
    NoServers,
}

/// Reads `json` (a whole config file with `mcpServers`); `existing` are the
/// names the person's config already has, so a second import skips them.
pub fn import(json: &str, existing: &[&str]) -> Result<Imported, ImportError> {
    let doc: Value = serde_json::from_str(json)?;
    let servers = doc.get("mcpServers").and_then(Value::as_object).ok_or(ImportError::NoServers)?;
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
    // No program or address holds one: a file that has one is hostile or broken.
    for (field, value) in [("command", command), ("url", url)] {
        if value.is_some_and(|v| v.chars().any(char::is_control)) {
            return Err(format!("its {field} holds a control character, which no program name or URL has"));
        }
    }
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
            let args = hide_arg_secrets(name, &args, &mut out.export);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            ServerEntry::stdio(name, command, &args)
        }
        (None | Some("http" | "streamable-http"), None, Some(url)) => {
            ServerEntry::http(name, &hide_url_secrets(name, url, &mut out.export))
        }
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
                let what = if value.starts_with("Bearer ") { "TOKEN" } else { header.as_str() };
                let var = variable(name, what, &out.export);
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

/// The variable a literal secret of `server` becomes, named for `what`
/// holds it: `GITHUB_TOKEN` for a bearer token of `github`,
/// `GITHUB_X_API_KEY` for its `X-API-Key`; `_2`, `_3`… when `taken` has it.
fn variable(server: &str, what: &str, taken: &[String]) -> String {
    let var: String = format!("{server}_{what}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
        .collect();
    let var = if var.starts_with(|c: char| c.is_ascii_digit()) { format!("_{var}") } else { var };
    let mut n = 1;
    let mut candidate = var.clone();
    while taken.contains(&candidate) {
        n += 1;
        candidate = format!("{var}_{n}");
    }
    candidate
}

/// `args` with each literal secret as a `${VARIABLE}` (recorded in
/// `export`): the value after a flag whose name looks secret (`--token X`,
/// `--api-key=X`), a token-shaped argument, and the password or secret
/// parameters of a URL.
fn hide_arg_secrets(server: &str, args: &[&str], export: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut secret_flag: Option<&str> = None;
    for arg in args {
        if arg.contains("${") {
            secret_flag = None;
            out.push(arg.to_string());
            continue;
        }
        if let Some(flag) = secret_flag.take() {
            let var = variable(server, flag, export);
            out.push(format!("${{{var}}}"));
            export.push(var);
            continue;
        }
        let flag = arg.trim_start_matches('-');
        if arg.starts_with('-') && clix_common::is_secret_name(flag) && !flag.contains('=') {
            secret_flag = Some(flag);
            out.push(arg.to_string());
        } else if let Some((key, _)) = arg.split_once('=').filter(|(k, v)| {
            k.starts_with('-') && clix_common::is_secret_name(k.trim_start_matches('-')) && !v.is_empty()
        }) {
            let var = variable(server, key.trim_start_matches('-'), export);
            out.push(format!("{key}=${{{var}}}"));
            export.push(var);
        } else if clix_common::looks_like_token(arg) {
            let var = variable(server, "TOKEN", export);
            out.push(format!("${{{var}}}"));
            export.push(var);
        } else {
            out.push(hide_url_secrets(server, arg, export));
        }
    }
    out
}

/// `text` with a URL's userinfo password and the values of its secret
/// query parameters (`key`, `token`, `api_key`…) and token-shaped path
/// parts as `${VARIABLE}`s (recorded in `export`); anything else as it is.
fn hide_url_secrets(server: &str, text: &str, export: &mut Vec<String>) -> String {
    let Some(scheme_end) = text.find("://") else { return text.to_string() };
    let (scheme, rest) = text.split_at(scheme_end + 3);
    let (authority_end, path) = rest.find(['/', '?', '#']).map_or((rest.len(), ""), |i| (i, &rest[i..]));
    let mut authority = rest[..authority_end].to_string();
    if let Some((userinfo, host)) = authority.rsplit_once('@')
        && let Some((user, password)) = userinfo.split_once(':')
        && !password.is_empty()
        && !password.contains("${")
    {
        let var = variable(server, "PASSWORD", export);
        authority = format!("{user}:${{{var}}}@{host}");
        export.push(var);
    }
    let (path, query) = path.split_once('?').map_or((path, None), |(p, q)| (p, Some(q)));
    let mut path_parts = Vec::new();
    for part in path.split('/') {
        if clix_common::looks_like_token(part) {
            let var = variable(server, "TOKEN", export);
            path_parts.push(format!("${{{var}}}"));
            export.push(var);
        } else {
            path_parts.push(part.to_string());
        }
    }
    let mut url = format!("{scheme}{authority}{}", path_parts.join("/"));
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, value))
                    if !value.contains("${") && (is_secret_param(key) || clix_common::looks_like_token(value)) =>
                {
                    let var = variable(server, key, export);
                    export.push(var.clone());
                    format!("{key}=${{{var}}}")
                }
                _ => pair.to_string(),
            })
            .collect();
        url = format!("{url}?{}", pairs.join("&"));
    }
    url
}

/// Query parameters that carry a credential by their name.
fn is_secret_param(key: &str) -> bool {
    clix_common::is_secret_name(key)
        || matches!(key.to_ascii_lowercase().as_str(), "key" | "auth" | "access_token" | "sig")
}
