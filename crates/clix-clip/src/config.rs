//! The `[[clip]]` entries of the person's config, and the checked
//! environments they become.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One `[[clip]]` entry as written in `config.toml`: every kind's fields in
/// one flat table, checked by [`Environment::from_entry`] (which says which
/// field is missing or does not belong to the kind).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClipEntry {
    /// The word after `clip`: letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// One line for the model: what this environment is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `ssh`, `container`, `kubernetes` or `local`.
    pub kind: String,
    /// `bash` (the default) or `sh`: what runs the line on the other side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// ssh: the host name or address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// ssh: the remote user (else ssh's own choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// ssh: the port (else ssh's own choice, 22).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// ssh: the private key to use (`-i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_file: Option<PathBuf>,
    /// ssh: more `-o` options, each `Name=value` (`UserKnownHostsFile=…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// container: `docker` (the default) or `podman`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// container: the container's name or id; kubernetes: the container in the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// kubernetes: the kubeconfig context (else the current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// kubernetes: the namespace (else the context's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// kubernetes: the pod's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// kubernetes: a label selector; the first ready pod it matches is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// local: the folder, run through the sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
}

/// What runs the line on the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// `bash -c LINE`.
    Bash,
    /// `sh -c LINE`, for images without bash.
    Sh,
}

impl Shell {
    /// The program's name.
    pub fn program(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Sh => "sh",
        }
    }
}

/// An SSH host, reached through the system `ssh` client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ssh {
    /// Host name or address.
    pub host: String,
    /// Remote user.
    pub user: Option<String>,
    /// Port.
    pub port: Option<u16>,
    /// Private key.
    pub identity_file: Option<PathBuf>,
    /// `-o` options, `Name=value`.
    pub options: Vec<String>,
}

/// A running container, reached through `docker`/`podman exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// `docker` or `podman`.
    pub engine: String,
    /// Name or id.
    pub container: String,
}

/// Which pod of a Kubernetes environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pod {
    /// This pod.
    Named(String),
    /// The first ready pod matching this label selector, found at each call.
    Selector(String),
}

/// A pod, reached through `kubectl exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kubernetes {
    /// kubeconfig context.
    pub context: Option<String>,
    /// Namespace.
    pub namespace: Option<String>,
    /// The pod.
    pub pod: Pod,
    /// The container in the pod.
    pub container: Option<String>,
}

/// Where an environment is and how it is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `ssh`.
    Ssh(Ssh),
    /// `container`.
    Container(Container),
    /// `kubernetes`.
    Kubernetes(Kubernetes),
    /// `local`: a folder run through the sandbox.
    Local(PathBuf),
}

/// One checked environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The word after `clip`.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// What runs the line.
    pub shell: Shell,
    /// Where it is.
    pub target: Target,
}

/// The fields of every kind.
const EVERY_KIND: &[&str] = &["name", "description", "kind", "shell"];

/// The fields each kind may use, besides [`EVERY_KIND`]'s.
const FIELDS: &[(&str, &[&str])] = &[
    ("ssh", &["host", "user", "port", "identity_file", "options"]),
    ("container", &["engine", "container"]),
    ("kubernetes", &["context", "namespace", "pod", "selector", "container"]),
    ("local", &["path"]),
];

/// Words `clip` itself uses in the place of a name.
const RESERVED: &[&str] = &["list", "help"];

/// What is wrong with one `[[clip]]` entry, and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[[clip]] {entry}: {what}")]
pub struct EntryProblem {
    /// The entry's name (`(no name)` when it has none).
    pub entry: String,
    /// What is wrong, and what to do.
    pub what: String,
}

/// Every problem of a `[[clip]]` list, one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct ClipConfigError(pub Vec<EntryProblem>);

