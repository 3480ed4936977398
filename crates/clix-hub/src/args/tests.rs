//! argv mapping, command-line parsing and usage, table-driven.

use serde_json::{Value, json};

use super::*;
use crate::manifest;

fn log_search() -> Manifest {
    manifest::from_value(&json!({
        "name": "log-search",
        "version": "1.0.0",
        "description": "Search log files for a keyword.",
        "command": "./log-search",
        "parameters": [
            {"name": "keyword", "type": "string", "required": true, "description": "Word to find."},
            {"name": "since", "type": "string"},
            {"name": "limit", "type": "integer", "default": 100},
            {"name": "level", "type": "enum", "values": ["error", "warn", "info"]},
            {"name": "verbose", "type": "boolean"},
            {"name": "tag", "type": "array"},
            {"name": "ratio", "type": "number"},
            {"name": "path", "type": "string", "positional": true},
            {"name": "more", "type": "array", "positional": true}
        ],
        "examples": ["log-search --keyword timeout --limit 50"]
    }))
    .expect("valid manifest")
}

fn obj(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().expect("object").clone()
}

#[test]
fn json_arguments_map_to_argv() {
    let m = log_search();
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"keyword": "timeout"}), vec!["--keyword", "timeout", "--limit", "100"]),
        // declared order, not the order given
        (
            json!({"limit": 5, "keyword": "x", "since": "2024-01-01T00:00:00Z"}),
            vec!["--keyword", "x", "--since", "2024-01-01T00:00:00Z", "--limit", "5"],
        ),
        (json!({"keyword": "x", "verbose": true}), vec!["--keyword", "x", "--limit", "100", "--verbose"]),
        (json!({"keyword": "x", "verbose": false}), vec!["--keyword", "x", "--limit", "100"]),
        (
            json!({"keyword": "x", "tag": ["a", "b", 3]}),
            vec!["--keyword", "x", "--limit", "100", "--tag", "a", "--tag", "b", "--tag", "3"],
        ),
        (json!({"keyword": "x", "tag": []}), vec!["--keyword", "x", "--limit", "100"]),
        (json!({"keyword": "x", "level": "warn"}), vec!["--keyword", "x", "--limit", "100", "--level", "warn"]),
        (json!({"keyword": "x", "ratio": 0.5}), vec!["--keyword", "x", "--limit", "100", "--ratio", "0.5"]),
        (json!({"keyword": "x", "ratio": 2}), vec!["--keyword", "x", "--limit", "100", "--ratio", "2"]),
        // null is "not given": the default applies
        (json!({"keyword": "x", "limit": null}), vec!["--keyword", "x", "--limit", "100"]),
        // positionals after the flags, in declared order; the positional array takes the rest
        (
            json!({"more": ["b.log", "c.log"], "path": "a.log", "keyword": "x"}),
            vec!["--keyword", "x", "--limit", "100", "a.log", "b.log", "c.log"],
        ),
    ];
    for (args, want) in cases {
        let got = build_argv(&m, &obj(args.clone())).unwrap_or_else(|e| panic!("{args}: {e}"));
        assert_eq!(got, want, "args {args}");
    }
}

#[test]
fn json_arguments_are_checked() {
    let m = log_search();
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "missing required --keyword"),
        (json!({"keyword": null}), "missing required --keyword"),
        (json!({"keyword": "x", "limt": 3}), "unknown parameter --limt (did you mean --limit?)"),
        (json!({"keyword": "x", "bogus": 1}), "unknown parameter --bogus"),
        (json!({"keyword": 5}), "--keyword: expected a string, found an integer 5"),
        (json!({"keyword": "x", "limit": "50"}), "--limit: expected an integer, found a string \"50\""),
        (json!({"keyword": "x", "limit": 1.5}), "--limit: expected an integer, found a number 1.5"),
        (json!({"keyword": "x", "verbose": "yes"}), "--verbose: expected a boolean"),
        (json!({"keyword": "x", "ratio": "half"}), "--ratio: expected a number"),
        (json!({"keyword": "x", "level": "debug"}), "--level: `debug` is not one of: error, warn, info"),
        (json!({"keyword": "x", "level": 1}), "--level: expected one of: error, warn, info"),
        (json!({"keyword": "x", "tag": "a"}), "--tag: expected an array"),
        (
            json!({"keyword": "x", "tag": [["a"]]}),
            "--tag: an item: expected a string, number or boolean, found an array",
        ),
    ];
    for (args, want) in cases {
        let err = build_argv(&m, &obj(args.clone())).expect_err(&args.to_string());
        assert!(err.to_string().starts_with(want), "args {args}: got `{err}`, want `{want}`");
    }
}

