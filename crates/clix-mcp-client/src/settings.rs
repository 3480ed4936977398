//! The `[mcp]` section of the person's config: `[[mcp.server]]` entries,
//! each checked by `validate` (every problem at once), and the header
//! values resolved from the process environment at connection time.

use std::collections::BTreeMap;
use std::fmt;

use clix_common::settings::{BadValue, Validate};
use serde::{Deserialize, Serialize};

/// The `[mcp]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// The `[[mcp.server]]` entries, each a command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server: Vec<ServerEntry>,
}

/// One `[[mcp.server]]`: a stdio server (`command` + `args`, run in the
/// sandbox) or a streamable-HTTP one (`url` + `headers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    /// The command's name: letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// One line for the model: what this server is for (the `run` tool's
    /// description may list servers with it, without starting them).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// stdio: the program (a name on the sandbox's PATH, or an absolute path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// stdio: its arguments. They may name variables of clix's environment
    /// (`--token ${GITHUB_TOKEN}`), read when the server starts, as in
    /// Claude Code's `.mcp.json`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// HTTP: the server's streamable-HTTP endpoint (`https://…/mcp`), which
    /// may name variables as `args` do (`?key=${MAPS_KEY}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP: headers sent with every request. Values may name variables of
    /// clix's environment (`Bearer ${GITHUB_TOKEN}`), read when the server
    /// is first used, so the secret never sits in the config file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// stdio: names of clix's environment variables the server gets (its
    /// token, say); nothing else of the environment passes but the
    /// sandbox's allowlist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// stdio: share the host's network (off by default: the server gets none).
    #[serde(default, skip_serializing_if = "is_false")]
    pub network: bool,
    /// A group of commands a session can be limited to, as the hub's domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// `false` keeps the entry without making it a command.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub enabled: bool,
    /// Calls per minute of each of its tools, counted across clix's
    /// processes (the hub's rate limit, keyed `SERVER TOOL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<u32>,
    /// One call of each of its tools at a time, across clix's processes
    /// (the hub's `serialize`, keyed `SERVER TOOL`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub serialize: bool,
    /// Per-tool `rate_limit` and `serialize`, over the server's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolLimits>,
}

/// A tool's own limits in `tools = { NAME = { … } }`; an unset one is the server's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolLimits {
    /// Calls per minute of this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<u32>,
    /// One call of this tool at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serialize: Option<bool>,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// How a server is reached, from a checked entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process over stdin and stdout, in the sandbox.
    Stdio,
    /// Streamable HTTP.
    Http,
}

impl ServerEntry {
    /// A stdio entry with no arguments, variables or network.
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> Self {
        ServerEntry {
            name: name.into(),
            description: String::new(),
            command: Some(command.into()),
            args: args.iter().map(|a| a.to_string()).collect(),
            url: None,
            headers: BTreeMap::new(),
            env: Vec::new(),
            network: false,
            domain: None,
            enabled: true,
            rate_limit: None,
            serialize: false,
            tools: BTreeMap::new(),
        }
    }

    /// An HTTP entry without headers.
    pub fn http(name: &str, url: &str) -> Self {
        ServerEntry { command: None, args: Vec::new(), url: Some(url.into()), ..Self::stdio(name, "", &[]) }
    }

    /// stdio when it has a `command`, else HTTP.
    pub fn transport(&self) -> Transport {
        if self.command.is_some() { Transport::Stdio } else { Transport::Http }
    }

    /// `tool`'s calls per minute: its own, else the server's.
    pub fn rate_limit_of(&self, tool: &str) -> Option<u32> {
        self.tools.get(tool).and_then(|t| t.rate_limit).or(self.rate_limit)
    }

    /// Whether `tool` runs one call at a time: its own, else the server's.
    pub fn serializes(&self, tool: &str) -> bool {
        self.tools.get(tool).and_then(|t| t.serialize).unwrap_or(self.serialize)
    }

    /// The headers with their `${NAME}`s replaced from `var` (the process
    /// environment in use). A variable that is not set is an error naming
    /// it, never a header sent without it.
    pub fn resolve_headers(&self, var: impl Fn(&str) -> Option<String>) -> Result<ResolvedHeaders, TemplateError> {
        let mut out = Vec::new();
        for (name, template) in &self.headers {
            out.push((name.clone(), self.fill(template, &format!("header {name}"), &var)?));
        }
        Ok(ResolvedHeaders(out))
    }

    /// The arguments with their `${NAME}`s replaced from `var`, as headers are.
    pub fn resolve_args(&self, var: impl Fn(&str) -> Option<String>) -> Result<Vec<String>, TemplateError> {
        self.args.iter().enumerate().map(|(i, a)| self.fill(a, &format!("argument {}", i + 1), &var)).collect()
    }

