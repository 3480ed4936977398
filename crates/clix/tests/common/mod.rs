//! What the binary's integration tests share: the real `clix`, started with
//! a cleared environment, its own `CLIX_HOME` and a workspace as cwd.
#![allow(dead_code)]

pub(crate) mod agent_home;
pub(crate) mod differ;
pub(crate) mod mcp_http;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

/// `clix args…` in `ws`, with only PATH and `CLIX_HOME` set and stdin closed.
pub(crate) fn clix(home: &Path, ws: &Path, args: &[&str]) -> Command {
    clix_testkit::clix_command(Path::new(env!("CARGO_BIN_EXE_clix")), home, ws, args)
}

/// Runs `cmd` to its end with stdout and stderr thrown away, and returns its
/// exit code (`None` when a signal ended it) and the peak resident memory, in
/// MiB, of the process and of the children it waited for (`ru_maxrss` from
/// `wait4`; std's wait cannot give it).
pub(crate) fn peak_rss_mib(mut cmd: Command) -> (Option<i32>, u64) {
    #[allow(clippy::zombie_processes)] // reaped by wait_with_peak_rss
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    let (code, kib) = clix_testkit::wait_with_peak_rss(child.id());
    (code, kib / 1024)
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A person's clix for one test: its own `CLIX_HOME` and a workspace, both
/// temporary, and the ways the tests start it there.
pub(crate) struct Env {
    /// `CLIX_HOME`: config, data and state.
    pub(crate) home: tempfile::TempDir,
    /// The workspace, clix's cwd.
    pub(crate) ws: tempfile::TempDir,
}

impl Env {
    pub(crate) fn new() -> Env {
        Env { home: tempfile::tempdir().unwrap(), ws: tempfile::tempdir().unwrap() }
    }

    /// The same, with `text` written to `name` in the workspace.
    pub(crate) fn with_file(self, name: &str, text: &str) -> Env {
        let path = self.ws.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    /// `clix args…` here, not yet started.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        clix(self.home.path(), self.ws.path(), args)
    }

    /// `clix args…` here, run to its end.
    pub(crate) fn output(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `clix args…` here with `vars` set too.
    pub(crate) fn output_with_vars(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        self.cmd(args).envs(vars.iter().copied()).output().unwrap()
    }

    /// `clix args…` here with `stdin` piped in.
    pub(crate) fn output_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child =
            self.cmd(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    }

    /// `clix run --raw LINE`: (stdout, stderr, exit code).
    pub(crate) fn run(&self, line: &str) -> (String, String, i32) {
        let o = self.output(&["run", "--raw", line]);
        (text(&o.stdout), text(&o.stderr), o.status.code().unwrap_or(-1))
    }

    /// The person's config file.
    pub(crate) fn config_file(&self) -> PathBuf {
        self.home.path().join("config.toml")
    }

    pub(crate) fn write_config(&self, text: &str) {
        std::fs::write(self.config_file(), text).unwrap();
    }

    /// The audit log's lines of `kind` (`policy`, `mcp`, `hub`, …).
    pub(crate) fn audit(&self, kind: &str) -> Vec<serde_json::Value> {
        let log = std::fs::read_to_string(self.home.path().join("state/audit.jsonl")).unwrap_or_default();
        log.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["kind"] == kind)
            .collect()
    }
}

/// `clix WORDS` (WORDS as a shell reads them) with `inner`'s environment,
/// inside a pseudo-terminal that `script` (util-linux) provides, in `cwd`,
/// with `TERM` set to `term`; every stream piped.
pub(crate) fn clix_in_a_terminal(inner: &Command, words: &str, cwd: &Path, term: &str) -> Child {
    let env: Vec<_> = inner.get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))).collect();
    let line = format!("{} {words}", env!("CARGO_BIN_EXE_clix"));
    Command::new("script")
        .args(["-qc", &line, "/dev/null"])
        .env_clear()
        .envs(env)
        .env("TERM", term)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs")
}

/// A child's stdout read as it comes (a terminal session under `script`):
/// a test that must type only after something is shown waits for it to
/// show, not for a fixed time.
pub(crate) struct Screen {
    seen: Arc<Mutex<Vec<u8>>>,
    reader: std::thread::JoinHandle<()>,
}

impl Screen {
    /// Takes `child`'s stdout (it must be piped) and reads it until it closes.
    pub(crate) fn watch(child: &mut Child) -> Screen {
        let mut out = child.stdout.take().expect("a piped stdout");
        let seen: Arc<Mutex<Vec<u8>>> = Arc::default();
        let store = Arc::clone(&seen);
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = out.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                store.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        Screen { seen, reader }
    }

    /// What was shown so far.
    pub(crate) fn text(&self) -> String {
        text(&self.seen.lock().unwrap())
    }

    /// All that was shown, once the child has ended.
    pub(crate) fn finish(self) -> String {
        let Screen { seen, reader } = self;
        reader.join().unwrap();
        text(&seen.lock().unwrap())
    }
}

/// An eval's scripted model: counts with the run tool when it is offered,
/// then answers; with any other tool set it answers without looking (and
/// is wrong).
pub(crate) fn counting_eval_model(body: &serde_json::Value) -> clix_testkit::model_server::Reply {
    use clix_testkit::model_server::{openai_calls, openai_text};
    let offers_run = body["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "run");
    let answered = body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
    match (offers_run, answered) {
        (true, false) => openai_calls(&[("run", r#"{"command": "grep -c ERROR app.log"}"#)], 40, 4),
        (true, true) => openai_text("2", 60, 1),
        (false, _) => openai_text("5", 30, 1),
    }
}