fn argv_of(m: &Manifest, line: &[&str]) -> Result<Vec<String>, ArgError> {
    let words: Vec<String> = line.iter().map(|w| w.to_string()).collect();
    let args = parse_command_line(m, &words)?;
    build_argv(m, &args)
}

#[test]
fn command_lines_map_to_argv() {
    let m = log_search();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (vec!["--keyword", "timeout", "--limit", "50"], vec!["--keyword", "timeout", "--limit", "50"]),
        (vec!["--keyword=timeout", "--limit=50"], vec!["--keyword", "timeout", "--limit", "50"]),
        (vec!["--limit", "-5", "--keyword", "x"], vec!["--keyword", "x", "--limit", "-5"]),
        (vec!["--keyword", "x", "--verbose"], vec!["--keyword", "x", "--limit", "100", "--verbose"]),
        (vec!["--keyword", "x", "--verbose=false"], vec!["--keyword", "x", "--limit", "100"]),
        (
            vec!["--tag", "a", "--keyword", "x", "--tag", "b"],
            vec!["--keyword", "x", "--limit", "100", "--tag", "a", "--tag", "b"],
        ),
        (vec!["--keyword", "x", "--ratio", "0.25"], vec!["--keyword", "x", "--limit", "100", "--ratio", "0.25"]),
        (
            vec!["a.log", "--keyword", "x", "b.log", "c.log"],
            vec!["--keyword", "x", "--limit", "100", "a.log", "b.log", "c.log"],
        ),
        // `--` ends the flags: a value starting with a dash is a positional
        // a positional that looks like an option reaches the tool after `--`
        (vec!["--keyword", "x", "--", "--verbose"], vec!["--keyword", "x", "--limit", "100", "--", "--verbose"]),
        // a positional may also be named
        (
            vec!["--path", "a.log", "--keyword", "x", "b.log"],
            vec!["--keyword", "x", "--limit", "100", "a.log", "b.log"],
        ),
        (vec!["--keyword", "x", "--level", "info"], vec!["--keyword", "x", "--limit", "100", "--level", "info"]),
    ];
    for (line, want) in cases {
        let got = argv_of(&m, &line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert_eq!(got, want, "line {line:?}");
    }
}

/// The grammar's own table is `clix_command::flags::typed`'s; these are
/// the errors a hub tool's command line gives, as the model reads them.
#[test]
fn command_line_errors() {
    let m = log_search();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "missing required --keyword"),
        (vec!["--keywrd", "x"], "unknown parameter --keywrd (did you mean --keyword?)"),
        (
            vec!["--nothing-like-it"],
            "unknown parameter --nothing-like-it (its parameters: --keyword, --since, --limit, --level, --verbose, \
             --tag, --ratio, --path, --more, --json)",
        ),
        (vec!["-k", "x"], "unknown option -k (parameters are --name; put -- before a value that starts with -)"),
        (vec!["--keyword"], "--keyword needs a value (string)"),
        (vec!["--keyword", "x", "--limit", "fifty"], "--limit: expected an integer, got `fifty`"),
        (vec!["--keyword", "x", "--ratio", "NaN"], "--ratio: expected a number, got `NaN`"),
        (
            vec!["--keyword", "x", "--verbose=maybe"],
            "--verbose: a boolean flag takes no value (or =true / =false), got `maybe`",
        ),
        (vec!["--keyword", "x", "--level", "debug"], "--level: `debug` is not one of: error, warn, info"),
        (vec!["--keyword", "x", "--json", "{\"limit\": \"5\"}"], "--limit: expected an integer, found a string \"5\""),
        (vec!["--keyword", "x", "--json", "{\"bogus\": 1}"], "unknown parameter --bogus"),
    ];
    for (line, want) in cases {
        let got = argv_of(&m, &line).unwrap_err().to_string();
        assert!(got.starts_with(want), "line {line:?}: got `{got}`, want `{want}`");
    }
    assert_eq!(argv_of(&m, &["--help"]), Err(ArgError::Help));
    assert_eq!(argv_of(&m, &["--keyword", "x", "-h"]), Err(ArgError::Help));
    // Given twice, the later value wins, as in every command's grammar.
    assert_eq!(
        argv_of(&m, &["--keyword", "a", "--keyword", "b"]),
        Ok(vec!["--keyword".into(), "b".into(), "--limit".into(), "100".into()])
    );
    // JSON arguments on the tool's own line, the flags given too winning.
    assert_eq!(
        argv_of(&m, &["--json", "{\"keyword\": \"j\", \"limit\": 7}", "--limit", "8"]),
        Ok(vec!["--keyword".into(), "j".into(), "--limit".into(), "8".into()])
    );
}

