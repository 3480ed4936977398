//! Loading hub folders: formats, layout, command resolution, unique names,
//! and bad files that make only their own tool unavailable.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clix_hub::{HubSource, LoadOptions, load_file, load_hub};

fn exe(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "#!/bin/sh\necho '[]'\n").unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Options whose PATH is only `bin` (never the host's PATH).
fn opts(bin: &Path) -> LoadOptions {
    LoadOptions { search_path: Some(bin.as_os_str().to_owned()) }
}

const JSON: &str = r#"{
  "name": "log-search", "version": "1.0.0", "description": "Search logs.",
  "command": "./log-search.sh",
  "parameters": [
    {"name": "keyword", "type": "string", "required": true},
    {"name": "limit", "type": "integer", "default": 100},
    {"name": "level", "type": "enum", "values": ["error", "warn"]}
  ],
  "output": {"format": "json", "schema": {"type": "array"}},
  "env": {"LANG": "C"},
  "timeout_ms": 5000
}"#;

const TOML: &str = r#"
name = "log-search"
version = "1.0.0"
description = "Search logs."
command = "./log-search.sh"
timeout_ms = 5000
env = { LANG = "C" }

[[parameters]]
name = "keyword"
type = "string"
required = true

[[parameters]]
name = "limit"
type = "integer"
default = 100

[[parameters]]
name = "level"
type = "enum"
values = ["error", "warn"]

[output]
format = "json"
schema = { type = "array" }
"#;

const YAML: &str = r#"
name: log-search
version: "1.0.0"
description: Search logs.
command: ./log-search.sh
timeout_ms: 5000
env:
  LANG: C
parameters:
  - name: keyword
    type: string
    required: true
  - name: limit
    type: integer
    default: 100
  - name: level
    type: enum
    values: [error, warn]
output:
  format: json
  schema:
    type: array
"#;

#[test]
fn json_toml_and_yaml_give_the_same_manifest() {
    let dir = tempfile::tempdir().unwrap();
    exe(&dir.path().join("log-search.sh"));
    let mut loaded = Vec::new();
    for (file, text) in [("a.json", JSON), ("b.toml", TOML), ("c.yaml", YAML), ("d.yml", YAML)] {
        let path = dir.path().join(file);
        write(&path, text);
        let tool = load_file(&path, &opts(dir.path())).unwrap_or_else(|p| panic!("{file}: {p:?}"));
        assert_eq!(tool.program, fs::canonicalize(dir.path().join("log-search.sh")).unwrap());
        assert_eq!(tool.dir, fs::canonicalize(dir.path()).unwrap());
        loaded.push(tool.manifest);
    }
    for m in &loaded[1..] {
        assert_eq!(m, &loaded[0]);
    }
}

#[test]
fn command_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let hub = dir.path().join("hub");
    let bin = dir.path().join("bin");
    exe(&hub.join("tools/run.sh"));
    exe(&hub.join("local-tool"));
    exe(&bin.join("on-path"));
    exe(&dir.path().join("outside.sh"));
    let abs = dir.path().join("outside.sh");
    let cases: Vec<(String, PathBuf)> = vec![
        ("./tools/run.sh".into(), hub.join("tools/run.sh")),
        ("tools/run.sh".into(), hub.join("tools/run.sh")),
        ("local-tool".into(), hub.join("local-tool")),
        ("on-path".into(), bin.join("on-path")),
        (abs.display().to_string(), abs.clone()),
    ];
    for (command, want) in cases {
        let path = hub.join("t.json");
        write(&path, &format!(r#"{{"name":"t","version":"1","description":"d","command":{command:?}}}"#));
        let tool = load_file(&path, &opts(&bin)).unwrap_or_else(|p| panic!("{command}: {p:?}"));
        assert_eq!(fs::canonicalize(&tool.program).unwrap(), fs::canonicalize(&want).unwrap(), "{command}");
    }
}

#[test]
fn bad_commands_are_reported_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let hub = dir.path().join("hub");
    let bin = dir.path().join("bin");
    write(&hub.join("plain.sh"), "#!/bin/sh\n");
    write(&bin.join("noexec"), "#!/bin/sh\n");
    fs::create_dir_all(hub.join("folder")).unwrap();
    let cases: Vec<(&str, &str, &str)> = vec![
        ("./missing.sh", "does not exist or is not a file", "relative paths start from the manifest's folder"),
        ("./folder", "does not exist or is not a file", "correct the path"),
        ("./plain.sh", "plain.sh is not executable", "chmod +x"),
        ("plain.sh", "plain.sh is not executable", "chmod +x"),
        ("noexec", "noexec is not executable", "chmod +x"),
        ("no-such-tool-anywhere", "`no-such-tool-anywhere` is not in the manifest's folder nor on PATH", "install it"),
    ];
    for (command, message, fix) in cases {
        let path = hub.join("t.json");
        write(&path, &format!(r#"{{"name":"t","version":"1","description":"d","command":{command:?}}}"#));
        let problems = load_file(&path, &opts(&bin)).expect_err(command);
        assert_eq!(problems.len(), 1, "{command}: {problems:?}");
        let p = &problems[0];
        assert_eq!((p.file.as_path(), p.field.as_str()), (path.as_path(), "command"), "{command}");
        assert!(p.message.contains(message), "{command}: {}", p.message);
        assert!(p.fix.contains(fix), "{command}: {}", p.fix);
    }
}

#[test]
fn syntax_errors_name_the_file_and_format() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("a.json", "{\"name\": ", "invalid JSON", "correct the JSON syntax"),
        ("b.toml", "name = = 1", "invalid TOML", "correct the TOML syntax"),
        ("c.yaml", "name: [unclosed", "invalid YAML", "correct the YAML syntax"),
        ("d.json", "", "invalid JSON", "correct the JSON syntax"),
    ];
    for (file, text, message, fix) in cases {
        let path = dir.path().join(file);
        write(&path, text);
        let problems = load_file(&path, &opts(dir.path())).expect_err(file);
        assert_eq!(problems[0].file, path);
        assert!(problems[0].message.starts_with(message), "{file}: {}", problems[0].message);
        assert_eq!(problems[0].fix, fix);
    }
    let path = dir.path().join("e.json");
    fs::write(&path, [0xff, 0xfe, b'{']).unwrap();
    let problems = load_file(&path, &opts(dir.path())).unwrap_err();
    assert_eq!(problems[0].message, "the manifest is not UTF-8 text");
    let path = dir.path().join("big.json");
    fs::write(&path, vec![b' '; 2 * 1024 * 1024]).unwrap();
    let problems = load_file(&path, &opts(dir.path())).unwrap_err();
    assert!(problems[0].message.contains("more than"), "{}", problems[0].message);
}

