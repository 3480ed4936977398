//! Manifest validation: the fields that load, and every kind of bad manifest
//! with the field, message and fix it reports.

use serde_json::{Value, json};

use super::{OutputFormat, ParamType};
use crate::manifest;

fn base() -> Value {
    json!({"name": "t", "version": "1.0.0", "description": "A tool.", "command": "./t"})
}

fn with(patch: Value) -> Value {
    let mut doc = base();
    for (k, v) in patch.as_object().unwrap() {
        if v.is_null() {
            doc.as_object_mut().unwrap().remove(k);
        } else {
            doc[k] = v.clone();
        }
    }
    doc
}

#[test]
fn full_manifest_loads_with_every_field() {
    let m = manifest::from_value(&json!({
        "name": "log-search",
        "version": "2.1.0",
        "description": "Search logs.",
        "command": "bin/log-search",
        "parameters": [
            {"name": "keyword", "type": "string", "required": true, "description": "Word."},
            {"name": "level", "type": "enum", "values": ["error", "warn"], "default": "error"},
            {"name": "file", "type": "string", "positional": true}
        ],
        "output": {"format": "json", "schema": {"type": "array", "items": {"type": "object"}}},
        "permissions": ["read:logs"],
        "timeout_ms": 30000,
        "cwd": "data",
        "env": {"LOG_DIR": "/var/log", "LANG": "C"},
        "domain": "ops",
        "examples": ["log-search --keyword timeout"],
        "self_test": ["--self-test", "--quick"],
        "version_args": ["version"],
        "serialize": true,
        "rate_limit": 60,
        "network": true
    }))
    .unwrap();
    assert_eq!(m.name, "log-search");
    assert_eq!(m.parameters.len(), 3);
    assert_eq!(m.parameters[1].ty, ParamType::Enum);
    assert_eq!(m.parameters[1].values, vec!["error", "warn"]);
    assert_eq!(m.parameters[1].default, Some(json!("error")));
    assert!(m.parameters[2].positional);
    assert_eq!(m.output.format, OutputFormat::Json);
    assert!(m.output.schema.is_some());
    assert_eq!(m.permissions, vec!["read:logs"]);
    assert_eq!(m.timeout_ms, Some(30000));
    assert_eq!(m.cwd.as_deref(), Some("data"));
    assert_eq!(m.env.get("LOG_DIR").map(String::as_str), Some("/var/log"));
    assert_eq!(m.domain.as_deref(), Some("ops"));
    assert_eq!(m.examples.len(), 1);
    assert_eq!(m.self_test, Some(vec!["--self-test".to_string(), "--quick".to_string()]));
    assert_eq!(m.version_args, Some(vec!["version".to_string()]));
    assert!(m.serialize && m.network);
    assert_eq!(m.rate_limit, Some(60));
}

#[test]
fn defaults_of_optional_fields() {
    let m = manifest::from_value(&base()).unwrap();
    assert!(m.parameters.is_empty());
    assert_eq!(m.output.format, OutputFormat::Json);
    assert_eq!(m.output.schema, None);
    assert_eq!(m.self_test, Some(vec!["--self-test".to_string()]));
    assert_eq!(m.version_args, Some(vec!["--version".to_string()]));
    assert!(!m.serialize && !m.network);
    assert_eq!((m.timeout_ms, m.rate_limit), (None, None));
    let m = manifest::from_value(&with(json!({"self_test": false, "version_args": false}))).unwrap();
    assert_eq!((m.self_test, m.version_args), (None, None));
}

#[test]
fn good_variants_load() {
    let cases = [
        json!({"output": {"format": "text"}}),
        json!({"output": {"schema": true}}),
        json!({"parameters": [{"name": "n", "type": "number", "default": 1.5}]}),
        json!({"parameters": [{"name": "n", "type": "number", "default": 2}]}),
        json!({"parameters": [{"name": "tags", "type": "array", "default": ["a", 1, true]}]}),
        json!({"parameters": [{"name": "a", "type": "string", "positional": true},
                              {"name": "rest", "type": "array", "positional": true}]}),
        json!({"name": "my_tool.v2"}),
    ];
    for patch in cases {
        let doc = with(patch.clone());
        if let Err(ps) = manifest::from_value(&doc) {
            panic!("{patch}: {ps:?}");
        }
    }
}