    /// The URL with its `${NAME}`s replaced from `var`, as headers are.
    pub fn resolve_url(&self, var: impl Fn(&str) -> Option<String>) -> Result<Option<String>, TemplateError> {
        self.url.as_deref().map(|url| self.fill(url, "url", &var)).transpose()
    }

    /// `template` with each `${NAME}` replaced from `var`; `what` names it in the error.
    fn fill(&self, template: &str, what: &str, var: &impl Fn(&str) -> Option<String>) -> Result<String, TemplateError> {
        let (what, server) = (what.to_string(), self.name.clone());
        let parts = parse_template(template).map_err(|why| TemplateError::Malformed {
            what: what.clone(),
            server: server.clone(),
            why,
        })?;
        let mut value = String::new();
        for part in parts {
            match part {
                Part::Text(t) => value.push_str(t),
                Part::Var(v) => match var(v) {
                    Some(x) => value.push_str(&x),
                    None => return Err(TemplateError::Unset { what, server, var: v.to_string() }),
                },
            }
        }
        Ok(value)
    }
}

/// Why a server's headers, arguments or URL cannot be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `${NAME}` names a variable that is not set.
    #[error("{what} of MCP server {server} needs ${{{var}}}, which is not set: export {var} before starting clix")]
    Unset {
        /// `header Authorization`, `argument 2`, `url`.
        what: String,
        /// The server.
        server: String,
        /// The variable.
        var: String,
    },
    /// A `${` is not closed, or names nothing.
    #[error("{what} of MCP server {server}: {why}")]
    Malformed {
        /// `header Authorization`, `argument 2`, `url`.
        what: String,
        /// The server.
        server: String,
        /// What is wrong.
        why: String,
    },
}

/// Header names and values with their secrets filled in: Debug shows the
/// names only.
#[derive(Clone, Default)]
pub struct ResolvedHeaders(pub Vec<(String, String)>);

impl fmt::Debug for ResolvedHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter().map(|(k, _)| (k, "***"))).finish()
    }
}

enum Part<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// `Bearer ${TOKEN}` as its text and variable parts; an unclosed `${` or
/// a name that is not a variable's is an error.
fn parse_template(template: &str) -> Result<Vec<Part<'_>>, String> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find("${") {
        parts.push(Part::Text(&rest[..at]));
        let after = &rest[at + 2..];
        let end = after.find('}').ok_or_else(|| "a `${` without its `}`".to_string())?;
        let name = &after[..end];
        if !clix_sandbox::is_variable_name(name) {
            return Err(format!("${{{name}}} does not name a variable (letters, digits and _)"));
        }
        parts.push(Part::Var(name));
        rest = &after[end + 1..];
    }
    parts.push(Part::Text(rest));
    Ok(parts)
}

