//! Errors that navigate: every failure names the next thing to try.

use clix_common::names;

use crate::missing::missing_program;
use crate::render::human_size;

/// Phrases with which standard tools report a bad command line.
const USAGE_PHRASES: &[&str] = &[
    "usage:",
    "missing operand",
    "missing file operand",
    "invalid option",
    "unrecognized option",
    "unknown option",
    "option requires an argument",
    "no pattern",
    "missing argument",
    // bashkit's csv, which also reads `--help` as a subcommand.
    "unknown subcommand",
];

/// Standard tools an agent means more often than their lookalikes: among
/// equally near names, these (and the session's own commands) come first.
const COMMON: &[&str] = &[
    "awk", "basename", "cat", "cd", "cp", "cut", "date", "diff", "dirname", "du", "echo", "env", "find", "git", "grep",
    "head", "jq", "ls", "mkdir", "mv", "node", "printf", "python3", "pwd", "rm", "sed", "sort", "tail", "tar", "tee",
    "touch", "tr", "uniq", "wc", "xargs",
];

/// Examples of the standard tools, named in the `Available:` line.
const STANDARD_EXAMPLES: &str = "grep, sed, awk, find, jq";

/// What a session can run, for the unknown-command error.
#[derive(Debug, Clone, Copy, Default)]
pub struct Known<'a> {
    /// Our commands (`help`, `write`, `see` …): listed by name.
    pub agent: &'a [String],
    /// Hub tools: listed by name.
    pub hub: &'a [String],
    /// Every runnable name: the nearest are suggested, and counted for `help`.
    pub all: &'a [String],
    /// Sandboxed programs have the network.
    pub network: bool,
}

/// The navigating error for a name nothing runs. A program agents commonly
/// reach for that is not here gets one line of what to do instead
/// ([`missing_program`]); any other name gets `[error] unknown command: foo`,
/// the nearest plausible names, and an `Available:` line with our commands,
/// the hub tools and `help` for the full list.
pub fn unknown_command_message(name: &str, known: &Known<'_>) -> String {
    if let Some(advice) = missing_program(name, known.network) {
        return format!("[error] {advice}\n");
    }
    let mut msg = format!("[error] unknown command: {name}\n");
    let preferred: Vec<&str> =
        known.agent.iter().chain(known.hub).map(String::as_str).chain(COMMON.iter().copied()).collect();
    let candidates: Vec<&str> = known.all.iter().map(String::as_str).collect();
    let near = nearest(name, &candidates, &preferred);
    if !near.is_empty() {
        msg.push_str(&format!("did you mean: {}?\n", near.join(", ")));
    }
    let mut agent: Vec<&str> = known.agent.iter().map(String::as_str).collect();
    agent.sort_unstable();
    agent.dedup();
    let mut line = format!("Available: {}", agent.join(", "));
    if !known.hub.is_empty() {
        let hub: Vec<&str> = known.hub.iter().map(String::as_str).collect();
        line.push_str(&format!("; hub tools: {}", hub.join(", ")));
    }
    let mut all: Vec<&str> = candidates;
    all.sort_unstable();
    all.dedup();
    line.push_str(&format!("; standard tools such as {STANDARD_EXAMPLES} (help lists all {})\n", all.len()));
    msg.push_str(&line);
    msg
}

/// Up to three of the names nearest to `name` (by the one rule of
/// [`clix_common::names`]: close and plausible as a slip), keeping only
/// `preferred` names when some are among them, in name order.
fn nearest<'a>(name: &str, candidates: &[&'a str], preferred: &[&str]) -> Vec<&'a str> {
    let mut nearest = names::nearest(name, candidates.iter().copied());
    // `sl` is `ls` to an agent, not `nl` or `sh`.
    if nearest.iter().any(|c| preferred.contains(c)) {
        nearest.retain(|c| preferred.contains(c));
    }
    nearest.sort_unstable();
    nearest.truncate(3);
    nearest
}

