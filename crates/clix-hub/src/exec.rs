//! Starting a tool's program in the OS tier's sandbox: its argv (never a
//! shell string), its folder read-only (a user's tool only; a workspace's
//! is in the workspace already), the variables its manifest names, its
//! cwd, time limit and network choice.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clix_common::Secret;
use clix_sandbox::{Outcome, Request, SYSTEM_DIRS, Sandbox, SandboxError};

use crate::load::Tool;
use crate::manifest::Manifest;

/// Looks up the value behind a `${NAME}` in a manifest's `env`: clix's
/// `[hub.env]` config, and nothing else (not clix's environment, which
/// holds keys no manifest was given). Any `Fn(&str) -> Option<Secret>` is one.
pub type EnvLookup = Arc<dyn EnvSource>;

/// What an [`EnvLookup`] calls: a function from a variable's name to its
/// value, kept a [`Secret`] until the hub builds the environment of the
/// tool whose manifest asked for it.
pub trait EnvSource: Fn(&str) -> Option<Secret> + Send + Sync {}

impl<F: Fn(&str) -> Option<Secret> + Send + Sync> EnvSource for F {}

/// A function has nothing to show: its values stay where they are.
impl std::fmt::Debug for dyn EnvSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnvLookup")
    }
}

/// The variables a tool gets on top of the sandbox's allowlist. Values are
/// the manifest's strings with each `${NAME}` replaced through `lookup`: the
/// only way a secret reaches a tool is by its manifest naming it here.
/// A workspace's manifest (not `trusted`) gets none: a cloned repository
/// must not be able to ask for the user's keys.
pub(crate) fn tool_env(m: &Manifest, lookup: &EnvLookup, trusted: bool) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::with_capacity(m.env.len());
    for (name, template) in &m.env {
        if !trusted && template.contains("${") {
            return Err(format!(
                "env.{name}: a workspace's manifest cannot take values from [hub.env]; put the tool in your own \
                 hub folder (the config folder's hub/, or --hub DIR)"
            ));
        }
        let mut value = String::new();
        let mut rest = template.as_str();
        while let Some(start) = rest.find("${") {
            value.push_str(&rest[..start]);
            let Some(len) = rest[start + 2..].find('}') else {
                return Err(format!("env.{name}: `${{` without a closing `}}`; write ${{NAME}}"));
            };
            let var = &rest[start + 2..start + 2 + len];
            let Some(v) = lookup(var) else {
                return Err(format!(
                    "env.{name} needs ${{{var}}}, which is not set; set it under [hub.env] in clix's config.toml"
                ));
            };
            value.push_str(v.expose());
            rest = &rest[start + 3 + len..];
        }
        value.push_str(rest);
        out.push((name.clone(), value));
    }
    Ok(out)
}

/// One run of a tool's program: `args` after the program, from `cwd`
/// unless the manifest fixes its own.
pub(crate) struct ToolRun<'a> {
    pub tool: &'a Tool,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub stdin: Option<&'a [u8]>,
    pub timeout: Duration,
    pub env: &'a [(String, String)],
    /// The caller writes the audit line (a call, with its parameters
    /// redacted by name); a self-test leaves it to the sandbox.
    pub audited_by_caller: bool,
    /// Bytes of stdout and of stderr kept; `None` follows the sandbox's
    /// `output_cap_mb`.
    pub output_cap: Option<usize>,
}

impl ToolRun<'_> {
    pub(crate) async fn run(&self, sandbox: &Sandbox) -> Result<Outcome, SandboxError> {
        let argv: Vec<String> =
            std::iter::once(self.tool.program.display().to_string()).chain(self.args.iter().cloned()).collect();
        let read_only = visible_folders(self.tool);
        let cwd = match &self.tool.manifest.cwd {
            Some(dir) => self.tool.dir.join(dir),
            None => self.cwd.to_path_buf(),
        };
        // A workspace's path is never looked at on the host (a symlink there
        // may lead anywhere); the sandbox's own chdir says if it is no folder.
        if self.tool.trusted && !cwd.is_dir() {
            let reason =
                format!("cwd {} is not a folder; fix `cwd` in {}", cwd.display(), self.tool.manifest_path.display());
            return Err(SandboxError::Spawn { program: self.tool.manifest.name.clone(), reason });
        }
        let mut req = Request::new(&argv, &cwd, self.stdin, self.timeout);
        req.read_only = &read_only;
        req.env = self.env;
        req.network = Some(self.tool.manifest.network && self.tool.trusted);
        req.audit = !self.audited_by_caller;
        req.output_cap = self.output_cap;
        sandbox.run(req).await
    }
}

/// The tool's folder, and its program's folder when that lies elsewhere
/// outside the system folders, so the executable and its data files are
/// reachable read-only. None for a workspace's tool: its folder and program
/// are in the workspace (mounted already) or a system folder, and a path
/// there may be swapped for a symlink to any host folder, which a mount
/// would follow.
fn visible_folders(tool: &Tool) -> Vec<PathBuf> {
    if !tool.trusted {
        return Vec::new();
    }
    let mut dirs = vec![tool.dir.clone()];
    if let Some(parent) = tool.program.parent()
        && !parent.starts_with(&tool.dir)
        && !SYSTEM_DIRS.iter().any(|s| parent.starts_with(s))
    {
        dirs.push(parent.to_path_buf());
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(env: &[(&str, &str)]) -> Manifest {
        let mut doc = serde_json::json!({"name": "t", "version": "1", "description": "d", "command": "t"});
        doc["env"] = env.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
        crate::manifest::from_value(&doc).unwrap()
    }

    #[test]
    fn env_templates_are_filled_from_the_lookup() {
        let lookup: EnvLookup = Arc::new(|k| (k == "GH_TOKEN").then(|| Secret::new("s3cret")));
        assert_eq!(format!("{lookup:?}"), "EnvLookup", "Debug shows no value");
        let m = manifest(&[("MODE", "strict"), ("TOKEN", "Bearer ${GH_TOKEN}!")]);
        assert_eq!(
            tool_env(&m, &lookup, true).unwrap(),
            vec![("MODE".into(), "strict".into()), ("TOKEN".into(), "Bearer s3cret!".into())]
        );
        let err = tool_env(&m, &lookup, false).unwrap_err();
        assert!(err.contains("a workspace's manifest cannot take values"), "{err}");
        assert_eq!(tool_env(&manifest(&[("MODE", "strict")]), &lookup, false).unwrap().len(), 1, "plain values pass");
        let err = tool_env(&manifest(&[("X", "${MISSING}")]), &lookup, true).unwrap_err();
        assert!(err.contains("env.X needs ${MISSING}") && err.contains("[hub.env]"), "{err}");
        let err = tool_env(&manifest(&[("X", "${OPEN")]), &lookup, true).unwrap_err();
        assert!(err.contains("without a closing"), "{err}");
    }

    #[test]
    fn only_a_users_tool_gets_its_folders_mounted() {
        let tool = |trusted| Tool {
            manifest: manifest(&[]),
            manifest_path: "/ws/.clix/hub/t/manifest.json".into(),
            dir: "/ws/.clix/hub/t".into(),
            program: "/opt/t/bin/t".into(),
            trusted,
            stamp: String::new(),
        };
        assert_eq!(visible_folders(&tool(true)), [PathBuf::from("/ws/.clix/hub/t"), PathBuf::from("/opt/t/bin")]);
        assert_eq!(visible_folders(&tool(false)), Vec::<PathBuf>::new(), "the workspace is mounted already");
    }
}
