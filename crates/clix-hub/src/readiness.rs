//! Whether a tool is ready (seed 001's "run each tool's --self-test at load
//! and hide tools that are not ready") and whether its own version agrees
//! with its manifest ("warn on drift").

use std::time::Duration;

use clix_sandbox::Sandbox;
use serde::{Deserialize, Serialize};

use crate::exec::ToolRun;
use crate::load::Tool;

/// The longest a self-test or version check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a tool can be called in this session, and why not; what its
/// self-test and version check found at load (or the cache remembered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// It can be called: a tool that is not ready is no command of the session.
    pub ready: bool,
    /// Why the tool is not ready.
    pub reason: Option<String>,
    /// A warning: the tool reports another version than its manifest.
    pub drift: Option<String>,
}

impl Readiness {
    pub(crate) fn not_ready(reason: impl Into<String>) -> Self {
        Readiness { ready: false, reason: Some(reason.into()), drift: None }
    }
}

/// What a cached self-test result is valid for: this manifest and this
/// program, as they were when loaded: any edit, rebuild or replacement
/// changes a change time (ctime), even when the modification time and size
/// were kept. The stamps are taken at load, a workspace's through its handle.
pub(crate) fn cache_key(tool: &Tool) -> String {
    format!("{}\0{}\0{}\0{}", tool.manifest.name, tool.manifest_path.display(), tool.program.display(), tool.stamp)
}

/// The audit log's clock, as the hub's SQLite tables keep it (signed).
pub(crate) fn now_ms() -> i64 {
    i64::try_from(clix_audit::now_ms()).unwrap_or(i64::MAX)
}

/// Runs the tool's self-test and version check in the sandbox, from the
/// tool's own folder. The flag is false when the sandbox itself failed, so
/// the result says nothing lasting about the tool.
pub(crate) async fn check(sandbox: &Sandbox, tool: &Tool, env: &[(String, String)]) -> (Readiness, bool) {
    let m = &tool.manifest;
    let run = |args: &[String]| {
        let args = args.to_vec();
        async move {
            let timeout = m.timeout_ms.map_or(CHECK_TIMEOUT, |ms| Duration::from_millis(ms).min(CHECK_TIMEOUT));
            ToolRun {
                tool,
                args: &args,
                cwd: &tool.dir,
                stdin: None,
                timeout,
                env,
                audited_by_caller: false,
                output_cap: None,
            }
            .run(sandbox)
            .await
        }
    };
    let shown = |args: &[String]| format!("{} {}", m.name, args.join(" "));
    let (test, version) = tokio::join!(
        async {
            match &m.self_test {
                Some(args) => Some(run(args).await),
                None => None,
            }
        },
        async {
            match &m.version_args {
                Some(args) => Some(run(args).await),
                None => None,
            }
        },
    );
    let mut readiness = Readiness { ready: true, reason: None, drift: None };
    if let (Some(outcome), Some(args)) = (test, &m.self_test) {
        match outcome {
            Err(e) => return (Readiness::not_ready(format!("its self-test could not run: {e}")), false),
            Ok(o) if o.timed_out.is_some() => {
                readiness = Readiness::not_ready(format!("`{}` timed out", shown(args)));
            }
            Ok(o) if o.exit_code != 0 => {
                let why = crate::contract::error_text(&m.name, o.exit_code, &o.stderr);
                let why = why.trim_start_matches("[error] ").replace('\n', "; ");
                readiness = Readiness::not_ready(format!("`{}` failed: {why}", shown(args)));
            }
            Ok(_) => {}
        }
    }
    if let (Some(outcome), Some(args)) = (version, &m.version_args) {
        readiness.drift = match outcome {
            Ok(o) if o.exit_code == 0 => {
                let printed = crate::encoding::decode_output(&o.stdout).text;
                let printed =
                    if printed.trim().is_empty() { crate::encoding::decode_output(&o.stderr).text } else { printed };
                (!mentions_version(&printed, &m.version)).then(|| {
                    let first = printed.lines().next().unwrap_or("").trim();
                    format!("manifest says version {}, but `{}` prints `{first}`", m.version, shown(args))
                })
            }
            Ok(o) => Some(format!(
                "cannot check the version: `{}` exited {} (set version_args, or false to skip)",
                shown(args),
                o.exit_code
            )),
            Err(e) => Some(format!("cannot check the version: {e}")),
        };
    }
    (readiness, true)
}

/// Whether `printed` names `version` as a whole word (`tool 1.2.0`,
/// `v1.2.0`, `version: 1.2.0`), so 1.2.0 does not match 11.2.0 or 1.2.01.
fn mentions_version(printed: &str, version: &str) -> bool {
    printed
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\'' | ':' | '='))
        .map(|w| w.strip_prefix('v').or_else(|| w.strip_prefix('V')).unwrap_or(w))
        .any(|w| w == version.trim_start_matches('v'))
}

#[cfg(test)]
mod tests {
    use super::mentions_version;

    #[test]
    fn version_mentions_table() {
        for (printed, version, yes) in [
            ("log-search 1.2.0\n", "1.2.0", true),
            ("v1.2.0", "1.2.0", true),
            ("version: 1.2.0 (build 7)", "v1.2.0", true),
            ("{\"version\": \"1.2.0\"}", "1.2.0", true),
            ("log-search 1.3.0", "1.2.0", false),
            ("11.2.0", "1.2.0", false),
            ("1.2.01", "1.2.0", false),
            ("", "1.2.0", false),
        ] {
            assert_eq!(mentions_version(printed, version), yes, "{printed:?} vs {version}");
        }
    }
}
