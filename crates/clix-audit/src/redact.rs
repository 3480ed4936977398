//! Secret-looking words of a command line and values of a call's
//! arguments, hidden before they are logged: one rule for every audit
//! record (the shapes themselves are `clix_common::redact_text`'s).

use clix_common::{is_secret_name, redact_text};
use serde_json::{Map, Value};

/// `argv` with secret values replaced by `***`: `NAME=value` where NAME looks
/// secret, the value after `--token`/`--password`/…, and whatever
/// [`redact_text`] hides inside a word (token shapes, a URL's password,
/// an `Authorization:` header's credential).
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = redact_words(argv);
    for (word, hidden) in out.iter_mut().zip(argv) {
        if word == hidden {
            *word = redact_text(word);
        }
    }
    out
}

/// [`redact_argv`]'s word rules alone.
fn redact_words(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for (i, arg) in argv.iter().enumerate() {
        if std::mem::take(&mut hide_next) || sets_a_browser_value(&argv[..i]) {
            out.push("***".to_string());
            continue;
        }
        let flag = arg.trim_start_matches('-');
        if let Some((key, _)) = arg.split_once('=')
            && is_secret_name(key.trim_start_matches('-'))
        {
            out.push(format!("{key}=***"));
        } else if arg.starts_with('-') && is_secret_name(flag) {
            hide_next = true;
            out.push(arg.clone());
        } else {
            out.push(arg.clone());
        }
    }
    out
}

/// Whether the next word is the value of `browser cookies set NAME VALUE`
/// or `browser storage [local|session] set KEY VALUE`: a session or a
/// token, as often as not.
fn sets_a_browser_value(before: &[impl AsRef<str>]) -> bool {
    let words: Vec<&str> = before.iter().rev().take(5).map(AsRef::as_ref).collect();
    matches!(
        words.as_slice(),
        [_, "set", "cookies", "browser", ..]
            | [_, "set", "storage", "browser", ..]
            | [_, "set", "local" | "session", "storage", "browser"]
    )
}

/// The values the `browser cookies set` and `browser storage … set`
/// commands of `line` set (quotes around one taken off): what
/// [`redact_line`] hides there, for a record that hides them wherever they
/// appear later (a trajectory, where the page or the model may repeat them).
pub fn browser_values(line: &str) -> Vec<&str> {
    let words: Vec<&str> = line.split_whitespace().collect();
    (0..words.len())
        .filter(|&i| sets_a_browser_value(&words[..i]))
        .map(|i| words[i].trim_matches(['\'', '"']))
        .collect()
}

/// A command line (a shell line, a remote path) redacted word by word as
/// [`redact_argv`] does, then as free text (an `Authorization: Bearer`
/// header split over words); its words are joined by single spaces.
pub fn redact_line(line: &str) -> String {
    let words: Vec<String> = line.split_whitespace().map(String::from).collect();
    redact_text(&redact_argv(&words).join(" "))
}

/// A call's arguments as an audit record keeps them (a hub tool's, an MCP
/// tool's): a secret-looking name's value as `***`, and every string, at
/// any depth, as [`redact_text`] leaves it.
pub fn redact_json(arguments: &Map<String, Value>) -> Map<String, Value> {
    fn value(v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(redact_text(s)),
            Value::Array(items) => Value::Array(items.iter().map(value).collect()),
            Value::Object(map) => Value::Object(redact_json(map)),
            other => other.clone(),
        }
    }
    arguments
        .iter()
        .map(|(k, v)| (k.clone(), if is_secret_name(k) { Value::String("***".into()) } else { value(v) }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_redaction_table() {
        let cases: [(&[&str], &[&str]); 8] = [
            (&["git", "status"], &["git", "status"]),
            (&["env", "API_KEY=abc", "x"], &["env", "API_KEY=***", "x"]),
            (&["tool", "--token", "abc", "--name", "n"], &["tool", "--token", "***", "--name", "n"]),
            (&["tool", "--password=pw"], &["tool", "--password=***"]),
            (&["curl", "sk-0123456789abcdef"], &["curl", "***"]),
            (&["echo", "ghp_abcdefghijklmnop", "sk-short"], &["echo", "***", "sk-short"]),
            // The word after a secret flag is hidden even at the end of a line.
            (&["login", "-p", "x", "--api-key"], &["login", "-p", "x", "--api-key"]),
            (&["mysql", "--password", "hunter2", "db"], &["mysql", "--password", "***", "db"]),
        ];
        for (argv, want) in cases {
            let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
            assert_eq!(redact_argv(&argv), want, "{argv:?}");
        }
    }

    /// A hub tool's or an MCP tool's arguments: by name at any depth, and
    /// every secret-shaped value whatever its name (security round 4, finding 6).
    #[test]
    fn call_arguments_hide_secret_names_and_shapes_at_any_depth() {
        let args: Map<String, Value> = serde_json::from_str(
            r#"{"state": "open", "api_token": "abc", "limit": 5, "query": "ghp_0123456789abcdefghij",
                "auth": {"password": "pw", "note": "ghp_abcdefghijklmnop"}, "tags": ["x", "sk-0123456789abcdef", "AKIAABCDEFGHIJKLMNOP"],
                "header": "Authorization: Bearer opaque-credential", "repo": "https://u:hunter2@github.com/o/r"}"#,
        )
        .unwrap();
        let want: Map<String, Value> = serde_json::from_str(
            r#"{"state": "open", "api_token": "***", "limit": 5, "query": "***",
                "auth": {"password": "***", "note": "***"}, "tags": ["x", "***", "***"],
                "header": "Authorization: Bearer ***", "repo": "https://u:***@github.com/o/r"}"#,
        )
        .unwrap();
        assert_eq!(redact_json(&args), want);
    }

    #[test]
    fn browser_values_are_what_a_line_sets() {
        for (line, want) in [
            ("browser cookies set sid s3cr3t --url http://h/", &["s3cr3t"][..]),
            ("browser storage set k 'v v'", &["v"]),
            ("browser storage session set token \"abc123\" && browser cookies set a b", &["abc123", "b"]),
            ("browser cookies --values", &[]),
            ("echo browser cookies set", &[]),
        ] {
            assert_eq!(browser_values(line), want, "{line}");
        }
    }

    #[test]
    fn line_redaction_table() {
        for (line, want) in [
            ("ls -la", "ls -la"),
            ("GH_TOKEN=ghp_0123456789abcdef git push", "GH_TOKEN=*** git push"),
            ("curl -H x --token  s3cr3t   https://h", "curl -H x --token *** https://h"),
            ("echo AKIAABCDEFGHIJKLMNOP > creds", "echo *** > creds"),
            ("browser cookies set sid s3cr3t --url http://h/", "browser cookies set sid *** --url http://h/"),
            (
                "browser storage session set token abc && browser get text",
                "browser storage session set token *** && browser get text",
            ),
            ("browser storage set k v", "browser storage set k ***"),
            ("browser cookies get --values", "browser cookies get --values"),
            ("curl -H 'Authorization: Bearer opaque' https://h", "curl -H 'Authorization: Bearer *** https://h"),
            ("git push https://u:ghp_0123456789abcdef@github.com/o/r", "git push https://u:***@github.com/o/r"),
            ("bash -c 'echo sk-proj-0123456789abcdef | wc'", "bash -c 'echo *** | wc'"),
            ("", ""),
        ] {
            assert_eq!(redact_line(line), want, "{line}");
        }
    }
}