impl Environment {
    /// Checks one entry: its name, its kind, the fields the kind needs and
    /// none it does not use. The error says what to change.
    pub fn from_entry(entry: &ClipEntry) -> Result<Environment, EntryProblem> {
        let name = &entry.name;
        let shown = if name.is_empty() { "(no name)".to_string() } else { name.clone() };
        let problem = |what: String| EntryProblem { entry: shown.clone(), what };
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && !name.starts_with(['-', '.'])
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(problem(
                "`name` must be 1-64 letters, digits, `-`, `_` or `.`, not starting with `-` or `.`".into(),
            ));
        }
        if RESERVED.contains(&name.as_str()) {
            return Err(problem(format!("`{name}` is a word of `clip` itself (clip {name}); choose another name")));
        }
        let Some((_, allowed)) = FIELDS.iter().find(|(kind, _)| *kind == entry.kind) else {
            return Err(problem(format!(
                "kind = {:?} is not a kind; use one of ssh, container, kubernetes, local",
                entry.kind
            )));
        };
        if let Some(field) = entry.fields_set().into_iter().find(|f| !allowed.contains(&f.as_str())) {
            return Err(problem(format!(
                "`{field}` is not a field of kind {}; its fields are {}",
                entry.kind,
                allowed.join(", ")
            )));
        }
        let shell = match entry.shell.as_deref() {
            None | Some("bash") => Shell::Bash,
            Some("sh") => Shell::Sh,
            Some(other) => return Err(problem(format!("shell = {other:?}; use \"bash\" or \"sh\""))),
        };
        let needs = |field: &str, value: &Option<String>| -> Result<String, EntryProblem> {
            match value.as_deref().map(str::trim) {
                Some(v) if !v.is_empty() => Ok(v.to_string()),
                _ => Err(problem(format!("kind {} needs `{field}`", entry.kind))),
            }
        };
        let target = match entry.kind.as_str() {
            "ssh" => {
                let host = needs("host", &entry.host)?;
                if host.starts_with('-') || host.contains(char::is_whitespace) {
                    return Err(problem(format!("host = {host:?} is not a host name")));
                }
                if let Some(user) = &entry.user
                    && (user.is_empty() || user.starts_with('-') || user.contains(['@', ' ']))
                {
                    return Err(problem(format!("user = {user:?} is not a user name")));
                }
                if let Some(bad) = entry.options.iter().find(|o| !option_ok(o)) {
                    return Err(problem(format!(
                        "options entry {bad:?}: each is one ssh -o option written Name=value, \
                         e.g. \"UserKnownHostsFile=~/.ssh/known_hosts_work\""
                    )));
                }
                Target::Ssh(Ssh {
                    host,
                    user: entry.user.clone(),
                    port: entry.port,
                    identity_file: entry.identity_file.clone(),
                    options: entry.options.clone(),
                })
            }
            "container" => {
                let engine = entry.engine.clone().unwrap_or_else(|| "docker".into());
                if !matches!(engine.as_str(), "docker" | "podman") {
                    return Err(problem(format!("engine = {engine:?}; use \"docker\" or \"podman\"")));
                }
                let container = needs("container", &entry.container)?;
                if container.starts_with('-') {
                    return Err(problem(format!("container = {container:?} is not a container name")));
                }
                Target::Container(Container { engine, container })
            }
            "kubernetes" => {
                let pod = match (&entry.pod, &entry.selector) {
                    (Some(_), Some(_)) => return Err(problem("give `pod` or `selector`, not both".into())),
                    (Some(_), None) => Pod::Named(needs("pod", &entry.pod)?),
                    (None, Some(_)) => Pod::Selector(needs("selector", &entry.selector)?),
                    (None, None) => return Err(problem("kind kubernetes needs `pod` or `selector`".into())),
                };
                if let Pod::Named(p) = &pod
                    && (p.starts_with('-') || p.contains(['/', ':']))
                {
                    return Err(problem(format!("pod = {p:?} is not a pod name")));
                }
                for (field, value) in [("context", &entry.context), ("namespace", &entry.namespace)] {
                    if value.as_deref().is_some_and(|v| v.is_empty() || v.starts_with('-')) {
                        return Err(problem(format!("`{field}` must be a name")));
                    }
                }
                Target::Kubernetes(Kubernetes {
                    context: entry.context.clone(),
                    namespace: entry.namespace.clone(),
                    pod,
                    container: entry.container.clone(),
                })
            }
            _ => {
                let Some(path) = entry.path.clone() else { return Err(problem("kind local needs `path`".into())) };
                if !path.is_absolute() {
                    return Err(problem(format!("path = {:?} must be an absolute folder path", path.display())));
                }
                Target::Local(path)
            }
        };
        Ok(Environment { name: name.clone(), description: entry.description.trim().to_string(), shell, target })
    }

    /// `ssh`, `container`, `kubernetes` or `local`.
    pub fn kind(&self) -> &'static str {
        match self.target {
            Target::Ssh(_) => "ssh",
            Target::Container(_) => "container",
            Target::Kubernetes(_) => "kubernetes",
            Target::Local(_) => "local",
        }
    }

    /// Where it is, in one line: `deploy@build.example.com:2222`,
    /// `docker container web`, `pod api-0 in namespace prod (context k)`.
    pub fn target_text(&self) -> String {
        match &self.target {
            Target::Ssh(s) => {
                let mut text = String::new();
                if let Some(user) = &s.user {
                    let _ = write!(text, "{user}@");
                }
                text.push_str(&s.host);
                if let Some(port) = s.port {
                    let _ = write!(text, ":{port}");
                }
                text
            }
            Target::Container(c) => format!("{} container {}", c.engine, c.container),
            Target::Kubernetes(k) => {
                let mut text = match &k.pod {
                    Pod::Named(p) => format!("pod {p}"),
                    Pod::Selector(s) => format!("first ready pod of {s}"),
                };
                if let Some(c) = &k.container {
                    let _ = write!(text, ", container {c}");
                }
                if let Some(ns) = &k.namespace {
                    let _ = write!(text, " in namespace {ns}");
                }
                if let Some(ctx) = &k.context {
                    let _ = write!(text, " (context {ctx})");
                }
                text
            }
            Target::Local(path) => format!("{} (sandboxed)", path.display()),
        }
    }
}

