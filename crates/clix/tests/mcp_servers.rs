//! MCP servers as commands through the real binary: `[[mcp.server]]` in the
//! config under `CLIX_HOME`, the fixture server (the Python SDK's MCPServer,
//! clix-mcp-client's tests/fixtures/server.py) in real bubblewrap, the
//! policy file, the audit log and `hub stats`, and `clix mcp import`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Env, text};

/// A config whose one server is the fixture, `marker` on its command line.
fn with_server(marker: &str) -> Env {
    let env = Env::new();
    let script = clix_testkit::mcp_fixtures().join("server.py");
    env.write_config(&format!(
        "[[mcp.server]]\nname = \"fx\"\ndescription = \"Records, paints and images of the fixture\"\n\
         command = \"python3\"\nargs = [\"{}\", \"stdio\", \"{marker}\"]\n",
        script.display()
    ));
    env
}

#[test]
fn a_configured_server_is_a_command_in_tool_def_help_and_pipes() {
    if !clix_testkit::mcp_ready("a_configured_server_is_a_command_in_tool_def_help_and_pipes") {
        return;
    }
    let marker = format!("bin-pipes-{}", std::process::id());
    let env = with_server(&marker);
    let o = env.output(&["tool-def"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let def: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let description = def["function"]["description"].as_str().unwrap();
    assert!(description.contains("  fx  Records, paints and images of the fixture"), "{description}");
    let o = env.output(&["commands", "--json"]);
    let commands: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let fx = serde_json::json!({"name": "fx", "description": "Records, paints and images of the fixture"});
    assert!(commands["tools"].as_array().unwrap().contains(&fx), "{commands}");
    let (out, _, code) = env.run("help");
    assert_eq!(code, 0);
    assert!(out.contains("MCP servers (each a command") && out.contains("  fx  Records, paints"), "{out}");

    let (out, err, code) = env.run("fx --help");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("fx: an MCP server's tools, each a subcommand (10)"), "{out}");

    let line = "fx list_records --count 30 | jq -r '.records[] | select(.status == \"closed\") | .name' | wc -l";
    let (out, err, code) = env.run(line);
    assert_eq!((out.trim(), code), ("10", 0), "{err}");

    let (out, err, code) = env.run("fx fail --message broken");
    assert_eq!((out.as_str(), code), ("", 1));
    assert!(err.contains("failed on purpose: broken"), "{err}");

    // One line per call, and hub stats counts each as `SERVER TOOL`.
    let calls = env.audit("mcp");
    let made: Vec<(&str, &str, i64)> = calls
        .iter()
        .map(|c| (c["server"].as_str().unwrap(), c["tool"].as_str().unwrap(), c["exit_code"].as_i64().unwrap()))
        .collect();
    assert_eq!(made, [("fx", "list_records", 0), ("fx", "fail", 1)]);
    assert_eq!(calls[0]["arguments"], serde_json::json!({"count": 30}));
    let o = env.output(&["hub", "stats", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows: Vec<(&str, u64, u64)> = stats
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["tool"].as_str().unwrap(), s["calls"].as_u64().unwrap(), s["ok"].as_u64().unwrap()))
        .collect();
    assert_eq!(rows, [("fx fail", 1, 0), ("fx list_records", 1, 1)]);

    // Each `clix run` started the server, and none is left now it has ended
    // (bwrap's --die-with-parent: a moment after clix's exit at most).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !clix_testkit::pids_with_cmdline(&marker).is_empty() {
        assert!(std::time::Instant::now() < deadline, "a server outlived clix run");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_policy_rule_naming_server_and_tool_blocks_the_call() {
    if !clix_testkit::mcp_ready("a_policy_rule_naming_server_and_tool_blocks_the_call") {
        return;
    }
    let env = with_server("bin-policy");
    fs::write(
        env.home.path().join("policy.toml"),
        "[[rule]]\nid = \"no-fail\"\nmatch = [\"fx\", \"fail\"]\ndecision = \"deny\"\nwhy = \"the fixture must not fail\"\n",
    )
    .unwrap();
    let (out, err, code) = env.run("fx fail --message x; echo after");
    assert_eq!((out.as_str(), code), ("", 126), "{err}");
    assert!(err.contains("denied: the fixture must not fail") && err.contains("rule `no-fail`"), "{err}");
    assert!(env.audit("mcp").is_empty(), "the refused call was not made");
    assert_eq!(env.audit("policy").len(), 1);
    let (out, err, code) = env.run("fx list_records --count 3 | jq '.records | length'");
    assert_eq!((out.as_str(), code), ("3\n", 0), "{err}");
}

/// A secret-named variable leaves clix's environment at start, into its
/// secret store: a server whose `env` names it still gets it; another
/// secret of clix's does not reach it.
#[test]
fn a_server_gets_the_secret_its_entry_names_from_the_secret_store() {
    if !clix_testkit::mcp_ready("a_server_gets_the_secret_its_entry_names_from_the_secret_store") {
        return;
    }
    let env = Env::new();
    let script = clix_testkit::mcp_fixtures().join("server.py");
    env.write_config(&format!(
        "[[mcp.server]]\nname = \"fx\"\ncommand = \"python3\"\nargs = [\"{}\"]\nenv = [\"CLIX_TEST_MCP_TOKEN\"]\n",
        script.display()
    ));
    let mut cmd = common::clix(env.home.path(), env.ws.path(), &["run", "--raw", "fx where | jq -r .result"]);
    cmd.env("CLIX_TEST_MCP_TOKEN", "tok-5ecret-value").env("CLIX_TEST_MCP_NOT_PASSED", "hidden");
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("CLIX_TEST_MCP_NOT_PASSED=- CLIX_TEST_MCP_TOKEN=tok-5ecret-value"), "{out}");
    let audit = fs::read_to_string(env.home.path().join("state/audit.jsonl")).unwrap();
    assert!(!audit.contains("tok-5ecret-value"), "{audit}");
}

/// The fixture over streamable HTTP, killed when the test ends however it ends.
struct HttpServer(std::process::Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An HTTP server is the same command through the binary (whose reqwest has
/// no default crypto provider: building the client once panicked), its
/// header's `${NAME}` filled from the secret store, never logged.
#[test]
fn an_http_server_is_a_command_and_its_header_secret_comes_from_the_store() {
    if !clix_testkit::mcp_ready("an_http_server_is_a_command_and_its_header_secret_comes_from_the_store") {
        return;
    }
    let port = clix_testkit::free_port();
    let _server = HttpServer(
        std::process::Command::new("python3")
            .args([clix_testkit::mcp_fixtures().join("server.py").to_str().unwrap(), "http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the HTTP server did not listen");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let env = Env::new();
    env.write_config(&format!(
        "[[mcp.server]]\nname = \"web\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
         headers = {{ Authorization = \"Bearer ${{CLIX_TEST_MCP_TOKEN}}\" }}\n"
    ));
    let run = |line: &str, vars: &[(&str, &str)]| {
        let mut cmd = common::clix(env.home.path(), env.ws.path(), &["run", "--raw", "--log-level", "debug", line]);
        cmd.envs(vars.iter().copied());
        cmd.output().unwrap()
    };
    let o = run("web list_records --count 4", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("needs ${CLIX_TEST_MCP_TOKEN}, which is not set"), "{}", text(&o.stderr));
    let o = run("web list_records --count 4 | jq '.records | length'", &[("CLIX_TEST_MCP_TOKEN", "tok-http-5ecret")]);
    assert_eq!((text(&o.stdout).as_str(), o.status.code()), ("4\n", Some(0)), "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("tok-http-5ecret"), "a debug log shows the header's value");
}

/// A workspace's `.clix/config.toml` is no settings layer: its server is no command.
#[test]
fn a_workspace_cannot_declare_a_server() {
    let env = Env::new();
    let script = clix_testkit::mcp_fixtures().join("server.py");
    fs::create_dir_all(env.ws.path().join(".clix")).unwrap();
    fs::write(
        env.ws.path().join(".clix/config.toml"),
        format!("[[mcp.server]]\nname = \"planted\"\ncommand = \"python3\"\nargs = [\"{}\"]\n", script.display()),
    )
    .unwrap();
    let (_, err, code) = env.run("planted --help");
    assert_eq!(code, 127, "{err}");
    let o = env.output(&["tool-def"]);
    assert!(!text(&o.stdout).contains("planted"));
}

/// The fixture's Claude-Desktop-shaped file, its `fx` entry pointing at the real server.
fn desktop_file(dir: &Path) -> PathBuf {
    let json = fs::read_to_string(clix_testkit::mcp_fixtures().join("claude_desktop_config.json")).unwrap();
    let script = clix_testkit::mcp_fixtures().join("server.py").display().to_string();
    let path = dir.join("claude_desktop_config.json");
    fs::write(&path, json.replace("FIXTURE", &script)).unwrap();
    path
}

#[test]
fn import_prints_the_entries_what_was_skipped_and_what_to_export() {
    let env = Env::new();
    let file = desktop_file(env.ws.path());
    let o = env.output(&["mcp", "import", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // The whole output is TOML: entries, then comments.
    let parsed: toml::Table = out.parse().unwrap();
    let names: Vec<&str> =
        parsed["mcp"]["server"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["filesystem", "fx", "github", "memory", "notion", "sentry", "weather"]);
    for want in [
        "# skipped \"brave search\": `brave search` cannot be a command name",
        "# skipped \"linear\": it uses the legacy SSE transport",
        "# before starting clix, export: GITHUB_PERSONAL_ACCESS_TOKEN NOTION_TOKEN",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    for secret in ["ghp_literalsecret", "ntn_literaltoken"] {
        assert!(!out.contains(secret), "{secret} written");
    }
    assert!(text(&o.stderr).contains("nothing written (add --write"), "{}", text(&o.stderr));
    assert!(!env.config_file().exists(), "without --write nothing is written");

    let o = env.output(&["mcp", "import", "/nonexistent/file.json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("cannot read /nonexistent/file.json"), "{}", text(&o.stderr));
}

#[test]
fn import_write_keeps_the_config_and_the_imported_server_runs() {
    if !clix_testkit::mcp_ready("import_write_keeps_the_config_and_the_imported_server_runs") {
        return;
    }
    let env = Env::new();
    let kept = "# my settings\n[limits]\ntimeout_secs = 45\n";
    env.write_config(kept);
    let file = desktop_file(env.ws.path());
    let o = env.output(&["mcp", "import", "--write", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("7 server(s) added to"), "{}", text(&o.stderr));
    let config = fs::read_to_string(env.config_file()).unwrap();
    assert!(config.starts_with(&format!("{kept}\n# imported from ")), "{config}");
    let o = env.output(&["config", "show", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(shown["limits.timeout_secs"]["value"], 45);

    // The imported stdio entry is a command; a second import skips what is there.
    let (out, err, code) = env.run("fx where | jq -r .result | cut -d' ' -f1");
    assert_eq!((out.trim(), code), (env.ws.path().canonicalize().unwrap().to_str().unwrap(), 0), "{err}");
    let o = env.output(&["mcp", "import", "--write", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("# skipped \"fx\": a server named `fx` is already configured"));
    assert_eq!(fs::read_to_string(env.config_file()).unwrap(), config, "nothing new to write");
}

/// `rate_limit` in the config holds across `clix run` processes (the counts
/// are in the state folder, as the hub's are), a refusal exits 75 and `hub
/// stats` counts it; `mcp search` keeps each server's tool list there, so a
/// later process searches without starting the server.
#[test]
fn rate_limits_hold_across_processes_and_search_keeps_tool_lists() {
    if !clix_testkit::mcp_ready("rate_limits_hold_across_processes_and_search_keeps_tool_lists") {
        return;
    }
    let marker = format!("bin-limits-{}", std::process::id());
    let env = with_server(&marker);
    let config = fs::read_to_string(env.config_file()).unwrap();
    env.write_config(&format!("{config}rate_limit = 2\ntools = {{ where = {{ rate_limit = 5 }} }}\n"));
    let search = |line: &str| {
        let o = common::clix(env.home.path(), env.ws.path(), &["run", "--raw", "--log-level", "debug", line])
            .output()
            .unwrap();
        (text(&o.stdout), text(&o.stderr))
    };
    let (out, err) = search("mcp search structured records");
    assert_eq!(out.lines().next(), Some("fx list_records — Lists records as structured content."), "{out}");
    assert!(err.contains("starting a stdio server"), "the first search starts fx: {err}");
    let (out, err) = search("mcp search tagged");
    assert_eq!(out.lines().next(), Some("fx paint — Paints with a color, tagged."), "{err}");
    assert!(!err.contains("starting a stdio server"), "fx was started again: {err}");

    let codes: Vec<i32> = (0..3).map(|_| env.run("fx list_records --count 1").2).collect();
    assert_eq!(codes, [0, 0, 75]);
    let (_, err, _) = env.run("fx list_records --count 1");
    assert!(err.starts_with("[error] fx list_records: RATE_LIMITED: more than 2 calls"), "{err}");
    assert_eq!(env.run("fx where").2, 0, "another tool has its own count");
    let (out, err, code) = env.run("hub stats 'fx list_records' --json | jq -c '.[0].errors'");
    assert_eq!((out.as_str(), code), ("{\"RATE_LIMITED\":2}\n", 0), "{err}");
}
