//! `Paths + Settings + workspace → EngineConfig`: where each capability's
//! files live and which settings it takes, written once.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use clix_audit::AuditLog;
use clix_clip::ClipConfig;
use clix_command::Capability;
use clix_config::Paths;
use clix_engine::{Engine, EngineConfig, Namespace, OsTier, PolicyConfig, SandboxMode};
use clix_hub::{HubConfig, LoadOptions, hub_sources};
use clix_mcp_client::McpConfig;
use clix_memory::{MemoryAccess, MemoryConfig, Progress};
use clix_policy::{Approver, Origin, RuleFile, Scope};
use clix_postgres::SharedStore;
use clix_skills::SkillsConfig;

use clix_common::template::Template;

use crate::prompts::{Prompt, load_prompt};
use crate::settings::{Settings, workspace_topic};

/// Which capabilities a session's engine has besides the shell (and the OS
/// tier, which `sandbox.mode` turns off). clix's own front ends have every
/// one; eval attempts and benchmarks leave some out to measure the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The `memory` command.
    pub memory: bool,
    /// The `hub` command and each ready hub tool.
    pub hub: bool,
    /// The policy's gate before every command.
    pub policy: bool,
    /// The `browser` command.
    pub browser: bool,
    /// The `clip` command (the person's `[[clip]]` environments).
    pub clip: bool,
    /// The `skill` command and the skills' level-0 list (`[skills] enabled` too).
    pub skills: bool,
    /// Each `[[mcp.server]]` of the person's config as a command.
    pub mcp: bool,
}

impl Parts {
    /// Every capability: what `clix run`, `ask`, `chat`, `mcp` and a plan's agents have.
    pub const ALL: Parts =
        Parts { memory: true, hub: true, policy: true, browser: true, clip: true, skills: true, mcp: true };
    /// The shell alone (with the OS tier unless `sandbox.mode` is off).
    pub const SHELL: Parts =
        Parts { memory: false, hub: false, policy: false, browser: false, clip: false, skills: false, mcp: false };
}

/// One session's makings: whose paths and settings, on which workspace,
/// with which parts. Cheap to build; [`Session::engine_config`] and the
/// agent methods assemble the pieces.
pub struct Session {
    /// Where the person's config, data and state live.
    pub paths: Paths,
    /// The settings in force, flags applied.
    pub settings: Settings,
    /// The folder the shell is jailed to.
    pub workspace: PathBuf,
    /// This session's name in the audit log and in the memories it stores.
    pub id: String,
    /// Which capabilities the engine has.
    pub parts: Parts,
    /// Who answers the policy's `ask`: a person at a terminal, or no one
    /// (then an `ask` is refused).
    pub approver: Option<Arc<dyn Approver>>,
    /// Who says whether a call's changes stay in `review` mode: a person at
    /// a terminal; without one, `review` cannot start.
    pub reviewer: Option<Arc<dyn clix_engine::Reviewer>>,
    /// Told `(done, total)` while memories are re-embedded for a new embedder.
    pub progress: Option<Progress>,
    /// Variables set for every program the engine's sandbox runs (a plan's
    /// agents get `clix_plan::AGENT_VAR`).
    pub program_env: Vec<(String, String)>,
    /// Where the person works inside the workspace (`clix ask`'s current
    /// folder): the project's notes are read from the root down to it.
    /// The workspace itself unless set.
    pub working_folder: PathBuf,
    /// `CLIX_HUB_PATH`, for a person's session; `None` for an isolated one.
    hub_path: Option<OsString>,
    /// A person's session reads the embedder's and the provider's keys from
    /// the process's secrets; an isolated one reads nothing of this process.
    pub(crate) reads_secrets: bool,
    /// The store of `[storage] url`, connected at the first engine and
    /// shared by every engine of this session (one connection, not one per
    /// MCP session).
    shared: OnceLock<Arc<SharedStore>>,
}

impl Session {
    /// A person's session (`clix run`, `ask`, `chat`, `mcp`, `hub`,
    /// `memory`, a plan's task): every part, `CLIX_HUB_PATH` among the hub
    /// folders, and the keys from the process's secrets.
    pub fn for_person(paths: Paths, settings: Settings, workspace: impl Into<PathBuf>) -> Session {
        Session {
            hub_path: std::env::var_os("CLIX_HUB_PATH"),
            reads_secrets: true,
            ..Session::isolated(paths, settings, workspace)
        }
    }