impl ClipEntry {
    /// The kind-specific fields this entry sets: the fields its serialized
    /// form holds (an unset one is skipped there) but those of every kind.
    fn fields_set(&self) -> Vec<String> {
        // Entries are read from TOML, whose strings are UTF-8: a path always serializes.
        let Ok(serde_json::Value::Object(set)) = serde_json::to_value(self) else { return Vec::new() };
        set.into_iter().map(|(field, _)| field).filter(|f| !EVERY_KIND.contains(&f.as_str())).collect()
    }
}

/// `Name=value` (or `Name value`) with a plain option name.
fn option_ok(option: &str) -> bool {
    let name = option.split(['=', ' ']).next().unwrap_or("");
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()) && option.len() > name.len() + 1
}

/// Checks every entry and that no two share a name; every problem is
/// reported, one per line.
pub fn check(entries: &[ClipEntry]) -> Result<Vec<Environment>, ClipConfigError> {
    let mut problems = Vec::new();
    let mut environments: Vec<Environment> = Vec::new();
    for entry in entries {
        match Environment::from_entry(entry) {
            Ok(env) if environments.iter().any(|e| e.name == env.name) => {
                problems.push(EntryProblem { entry: env.name, what: "the name is used twice; rename one".into() });
            }
            Ok(env) => environments.push(env),
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() { Ok(environments) } else { Err(ClipConfigError(problems)) }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn entry(toml_text: &str) -> ClipEntry {
        let doc: std::collections::BTreeMap<String, Vec<ClipEntry>> =
            serde_json::from_value(serde_json::to_value(parse(toml_text)).unwrap()).unwrap();
        doc["clip"][0].clone()
    }

    /// A tiny TOML reader for the tests: `key = "value"` / `key = 1` lines.
    fn parse(text: &str) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (k, v) = line.split_once('=').unwrap();
            let v = v.trim();
            let value = if let Some(s) = v.strip_prefix('"') {
                serde_json::Value::String(s.trim_end_matches('"').to_string())
            } else if v.starts_with('[') {
                serde_json::from_str(v).unwrap()
            } else {
                serde_json::Value::from(v.parse::<u64>().unwrap())
            };
            map.insert(k.trim().to_string(), value);
        }
        serde_json::json!({ "clip": [map] })
    }

    #[test]
    fn each_kind_becomes_its_target() {
        let ssh = Environment::from_entry(&entry(
            "name = \"staging\"\nkind = \"ssh\"\nhost = \"st.example.com\"\nuser = \"deploy\"\nport = 2222",
        ))
        .unwrap();
        assert_eq!(ssh.kind(), "ssh");
        assert_eq!(ssh.target_text(), "deploy@st.example.com:2222");
        assert_eq!(ssh.shell, Shell::Bash);
        let c = Environment::from_entry(&entry("name = \"web\"\nkind = \"container\"\ncontainer = \"web-1\"")).unwrap();
        assert_eq!(c.target, Target::Container(Container { engine: "docker".into(), container: "web-1".into() }));
        let k = Environment::from_entry(&entry(
            "name = \"api\"\nkind = \"kubernetes\"\nselector = \"app=api\"\nnamespace = \"prod\"\nshell = \"sh\"",
        ))
        .unwrap();
        assert_eq!(k.target_text(), "first ready pod of app=api in namespace prod");
        assert_eq!(k.shell, Shell::Sh);
    }

    /// A field no kind has is refused by serde as the config file is read
    /// (the loader names the file and the entry, `clip[0]`); its message
    /// takes the near name from the entry's own fields.
    #[test]
    fn unknown_fields_get_the_near_name_from_the_entrys_fields() {
        let cases = [
            (r#"{"name": "a", "kind": "ssh", "hots": "h"}"#, "unknown field `hots`; did you mean `host`?"),
            (
                r#"{"name": "a", "kind": "kubernetes", "namespce": "n"}"#,
                "unknown field `namespce`; did you mean `namespace`?",
            ),
            (
                r#"{"name": "a", "kind": "ssh", "colour": 1}"#,
                "unknown field `colour`; known fields: name, description, kind, shell, host, user, port, \
                 identity_file, options, engine, container, context, namespace, pod, selector, path",
            ),
        ];
        for (text, want) in cases {
            let error = serde_json::from_str::<ClipEntry>(text).unwrap_err().to_string();
            let unknown = clix_common::names::UnknownField::from_serde(&error).unwrap();
            assert_eq!(unknown.to_string(), want);
        }
    }

    #[test]
    fn bad_entries_say_what_to_fix() {
        let rows = [
            (
                "name = \"x\"\nkind = \"vm\"",
                "kind = \"vm\" is not a kind; use one of ssh, container, kubernetes, local",
            ),
            ("name = \"x\"\nkind = \"ssh\"", "kind ssh needs `host`"),
            ("name = \"x\"\nkind = \"ssh\"\nhost = \"h\"\ncontainer = \"c\"", "`container` is not a field of kind ssh"),
            (
                "name = \"x\"\nkind = \"local\"\npath = \"/srv\"\noptions = [\"A=b\"]\ndescription = \"d\"",
                "`options` is not a field of kind local; its fields are path",
            ),
            ("name = \"list\"\nkind = \"local\"\npath = \"/srv\"", "`list` is a word of `clip` itself"),
            ("name = \"-x\"\nkind = \"local\"\npath = \"/srv\"", "`name` must be"),
            ("name = \"x\"\nkind = \"local\"\npath = \"rel\"", "must be an absolute folder path"),
            ("name = \"x\"\nkind = \"kubernetes\"", "needs `pod` or `selector`"),
            ("name = \"x\"\nkind = \"container\"\nengine = \"lxc\"\ncontainer = \"c\"", "use \"docker\" or \"podman\""),
            ("name = \"x\"\nkind = \"ssh\"\nhost = \"h\"\noptions = [\"-oProxyCommand=x\"]", "one ssh -o option"),
            ("name = \"x\"\nkind = \"ssh\"\nhost = \"-oProxyCommand=x\"", "is not a host name"),
        ];
        for (text, want) in rows {
            let err = Environment::from_entry(&entry(text)).unwrap_err();
            assert!(err.what.contains(want), "{text}: {err}");
            assert!(err.to_string().starts_with("[[clip]] "), "{err}");
        }
        let twice = entry("name = \"a\"\nkind = \"local\"\npath = \"/srv\"");
        let err = check(&[twice.clone(), twice]).unwrap_err();
        assert_eq!(err.0.len(), 1, "{err}");
        assert_eq!(err.0[0].entry, "a");
        assert!(err.to_string().contains("the name is used twice"), "{err}");
    }
}