/// The next thing to try after a failed command, from its stderr: the
/// command's `--help` for a usage error (`help NAME` when `--help` was what
/// it refused), where a missing file is for a
/// path that does not exist, and how to read the input for jq's two
/// commonest mistakes (JSON it is not, an array indexed as an object), and
/// where to put a file the in-memory files have no room for.
/// The usage hint needs a failed line; the others read stderr alone, since
/// a pipe's last command decides the exit (`jq … | awk …` exits 0).
/// Qwen2.5-Coder-1.5B stopped at each of these in the eval's runs instead
/// of trying again (docs/eval.md).
pub(crate) fn next_step_hint(command: Option<&str>, asked_help: bool, exit_code: i32, stderr: &str) -> Option<String> {
    let stderr = last_part(stderr, HINT_WINDOW);
    let lower = stderr.to_lowercase();
    if exit_code != 0
        && let Some(command) = command.filter(|c| !c.is_empty())
        && USAGE_PHRASES.iter().any(|p| lower.contains(p))
    {
        return Some(if asked_help { format!("try: help {command}") } else { format!("try: {command} --help") });
    }
    if let Some(hint) = missing_path(stderr).and_then(|path| find_hint(&path)) {
        return Some(hint);
    }
    if let Some(limit) = in_memory_files_limit(stderr) {
        return Some(format!(
            "try: files outside the workspace (/tmp, ~) are held in memory, {} in all ([limits] max_tmp_bytes); \
             write big files inside the workspace",
            human_size(limit)
        ));
    }
    if lower.contains("jq: ") {
        if lower.contains("invalid json") || lower.contains("parse error") {
            return Some("try: jq reads JSON only; for CSV use csv (help csv), for plain lines jq -R".into());
        }
        if lower.contains("cannot index array with") {
            return Some(
                "try: the input is an array; iterate with .[] (e.g. '.[] | .name') or pick one with .[0]".into(),
            );
        }
    }
    None
}

/// How much of the end of stderr the hints read: what a failing program says
/// last. A program writing 64 MB to stderr had it copied whole to be read.
const HINT_WINDOW: usize = 16 * 1024;