    /// A session that takes nothing from this process's environment (eval
    /// attempts and benchmarks, whose results must not depend on who runs
    /// them): its paths and settings only.
    pub fn isolated(paths: Paths, settings: Settings, workspace: impl Into<PathBuf>) -> Session {
        let workspace = workspace.into();
        Session {
            paths,
            settings,
            working_folder: workspace.clone(),
            workspace,
            id: session_id("cli"),
            parts: Parts::ALL,
            approver: None,
            reviewer: None,
            progress: None,
            program_env: Vec::new(),
            hub_path: None,
            reads_secrets: false,
            shared: OnceLock::new(),
        }
    }

    /// Names the session `<label>-<pid>-<start ms>` in the audit log.
    pub fn label(mut self, label: &str) -> Session {
        self.id = session_id(label);
        self
    }

    /// The session's name in the audit log and in the memories it stores.
    pub fn session_id(&self) -> &str {
        &self.id
    }

    /// Names the session exactly `id` (an eval attempt's, the same run after run).
    pub fn id(mut self, id: impl Into<String>) -> Session {
        self.id = id.into();
        self
    }

    /// Only these capabilities.
    pub fn parts(mut self, parts: Parts) -> Session {
        self.parts = parts;
        self
    }

    /// Who answers the policy's `ask`.
    pub fn approver(mut self, approver: Option<Arc<dyn Approver>>) -> Session {
        self.approver = approver;
        self
    }

    /// Who answers `review` mode's question.
    pub fn reviewer(mut self, reviewer: Option<Arc<dyn clix_engine::Reviewer>>) -> Session {
        self.reviewer = reviewer;
        self
    }

    /// Progress of re-embedding memories.
    pub fn progress(mut self, progress: Option<Progress>) -> Session {
        self.progress = progress;
        self
    }

    /// Sets `vars` for every program the engine's sandbox runs.
    pub fn program_env(mut self, vars: Vec<(String, String)>) -> Session {
        self.program_env = vars;
        self
    }

    /// Works in `folder` (inside the workspace, else the workspace's root counts).
    pub fn working_folder(mut self, folder: impl Into<PathBuf>) -> Session {
        self.working_folder = folder.into();
        self
    }

    /// The person's template for `prompt`; `None` keeps the built-in text,
    /// as an isolated session always does (its results must not depend on
    /// whose config folder it runs under).
    pub fn prompt(&self, prompt: Prompt) -> Result<Option<Template>> {
        if !self.reads_secrets {
            return Ok(None);
        }
        load_prompt(&self.paths, prompt)
    }

    /// The engine of this session.
    pub async fn engine(&self) -> Result<Engine> {
        Ok(Engine::new(self.engine_config()?).await?)
    }

    /// The engine of a plan's agent, writable only in `namespace`.
    pub async fn confined_engine(&self, namespace: Namespace) -> Result<Engine> {
        Ok(Engine::confined(self.engine_config()?, namespace).await?)
    }

    /// What this session's engine is built from.
    pub fn engine_config(&self) -> Result<EngineConfig> {
        let settings = &self.settings;
        let parts = self.parts;
        let audit = self.audit_log()?;
        Ok(EngineConfig {
            workspace: self.workspace.clone(),
            limits: settings.limits.clone(),
            present: settings.present.clone(),
            os: self.sandboxed().then(|| OsTier {
                settings: settings.sandbox.clone(),
                clix_config_dir: Some(self.paths.config_dir.clone()),
                audit_log: Some(audit.clone()),
                session_id: self.id.clone(),
                env: self.program_env.clone(),
            }),
            capabilities: self.capabilities(&audit)?,
            policy: if parts.policy { Some(self.policy_config(&audit)?) } else { None },
            run_tool_prompt: self.prompt(Prompt::RunTool)?,
            // A person's session keeps every call's changes; an isolated one
            // (eval attempts, benchmarks) measures clix without them.
            control: self.reads_secrets.then(|| clix_engine::WorkspaceControl {
                state_dir: self.paths.state_dir.clone(),
                run: self.id.clone(),
                settings: settings.checkpoints.clone(),
                mode: settings.agent.mode,
                reviewer: self.reviewer.clone(),
            }),
        })
    }

