//! The subcommands of `memory`, `hub` and `sandbox` read their words by one
//! grammar: `--` ends options, `-k` is a keyword and `-n` a count wherever
//! they exist, `--help` anywhere shows the usage, `--json` where output can
//! be JSON, and an unknown option is exit 2 with what to do and the usage.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::sync::Arc;
use std::time::Duration;

use clix_engine::{EngineConfig, OsTier, SandboxSettings};

mod support;
use clix_memory::Location;
use clix_memory::MemoryConfig;
use support::{Dirs, Fixture};

/// An engine with every command that has subcommands: memory, an (empty) hub and the sandbox.
async fn fixture() -> Fixture {
    let dirs = Dirs::new();
    let state = &dirs.state;
    let memory = MemoryConfig {
        location: Location::File(state.path().join("memory.sqlite")),
        topic: "proj".into(),
        session: "s1".into(),
        ..Default::default()
    };
    let hub = clix_hub::HubConfig {
        sources: Vec::new(),
        load: clix_hub::LoadOptions::default(),
        domains: Vec::new(),
        state_dir: state.path().to_path_buf(),
        self_test_ttl: Duration::from_secs(600),
        env: Arc::new(|_| None),
        audit_log: None,
        shared: None,
        session: "flags-test".into(),
    };
    let config = EngineConfig {
        os: Some(OsTier { audit_log: None, ..dirs.os_tier(SandboxSettings::default(), "flags-test") }),
        capabilities: vec![Arc::new(memory), Arc::new(hub)],
        ..dirs.config()
    };
    dirs.start(config).await
}

async fn raw(f: &mut Fixture, line: &str) -> (String, String, i32) {
    let r = f.engine.run_raw(line, None).await;
    (String::from_utf8_lossy(&r.stdout).into_owned(), String::from_utf8_lossy(&r.stderr).into_owned(), r.exit_code)
}

const MEMORY_SEARCH: &str = "memory search <query> [-t topic] [-k keyword] [-n 5] [--json]";
const HUB_SEARCH: &str = "hub search <query> [-n 5] [--json]";
const SANDBOX_RUN: &str = "sandbox run <program> [args…]";
const DASHES: &str = "(put -- before words that start with -)";

#[tokio::test]
async fn misuse_is_exit_2_with_the_problem_what_to_do_and_the_usage() {
    let mut f = fixture().await;
    let rows = [
        ("memory search -x deploy", format!("[error] memory search: unknown option -x {DASHES}. usage: {MEMORY_SEARCH}\n")),
        ("hub search -x logs", format!("[error] hub search: unknown option -x {DASHES}. usage: {HUB_SEARCH}\n")),
        ("sandbox run -x ls", format!("[error] sandbox run: unknown option -x {DASHES}. usage: {SANDBOX_RUN}\n")),
        // -k is a keyword wherever it exists; hub search has none, its count is -n.
        ("hub search logs -k 3", format!("[error] hub search: unknown option -k {DASHES}. usage: {HUB_SEARCH}\n")),
        (
            "hub search logs -n lots",
            format!("[error] hub search: -n needs a number of at least 1, not \"lots\". usage: {HUB_SEARCH}\n"),
        ),
        ("memory search deploy -k", format!("[error] memory search: -k needs a value. usage: {MEMORY_SEARCH}\n")),
        ("hub info", "[error] hub info: usage: hub info <tool> [--json]\n".into()),
        ("hub info a b", "[error] hub info: usage: hub info <tool> [--json]\n".into()),
        ("memory recent -k x", "[error] memory recent: unknown option -k (put -- before words that start with -). usage: memory recent [n] [-t topic] [--json]\n".into()),
        ("sandbox status --json", format!("[error] sandbox status: unknown option --json {DASHES}. usage: sandbox status\n")),
    ];
    for (line, want) in rows {
        let (out, err, code) = raw(&mut f, line).await;
        assert_eq!((out.as_str(), err.as_str(), code), ("", want.as_str(), 2), "{line}");
    }
}

#[tokio::test]
async fn double_dash_ends_options_in_every_command() {
    let mut f = fixture().await;
    let rows = [
        ("memory store -- -v means verbose", "stored #1 (note, topic proj)\n"),
        ("memory search -- -v --json", "#1 [proj · note · "),
        ("hub search -- -n", "(no tool matches; try other words, or hub list)\n"),
        ("sandbox run -- echo -n x", "x"),
        // A program's own flags are its own, with or without `--`.
        ("sandbox run echo -n --json", "--json"),
        ("sandbox bash 'echo \"$1\"' --help", "--help\n"),
    ];
    for (line, want) in rows {
        let (out, err, code) = raw(&mut f, line).await;
        assert!(out.starts_with(want) && code == 0, "{line}: {out:?} {err:?} {code}");
    }
}

#[tokio::test]
async fn help_anywhere_before_the_operands_end_shows_the_usage() {
    let mut f = fixture().await;
    let rows = [
        ("memory search deploy --help", MEMORY_SEARCH),
        ("memory recent -t x -h", "memory recent [n] [-t topic] [--json]"),
        ("hub search logs --help", HUB_SEARCH),
        ("hub call t --help", "hub call <tool> [--json '{\"param\": value}']"),
        ("sandbox run --help", SANDBOX_RUN),
    ];
    for (line, usage) in rows {
        let (out, err, code) = raw(&mut f, line).await;
        assert_eq!(
            (out.lines().next(), err.as_str(), code),
            (Some(format!("usage: {usage}").as_str()), "", 0),
            "{line}"
        );
    }
}

#[tokio::test]
async fn json_wherever_output_can_be_json() {
    let mut f = fixture().await;
    raw(&mut f, "memory store the deploy key rotates on Friday --kind fact").await;
    raw(&mut f, "memory store deploys go through CI").await;
    let rows = [
        ("memory search deploy -k friday --json", "[1]"),
        ("memory search deploy --keyword=friday -n 1 --json", "[1]"),
        ("memory recent 1 --json", "[2]"),
        ("memory recent -n 1 --json", "[2]"),
        ("memory facts --json", "[1]"),
    ];
    for (line, ids) in rows {
        let (out, err, code) = raw(&mut f, &format!("{line} | jq -c '[.[].id]'")).await;
        assert_eq!((out.trim(), code), (ids, 0), "{line}: {err}");
    }
    for (line, field) in [("hub list --json", "tools"), ("hub check --json", "ok"), ("hub stats --json", "")] {
        let (out, err, code) = raw(&mut f, line).await;
        assert_eq!(code, 0, "{line}: {err}");
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(field.is_empty() || value.get(field).is_some(), "{line}: {out}");
    }
    let (out, _, _) = raw(&mut f, "hub check --json").await;
    let check: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((check["ok"].as_bool(), check["ready"].as_u64()), (Some(true), Some(0)), "{out}");
}
