//! What the engine's tests share: an engine on a temporary workspace with
//! a state folder beside it (where its audit log is), how one is started,
//! and how a line is run through it.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)] // each test file uses its own part

pub(crate) mod browser;

use std::path::PathBuf;

use clix_audit::AuditLog;
use clix_engine::{Engine, EngineConfig, OsTier, SandboxSettings};

/// A temporary workspace and state folder, before an engine starts on them.
pub(crate) struct Dirs {
    pub(crate) ws: tempfile::TempDir,
    pub(crate) state: tempfile::TempDir,
}

/// An engine and the folders it runs on.
pub(crate) struct Fixture {
    pub(crate) ws: tempfile::TempDir,
    pub(crate) state: tempfile::TempDir,
    pub(crate) engine: Engine,
}

impl Dirs {
    pub(crate) fn new() -> Dirs {
        Dirs { ws: tempfile::tempdir().unwrap(), state: tempfile::tempdir().unwrap() }
    }

    /// The same, with `bytes` written to `name` in the workspace (its
    /// folders made).
    pub(crate) fn file(self, name: &str, bytes: impl AsRef<[u8]>) -> Dirs {
        let path = self.ws.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        self
    }

    /// The audit log in the state folder.
    pub(crate) fn audit_log(&self) -> AuditLog {
        AuditLog::new(self.state.path().join("audit.jsonl"))
    }

    /// The OS tier with `settings`, its audit lines in the state folder
    /// under `session`.
    pub(crate) fn os_tier(&self, settings: SandboxSettings, session: &str) -> OsTier {
        OsTier {
            settings,
            clix_config_dir: None,
            audit_log: Some(self.audit_log()),
            session_id: session.into(),
            env: Vec::new(),
        }
    }

    /// The shell alone on the workspace, for a test to add its parts to.
    pub(crate) fn config(&self) -> EngineConfig {
        EngineConfig::new(self.ws.path())
    }

    /// An engine of `config`, started.
    pub(crate) async fn start(self, config: EngineConfig) -> Fixture {
        let engine = Engine::new(config).await.unwrap();
        self.with(engine)
    }

    /// These folders with `engine`, started on them by the caller.
    pub(crate) fn with(self, engine: Engine) -> Fixture {
        Fixture { ws: self.ws, state: self.state, engine }
    }
}

impl Fixture {
    /// Where the audit log is.
    pub(crate) fn audit_path(&self) -> PathBuf {
        self.state.path().join("audit.jsonl")
    }

    /// `line` through the engine, raw: (stdout, stderr, exit code).
    pub(crate) async fn run(&mut self, line: &str) -> (String, String, i32) {
        run(&mut self.engine, line).await
    }
}

/// `line` through `engine`, raw: (stdout, stderr, exit code).
pub(crate) async fn run(engine: &mut Engine, line: &str) -> (String, String, i32) {
    let r = engine.run_raw(line, None).await;
    (String::from_utf8_lossy(&r.stdout).into_owned(), String::from_utf8_lossy(&r.stderr).into_owned(), r.exit_code)
}