    /// The capabilities that own their commands, as this session's parts
    /// and settings turn them on, in the order their commands join.
    fn capabilities(&self, audit: &AuditLog) -> Result<Vec<Arc<dyn Capability>>> {
        let (parts, settings) = (self.parts, &self.settings);
        let mut capabilities: Vec<Arc<dyn Capability>> = Vec::new();
        if parts.memory {
            capabilities.push(Arc::new(self.memory_config(self.id.clone())));
        }
        if parts.skills && settings.skills.enabled {
            capabilities.push(Arc::new(SkillsConfig {
                person_dir: Some(self.paths.config_dir.join(clix_skills::PERSON_FOLDER)),
                level0_bytes: settings.skills.level0_bytes,
            }));
        }
        if parts.browser {
            capabilities.push(Arc::new(settings.browser.clone()));
        }
        if parts.hub {
            capabilities.push(Arc::new(self.hub_config(audit)?));
        }
        if parts.clip {
            capabilities.push(Arc::new(self.clip_config(audit)));
        }
        // Last: a server whose name another command has is reported, not added.
        if parts.mcp && !settings.mcp.server.is_empty() {
            capabilities.push(Arc::new(self.mcp_config(audit)?));
        }
        Ok(capabilities)
    }

    /// The MCP servers: the person's `[[mcp.server]]` entries (their config
    /// file only), the session's domains, the audit log; their variables
    /// read from the process's secrets and environment for a person's
    /// session, from nothing for an isolated one; their rate limits and
    /// locks where the hub keeps its own, their tool lists in the state folder.
    fn mcp_config(&self, audit: &AuditLog) -> Result<McpConfig> {
        let vars: clix_mcp_client::Vars =
            if self.reads_secrets { Arc::new(clix_config::secrets::var) } else { Arc::new(|_| None) };
        Ok(McpConfig {
            settings: self.settings.mcp.clone(),
            domains: self.settings.hub.domains.clone(),
            vars,
            audit_log: Some(audit.clone()),
            session_id: self.id.clone(),
            governance: clix_hub::Governance::new(self.paths.state_dir.clone(), self.shared_store()?),
            tool_cache: Some(self.paths.mcp_tool_lists()),
        })
    }

    fn sandboxed(&self) -> bool {
        self.settings.sandbox.mode != SandboxMode::Off
    }

    /// Every capability's audit lines go to one file in the state folder,
    /// and to the shared store when there is one.
    fn audit_log(&self) -> Result<AuditLog> {
        let log = AuditLog::new(self.paths.state_dir.join("audit.jsonl"));
        Ok(match self.shared_store()? {
            Some(store) => log.shared(store),
            None => log,
        })
    }

    /// The store every replica shares, when `[storage] url` is set (an
    /// error says why it cannot be used: unreachable, not migrated, …).
    pub fn shared_store(&self) -> Result<Option<Arc<SharedStore>>> {
        let url = self.settings.storage.url.expose();
        if url.is_empty() {
            return Ok(None);
        }
        if let Some(store) = self.shared.get() {
            return Ok(Some(store.clone()));
        }
        let store = Arc::new(SharedStore::connect(url)?);
        Ok(Some(self.shared.get_or_init(|| store).clone()))
    }

    /// The memory of this session: the store under the data folder, the
    /// topic (`memory.topic` / `--topic`, else the workspace's canonical
    /// path), the embedder settings with their key, stored memories marked
    /// with `session`.
    pub fn memory_config(&self, session: String) -> MemoryConfig {
        let settings = &self.settings.memory;
        let topic = if settings.topic.is_empty() { workspace_topic(&self.workspace) } else { settings.topic.clone() };
        let mut memory = settings.clone();
        if self.reads_secrets {
            // The key's variables left the environment at start, into the
            // secret store: resolved here, by the memory's own rule.
            memory.api_key = memory.api_key_from(clix_config::secrets::var);
        }
        MemoryConfig {
            location: self.memory_location(),
            topic,
            session,
            settings: memory,
            progress: self.progress.clone(),
            // Inside run: the session's topic and the global one; `clix memory` asks for more.
            access: MemoryAccess::Session,
        }
    }

