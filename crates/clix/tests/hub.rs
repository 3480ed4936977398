//! `clix hub list|info|check` on hub folders made for the test.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::text;
use std::process::Output;

fn exe(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "#!/bin/sh\necho '[]'\n").unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

struct Env {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Env { home: tempfile::tempdir().unwrap(), ws: tempfile::tempdir().unwrap() }
    }

    fn run(&self, args: &[&str], hub_path: Option<&Path>) -> Output {
        let mut cmd = common::clix(self.home.path(), self.ws.path(), args);
        if let Some(p) = hub_path {
            cmd.env("CLIX_HUB_PATH", p);
        }
        cmd.output().unwrap()
    }
}

const GOOD: &str = r#"{"name": "log-search", "version": "1.0.0", "description": "Search logs.",
  "command": "./log-search.sh", "domain": "ops",
  "parameters": [{"name": "keyword", "type": "string", "required": true, "description": "Word to find."},
                 {"name": "limit", "type": "integer", "default": 100}],
  "examples": ["log-search --keyword timeout"]}"#;

#[test]
fn list_info_and_check_of_a_good_hub() {
    let env = Env::new();
    let hub = env.ws.path().join(".clix/hub");
    exe(&hub.join("log-search.sh"));
    write(&hub.join("log-search.json"), GOOD);
    exe(&env.home.path().join("hub/csv/q.sh"));
    write(
        &env.home.path().join("hub/csv/manifest.yaml"),
        "name: csv-query\nversion: '2'\ndescription: Query CSV.\ncommand: ./q.sh\n",
    );

    let o = env.run(&["hub", "list"], None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "log-search  1.0.0 [ops]  Search logs.\ncsv-query   2  Query CSV.\n");
    assert_eq!(text(&o.stderr), "");

    let o = env.run(&["hub", "list", "--json"], None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["tools"][0]["name"], "log-search");
    assert_eq!(v["tools"][0]["manifest"]["parameters"][1]["default"], 100);
    assert_eq!(v["tools"][1]["name"], "csv-query");
    assert_eq!(v["problems"], serde_json::json!([]));

    let o = env.run(&["hub", "info", "log-search"], None);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    assert!(out.starts_with("usage: log-search --keyword <string> [--limit <integer>]\nSearch logs.\n"), "{out}");
    assert!(
        out.contains("--limit <integer>   integer, default 100")
            && out.contains("examples:\n  log-search --keyword timeout"),
        "{out}"
    );

    let o = env.run(&["hub", "info", "nope"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("no tool `nope` (tools: log-search, csv-query)"), "{}", text(&o.stderr));

    let o = env.run(&["hub", "check"], None);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "ok: 2 tool(s), no problems\n");
}

#[test]
fn check_lists_every_problem_and_fails() {
    let env = Env::new();
    let extra = env.home.path().join("extra");
    exe(&extra.join("log-search.sh"));
    write(&extra.join("log-search.json"), GOOD);
    write(
        &extra.join("typo.toml"),
        "name = \"t\"\nversion = \"1\"\ndescription = \"d\"\ncommand = \"./t.sh\"\ntimeout = 5\n",
    );
    write(&extra.join("broken.yaml"), "name: [\n");
    let missing = env.home.path().join("missing");
    let from_env = env.home.path().join("env-hub");
    write(&from_env.join("log-search.json"), GOOD); // duplicate name (and no executable beside it)
    exe(&from_env.join("log-search.sh"));

    let args = ["hub", "check", "--hub", extra.to_str().unwrap(), "--hub", missing.to_str().unwrap()];
    let o = env.run(&args, Some(&from_env));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    let e = extra.display();
    assert!(lines[0].starts_with(&format!("{e}/broken.yaml: invalid YAML")), "{out}");
    assert_eq!(lines[1], format!("{e}/typo.toml: timeout: unknown field (fix: did you mean `timeout_ms`?)"));
    assert!(lines[2].starts_with(&format!("{e}/typo.toml: command: ")), "{out}");
    assert!(lines[3].starts_with(&format!("{}: cannot read hub folder", missing.display())), "{out}");
    assert_eq!(
        lines[4],
        format!(
            "{}/log-search.json: name: tool `log-search` is already defined by {e}/log-search.json \
             (fix: rename one of the two tools or remove one manifest)",
            from_env.display()
        )
    );
    assert_eq!(lines[5], "5 problem(s) in 4 file(s); 1 tool(s) loaded");
    assert_eq!(lines.len(), 6, "{out}");

    // list still shows the tool that loaded, and points at check
    let args = ["hub", "list", "--hub", extra.to_str().unwrap()];
    let o = env.run(&args, None);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "log-search  1.0.0 [ops]  Search logs.\n");
    assert_eq!(text(&o.stderr), "3 problem(s) in the hub's manifests: see `clix hub check`\n");
}

#[test]
fn an_empty_hub() {
    let env = Env::new();
    let o = env.run(&["hub", "list"], None);
    assert_eq!((o.status.code(), text(&o.stdout)), (Some(0), "(no tools)\n".to_string()));
    let o = env.run(&["hub", "check"], None);
    assert_eq!((o.status.code(), text(&o.stdout)), (Some(0), "ok: 0 tool(s), no problems\n".to_string()));
}