#[test]
fn a_bad_manifest_makes_only_its_tool_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let hub = dir.path().join("hub");
    exe(&hub.join("log-search.sh"));
    write(&hub.join("good.json"), JSON);
    write(&hub.join("broken.json"), "{not json");
    write(&hub.join("typed.yaml"), "name: t2\nversion: 1\ndescription: d\ncommand: ./log-search.sh\n");
    write(&hub.join("notes.txt"), "not a manifest");
    write(&hub.join(".hidden.json"), "{bad");
    // a tool in its own subfolder: only manifest.* is read there
    exe(&hub.join("csv-query/query.sh"));
    write(
        &hub.join("csv-query/manifest.toml"),
        "name = \"csv-query\"\nversion = \"1\"\ndescription = \"d\"\ncommand = \"./query.sh\"\n",
    );
    write(&hub.join("csv-query/data.json"), "[1, 2, 3]");
    let loaded = load_hub(&[HubSource::explicit(&hub)], &opts(dir.path()), None);
    let names: Vec<&str> = loaded.tools.iter().map(|t| t.manifest.name.as_str()).collect();
    assert_eq!(names, vec!["csv-query", "log-search"]);
    let problems: Vec<String> = loaded.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with(&format!("{}: invalid JSON", hub.join("broken.json").display())),
        "{}",
        problems[0]
    );
    assert_eq!(
        problems[1],
        format!(
            "{}: version: expected a string, found an integer (fix: write it as a quoted string)",
            hub.join("typed.yaml").display()
        )
    );
    assert!(loaded.get("log-search").is_some());
    assert!(loaded.get("t2").is_none());
}

#[test]
fn duplicate_names_first_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        exe(&d.join("log-search.sh"));
        write(&d.join("log-search.json"), JSON);
    }
    write(&a.join("same.yaml"), YAML);
    let loaded = load_hub(&[HubSource::explicit(&a), HubSource::explicit(&b)], &opts(dir.path()), None);
    assert_eq!(loaded.tools.len(), 1);
    assert_eq!(loaded.tools[0].manifest_path, a.join("log-search.json"));
    assert_eq!(loaded.problems.len(), 2, "{:#?}", loaded.problems);
    for (p, file) in loaded.problems.iter().zip([a.join("same.yaml"), b.join("log-search.json")]) {
        assert_eq!((p.file.as_path(), p.field.as_str()), (file.as_path(), "name"));
        assert_eq!(
            p.message,
            format!("tool `log-search` is already defined by {}", a.join("log-search.json").display())
        );
        assert!(p.fix.contains("rename one"));
    }
}

#[test]
fn a_bad_command_is_reported_beside_other_problems() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    write(&path, r#"{"name":"t","version":1,"description":"d","command":"./nope.sh"}"#);
    let problems = load_file(&path, &opts(dir.path())).unwrap_err();
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, vec!["version", "command"]);
}

#[test]
fn missing_folders() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let loaded = load_hub(&[HubSource::default_dir(&gone)], &LoadOptions::default(), None);
    assert!(loaded.tools.is_empty() && loaded.problems.is_empty());
    let loaded = load_hub(&[HubSource::explicit(&gone)], &LoadOptions::default(), None);
    assert_eq!(loaded.problems.len(), 1);
    assert!(loaded.problems[0].message.starts_with("cannot read hub folder"));
    assert_eq!(loaded.problems[0].fix, "create the folder or correct the --hub path");
    let file = dir.path().join("file");
    write(&file, "x");
    let loaded = load_hub(&[HubSource::default_dir(&file)], &LoadOptions::default(), None);
    assert_eq!(loaded.problems.len(), 1, "a file given as a hub folder is a problem");
}