/// The last `max` bytes of `text` or fewer, from a character boundary.
fn last_part(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The size of the in-memory files a write was refused by: bashkit says
/// "file too large: N bytes exceeds L byte limit" or "filesystem full: N
/// bytes would exceed L byte limit".
fn in_memory_files_limit(stderr: &str) -> Option<u64> {
    let line = stderr.lines().find(|l| l.contains("file too large: ") || l.contains("filesystem full: "))?;
    line.split(" byte limit").next()?.split_whitespace().last()?.parse().ok()
}

/// The words every "missing file" message of bash, coreutils, Python and
/// node shares (node writes them in lower case).
const MISSING: &str = "no such file or directory";

/// The path a "No such file or directory" line names. Python's exception
/// and node's ENOENT name it after the words, quoted
/// (`FileNotFoundError: [Errno 2] No such file or directory: 'data/x.csv'`,
/// `Error: ENOENT: no such file or directory, open 'x'`); everything else
/// before them, in the last `: ` field: its quoted part when quoted, else
/// its last word (`cat: x: …`, `ls: cannot access 'x': …`, `jq: error:
/// Could not open file x: …`, `python3: can't open file 'x': [Errno 2] …`).
fn missing_path(stderr: &str) -> Option<String> {
    let line = stderr.lines().find(|l| l.to_ascii_lowercase().contains(MISSING))?;
    // ASCII lower-casing keeps every byte where it was.
    let at = line.to_ascii_lowercase().find(MISSING)?;
    let (before, after) = (&line[..at], &line[at + MISSING.len()..]);
    let path = match last_quoted(after) {
        Some(path) => path,
        None => {
            // Python's "[Errno 2]" stands between the path and the words.
            let before = before.trim_end().trim_end_matches(|c: char| c == ']' || c.is_ascii_digit() || c == ' ');
            let before = before.strip_suffix("[Errno").unwrap_or(before).trim_end().trim_end_matches(':');
            let field = before.rsplit(": ").next()?.trim();
            last_quoted(field).or_else(|| field.split_whitespace().last())?
        }
    };
    (!path.is_empty()).then(|| path.to_string())
}

/// The last part of `text` between two of the same quote. From the end, so
/// that the apostrophe of "can't open file 'x'" is not taken for one.
fn last_quoted(text: &str) -> Option<&str> {
    ['\'', '"'].iter().find_map(|q| {
        let end = text.rfind(*q)?;
        let start = text[..end].rfind(*q)? + 1;
        Some(&text[start..end])
    })
}

/// `try: find . -name 'x'` for a missing `path`, when its name can be quoted plainly.
fn find_hint(path: &str) -> Option<String> {
    let name = path.trim_end_matches('/').rsplit('/').next()?;
    let plain = !name.is_empty() && !name.contains(['\'', '*', '?', '[']);
    plain.then(|| format!("try: find . -name '{name}' (no {path} here)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn did_you_mean_table() {
        let pool = ["cat", "grep", "egrep", "head", "help", "write", "wc", "uname", "python3", "rev"];
        let cases: [(&str, &[&str]); 11] = [
            ("gerp", &["grep"]),
            ("grpe", &["grep"]),
            ("hlep", &["help"]),
            ("hea", &["head"]),
            ("wirte", &["write"]),
            ("zzzzzz", &[]),
            ("ca", &["cat"]),
            ("pyhton3", &["python3"]),
            // Two edits in six letters is another word, not a slip.
            ("rename", &[]),
            ("rever", &[]),
            ("reve", &["rev"]),
        ];
        for (name, want) in cases {
            assert_eq!(nearest(name, &pool, &[]), want, "{name}");
        }
    }

    #[test]
    fn commands_an_agent_means_come_first() {
        let pool = ["ls", "less", "lsx", "nl", "sh"];
        assert_eq!(nearest("lss", &pool, &["ls"]), ["ls"]);
        assert_eq!(nearest("lss", &pool, &["lsx", "cat"]), ["lsx"]);
        assert_eq!(nearest("lss", &pool, &[]), ["less", "ls", "lsx"]);
        assert_eq!(nearest("sl", &pool, COMMON), ["ls"]);
    }

    #[test]
    fn unknown_command_lists_our_commands_hub_tools_and_help() {
        let all = names(&["wc", "grep", "cat", "grep", "help", "write", "weather"]);
        let known =
            Known { agent: &names(&["write", "help", "cat"]), hub: &names(&["weather"]), all: &all, network: false };
        assert_eq!(
            unknown_command_message("gerp", &known),
            "[error] unknown command: gerp\ndid you mean: grep?\n\
             Available: cat, help, write; hub tools: weather; standard tools such as grep, sed, awk, find, jq (help lists all 6)\n"
        );
        let known = Known { hub: &[], ..known };
        assert_eq!(
            unknown_command_message("zzz", &known),
            "[error] unknown command: zzz\n\
             Available: cat, help, write; standard tools such as grep, sed, awk, find, jq (help lists all 6)\n"
        );
    }

    #[test]
    fn a_long_command_list_stays_out_of_the_error() {
        let all: Vec<String> = (0..200).map(|i| format!("tool{i:03}")).collect();
        let known =
            Known { agent: &names(&["cat", "help", "memory", "see", "write"]), hub: &[], all: &all, network: false };
        let msg = unknown_command_message("nosuchthing", &known);
        assert!(msg.len() < 200, "{} bytes: {msg}", msg.len());
        assert!(msg.contains("(help lists all 200)"), "{msg}");
    }

    #[test]
    fn missing_programs_get_one_line_of_what_to_do() {
        let all = names(&["uname", "mv", "cat"]);
        let known = Known { agent: &names(&["cat"]), hub: &[], all: &all, network: false };
        for entry in crate::MISSING_PROGRAMS {
            let msg = unknown_command_message(entry.name, &known);
            let want = format!("[error] {}\n", missing_program(entry.name, false).unwrap());
            assert_eq!(msg, want, "{}", entry.name);
        }
        assert_eq!(
            unknown_command_message("rename", &known),
            "[error] rename: not available; use mv, e.g. for f in *.txt; do mv \"$f\" \"${f%.txt}.md\"; done\n"
        );
        let online = Known { network: true, ..known };
        assert_eq!(unknown_command_message("wget", &online), "[error] wget: not available; use curl -sSLO URL\n");
    }

    #[test]
    fn hints_read_the_end_of_a_long_stderr() {
        let noise = "é".repeat(HINT_WINDOW);
        let stderr = format!("{noise}\ncat: nope.txt: No such file or directory\n");
        assert_eq!(
            next_step_hint(Some("cat"), false, 1, &stderr).as_deref(),
            Some("try: find . -name 'nope.txt' (no nope.txt here)")
        );
        let early = format!("cat: nope.txt: No such file or directory\n{noise}");
        assert_eq!(next_step_hint(Some("cat"), false, 1, &early), None);
    }

    #[test]
    fn next_step_hint_table() {
        let cases = [
            (Some("grep"), 2, "grep: usage: grep [OPTION]... PATTERNS\n", Some("try: grep --help")),
            (Some("cp"), 1, "cp: missing file operand\n", Some("try: cp --help")),
            (Some("ls"), 2, "ls: invalid option -- 'z'\n", Some("try: ls --help")),
            (Some("grep"), 0, "usage: whatever\n", None),
            (None, 2, "usage: whatever\n", None),
            (
                Some("cat"),
                1,
                "cat: nope.txt: No such file or directory\n",
                Some("try: find . -name 'nope.txt' (no nope.txt here)"),
            ),
            (
                Some("bash"),
                127,
                "bash: line 28: ./compute_stats.sh: No such file or directory\n",
                Some("try: find . -name 'compute_stats.sh' (no ./compute_stats.sh here)"),
            ),
            (
                Some("cp"),
                1,
                "cp: cannot copy 'src/main.c': No such file or directory\n",
                Some("try: find . -name 'main.c' (no src/main.c here)"),
            ),
            (
                Some("jq"),
                2,
                "jq: error: Could not open file response.json: No such file or directory\n",
                Some("try: find . -name 'response.json' (no response.json here)"),
            ),
            (
                Some("python3"),
                2,
                "python3: can't open file '/w/chek.py': [Errno 2] No such file or directory\n",
                Some("try: find . -name 'chek.py' (no /w/chek.py here)"),
            ),
            // A traceback: the path, not the exception's name (issue 31).
            (
                Some("python3"),
                1,
                "Traceback (most recent call last):\n  File \"/w/load.py\", line 3, in <module>\n    \
                 open('data/x.csv')\nFileNotFoundError: [Errno 2] No such file or directory: 'data/x.csv'\n",
                Some("try: find . -name 'x.csv' (no data/x.csv here)"),
            ),
            (
                Some("node"),
                1,
                "node:fs:573\n  return binding.open(\n         ^\n\nError: ENOENT: no such file or directory, open \
                 'conf/app.json'\n    at Object.openSync (node:fs:573:18) {\n  errno: -2,\n  code: 'ENOENT',\n}\n",
                Some("try: find . -name 'app.json' (no conf/app.json here)"),
            ),
            (
                Some("ls"),
                2,
                "ls: cannot access 'build/out': No such file or directory\n",
                Some("try: find . -name 'out' (no build/out here)"),
            ),
            (
                Some("cat"),
                1,
                "bash: line 1: cat: x: No such file or directory\n",
                Some("try: find . -name 'x' (no x here)"),
            ),
            (Some("python3"), 1, "OSError: [Errno 2] No such file or directory: \"it's.txt\"\n", None),
            (Some("cat"), 1, "cat: 'it*': No such file or directory\n", None),
            (
                Some("jq"),
                5,
                "jq: invalid JSON: expected ident at line 1 column 2\n",
                Some("try: jq reads JSON only; for CSV use csv (help csv), for plain lines jq -R"),
            ),
            (
                Some("jq"),
                5,
                "jq: error (at <stdin>:0): Cannot index array with string \"items\"\n",
                Some("try: the input is an array; iterate with .[] (e.g. '.[] | .name') or pick one with .[0]"),
            ),
            (Some("jq"), 5, "jq: error: sum/0 is not defined\n", None),
            (
                Some("head"),
                1,
                "bash: line 1: /tmp/big: file too large: 150000000 bytes exceeds 100000000 byte limit\n",
                Some(
                    "try: files outside the workspace (/tmp, ~) are held in memory, 95.4MB in all \
                     ([limits] max_tmp_bytes); write big files inside the workspace",
                ),
            ),
            (
                Some("cp"),
                1,
                "bash: line 1: /tmp/b: filesystem full: 101000000 bytes would exceed 100000000 byte limit\n",
                Some(
                    "try: files outside the workspace (/tmp, ~) are held in memory, 95.4MB in all \
                     ([limits] max_tmp_bytes); write big files inside the workspace",
                ),
            ),
            (
                None,
                0,
                "jq: error (at orders.json:1): Cannot index array with string \"orders\"\n",
                Some("try: the input is an array; iterate with .[] (e.g. '.[] | .name') or pick one with .[0]"),
            ),
        ];
        for (cmd, code, stderr, want) in cases {
            assert_eq!(next_step_hint(cmd, false, code, stderr).as_deref(), want, "{stderr}");
        }
    }

    #[test]
    fn a_refused_help_flag_points_at_help_not_at_itself() {
        // bashkit's cd takes no --help: suggesting `cd --help` again loops.
        let stderr = "bash: line 1: cd: --: invalid option\ncd: usage: cd [-L|[-P [-e]] [-@]] [dir]\n";
        assert_eq!(next_step_hint(Some("cd"), true, 2, stderr).as_deref(), Some("try: help cd"));
        assert_eq!(next_step_hint(Some("cd"), false, 2, stderr).as_deref(), Some("try: cd --help"));
        let csv = "csv: unknown subcommand '--help'\n";
        assert_eq!(next_step_hint(Some("csv"), true, 1, csv).as_deref(), Some("try: help csv"));
    }
}