    /// Where the memory is: the PostgreSQL database of `[storage] url`, else
    /// the SQLite file in the data folder.
    pub fn memory_location(&self) -> clix_memory::Location {
        crate::settings::storage_location(&self.paths, &self.settings)
    }

    /// The hub: the config folder's `hub/`, `hub.dirs` (or `--hub`),
    /// `CLIX_HUB_PATH`, then the workspace's `.clix/hub` (the person's own
    /// tools win over a workspace's of the same name).
    fn hub_config(&self, audit: &AuditLog) -> Result<HubConfig> {
        let hub = &self.settings.hub;
        let configured = hub.env.clone();
        Ok(HubConfig {
            sources: hub_sources(Some(&self.workspace), &self.paths.config_dir, &hub.dirs, self.hub_path.as_deref()),
            load: LoadOptions::default(),
            domains: hub.domains.clone(),
            state_dir: self.paths.state_dir.clone(),
            self_test_ttl: Duration::from_secs(hub.self_test_ttl_secs),
            env: Arc::new(move |name| configured.get(name).cloned()),
            audit_log: Some(audit.clone()),
            shared: self.shared_store()?,
            session: self.id.clone(),
        })
    }

    /// The policy: the `[policy]` section, the person's `policy.toml` beside
    /// the config file, whoever answers an `ask`, the audit log.
    fn policy_config(&self, audit: &AuditLog) -> Result<PolicyConfig> {
        let file = user_policy_file(&self.paths);
        let mut user_files = Vec::new();
        match std::fs::read_to_string(&file) {
            Ok(text) => user_files
                .push(RuleFile { origin: Origin { file: file.display().to_string(), scope: Scope::User }, text }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read the policy file {}", file.display())),
        }
        Ok(PolicyConfig {
            settings: self.settings.policy.clone(),
            config_file: self.paths.config_file.display().to_string(),
            user_files,
            approver: self.approver.clone(),
            audit_log: Some(audit.clone()),
            session_id: self.id.clone(),
        })
    }

    /// The `clip` environments: the person's `[[clip]]` entries (their
    /// config file only), the `local` kind in the session's sandbox.
    fn clip_config(&self, audit: &AuditLog) -> ClipConfig {
        ClipConfig {
            environments: self.settings.clip.clone(),
            state_dir: self.paths.state_dir.clone(),
            audit_log: Some(audit.clone()),
            session_id: self.id.clone(),
            sandbox: self.sandboxed().then(|| self.settings.sandbox.clone()),
            clix_config_dir: Some(self.paths.config_dir.clone()),
            // The engine holds a call's output to the line's memory budget.
            output_cap_bytes: 0,
        }
    }
}

/// The person's own rule file, beside `config.toml`.
pub(crate) fn user_policy_file(paths: &Paths) -> PathBuf {
    paths.config_dir.join("policy.toml")
}

/// A label for this process's calls in the audit log: `<label>-<pid>-<start ms>`.
fn session_id(label: &str) -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("{label}-{}-{ms}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn session(home: &Path, workspace: &Path) -> Session {
        let mut settings = Settings::default();
        settings.sandbox.mode = SandboxMode::Off;
        Session::isolated(Paths::at_home(home), settings, workspace)
    }

