//! A person's home and a workspace for the agent commands' tests (`ask`,
//! `chat`, `runs`, the event stream, prompts), talking to a scripted model
//! server over real HTTP.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use clix_testkit::model_server::Server;

pub(crate) struct AgentHome {
    pub(crate) home: tempfile::TempDir,
    pub(crate) ws: tempfile::TempDir,
}

impl AgentHome {
    /// A fresh home, and a workspace holding `files` (name, bytes).
    pub(crate) fn with_files(files: &[(&str, &[u8])]) -> Self {
        let h = AgentHome { home: tempfile::tempdir().unwrap(), ws: tempfile::tempdir().unwrap() };
        for (name, bytes) in files {
            let path = h.ws.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        h
    }

    /// `clix args…` in the workspace (see [`AgentHome::clix_in`]).
    pub(crate) fn clix(&self, server: Option<&Server>, args: &[&str]) -> Command {
        self.clix_in(self.ws.path(), server, args)
    }

    /// `clix args…` with `cwd` as the working folder, the sandbox off, no
    /// session summaries (each costs one more model call; the memory tests
    /// turn them on), and `server` as the model when there is one.
    pub(crate) fn clix_in(&self, cwd: &Path, server: Option<&Server>, args: &[&str]) -> Command {
        let mut cmd = super::clix(self.home.path(), cwd, args);
        cmd.env("CLIX_SANDBOX_MODE", "off").env("CLIX_MEMORY_SUMMARIES", "false");
        if let Some(s) = server {
            cmd.env("AGENT_BASE_URL", format!("{}/v1", s.url)).env("AGENT_MODEL", "scripted");
        }
        cmd
    }

    /// `clix args…` in the workspace, run to its end off the async runtime
    /// (the scripted server runs on it).
    pub(crate) async fn output(&self, server: Option<&Server>, args: &[&str]) -> Output {
        finish(self.clix(server, args)).await
    }

    /// As [`AgentHome::output`], with `stdin` piped in.
    pub(crate) async fn output_with_stdin(&self, server: Option<&Server>, args: &[&str], stdin: &[u8]) -> Output {
        let mut cmd = self.clix(server, args);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap()
    }

    /// `clix runs list --json`'s rows.
    pub(crate) fn runs(&self) -> Vec<serde_json::Value> {
        let o = self.clix(None, &["runs", "list", "--json"]).output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap().as_array().unwrap().clone()
    }
}

/// `cmd`'s output once it has ended, waited for off the async runtime.
pub(crate) async fn finish(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}
