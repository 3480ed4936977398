//! The typed grammar, table-driven: words to arguments, JSON checks, errors
//! and the help's synopsis and table.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

fn param(name: &str, kind: Kind) -> Param {
    Param { name: name.into(), kind, required: false, default: None, positional: false, description: String::new() }
}

/// Every kind, a required enum, a positional and a positional array.
fn params() -> Vec<Param> {
    vec![
        Param {
            required: true,
            description: "The color.".into(),
            ..param("color", Kind::Enum(vec![json!("red"), json!("green")]))
        },
        Param { default: Some(json!(1)), ..param("times", Kind::Integer) },
        param("ratio", Kind::Number),
        param("loud", Kind::Boolean),
        param("tags", Kind::Array(Box::new(Kind::Scalar))),
        param("ids", Kind::Array(Box::new(Kind::Integer))),
        param("owner_name", Kind::String),
        param("options", Kind::Json),
        Param { positional: true, ..param("path", Kind::String) },
        Param { positional: true, ..param("more", Kind::Array(Box::new(Kind::String))) },
    ]
}

fn parsed(line: &str) -> Result<Map<String, Value>, ArgError> {
    let words: Vec<String> = line.split_whitespace().map(String::from).collect();
    parse(&params(), &words)
}

#[test]
fn words_become_typed_arguments() {
    let rows: &[(&str, Value)] = &[
        ("--color red", json!({"color": "red"})),
        ("--color=green --times 3 --ratio 2.5", json!({"color": "green", "times": 3, "ratio": 2.5})),
        ("--color red --ratio 2 --times -5", json!({"color": "red", "ratio": 2, "times": -5})),
        ("--color red --loud", json!({"color": "red", "loud": true})),
        ("--color red --loud=false", json!({"color": "red", "loud": false})),
        ("--color red --tags a --tags 3", json!({"color": "red", "tags": ["a", "3"]})),
        ("--color red --ids 1 --ids 2", json!({"color": "red", "ids": [1, 2]})),
        ("--color red --owner-name ann", json!({"color": "red", "owner_name": "ann"})),
        ("--color red --options {\"a\":[1]}", json!({"color": "red", "options": {"a": [1]}})),
        // A later value wins, as in every command's grammar.
        ("--color red --color green", json!({"color": "green"})),
        // Bare words fill the positionals; the positional array takes the rest.
        ("a.log --color red b.log c.log", json!({"color": "red", "path": "a.log", "more": ["b.log", "c.log"]})),
        ("--path a.log --color red b.log", json!({"color": "red", "path": "a.log", "more": ["b.log"]})),
        ("--color red -- --loud", json!({"color": "red", "path": "--loud"})),
        // `--json` gives arguments whole; flags given too take precedence,
        // keys the schema does not name are the caller's to judge.
        ("--json {\"color\":\"green\",\"times\":2}", json!({"color": "green", "times": 2})),
        ("--color red --json {\"color\":\"green\",\"x\":1}", json!({"color": "red", "x": 1})),
    ];
    for (line, want) in rows {
        assert_eq!(parsed(line), Ok(want.as_object().unwrap().clone()), "{line}");
    }
    assert_eq!(parsed("--color red --help"), Err(ArgError::Help));
    assert_eq!(parsed("-h"), Err(ArgError::Help));
}

#[test]
fn every_problem_names_the_flag_and_what_it_takes() {
    let rows = [
        ("--color purple", "--color: `purple` is not one of: red, green"),
        ("--times 3", "missing required --color"),
        ("--color red --times x", "--times: expected an integer, got `x`"),
        ("--color red --times 1.5", "--times: expected an integer, got `1.5`"),
        ("--color red --ratio fast", "--ratio: expected a number, got `fast`"),
        ("--color red --loud=maybe", "--loud: a boolean flag takes no value (or =true / =false), got `maybe`"),
        ("--color red --ids one", "--ids: expected an integer, got `one`"),
        ("--color red --tims 2", "unknown parameter --tims (did you mean --times?)"),
        ("--color red -t 2", "unknown option -t (parameters are --name; put -- before a value that starts with -)"),
        ("--color", "--color needs a value (one of red, green)"),
        ("--color red a b c --more", "--more needs a value (array of string)"),
        ("--json [1]", "--json takes a JSON object ({\"name\": value, ...}): found an array"),
        (
            "--json {",
            "--json takes a JSON object ({\"name\": value, ...}): not JSON: EOF while parsing an object at line 1 column 1",
        ),
        ("--json {\"times\":\"2\"}", "--times: expected an integer, found a string \"2\""),
        ("--json {\"color\":null}", "missing required --color"),
    ];
    for (line, want) in rows {
        assert_eq!(parsed(line).unwrap_err().to_string(), want, "{line}");
    }
    let zzz = parsed("--color red --zzz 2").unwrap_err().to_string();
    assert_eq!(
        zzz,
        "unknown parameter --zzz (its parameters: --color, --times, --ratio, --loud, --tags, --ids, --owner_name, \
         --options, --path, --more, --json)"
    );
}