/// Whether `name` can be a command: 1-64 letters, digits, `-`, `_`, `.`,
/// not starting with `-` or `.`.
pub fn is_command_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['-', '.'])
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Validate for McpSettings {
    /// Each entry: a command name used once, exactly one of `command` and
    /// `url`, and only the fields its transport uses.
    fn validate(&self) -> Vec<BadValue> {
        let mut bad = Vec::new();
        let mut seen = Vec::new();
        for (i, entry) in self.server.iter().enumerate() {
            let key = |field: &str| format!("server[{i}].{field}");
            let name = &entry.name;
            if !is_command_name(name) {
                bad.push(BadValue::new(
                    key("name"),
                    format!("{name:?}"),
                    "1-64 letters, digits, `-`, `_` or `.`, not starting with `-` or `.` (it becomes a command)",
                ));
            } else if seen.contains(&name) {
                bad.push(BadValue::new(key("name"), format!("{name:?}"), "a name no other [[mcp.server]] has"));
            }
            seen.push(name);
            match (&entry.command, &entry.url) {
                (Some(_), Some(_)) => bad.push(BadValue::new(
                    key("url"),
                    format!("{:?}", entry.url.as_deref().unwrap_or_default()),
                    "either `command` (a stdio server) or `url` (an HTTP server), not both",
                )),
                (None, None) => bad.push(BadValue::new(
                    key("command"),
                    "(none)",
                    "a program (`command`, for a stdio server) or an endpoint (`url`, for an HTTP server)",
                )),
                (Some(command), None) if command.trim().is_empty() => {
                    bad.push(BadValue::new(key("command"), "\"\"", "a program's name or absolute path"));
                }
                (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                    bad.push(BadValue::new(key("url"), format!("{url:?}"), "an http:// or https:// URL"));
                }
                _ => {}
            }
            let http = entry.command.is_none();
            let misplaced: [(&str, bool, &str); 4] = [
                ("args", http && !entry.args.is_empty(), "arguments of a stdio server's `command`"),
                ("env", http && !entry.env.is_empty(), "variables for a stdio server (an HTTP server runs elsewhere)"),
                ("network", http && entry.network, "false for an HTTP server (only a stdio server runs here)"),
                ("headers", !http && !entry.headers.is_empty(), "headers of an HTTP server (`url`)"),
            ];
            for (field, wrong, allowed) in misplaced {
                if wrong {
                    bad.push(BadValue::new(key(field), "(set)", allowed));
                }
            }
            for var in entry.env.iter().filter(|v| !clix_sandbox::is_variable_name(v)) {
                bad.push(BadValue::new(
                    key("env"),
                    format!("{var:?}"),
                    "names of variables (letters, digits and _), whose values clix's environment holds",
                ));
            }
            let templates = entry.args.iter().map(|a| ("args", a)).chain(entry.url.iter().map(|u| ("url", u)));
            for (field, template) in templates {
                if let Err(why) = parse_template(template) {
                    bad.push(BadValue::new(
                        key(field),
                        format!("{template:?}"),
                        format!("text with ${{NAME}} for variables: {why}"),
                    ));
                }
            }
            for (header, template) in &entry.headers {
                let header_ok = http::HeaderName::from_bytes(header.as_bytes()).is_ok();
                match parse_template(template) {
                    Err(why) => bad.push(BadValue::new(
                        key(&format!("headers.{}", clix_common::settings::key_part(header))),
                        "(template)",
                        format!("text with ${{NAME}} for variables: {why}"),
                    )),
                    Ok(_) if !header_ok => bad.push(BadValue::new(
                        key("headers"),
                        format!("{header:?}"),
                        "HTTP header names (letters, digits, `-`)",
                    )),
                    Ok(_) => {}
                }
            }
            if entry.rate_limit == Some(0) {
                bad.push(BadValue::new(key("rate_limit"), "0", "a number of calls per minute, at least 1"));
            }
            for (tool, limits) in &entry.tools {
                let tool_key = key(&format!("tools.{}", clix_common::settings::key_part(tool)));
                if tool.trim().is_empty() {
                    bad.push(BadValue::new(
                        key("tools"),
                        format!("{tool:?}"),
                        "a tool's name, as `SERVER --help` lists it",
                    ));
                }
                if limits.rate_limit == Some(0) {
                    bad.push(BadValue::new(
                        format!("{tool_key}.rate_limit"),
                        "0",
                        "a number of calls per minute, at least 1",
                    ));
                }
            }
            if entry.domain.as_deref().is_some_and(|d| !is_command_name(d)) {
                bad.push(BadValue::new(
                    key("domain"),
                    format!("{:?}", entry.domain.as_deref().unwrap_or_default()),
                    "a word of letters, digits, `-`, `_` or `.`",
                ));
            }
        }
        bad.into_iter().map(|b| b.in_section("mcp")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> McpSettings {
        #[derive(Deserialize)]
        struct Config {
            mcp: McpSettings,
        }
        toml::from_str::<Config>(text).unwrap().mcp
    }

    #[test]
    fn entries_read_with_their_defaults() {
        let s = parse(
            "[[mcp.server]]\nname = \"files\"\ncommand = \"npx\"\nargs = [\"-y\", \"server\"]\nenv = [\"ROOT\"]\n\n\
             [[mcp.server]]\nname = \"github\"\nurl = \"https://api.example.com/mcp\"\n\
             headers = { Authorization = \"Bearer ${GITHUB_TOKEN}\" }\nenabled = false\n",
        );
        assert_eq!(s.server.len(), 2);
        let (files, github) = (&s.server[0], &s.server[1]);
        assert_eq!((files.transport(), files.network, files.enabled), (Transport::Stdio, false, true));
        assert_eq!((github.transport(), github.enabled), (Transport::Http, false));
        assert_eq!(s.validate(), vec![]);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let s = parse(
            "[[mcp.server]]\nname = \"-bad\"\ncommand = \"x\"\n\n\
             [[mcp.server]]\nname = \"a\"\ncommand = \"x\"\nurl = \"https://h/mcp\"\n\n\
             [[mcp.server]]\nname = \"a\"\n\n\
             [[mcp.server]]\nname = \"h\"\nurl = \"ftp://h\"\nargs = [\"x\"]\nnetwork = true\n\
             headers = { Authorization = \"Bearer ${TOKEN\" }\n\n\
             [[mcp.server]]\nname = \"s\"\ncommand = \"x\"\nenv = [\"NOT A NAME\"]\n\
             headers = { X = \"y\" }\ndomain = \"two words\"\nrate_limit = 0\n\
             tools = { list = { rate_limit = 0, serialize = true }, \"\" = {} }\n",
        );
        let shown: Vec<String> = s.validate().iter().map(|b| b.to_string()).collect();
        let expected = [
            "mcp.server[0].name = \"-bad\"",
            "mcp.server[1].url = \"https://h/mcp\": either `command`",
            "mcp.server[2].name = \"a\": a name no other",
            "mcp.server[2].command = (none)",
            "mcp.server[3].url = \"ftp://h\"",
            "mcp.server[3].args = (set)",
            "mcp.server[3].network = (set)",
            "mcp.server[3].headers.Authorization = (template): text with ${NAME} for variables: a `${` without",
            "mcp.server[4].headers = (set)",
            "mcp.server[4].env = \"NOT A NAME\"",
            "mcp.server[4].domain = \"two words\"",
            "mcp.server[4].rate_limit = 0",
            "mcp.server[4].tools.list.rate_limit = 0",
            "mcp.server[4].tools = \"\"",
        ];
        for want in expected {
            assert!(shown.iter().any(|s| s.starts_with(want)), "missing {want:?} in {shown:#?}");
        }
        assert_eq!(shown.len(), expected.len(), "{shown:#?}");
    }

    #[test]
    fn a_tool_s_own_limits_win_over_its_server_s() {
        let s = parse(
            "[[mcp.server]]\nname = \"gh\"\ncommand = \"x\"\nrate_limit = 30\nserialize = true\n\
             tools = { search = { rate_limit = 5 }, read = { serialize = false } }\n",
        );
        let gh = &s.server[0];
        assert_eq!(s.validate(), vec![]);
        assert_eq!(
            (gh.rate_limit_of("search"), gh.rate_limit_of("read"), gh.rate_limit_of("other")),
            (Some(5), Some(30), Some(30))
        );
        assert_eq!((gh.serializes("search"), gh.serializes("read")), (true, false));
        let plain = ServerEntry::stdio("p", "x", &[]);
        assert_eq!((plain.rate_limit_of("t"), plain.serializes("t")), (None, false));
        let unknown = toml::from_str::<toml::Value>(
            "[[mcp.server]]\nname = \"a\"\ncommand = \"x\"\ntools = { t = { rate = 1 } }\n",
        )
        .unwrap()
        .try_into::<std::collections::BTreeMap<String, McpSettings>>();
        assert!(unknown.is_err_and(|e| e.to_string().contains("rate")), "a tool's unknown field is refused");
    }

    #[test]
    fn headers_resolve_from_the_environment_and_never_show() {
        let mut entry = ServerEntry::http("github", "https://h/mcp");
        entry.headers.insert("Authorization".into(), "Bearer ${GH_TOKEN}".into());
        let resolved = entry.resolve_headers(|v| (v == "GH_TOKEN").then(|| "ghp-secretvalue".to_string())).unwrap();
        assert_eq!(resolved.0, vec![("Authorization".to_string(), "Bearer ghp-secretvalue".to_string())]);
        assert!(!format!("{resolved:?}").contains("secretvalue"));
        let missing = entry.resolve_headers(|_| None).unwrap_err();
        assert!(matches!(&missing, TemplateError::Unset { var, .. } if var == "GH_TOKEN"), "{missing}");
        assert!(missing.to_string().contains("needs ${GH_TOKEN}, which is not set: export GH_TOKEN"), "{missing}");
    }

    #[test]
    fn args_and_url_resolve_from_the_environment_as_headers_do() {
        let var = |v: &str| (v == "DB_PASSWORD").then(|| "pw".to_string());
        let entry = ServerEntry::stdio("db", "pg-mcp", &["--dsn", "postgresql://admin:${DB_PASSWORD}@h/db", "plain"]);
        assert_eq!(entry.resolve_args(var).unwrap(), ["--dsn", "postgresql://admin:pw@h/db", "plain"]);
        let missing = entry.resolve_args(|_| None).unwrap_err().to_string();
        assert!(missing.contains("argument 2 of MCP server db needs ${DB_PASSWORD}"), "{missing}");
        let entry = ServerEntry::http("maps", "https://h/mcp?key=${DB_PASSWORD}");
        assert_eq!(entry.resolve_url(var).unwrap().as_deref(), Some("https://h/mcp?key=pw"));
        let bad = McpSettings { server: vec![ServerEntry::stdio("x", "y", &["${oops"])] };
        assert!(bad.validate().iter().any(|b| b.to_string().contains("args")), "an unclosed ${{ is refused at load");
    }
}
