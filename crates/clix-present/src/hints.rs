//! Errors that navigate: every failure names the next thing to try.

use clix_common::names;

use crate::missing::missing_program;

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

/// `try: grep --help` when a failed command's stderr reads like a usage error.
pub(crate) fn usage_error_hint(command: &str, exit_code: i32, stderr: &str) -> Option<String> {
    if exit_code == 0 || command.is_empty() {
        return None;
    }
    let lower = stderr.to_lowercase();
    USAGE_PHRASES.iter().any(|p| lower.contains(p)).then(|| format!("try: {command} --help"))
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
    fn usage_hint_table() {
        let cases = [
            ("grep", 2, "grep: usage: grep [OPTION]... PATTERNS\n", Some("try: grep --help")),
            ("cp", 1, "cp: missing file operand\n", Some("try: cp --help")),
            ("ls", 2, "ls: invalid option -- 'z'\n", Some("try: ls --help")),
            ("cat", 1, "cat: nope.txt: No such file or directory\n", None),
            ("grep", 0, "usage: whatever\n", None),
        ];
        for (cmd, code, stderr, want) in cases {
            assert_eq!(usage_error_hint(cmd, code, stderr).as_deref(), want, "{stderr}");
        }
    }
}