    #[test]
    fn every_capability_files_under_the_session_s_home() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let mut s = session(home.path(), ws.path());
        s.settings.sandbox.mode = SandboxMode::Bwrap;
        let config = s.engine_config().unwrap();
        let audit = home.path().join("state/audit.jsonl");
        assert_eq!(config.os.as_ref().unwrap().audit_log.as_ref().map(|l| &l.path), Some(&audit));
        assert_eq!(config.policy.as_ref().unwrap().audit_log.as_ref().map(|l| &l.path), Some(&audit));
        // The capabilities, seen as the engine holds them: memory, skills, the browser, the hub, clip.
        let capabilities: Vec<String> = config.capabilities.iter().map(|c| format!("{c:?}")).collect();
        let [memory, skills, browser, hub, clip] = capabilities.as_slice() else { panic!("{capabilities:#?}") };
        assert!(browser.starts_with("BrowserSettings"), "{browser}");
        assert!(hub.starts_with("HubConfig") && hub.contains(&format!("{audit:?}")), "{hub}");
        assert!(clip.starts_with("ClipConfig") && clip.contains(&format!("{audit:?}")), "{clip}");
        let sqlite = clix_memory::Location::File(home.path().join("data/memory.sqlite"));
        assert!(memory.starts_with("MemoryConfig") && memory.contains(&format!("{sqlite:?}")), "{memory}");
        assert!(
            skills.starts_with("SkillsConfig") && skills.contains(&format!("{:?}", home.path().join("skills"))),
            "{skills}"
        );
        // [storage] url moves the memory to the database it names.
        let url = format!("postgres://clix:pw@127.0.0.1:{}/mem", clix_testkit::free_port());
        s.settings.storage.url = url.as_str().into();
        assert_eq!(s.memory_location(), clix_memory::Location::Postgres(url.clone()));
        // An engine on a store it cannot reach is not built, and the error says which and why.
        let err = s.engine_config().expect_err("an unreachable store stops the session").to_string();
        assert!(err.contains("clix:***@127.0.0.1") && err.contains("unreachable") && !err.contains(":pw@"), "{err}");
    }

    #[test]
    fn parts_left_out_are_absent_and_sandbox_off_means_no_os_tier() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let config = session(home.path(), ws.path()).parts(Parts::SHELL).engine_config().unwrap();
        assert!(config.os.is_none() && config.capabilities.is_empty());
        assert!(config.policy.is_none());
    }

    /// `[[mcp.server]]` entries from the file become the engine's MCP part
    /// (none without entries); an isolated session gives servers no variable
    /// of this process; a bad entry stops the load with its key.
    #[test]
    fn mcp_servers_come_from_the_person_s_config_file() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let has_mcp = |s: &Session| {
            s.engine_config().unwrap().capabilities.iter().any(|c| format!("{c:?}").starts_with("McpConfig"))
        };
        assert!(!has_mcp(&session(home.path(), ws.path())));
        let paths = Paths::at_home(home.path());
        std::fs::create_dir_all(paths.config_file.parent().unwrap()).unwrap();
        std::fs::write(
            &paths.config_file,
            "[[mcp.server]]\nname = \"fx\"\ncommand = \"python3\"\nargs = [\"s.py\"]\nenv = [\"PATH\"]\ndomain = \"ops\"\n",
        )
        .unwrap();
        let settings = crate::settings::load(&paths, &[]).unwrap().value;
        let mut s = session(home.path(), ws.path());
        s.settings = settings;
        assert!(has_mcp(&s));
        let mcp = s.mcp_config(&s.audit_log().unwrap()).unwrap();
        assert_eq!(mcp.settings.server.len(), 1);
        assert_eq!(
            (mcp.settings.server[0].name.as_str(), mcp.audit_log.map(|l| l.path)),
            ("fx", Some(paths.state_dir.join("audit.jsonl")))
        );
        assert_eq!((mcp.vars)("PATH"), None, "an isolated session reads no variable of this process");
        std::fs::write(&paths.config_file, "[[mcp.server]]\nname = \"bad name\"\ncommand = \"x\"\n").unwrap();
        let err = crate::settings::load(&paths, &[]).unwrap_err().to_string();
        assert!(err.contains("mcp.server[0].name = \"bad name\""), "{err}");
    }

    #[test]
    fn the_memory_topic_is_the_workspace_s_path_unless_set() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let mut s = session(home.path(), ws.path());
        let canonical = std::fs::canonicalize(ws.path()).unwrap();
        assert_eq!(s.memory_config(String::new()).topic, canonical.to_string_lossy());
        s.settings.memory.topic = "ops".into();
        assert_eq!(s.memory_config(String::new()).topic, "ops");
    }

    #[test]
    fn the_person_s_policy_file_is_read_and_an_unreadable_one_is_an_error() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let s = session(home.path(), ws.path());
        assert!(s.engine_config().unwrap().policy.unwrap().user_files.is_empty());
        std::fs::write(home.path().join("policy.toml"), "# mine\n").unwrap();
        let files = s.engine_config().unwrap().policy.unwrap().user_files;
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].text, "# mine\n");
        std::fs::remove_file(home.path().join("policy.toml")).unwrap();
        std::fs::create_dir(home.path().join("policy.toml")).unwrap();
        let err = s.engine_config().err().unwrap().to_string();
        assert!(err.contains("cannot read the policy file"), "{err}");
    }
}