#[test]
fn extra_bare_words_are_refused() {
    let m = manifest::from_value(&json!({
        "name": "t", "version": "1", "description": "d", "command": "t",
        "parameters": [{"name": "file", "type": "string", "positional": true}]
    }))
    .unwrap();
    assert_eq!(argv_of(&m, &["a"]), Ok(vec!["a".to_string()]));
    assert_eq!(argv_of(&m, &["a", "b"]).unwrap_err().to_string(), "unexpected argument `b`");
    assert_eq!(argv_of(&m, &[]), Ok(vec![]));
}

const HOSTILE: &[&str] = &[
    "; rm -rf /",
    "$(rm -rf /)",
    "`rm -rf /`",
    "a\nrm -rf /",
    "x && reboot",
    "| cat /etc/shadow",
    "'\"\\",
    "${HOME}",
    "*",
    "> /etc/passwd",
];

#[test]
fn hostile_values_stay_literal() {
    let m = log_search();
    for v in HOSTILE {
        // as JSON arguments
        let argv = build_argv(&m, &obj(json!({"keyword": v, "tag": [v], "path": v}))).unwrap();
        assert_eq!(argv, vec!["--keyword", v, "--limit", "100", "--tag", v, v], "value {v:?}");
        // as a command line (the words after the tool's name, already split by the shell layer)
        let argv = argv_of(&m, &["--keyword", v, "--tag", v, "--", v]).unwrap();
        assert_eq!(argv, vec!["--keyword", v, "--limit", "100", "--tag", v, v], "value {v:?}");
        let argv = argv_of(&m, &[&format!("--keyword={v}")]).unwrap();
        assert_eq!(argv[1], *v);
    }
}

/// The argv reaches a real program unchanged: no shell re-reads it.
/// (The test runs a program; the crate itself never does.)
#[test]
fn hostile_values_reach_a_program_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let m = log_search();
    let mut values: Vec<String> = HOSTILE.iter().map(|s| s.to_string()).collect();
    values.push(format!("; touch {}", marker.display()));
    values.push(format!("$(touch {})", marker.display()));
    for v in &values {
        let argv = build_argv(&m, &obj(json!({"keyword": v}))).unwrap();
        let out = std::process::Command::new("printf").arg("%s\\0").args(&argv).output().expect("printf runs");
        let got: Vec<&[u8]> = out.stdout.split(|b| *b == 0).filter(|s| !s.is_empty()).collect();
        assert_eq!(got[1], v.as_bytes(), "value {v:?}");
    }
    assert!(!marker.exists(), "a value was run by a shell");
}

#[test]
fn usage_lists_parameters_types_defaults_and_examples() {
    let text = usage(&log_search());
    let want = "\
usage: log-search --keyword <string> [--since <string>] [--limit <integer>] [--level <error|warn|info>] [--verbose] \
[--tag <string>...] [--ratio <number>] [<path>] [<more>...]
Search log files for a keyword.

parameters:
  --keyword <string>         string, required. Word to find.
  --since <string>           string
  --limit <integer>          integer, default 100
  --level <error|warn|info>  one of error, warn, info
  --verbose                  boolean flag
  --tag <string>             array of string, repeat the flag
  --ratio <number>           number
  <path>                     string
  <more>...                  array of string, the remaining words
  --json <object>            the arguments (or some of them) as one JSON object; flags given too take precedence

examples:
  log-search --keyword timeout --limit 50
";
    assert_eq!(text, want);
}

#[test]
fn usage_of_a_tool_without_parameters() {
    let m = manifest::from_value(
        &json!({"name": "now", "version": "1", "description": "Print the time.", "command": "date"}),
    )
    .unwrap();
    assert_eq!(usage(&m), "usage: now\nPrint the time.\n");
}
