//! Secret-looking words of a command line, hidden before it is logged.

use clix_common::is_secret_name;

/// Token shapes worth hiding wherever they appear.
const TOKEN_PREFIXES: &[&str] = &["sk-", "ghp_", "gho_", "github_pat_", "xoxb-", "xoxp-", "AKIA"];

/// `argv` with secret values replaced by `***`: `NAME=value` where NAME looks
/// secret, the value after `--token`/`--password`/…, and known token shapes.
pub fn redact_argv(argv: &[String]) -> Vec<String> {
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
        } else if TOKEN_PREFIXES.iter().any(|p| arg.starts_with(p) && arg.len() > p.len() + 8) {
            out.push("***".to_string());
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
/// [`redact_argv`] does; its words are joined by single spaces.
pub fn redact_line(line: &str) -> String {
    let words: Vec<String> = line.split_whitespace().map(String::from).collect();
    redact_argv(&words).join(" ")
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
            ("", ""),
        ] {
            assert_eq!(redact_line(line), want, "{line}");
        }
    }
}