/// (patch over a good manifest, field, start of message, part of the fix)
#[test]
fn bad_manifests_report_field_message_and_fix() {
    let cases: Vec<(Value, &str, &str, &str)> = vec![
        (json!({"name": null}), "name", "missing required field", "add `name`"),
        (json!({"version": null}), "version", "missing required field", "add `version`"),
        (json!({"description": null}), "description", "missing required field", "add `description`"),
        (json!({"command": null}), "command", "missing required field", "add `command`"),
        (json!({"name": 3}), "name", "expected a string, found an integer", "quoted string"),
        (json!({"name": ""}), "name", "must not be empty", "give it a value"),
        (json!({"name": "log search"}), "name", "`log search` is not a valid command name", "letters, digits"),
        (json!({"name": "-x"}), "name", "`-x` is not a valid command name", "starting with a letter"),
        (json!({"version": 1}), "version", "expected a string, found an integer", "quoted"),
        (json!({"timeout": 5}), "timeout", "unknown field", "did you mean `timeout_ms`?"),
        (json!({"zzzzzz": 5}), "zzzzzz", "unknown field", "known fields: name, version"),
        (json!({"timeout_ms": 0}), "timeout_ms", "expected a positive integer, found an integer 0", "milliseconds"),
        (json!({"timeout_ms": "30s"}), "timeout_ms", "expected a positive integer, found a string", "milliseconds"),
        (json!({"timeout_ms": -1}), "timeout_ms", "expected a positive integer", "milliseconds"),
        (json!({"rate_limit": 1.5}), "rate_limit", "expected a positive integer", "calls per minute"),
        (json!({"rate_limit": 99999999999u64}), "rate_limit", "is too large", "at most"),
        (json!({"serialize": "yes"}), "serialize", "expected a boolean, found a string", "true or false"),
        (json!({"network": 1}), "network", "expected a boolean", "true or false"),
        (json!({"permissions": "read"}), "permissions", "expected an array of strings", "list"),
        (json!({"permissions": [1]}), "permissions[0]", "expected a string", "quoted"),
        (json!({"examples": [{}]}), "examples[0]", "expected a string, found an object", "quoted"),
        (json!({"env": ["A=1"]}), "env", "expected an object of NAME: value", "{\"NAME\""),
        (json!({"env": {"A": 1}}), "env.A", "expected a string, found an integer", "quote"),
        (json!({"env": {"1A": "x"}}), "env.1A", "is not a valid variable name", "letters"),
        (json!({"cwd": "../up"}), "cwd", "must be a folder inside the tool's folder", "without `..`"),
        (json!({"cwd": "/etc"}), "cwd", "must be a folder inside the tool's folder", "relative path"),
        (json!({"cwd": 5}), "cwd", "expected a string", "quoted"),
        (json!({"domain": ""}), "domain", "must not be empty", "give it a value"),
        (
            json!({"self_test": "--self-test"}),
            "self_test",
            "expected a list of arguments, found a string",
            "[\"--self-test\"]",
        ),
        (json!({"version_args": 3}), "version_args", "expected an array of strings", "list"),
        (json!({"output": "json"}), "output", "expected an object, found a string", "format"),
        (json!({"output": {"format": "xml"}}), "output.format", "unknown format `xml`", "\"json\""),
        (json!({"output": {"fromat": "json"}}), "output.fromat", "unknown field", "did you mean `format`?"),
        (json!({"output": {"format": "text", "schema": {}}}), "output.schema", "a schema needs JSON output", "remove"),
        (
            json!({"output": {"schema": "array"}}),
            "output.schema",
            "a JSON Schema is an object or a boolean",
            "schema object",
        ),
        (
            json!({"output": {"schema": {"type": "arry"}}}),
            "output.schema/type",
            "not a valid JSON Schema",
            "json-schema.org",
        ),
        (
            json!({"output": {"schema": {"minItems": -1}}}),
            "output.schema/minItems",
            "not a valid JSON Schema",
            "correct",
        ),
        (json!({"output": {"schema": {"pattern": "("}}}), "output.schema", "", "correct the schema"),
        (json!({"parameters": {}}), "parameters", "expected an array of parameters, found an object", "list"),
        (json!({"parameters": ["keyword"]}), "parameters[0]", "expected a parameter object, found a string", "name"),
        (json!({"parameters": [{"type": "string"}]}), "parameters[0].name", "missing required field", "add `name`"),
        (json!({"parameters": [{"name": "k"}]}), "parameters[0].type", "missing required field", "add `type`"),
        (
            json!({"parameters": [{"name": "k", "type": "str"}]}),
            "parameters[0].type",
            "unknown type `str`",
            "string, integer",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "strng"}]}),
            "parameters[0].type",
            "unknown type `strng`",
            "did you mean \"string\"?",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "string", "requried": true}]}),
            "parameters[0].requried",
            "unknown field",
            "did you mean `required`?",
        ),
        (
            json!({"parameters": [{"name": "k k", "type": "string"}]}),
            "parameters[0].name",
            "`k k` is not a valid flag name",
            "letters",
        ),
        (
            json!({"parameters": [{"name": "--k", "type": "string"}]}),
            "parameters[0].name",
            "`--k` is not a valid flag name",
            "letters",
        ),
        (
            json!({"parameters": [{"name": "help", "type": "boolean"}]}),
            "parameters[0].name",
            "`help` is reserved",
            "rename",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "string", "required": "yes"}]}),
            "parameters[0].required",
            "expected a boolean",
            "true or false",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "string"}, {"name": "k", "type": "integer"}]}),
            "parameters[1].name",
            "parameter `k` is declared twice",
            "rename",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "enum"}]}),
            "parameters[0].values",
            "an enum needs its values",
            "\"values\"",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "enum", "values": []}]}),
            "parameters[0].values",
            "an enum needs at least one value",
            "list",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "string", "values": ["a"]}]}),
            "parameters[0].values",
            "`values` only applies to enum parameters",
            "\"enum\"",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "integer", "default": "5"}]}),
            "parameters[0].default",
            "expected an integer, found a string \"5\"",
            "type integer",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "boolean", "default": 1}]}),
            "parameters[0].default",
            "expected a boolean",
            "type boolean",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "enum", "values": ["a"], "default": "b"}]}),
            "parameters[0].default",
            "`b` is not one of: a",
            "type enum",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "array", "default": "a"}]}),
            "parameters[0].default",
            "expected an array",
            "type array",
        ),
        (
            json!({"parameters": [{"name": "k", "type": "boolean", "positional": true}]}),
            "parameters[0].positional",
            "a boolean cannot be positional",
            "--flag",
        ),
        (
            json!({"parameters": [{"name": "r", "type": "array", "positional": true}, {"name": "a", "type": "string", "positional": true}]}),
            "parameters",
            "positional array `r` is not the last",
            "after every other",
        ),
    ];
    for (patch, field, message, fix) in cases {
        let doc = with(patch.clone());
        let problems = manifest::from_value(&doc).expect_err(&patch.to_string());
        let hit = problems.iter().find(|p| p.field == field && p.message.starts_with(message) && p.fix.contains(fix));
        assert!(hit.is_some(), "{patch}: want {field} / {message} / {fix}, got {problems:#?}");
    }
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let problems = manifest::from_value(&json!({
        "name": "bad name",
        "command": 5,
        "timeout_ms": 0,
        "parameters": [{"name": "k", "type": "str"}]
    }))
    .unwrap_err();
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    for f in ["name", "version", "description", "command", "timeout_ms", "parameters[0].type"] {
        assert!(fields.contains(&f), "{f} not in {fields:?}");
    }
}

