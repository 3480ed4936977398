//! Logging as a person turns it on: `--log-level` and `CLIX_LOG` send
//! `tracing` events to stderr (never stdout), debug lines say why each stage
//! of a line ran where it ran, the default prints none, and no secret of the
//! environment or the config file ever reaches a log line, even at trace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

use common::{Env, text};
use serde_json::json;
use support::{Reply, openai_calls, openai_text, run_call};

/// A workspace with a small Python script.
fn env() -> Env {
    Env::new().with_file("x.py", "print('x')\nprint('y here')\nprint('z')\n")
}

/// `clix args…`, with HOME so the sandbox finds the toolchains on PATH
/// (pyenv's shims, say) as a person's clix does.
fn clix(env: &Env, args: &[&str]) -> Command {
    let mut cmd = env.cmd(args);
    cmd.env("HOME", std::env::var_os("HOME").unwrap_or_default());
    cmd
}

/// Secret-named variables and a config file holding keys, all canaries.
fn with_secrets(env: &Env, cmd: &mut Command) {
    env.write_config(&format!("[agent]\napi_key = \"{FILE_CANARY}\"\n\n[memory]\napi_key = \"{MEMORY_CANARY}\"\n"));
    cmd.env("OPENAI_API_KEY", OPENAI_CANARY).env("MY_TOKEN", TOKEN_CANARY).env("CLIX_AGENT_API_KEY", AGENT_CANARY);
}

const LINE: &str = "python3 x.py | grep y";

const OPENAI_CANARY: &str = "canary-openai-3f9a41";
const TOKEN_CANARY: &str = "canary-token-c07e52";
const AGENT_CANARY: &str = "canary-agent-81d6b3";
const FILE_CANARY: &str = "canary-file-e4a20c";
const MEMORY_CANARY: &str = "canary-memory-5d7f19";

fn output(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

/// The log lines of `level` (the subscriber's `LEVEL target: …` format).
fn lines_at<'a>(stderr: &'a str, level: &str) -> Vec<&'a str> {
    let tag = format!(" {level} ");
    stderr.lines().filter(|l| l.contains(&tag)).collect()
}

/// The debug line that says where `command` runs.
fn stage<'a>(stderr: &'a str, command: &str) -> Option<&'a str> {
    let name = format!("command=\"{command}\"");
    lines_at(stderr, "DEBUG").into_iter().find(|l| l.contains("stage: where it runs") && l.contains(&name))
}

fn assert_no_canary(what: &str, shown: &str) {
    for canary in [OPENAI_CANARY, TOKEN_CANARY, AGENT_CANARY, FILE_CANARY, MEMORY_CANARY, "canary-"] {
        assert!(!shown.contains(canary), "{what}: {canary} was logged:\n{shown}");
    }
}