#[test]
fn a_bare_word_no_positional_takes_is_refused() {
    let flags_only = [param("n", Kind::Integer)];
    let words = |line: &str| line.split_whitespace().map(String::from).collect::<Vec<_>>();
    let e = parse(&flags_only, &words("--n 1 extra")).unwrap_err();
    assert_eq!(e.to_string(), "unexpected argument `extra`: every parameter is a flag (--n, --json)");
    let one = [Param { positional: true, ..param("file", Kind::String) }];
    assert_eq!(parse(&one, &words("a")).unwrap(), json!({"file": "a"}).as_object().unwrap().clone());
    assert_eq!(parse(&one, &words("a b")).unwrap_err().to_string(), "unexpected argument `b`");
    assert_eq!(parse(&[], &words("--x")).unwrap_err().to_string(), "unknown parameter --x (its parameters: --json)");
}

#[test]
fn json_values_are_checked_against_their_kind() {
    let rows: &[(Kind, Value, Option<&str>)] = &[
        (Kind::String, json!(5), Some("expected a string, found an integer 5")),
        (Kind::Integer, json!("50"), Some("expected an integer, found a string \"50\"")),
        (Kind::Integer, json!(1.5), Some("expected an integer, found a number 1.5")),
        (Kind::Number, json!(2), None),
        (Kind::Boolean, json!("yes"), Some("expected a boolean, found a string \"yes\"")),
        (Kind::Scalar, json!([1]), Some("expected a string, number or boolean, found an array")),
        (Kind::Enum(vec![json!("a")]), json!("b"), Some("`b` is not one of: a")),
        (Kind::Enum(vec![json!("a")]), json!(1), Some("expected one of: a, found an integer 1")),
        (Kind::Array(Box::new(Kind::Scalar)), json!("a"), Some("expected an array, found a string \"a\"")),
        (Kind::Array(Box::new(Kind::Scalar)), json!(["a", 3, true]), None),
        (
            Kind::Array(Box::new(Kind::Integer)),
            json!([1, "x"]),
            Some("an item: expected an integer, found a string \"x\""),
        ),
        (Kind::Json, json!({"any": [null]}), None),
    ];
    for (kind, value, want) in rows {
        assert_eq!(kind.check(value).err().as_deref(), *want, "{kind:?} {value}");
    }
    let hub = [param("keyword", Kind::String)];
    let args = json!({"keyword": "x", "keywrd": 1});
    assert_eq!(
        refuse_unknown(&hub, args.as_object().unwrap()).unwrap_err().to_string(),
        "unknown parameter --keywrd (did you mean --keyword?)"
    );
}

#[test]
fn the_help_shows_types_defaults_and_required_marks() {
    assert_eq!(
        synopsis(&params()),
        "--color <red|green> [--times <integer>] [--ratio <number>] [--loud] [--tags <string>...] \
         [--ids <integer>...] [--owner_name <string>] [--options <JSON>] [<path>] [<more>...]"
    );
    let want = concat!(
        "  --color <red|green>    one of red, green, required. The color.\n",
        "  --times <integer>      integer, default 1\n",
        "  --ratio <number>       number\n",
        "  --loud                 boolean flag\n",
        "  --tags <string>        array of string, repeat the flag\n",
        "  --ids <integer>        array of integer, repeat the flag\n",
        "  --owner_name <string>  string\n",
        "  --options <JSON>       JSON\n",
        "  <path>                 string\n",
        "  <more>...              array of string, the remaining words\n",
        "  --json <object>        the arguments (or some of them) as one JSON object; flags given too take precedence\n",
    );
    assert_eq!(table(&params()), want);
}
