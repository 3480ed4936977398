//! The engine's policy: the rules of the person's config and files plus the
//! workspace's own `.clix/policy.toml` (read through the workspace handle),
//! and the session's gate, which the shell asks before every command.

use std::path::Path;
use std::sync::Arc;

use clix_audit::{AuditLog, Record, redact_line};
use clix_policy::{
    Approver, Context, Files, Gate, GateOptions, LoadError, Origin, Policy, PolicyEvent, PolicySettings, RuleFile,
    Scope, WorkspaceFiles,
};
use clix_shell::{CommandGate, Workspace};

/// The workspace's own rules, beside its hub tools.
const WORKSPACE_POLICY: &str = ".clix/policy.toml";
/// Bigger than any sensible rule file.
const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// How an engine's policy is set up.
#[derive(Clone, Default)]
pub struct PolicyConfig {
    /// The `[policy]` section of the config.
    pub settings: PolicySettings,
    /// Where `[policy]` was read, for messages.
    pub config_file: String,
    /// The person's own rule files (`policy.toml` in the config folder), already read.
    pub user_files: Vec<RuleFile>,
    /// Who answers `ask`; `None` (MCP, `--jsonl`, no terminal) makes `ask` a refusal.
    pub approver: Option<Arc<dyn Approver>>,
    /// Where decisions other than a plain allow are logged, with this session id.
    pub audit_log: Option<AuditLog>,
    /// Names this engine's lines in the audit log.
    pub session_id: String,
}

impl std::fmt::Debug for PolicyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyConfig")
            .field("settings", &self.settings)
            .field("config_file", &self.config_file)
            .field("user_files", &self.user_files.iter().map(|r| &r.origin.file).collect::<Vec<_>>())
            .field("approver", &self.approver.is_some())
            .field("audit_log", &self.audit_log)
            .finish()
    }
}

/// The rules in force for `workspace`: the config's, the person's files',
/// then the workspace's (which may only add deny and ask).
pub(crate) fn load(config: &PolicyConfig, workspace: &Workspace) -> Result<Policy, LoadError> {
    let mut files = config.user_files.clone();
    let place = workspace.root().join(WORKSPACE_POLICY).display().to_string();
    match workspace.read(Path::new(WORKSPACE_POLICY), MAX_POLICY_BYTES) {
        Ok(bytes) => files.push(RuleFile {
            origin: Origin { file: place, scope: Scope::Workspace },
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A rule file that cannot be read must not mean "no rules".
        Err(e) => return Err(LoadError { problems: vec![format!("{place}: cannot read it: {e}")] }),
    }
    let policy = Policy::load(&config.settings, &config.config_file, &files)?;
    for warning in policy.warnings() {
        tracing::warn!("{warning}");
    }
    Ok(policy)
}

/// The session's gate over `policy`, auditing to the config's log.
pub(crate) fn gate(policy: Policy, config: &PolicyConfig, workspace: &Workspace) -> Arc<Gate> {
    let audit = config.audit_log.clone().map(|log| {
        let session = config.session_id.clone();
        Arc::new(move |event: &PolicyEvent| {
            let record = PolicyRecord(PolicyEvent { command: redact_line(&event.command), ..event.clone() });
            if let Err(e) = log.append(&session, &record) {
                tracing::warn!(error = %e, "the policy decision could not be written to the audit log");
            }
        }) as clix_policy::AuditSink
    });
    let options = GateOptions { approver: config.approver.clone(), audit };
    let files = Files::new(PolicyView((**workspace).clone()));
    let ctx = Context::new(workspace.root(), clix_shell::shell_home()).with_files(files);
    Arc::new(Gate::new(Arc::new(policy), ctx, options))
}

/// The workspace as the policy looks at it, through the handle: `rm -rf *`
/// reaches the hook and the exec-time check expanded, so the policy lists
/// the folder to know it was all of it; `bash wipe.sh` is judged on the
/// script's text.
struct PolicyView(clix_shell::Folder);

/// Scripts larger than this are judged as they run, command by command.
const MAX_SCRIPT_BYTES: u64 = 256 * 1024;

impl WorkspaceFiles for PolicyView {
    fn entries(&self, folder: &Path) -> Option<Vec<String>> {
        self.0.read_dir(folder).ok().map(|entries| entries.into_iter().map(|(name, _)| name).collect())
    }

    fn script(&self, file: &Path) -> Option<String> {
        let bytes = self.0.read(file, MAX_SCRIPT_BYTES).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// A `kind: "policy"` audit line: the decision, its command's
/// secret-looking words already hidden.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct PolicyRecord(PolicyEvent);

impl Record for PolicyRecord {
    const KIND: &'static str = "policy";
}

/// The gate as the sandbox asks it about every program that starts inside
/// (clix-sandbox's exec-time check).
pub(crate) struct ExecGate(pub(crate) Arc<Gate>);

impl clix_sandbox::ExecJudge for ExecGate {
    fn judge(&self, exec: &clix_sandbox::Exec) -> Result<(), String> {
        self.0.admit_exec(&exec.path, &exec.argv, exec.cwd.as_deref()).map_err(|r| r.message)
    }
}

/// The gate as a capability asks it of a line that runs elsewhere (clip).
pub(crate) struct ElsewhereGate(pub(crate) Arc<Gate>);

impl clix_command::LineJudge for ElsewhereGate {
    fn admit_elsewhere(&self, line: &str) -> Result<(), String> {
        self.0.admit_elsewhere(line).map_err(|r| r.message)
    }
}

/// The gate as the shell asks it.
pub(crate) struct ShellGate(pub(crate) Arc<Gate>);

impl CommandGate for ShellGate {
    fn line_start(&self, line: &str, cwd: &std::path::Path) -> Result<(), String> {
        self.0.line_start();
        self.0.prescreen(line, Some(cwd)).map_err(|r| r.message)
    }

    fn admit(&self, argv: &[String], cwd: &std::path::Path) -> Result<(), String> {
        self.0.admit(argv, Some(cwd)).map_err(|r| r.message)
    }
}