#[test]
fn debug_says_the_sandbox_runs_python3_and_the_shell_runs_grep() {
    let env = env();
    let o = output(clix(&env, &["run", "--log-level", "debug", LINE]));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("y here\n[exit:0 | "), "the result alone on stdout: {out}");
    assert!(!out.contains("DEBUG"), "logs never go to stdout: {out}");

    let python = stage(&err, "python3").unwrap_or_else(|| panic!("no stage line for python3:\n{err}"));
    assert!(python.contains("runs=\"sandbox\"") && python.contains("found on the sandbox's PATH"), "{python}");
    assert!(python.contains("program=\"/") && python.contains("python3\""), "which program: {python}");
    let grep = stage(&err, "grep").unwrap_or_else(|| panic!("no stage line for grep:\n{err}"));
    assert!(grep.contains("runs=\"shell\"") && grep.contains("builtin of the in-process shell"), "{grep}");

    // The sandbox's side of the same run: how it was set up, what ran.
    for event in ["sandbox layout", "sandbox limits", "seccomp filter handed to bwrap", "sandbox: finished"] {
        assert!(err.contains(event), "no {event:?} event:\n{err}");
    }
    let started = lines_at(&err, "DEBUG").into_iter().find(|l| l.contains("sandbox: starting")).unwrap_or_default();
    assert!(started.contains(r#"argv=["python3", "x.py"]"#), "{started}");
}

#[test]
fn the_default_level_prints_no_debug_lines() {
    let env = env();
    let o = output(clix(&env, &["run", LINE]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "", "warn is the default: nothing to say about a line that worked");
    // The flag wins over CLIX_LOG.
    let mut cmd = clix(&env, &["run", "--log-level", "warn", LINE]);
    cmd.env("CLIX_LOG", "debug");
    assert_eq!(text(&output(cmd).stderr), "");
}

#[test]
fn clix_log_opens_the_sandbox_alone() {
    let env = env();
    let mut cmd = clix(&env, &["run", LINE]);
    cmd.env("CLIX_LOG", "clix_sandbox=debug");
    let o = output(cmd);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let debug = lines_at(&err, "DEBUG");
    assert!(debug.iter().any(|l| l.contains("sandbox limits")), "{err}");
    assert!(debug.iter().any(|l| l.contains("seccomp filter")), "{err}");
    assert!(debug.iter().all(|l| l.contains(" clix_sandbox::")), "only the sandbox's events:\n{err}");
    assert!(stage(&err, "python3").is_none(), "the engine's events stay off:\n{err}");
    assert_eq!(err.lines().count(), debug.len(), "nothing but those debug lines:\n{err}");

    // A filter that does not parse says so, and clix goes on at warn.
    let mut cmd = clix(&env, &["run", LINE]);
    cmd.env("CLIX_LOG", "clix_sandbox=loud");
    let o = output(cmd);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(" WARN ") && err.contains("CLIX_LOG") && err.contains("using warn"), "{err}");
    assert!(lines_at(&err, "DEBUG").is_empty(), "{err}");
}

#[test]
fn mcp_keeps_stdout_for_mcp_at_trace() {
    let env = env();
    let mut cmd = clix(&env, &["mcp", "--log-level", "trace"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"command": LINE}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    while replies.len() < 2 {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server stopped early: {replies:?}");
        replies.push(line);
    }
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    for reply in &replies {
        let parsed: serde_json::Value =
            serde_json::from_str(reply).unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {reply}"));
        assert_eq!(parsed["jsonrpc"], "2.0", "{reply}");
    }
    assert!(replies[1].contains("y here"), "{replies:?}");
    assert!(stage(&err, "python3").is_some_and(|l| l.contains("runs=\"sandbox\"")), "the log went to stderr:\n{err}");
}

#[test]
fn no_secret_reaches_the_log_of_a_run_at_trace() {
    let env = env();
    // A python3 stage in the sandbox, then a line with no hub and no memory in it.
    for line in [LINE, "echo plain | wc -l"] {
        let mut cmd = clix(&env, &["run", "--log-level", "trace", line]);
        with_secrets(&env, &mut cmd);
        let o = output(cmd);
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert_eq!(o.status.code(), Some(0), "{out}{err}");
        assert!(!lines_at(&err, "DEBUG").is_empty(), "the log was on: {err}");
        assert_no_canary(line, &format!("{out}{err}"));
    }
}

#[tokio::test]
async fn no_secret_reaches_the_log_of_an_agent_at_trace() {
    for (flag, clix_log) in [(Some("trace"), None), (None, Some("trace"))] {
        // A rate limit first (a retry to log), then a python3 call, then the answer.
        let server = support::start(vec![
            // A server that quotes the key back: the message is shown, the key is not.
            Reply::Status(
                429,
                vec![("retry-after", "0".into())],
                format!(r#"{{"error":{{"message":"slow down, {OPENAI_CANARY}"}}}}"#),
            ),
            openai_calls(&[("run", &run_call(LINE))], 10, 5),
            openai_text("done", 20, 3),
        ])
        .await;
        let env = env();
        let mut args = vec!["ask"];
        if let Some(level) = flag {
            args.extend(["--log-level", level]);
        }
        args.push("find y in x.py");
        let mut cmd = clix(&env, &args);
        with_secrets(&env, &mut cmd);
        cmd.env("CLIX_MEMORY_SUMMARIES", "false")
            .env("AGENT_BASE_URL", format!("{}/v1", server.url))
            .env("AGENT_MODEL", "scripted");
        if let Some(filter) = clix_log {
            // Every crate at trace, dependencies too (HTTP, TLS): still no key.
            cmd.env("CLIX_LOG", filter);
        }
        let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert_eq!(o.status.code(), Some(0), "{out}{err}");
        assert_eq!(out, "done\n");

        // The control: the key was used, and the log was on.
        let requests = server.requests();
        let auth = requests[0].headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.clone());
        assert_eq!(auth, Some(format!("Bearer {OPENAI_CANARY}")));
        assert!(err.contains("model call failed; retrying") && err.contains("retry_after_ms=0"), "{err}");
        assert!(err.contains("slow down, ***"), "the server's message, its key hidden: {err}");
        let python = stage(&err, "python3").unwrap_or_else(|| panic!("no stage line for python3:\n{err}"));
        assert!(python.contains("runs=\"sandbox\""), "{python}");

        assert_no_canary(&format!("ask with {flag:?} {clix_log:?}"), &format!("{out}{err}"));
    }
}