#[test]
fn non_object_documents_are_refused() {
    for doc in [json!([]), json!("name"), json!(null), json!(3)] {
        let problems = manifest::from_value(&doc).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.starts_with("the manifest must be an object"), "{doc}");
    }
}

/// An unknown field at each level: a slip gets the near name, another word
/// the level's fields, and the problem names the file and the field's path.
#[test]
fn unknown_fields_at_every_level() {
    let params = "known fields: name, type, required, default, description, positional, values";
    let cases = [
        (json!({"verison": "1"}), "verison: unknown field (fix: did you mean `version`?)"),
        (json!({"colour": "red"}), "colour: unknown field (fix: known fields: name, version, description, command,"),
        (json!({"output": {"fromat": "json"}}), "output.fromat: unknown field (fix: did you mean `format`?)"),
        (json!({"output": {"colour": "red"}}), "output.colour: unknown field (fix: known fields: format, schema)"),
        (
            json!({"parameters": [{"name": "k", "type": "string", "requried": true}]}),
            "parameters[0].requried: unknown field (fix: did you mean `required`?)",
        ),
        (json!({"parameters": [{"name": "k", "type": "string", "colour": 1}]}), params),
    ];
    for (patch, want) in cases {
        let problems = manifest::from_value(&with(patch.clone())).unwrap_err();
        let shown: Vec<String> = problems.into_iter().map(|p| p.in_file("/hub/t.json").to_string()).collect();
        assert!(shown.iter().any(|s| s.starts_with("/hub/t.json: ") && s.contains(want)), "{patch}: {shown:#?}");
    }
}

/// The lists of known fields are the manifest's own fields: a field added to
/// `Manifest`, `Parameter` or `Output` and not to its list would be refused
/// as unknown.
#[test]
fn the_known_fields_are_the_manifests_fields() {
    let m = manifest::from_value(&json!({
        "name": "t", "version": "1", "description": "d", "command": "./t",
        "parameters": [{"name": "k", "type": "enum", "values": ["a"], "default": "a"}],
        "output": {"format": "json", "schema": {"type": "object"}},
        "timeout_ms": 1, "cwd": "d", "domain": "x", "rate_limit": 1
    }))
    .unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<std::collections::BTreeSet<_>>();
    let sorted = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
    let doc = serde_json::to_value(&m).unwrap();
    assert_eq!(keys(&doc), sorted(manifest::TOP_FIELDS));
    assert_eq!(keys(&doc["parameters"][0]), sorted(manifest::PARAM_FIELDS));
    assert_eq!(keys(&doc["output"]), sorted(manifest::OUTPUT_FIELDS));
}
